package daytonatest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	sdkerrors "github.com/daytonaio/daytona/libs/sdk-go/pkg/errors"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/options"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"

	"github.com/forge-run/forge/internal/testkit/wait"
)

// specs are loaded once for the whole package's tests.
var specs *Specs

func TestMain(m *testing.M) {
	var err error
	if specs, err = LoadSpecs(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The SDK's generated client leaves a temporary file (HttpClientFile*)
	// for every file its FileSystem.DownloadFile fetches; these tests call
	// it, so their temporary directory is one of their own, removed at the
	// end.
	tmp, err := os.MkdirTemp("", "daytonatest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", tmp)
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

func client(t *testing.T, s *Server) *daytona.Client {
	t.Helper()
	c, err := daytona.NewClientWithConfig(&types.DaytonaConfig{APIKey: s.APIKey(), APIUrl: s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func create(t *testing.T, c *daytona.Client, name string) *daytona.Sandbox {
	t.Helper()
	sb, err := c.Create(ctx(t), types.SnapshotParams{SandboxBaseParams: types.SandboxBaseParams{
		Name: name, Labels: map[string]string{"app": "test"}, EnvVars: map[string]string{"FROM_CREATE": "1"},
	}})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return sb
}

func TestSandboxLifecycleThroughTheSDK(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	c := client(t, s)
	sb := create(t, c, "life")
	if s.LiveCount() != 1 {
		t.Fatalf("live = %d, want 1", s.LiveCount())
	}
	home, err := sb.GetUserHomeDir(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	// The daemon's home with a root of the sandbox's own; else one made
	// per sandbox on this machine.
	if RootFS() && home != "/home/daytona" || !RootFS() && (home == "/home/daytona" || !filepath.IsAbs(home)) {
		t.Fatalf("home = %q (RootFS %v)", home, RootFS())
	}
	if err := sb.FileSystem.UploadFile(ctx(t), []byte("hello\n"), home+"/dir/a.txt"); err != nil {
		t.Fatalf("upload: %v", err)
	}
	res, err := sb.Process.ExecuteCommand(ctx(t), "cat dir/a.txt; echo err >&2; echo $FROM_CREATE; exit 3", options.WithCwd(home))
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if res.ExitCode != 3 || !strings.Contains(res.Result, "hello") || !strings.Contains(res.Result, "err") || !strings.Contains(res.Result, "1") {
		t.Fatalf("execute = %d %q", res.ExitCode, res.Result)
	}
	got, err := sb.FileSystem.DownloadFile(ctx(t), home+"/dir/a.txt", nil)
	if err != nil || string(got) != "hello\n" {
		t.Fatalf("download = %q, %v", got, err)
	}

	if err := sb.Process.CreateSession(ctx(t), "s"); err != nil {
		t.Fatal(err)
	}
	r, err := sb.Process.ExecuteSessionCommand(ctx(t), "s", "echo out; echo err >&2; exit 7", true, false)
	if err != nil {
		t.Fatal(err)
	}
	cmdID := r["id"].(string)
	var code any
	wait.For(t, "the session command to finish", 20*time.Second, func() bool {
		st, err := sb.Process.GetSessionCommand(ctx(t), "s", cmdID)
		if err != nil {
			t.Fatal(err)
		}
		code = st["exitCode"]
		return code != nil
	})
	if code.(int32) != 7 {
		t.Fatalf("exit code = %v, want 7", code)
	}
	logs, err := sb.Process.GetSessionCommandLogs(ctx(t), "s", cmdID)
	if err != nil {
		t.Fatal(err)
	}
	if logs.Stdout != "out\n" || logs.Stderr != "err\n" {
		t.Fatalf("logs = %q / %q", logs.Stdout, logs.Stderr)
	}
	if err := sb.Process.DeleteSession(ctx(t), "s"); err != nil {
		t.Fatal(err)
	}

	page, err := c.List(ctx(t), map[string]string{"app": "test"}, nil, nil)
	if err != nil || page.Total != 1 || page.Items[0].ID != sb.ID {
		t.Fatalf("list = %+v, %v", page, err)
	}
	if err := sb.Delete(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if s.LiveCount() != 0 || s.PeakLive() != 1 {
		t.Fatalf("live = %d, peak = %d", s.LiveCount(), s.PeakLive())
	}
	if _, err := c.Get(ctx(t), "life"); !isNotFound(err) {
		t.Fatalf("get after delete: %v, want not found", err)
	}
	if _, err := sb.GetUserHomeDir(ctx(t)); statusOf(err) != 401 {
		t.Fatalf("toolbox after delete: %v, want 401 like the proxy", err)
	}
	info := s.Sandboxes()[0]
	if info.Env["FROM_CREATE"] != "1" || info.Labels["code-toolbox-language"] != "python" || info.AutoStopInterval != 15 {
		t.Fatalf("info = %+v", info)
	}
}

func isNotFound(err error) bool {
	_, ok := err.(*sdkerrors.DaytonaNotFoundError)
	return ok
}

func statusOf(err error) int {
	if e := sdkErr(err); e != nil {
		return e.StatusCode
	}
	return -1
}

// sdkErr is the *DaytonaError inside any of the SDK's error types.
func sdkErr(err error) *sdkerrors.DaytonaError {
	switch e := err.(type) {
	case *sdkerrors.DaytonaError:
		return e
	case *sdkerrors.DaytonaNotFoundError:
		return e.DaytonaError
	case *sdkerrors.DaytonaRateLimitError:
		return e.DaytonaError
	case *sdkerrors.DaytonaTimeoutError:
		return e.DaytonaError
	}
	return nil
}

func TestCreatingSandboxIsPolledUntilStarted(t *testing.T) {
	s := Start(t, Options{Specs: specs, StartDelay: 300 * time.Millisecond})
	c := client(t, s)
	sb := create(t, c, "slow")
	if sb.State != "started" {
		t.Fatalf("state = %s", sb.State)
	}
	if n := s.Calls(OpGetSandbox); n == 0 {
		t.Fatal("the SDK never polled GET /sandbox/{id}")
	}
}

func TestEmptyFileTraps(t *testing.T) {
	s := NewServer(Options{Specs: specs})
	defer s.Close()
	sb := create(t, client(t, s), "empty")
	home, _ := sb.GetUserHomeDir(ctx(t))
	if err := sb.FileSystem.UploadFile(ctx(t), []byte{}, home+"/e"); statusOf(err) != 400 {
		t.Fatalf("zero-byte upload: %v, want 400 (no file part)", err)
	}
	if _, err := sb.Process.ExecuteCommand(ctx(t), ": > e", options.WithCwd(home)); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.FileSystem.DownloadFile(ctx(t), home+"/e", nil); err == nil {
		t.Fatal("downloading a zero-byte file worked; the real SDK fails")
	}
	// Without a root, a path outside the sandbox's directory (a home
	// hard-coded for another machine) is refused; with one, any path is
	// the sandbox's, and this one is missing.
	want := 400
	if RootFS() {
		want = 404
	}
	if _, err := sb.FileSystem.DownloadFile(ctx(t), "/home/daytona/x", nil); statusOf(err) != want {
		t.Fatalf("hard-coded home: %v, want %d", err, want)
	}
	// The zero-byte upload is the one call here that breaks the spec (the SDK
	// sends no file part); the emulator must have noticed.
	v := s.Violations()
	if len(v) != 1 || !strings.Contains(v[0], `UploadFile request`) || !strings.Contains(v[0], `"file" is missing`) {
		t.Fatalf("violations = %q", v)
	}
}

func TestFaults(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	c := client(t, s)

	s.Inject(OpCreateSandbox, Fault{Status: 401})
	if _, err := c.Create(ctx(t), types.SnapshotParams{}); statusOf(err) != 401 {
		t.Fatalf("401 fault: %v", err)
	}
	s.Inject(OpCreateSandbox, Fault{Status: 429, Header: http.Header{"Retry-After-Sandbox-Create": {"2"}}})
	_, err := c.Create(ctx(t), types.SnapshotParams{})
	rl, ok := err.(*sdkerrors.DaytonaRateLimitError)
	if !ok || rl.Headers.Get("Retry-After-sandbox-create") != "2" {
		t.Fatalf("429 fault: %#v", err)
	}
	s.Inject(OpCreateSandbox, Fault{Status: 500, Times: 2})
	for i := 0; i < 2; i++ {
		if _, err := c.Create(ctx(t), types.SnapshotParams{}); statusOf(err) != 500 {
			t.Fatalf("500 fault %d: %v", i, err)
		}
	}
	if s.LiveCount() != 0 {
		t.Fatalf("status faults had side effects: %d live", s.LiveCount())
	}

	s.Inject(OpCreateSandbox, Fault{Drop: true})
	_, err = c.Create(ctx(t), types.SnapshotParams{SandboxBaseParams: types.SandboxBaseParams{Name: "dropped"}})
	if statusOf(err) != 0 {
		t.Fatalf("dropped create: %v, want a status-0 error", err)
	}
	if s.LiveCount() != 1 {
		t.Fatalf("dropped create left %d sandboxes, want 1 (the effect happened)", s.LiveCount())
	}
	if _, err := c.Get(ctx(t), "dropped"); err != nil {
		t.Fatalf("the dropped create's sandbox cannot be found: %v", err)
	}
	if _, err := c.Create(ctx(t), types.SnapshotParams{SandboxBaseParams: types.SandboxBaseParams{Name: "dropped"}}); statusOf(err) != 409 {
		t.Fatalf("duplicate name: %v, want 409", err)
	}

	s.Inject(OpCreateSandbox, Fault{Hang: true})
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := c.Create(short, types.SnapshotParams{}); err == nil {
		t.Fatal("hung create returned")
	}
	// The hung call is logged once the server notices the client left.
	wait.For(t, "7 create calls", 20*time.Second, func() bool { return s.Calls(OpCreateSandbox) == 7 })
	calls := 0
	for _, call := range s.CallLog() {
		if call.Op == OpCreateSandbox {
			calls++
			if call.Fault == "hang" && call.Status != 0 {
				t.Errorf("the hung call got status %d", call.Status)
			}
		}
	}
	if calls != 7 {
		t.Fatalf("call log has %d creates, want 7", calls)
	}
}

func TestExecuteTimeoutIs408AndKillsTheCommand(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	sb := create(t, client(t, s), "t")
	home, _ := sb.GetUserHomeDir(ctx(t))
	_, err := sb.Process.ExecuteCommand(ctx(t), "echo $$ > pid; exec sleep 30", options.WithCwd(home), options.WithExecuteTimeout(time.Second))
	if statusOf(err) != 408 {
		t.Fatalf("err = %v, want 408", err)
	}
	assertGone(t, s, s.Sandboxes()[0].ID, filepath.Join(s.Sandboxes()[0].Home, "pid"))
}

// assertGone fails unless the process of sandbox id whose pid (as the
// sandbox numbers it) is in file has ended.
func assertGone(t *testing.T, s *Server, id, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	wait.For(t, fmt.Sprintf("process %d to end", pid), 20*time.Second, func() bool { return !s.Alive(id, pid) })
}

func TestCloseKillsEverythingItStarted(t *testing.T) {
	s := NewServer(Options{Specs: specs, Dir: t.TempDir()})
	sb := create(t, client(t, s), "k")
	if err := sb.Process.CreateSession(ctx(t), "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Process.ExecuteSessionCommand(ctx(t), "s", "echo $$ > pid; sleep 30 & sleep 30", true, false); err != nil {
		t.Fatal(err)
	}
	pid := filepath.Join(s.Sandboxes()[0].Home, "pid")
	wait.For(t, "the session command to start", 20*time.Second, func() bool { return s.Running() > 0 && !fileMissing(pid) })
	s.Close()
	if s.Running() != 0 {
		t.Fatalf("%d processes outlived Close", s.Running())
	}
	assertGone(t, s, s.Sandboxes()[0].ID, pid)
	if v := s.Violations(); len(v) != 0 {
		t.Fatal(v)
	}
}

func fileMissing(p string) bool {
	_, err := os.Stat(p)
	return err != nil
}

func TestViolationsAreCaught(t *testing.T) {
	s := NewServer(Options{Specs: specs})
	defer s.Close()
	req, _ := http.NewRequest("POST", s.URL()+"/sandbox", strings.NewReader(`{"cpu":"two"}`))
	req.Header.Set("Authorization", "Bearer "+s.APIKey())
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	req, _ = http.NewRequest("GET", s.URL()+"/no/such/route", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	v := s.Violations()
	if len(v) != 2 || !strings.Contains(v[0], "createSandbox request") || !strings.Contains(v[1], "not in the spec") {
		t.Fatalf("violations = %q", v)
	}
}

func TestVolumes(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	c := client(t, s)
	vol, err := c.Volume.Create(ctx(t), "data")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Volume.Create(ctx(t), "data"); statusOf(err) != 400 {
		t.Fatalf("duplicate volume: %v", err)
	}
	sb, err := c.Create(ctx(t), types.SnapshotParams{SandboxBaseParams: types.SandboxBaseParams{
		Volumes: []types.VolumeMount{{VolumeID: vol.ID, MountPath: "/home/daytona/memory"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	home, _ := sb.GetUserHomeDir(ctx(t))
	if _, err := sb.Process.ExecuteCommand(ctx(t), "echo kept > memory/f", options.WithCwd(home)); err != nil {
		t.Fatal(err)
	}
	if b, err := s.VolumeFile("data", "f"); err != nil || string(b) != "kept\n" {
		t.Fatalf("volume file = %q, %v", b, err)
	}
	if _, err := c.Create(ctx(t), types.SnapshotParams{SandboxBaseParams: types.SandboxBaseParams{
		Volumes: []types.VolumeMount{{VolumeID: "data", MountPath: "/etc/x"}},
	}}); statusOf(err) != 400 {
		t.Fatalf("mount under /etc: %v, want 400", err)
	}
}

// message is the message of an SDK error.
func message(err error) string {
	if e := sdkErr(err); e != nil {
		return e.Message
	}
	return fmt.Sprint(err)
}

// alive reports whether process pid exists (a zombie included).
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	defer p.Release()
	return p.Signal(syscall.Signal(0)) == nil
}

// A listener given (the emulator's -port) is where the API is served.
func TestServerOnAGivenListener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := Start(t, Options{Specs: specs, Listener: l})
	if want := "http://" + l.Addr().String() + "/api"; s.URL() != want {
		t.Fatalf("URL %s, want %s", s.URL(), want)
	}
	if _, err := client(t, s).List(ctx(t), nil, nil, nil); err != nil {
		t.Fatalf("list on the given listener: %v", err)
	}
}
