package daytonatest

import (
	"context"
	"encoding/json"
	"fmt"
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
	// end. (forge's backend removes the file itself: collect.go.)
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
	if home == "/home/daytona" || !filepath.IsAbs(home) {
		t.Fatalf("home = %q, want a per-sandbox directory", home)
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
	WaitFor(t, "the session command to finish", func() bool {
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
	if _, err := sb.FileSystem.DownloadFile(ctx(t), "/home/daytona/x", nil); statusOf(err) != 400 {
		t.Fatalf("hard-coded home: %v, want 400", err)
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
	WaitFor(t, "7 create calls", func() bool { return s.Calls(OpCreateSandbox) == 7 })
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
	assertGone(t, filepath.Join(home, "pid"))
}

// assertGone fails unless the process whose pid is in file has ended.
func assertGone(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	WaitFor(t, fmt.Sprintf("process %d to end", pid), func() bool { return !alive(pid) })
}

func TestCloseKillsEverythingItStarted(t *testing.T) {
	s := NewServer(Options{Specs: specs, Dir: t.TempDir()})
	sb := create(t, client(t, s), "k")
	home, _ := sb.GetUserHomeDir(ctx(t))
	if err := sb.Process.CreateSession(ctx(t), "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Process.ExecuteSessionCommand(ctx(t), "s", "echo $$ > pid; sleep 30 & sleep 30", true, false); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, "the session command to start", func() bool { return s.Running() > 0 && !fileMissing(filepath.Join(home, "pid")) })
	s.Close()
	if s.Running() != 0 {
		t.Fatalf("%d processes outlived Close", s.Running())
	}
	assertGone(t, filepath.Join(home, "pid"))
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

// streamed is what GetSessionCommandLogsStream delivered.
type streamed struct {
	stdout, stderr string
	err            error
}

// follow runs the SDK's log stream for a command, draining both channels;
// each stdout chunk is also sent to chunks, if not nil.
func follow(ctx context.Context, sb *daytona.Sandbox, sid, cid string, chunks chan<- string) <-chan streamed {
	res := make(chan streamed, 1)
	go func() {
		out, errc := make(chan string, 16), make(chan string, 16)
		done := make(chan error, 1)
		go func() { done <- sb.Process.GetSessionCommandLogsStream(ctx, sid, cid, out, errc) }()
		var r streamed
		for out != nil || errc != nil {
			select {
			case s, ok := <-out:
				if !ok {
					out = nil
					continue
				}
				r.stdout += s
				if chunks != nil {
					chunks <- s
				}
			case s, ok := <-errc:
				if !ok {
					errc = nil
					continue
				}
				r.stderr += s
			}
		}
		r.err = <-done
		res <- r
	}()
	return res
}

// streamCallsOf waits until the call log holds n log streams (a stream is
// logged when the server is done with it, which may be after the client
// saw its end) and returns them.
func streamCallsOf(t *testing.T, s *Server, n int) []Call {
	t.Helper()
	var calls []Call
	WaitFor(t, fmt.Sprintf("%d log streams logged", n), func() bool {
		calls = nil
		for _, c := range s.CallLog() {
			if c.Op == OpSessionLogsStream {
				calls = append(calls, c)
			}
		}
		return len(calls) >= n
	})
	return calls
}

func startCommand(t *testing.T, sb *daytona.Sandbox, sid, command string) string {
	t.Helper()
	if err := sb.Process.CreateSession(ctx(t), sid); err != nil && statusOf(err) != 409 {
		t.Fatal(err)
	}
	r, err := sb.Process.ExecuteSessionCommand(ctx(t), sid, command, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return r["id"].(string)
}

func TestLogStreamFollowsTheCommandUntilItsExitCode(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	sb := create(t, client(t, s), "stream")
	home, _ := sb.GetUserHomeDir(ctx(t))
	gate := filepath.Join(home, "gate")
	// The command waits for the test, which waits for its first line: the
	// stream must deliver while the command runs. (The SDK holds a chunk's
	// last two bytes back until more come: "second" pushes "first" out.
	// Stdout and stderr are not ordered with each other.)
	cid := startCommand(t, sb, "s", fmt.Sprintf("echo oops >&2; echo first; echo second; while [ ! -e %s ]; do sleep 0.01; done; printf 'last without newline'; exit 3", gate))
	chunks := make(chan string, 64)
	res := follow(ctx(t), sb, "s", cid, chunks)
	var got string
	for !strings.Contains(got, "first\n") {
		select {
		case c := <-chunks:
			got += c
		case <-time.After(20 * time.Second):
			t.Fatalf("no first line while the command runs (got %q)", got)
		}
	}
	if st, err := sb.Process.GetSessionCommand(ctx(t), "s", cid); err != nil || st["exitCode"] != nil {
		t.Fatalf("the command ended before the gate opened: %v %v", st, err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range chunks {
		}
	}()
	var r streamed
	select {
	case r = <-res:
	case <-time.After(20 * time.Second):
		t.Fatal("the stream never ended after the command did")
	}
	close(chunks)
	if r.err != nil {
		t.Fatalf("stream ended with %v, want a normal close", r.err)
	}
	if r.stdout != "first\nsecond\nlast without newline\n" || r.stderr != "oops\n" {
		t.Fatalf("streamed %q / %q", r.stdout, r.stderr)
	}
	// It closed only once the exit code existed.
	st, err := sb.Process.GetSessionCommand(ctx(t), "s", cid)
	if err != nil || st["exitCode"] != int32(3) {
		t.Fatalf("after the stream: %v %v", st, err)
	}
	if calls := streamCallsOf(t, s, 1); calls[0].Status != http.StatusSwitchingProtocols {
		t.Fatalf("stream call %+v", calls[0])
	}
	// The JSON logs keep the markers in output, like the daemon's.
	logs, err := sb.Process.GetSessionCommandLogs(ctx(t), "s", cid)
	if err != nil || !strings.Contains(logs.Output, "\x02\x02\x02oops\n") ||
		strings.Replace(logs.Output, "\x02\x02\x02oops\n", "", 1) != "\x01\x01\x01first\n\x01\x01\x01second\n\x01\x01\x01last without newline\n" {
		t.Fatalf("logs %+v, %v", logs, err)
	}
}

func TestLogStreamOfAFinishedCommandReplaysAndCloses(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	sb := create(t, client(t, s), "replay")
	cid := startCommand(t, sb, "s", "for i in 1 2 3; do echo line-$i-$(head -c 600 /dev/zero | tr '\\000' x); done")
	WaitFor(t, "the command to end", func() bool {
		st, err := sb.Process.GetSessionCommand(ctx(t), "s", cid)
		if err != nil {
			t.Fatal(err)
		}
		return st["exitCode"] != nil
	})
	r := <-follow(ctx(t), sb, "s", cid, nil)
	x := strings.Repeat("x", 600)
	if r.err != nil || r.stdout != "line-1-"+x+"\nline-2-"+x+"\nline-3-"+x+"\n" {
		t.Fatalf("replay: %v %q", r.err, r.stdout)
	}
}

func TestLogStreamFaults(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	sb := create(t, client(t, s), "faults")
	cid := startCommand(t, sb, "s", "echo hello; sleep 30")

	s.Inject(OpSessionLogsStream, Fault{Status: 404})
	r := <-follow(ctx(t), sb, "s", cid, nil)
	if r.err == nil || !strings.Contains(r.err.Error(), "Failed to connect to log stream") || statusOf(r.err) != 0 {
		t.Fatalf("refused upgrade: %v", r.err)
	}

	s.Inject(OpSessionLogsStream, Fault{Drop: true})
	r = <-follow(ctx(t), sb, "s", cid, nil)
	if r.err == nil || !strings.Contains(r.err.Error(), "WebSocket read error") {
		t.Fatalf("dropped stream: %v", r.err)
	}

	s.Inject(OpSessionLogsStream, Fault{Stall: true})
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res := follow(short, sb, "s", cid, nil)
	// A stalled stream sends nothing and never closes; only the sandbox's
	// deletion (or the server's end) cuts it.
	select {
	case r = <-res:
		t.Fatalf("a stalled stream ended: %+v", r)
	case <-short.Done():
	}
	if err := sb.Delete(ctx(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case r = <-res:
	case <-time.After(20 * time.Second):
		t.Fatal("deleting the sandbox did not cut its stream")
	}
	if r.stdout != "" {
		t.Fatalf("a stalled stream sent %q", r.stdout)
	}
	var faults []string
	for _, c := range streamCallsOf(t, s, 3) {
		faults = append(faults, fmt.Sprintf("%s:%d", c.Fault, c.Status))
	}
	if strings.Join(faults, " ") != "404:404 drop:101 stall:101" {
		t.Fatalf("stream calls %v", faults)
	}
}

func TestLogStreamOfAKilledCommandFollowsUntilTheSandboxGoes(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	sb := create(t, client(t, s), "killed")
	cid := startCommand(t, sb, "s", "echo started; sleep 30")
	chunks := make(chan string, 64)
	res := follow(ctx(t), sb, "s", cid, chunks)
	// The SDK holds back a chunk's last two bytes (they could start a
	// marker) until more arrive or the stream ends.
	if c := <-chunks; c != "starte" {
		t.Fatalf("first chunk %q", c)
	}
	// Killing the session leaves no exit code, so the stream goes on.
	if err := sb.Process.DeleteSession(ctx(t), "s"); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-res:
		t.Fatalf("the stream of a killed command ended: %+v", r)
	case <-time.After(1500 * time.Millisecond):
	}
	if err := sb.Delete(ctx(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-res:
		if r.err == nil || !strings.Contains(r.err.Error(), "WebSocket read error") {
			t.Fatalf("cut stream: %v", r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("deleting the sandbox did not cut its stream")
	}
}

// message is the message of an SDK error.
func message(err error) string {
	if e := sdkErr(err); e != nil {
		return e.Message
	}
	return fmt.Sprint(err)
}

// deleteAll deletes every sandbox the API lists and checks that none is
// left alive.
func deleteAll(t *testing.T, s *Server, c *daytona.Client) {
	t.Helper()
	page, err := c.List(ctx(t), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range page.Items {
		if err := sb.Delete(ctx(t)); err != nil {
			t.Fatalf("delete %s: %v", sb.ID, err)
		}
	}
	if n := s.LiveCount(); n != 0 {
		t.Fatalf("%d sandboxes left alive: %+v", n, s.Live())
	}
}

func image(img string, r *types.Resources) types.ImageParams {
	return types.ImageParams{Image: img, Resources: r}
}

const upgradeAdvice = "\nTo increase concurrency limits, upgrade your organization's Tier by visiting https://app.daytona.io/dashboard/limits."

func TestQuotaRefusesOverTheTotalUntilADeletedSandboxIsGone(t *testing.T) {
	const destroy = 2 * time.Second
	s := Start(t, Options{Specs: specs, Quota: Quota{CPU: 4}, DestroyDelay: destroy})
	c := client(t, s)
	var sbs []*daytona.Sandbox
	for i := 0; i < 4; i++ {
		sbs = append(sbs, create(t, c, fmt.Sprintf("q%d", i)))
	}
	_, err := c.Create(ctx(t), types.SnapshotParams{SandboxBaseParams: types.SandboxBaseParams{Name: "q4"}})
	want := "Total CPU limit exceeded. Maximum allowed: 4." + upgradeAdvice
	if statusOf(err) != 400 || message(err) != want {
		t.Fatalf("5th create: %v (status %d), want 400 %q", err, statusOf(err), want)
	}
	if page, err := c.List(ctx(t), nil, nil, nil); err != nil || page.Total != 4 || s.LiveCount() != 4 {
		t.Fatalf("the refused create made a sandbox: %+v, %v, live %d", page, err, s.LiveCount())
	}

	deleted := time.Now()
	if err := sbs[0].Delete(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_, err = c.Create(ctx(t), types.SnapshotParams{SandboxBaseParams: types.SandboxBaseParams{Name: "q4"}})
	if time.Since(deleted) < destroy {
		// Still destroying: it still holds its vCPU.
		if statusOf(err) != 400 || message(err) != want {
			t.Fatalf("create while one is destroying: %v, want the quota refusal", err)
		}
		if u := s.Usage(); u.CPU != 4 || s.LiveCount() != 3 {
			t.Fatalf("while destroying: usage %+v, live %d", u, s.LiveCount())
		}
	} else {
		t.Logf("the machine is slow: %v passed before the create; not checking the destroying case", time.Since(deleted))
	}
	WaitFor(t, "the deleted sandbox is gone", func() bool {
		_, err := c.Get(ctx(t), sbs[0].ID)
		return isNotFound(err)
	})
	if u := s.Usage(); u != (Quota{CPU: 3, MemoryGiB: 3, DiskGiB: 9, Sandboxes: 3}) {
		t.Fatalf("usage once gone = %+v", u)
	}
	create(t, c, "q4")
	if p := s.PeakUsage(); p != (Quota{CPU: 4, MemoryGiB: 4, DiskGiB: 12, Sandboxes: 4}) || s.PeakLive() != 4 {
		t.Fatalf("peak usage %+v, peak live %d", p, s.PeakLive())
	}
	deleteAll(t, s, c)
}

func TestQuotaMemoryDiskAndStatus(t *testing.T) {
	s := Start(t, Options{Specs: specs, Quota: Quota{MemoryGiB: 12, DiskGiB: 30}})
	c := client(t, s)
	if _, err := c.Create(ctx(t), image("python:3.12", &types.Resources{CPU: 1, Memory: 8, Disk: 10})); err != nil {
		t.Fatal(err)
	}
	_, err := c.Create(ctx(t), image("python:3.12", &types.Resources{Memory: 5}))
	if want := "Total memory limit exceeded. Maximum allowed: 12GiB." + upgradeAdvice; statusOf(err) != 400 || message(err) != want {
		t.Fatalf("memory: %v, want 400 %q", err, want)
	}
	for i := 0; i < 2; i++ {
		if _, err := c.Create(ctx(t), image("python:3.12", &types.Resources{Disk: 10})); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.Create(ctx(t), types.SnapshotParams{}) // the default snapshot's 3 GiB
	want := "Total disk limit exceeded. Maximum allowed: 30GiB.\nConsider archiving your unused Sandboxes to free up available storage." + upgradeAdvice
	if statusOf(err) != 400 || message(err) != want {
		t.Fatalf("disk: %v, want 400 %q", err, want)
	}
	deleteAll(t, s, c)

	s = Start(t, Options{Specs: specs, Quota: Quota{CPU: 1, Sandboxes: 5}, QuotaStatus: 403})
	c = client(t, s)
	create(t, c, "one")
	_, err = c.Create(ctx(t), types.SnapshotParams{})
	if want := "Total CPU limit exceeded. Maximum allowed: 1." + upgradeAdvice; statusOf(err) != 403 || message(err) != want {
		t.Fatalf("403 option: %v, want 403 %q", err, want)
	}
	deleteAll(t, s, c)

	s = Start(t, Options{Specs: specs, Quota: Quota{Sandboxes: 1}})
	c = client(t, s)
	create(t, c, "only")
	if _, err = c.Create(ctx(t), types.SnapshotParams{}); statusOf(err) != 400 || !strings.HasPrefix(message(err), "Total sandbox limit exceeded. Maximum allowed: 1.") {
		t.Fatalf("sandbox count: %v", err)
	}
	deleteAll(t, s, c)
}

func TestPerSandboxMaximumIsAPermanent400(t *testing.T) {
	const advice = "\nNeed higher resource limits per-sandbox? Contact us at support@daytona.io and let us know about your use case."
	// A 403 for quota refusals does not change the per-sandbox answer.
	s := Start(t, Options{Specs: specs, Quota: Quota{CPU: 100}, QuotaStatus: 403})
	c := client(t, s)
	for _, tc := range []struct {
		r    types.Resources
		want string
	}{
		{types.Resources{CPU: 8}, "CPU request 8 exceeds maximum allowed per sandbox (4)." + advice},
		{types.Resources{CPU: 4, Memory: 16}, "Memory request 16GB exceeds maximum allowed per sandbox (8GB)." + advice},
		{types.Resources{Disk: 20}, "Disk request 20GB exceeds maximum allowed per sandbox (10GB)." + advice},
	} {
		_, err := c.Create(ctx(t), image("python:3.12", &tc.r))
		if statusOf(err) != 400 || message(err) != tc.want {
			t.Errorf("%+v: %v (status %d), want 400 %q", tc.r, err, statusOf(err), tc.want)
		}
	}
	if s.LiveCount() != 0 || len(s.Sandboxes()) != 0 {
		t.Fatalf("refused creates made sandboxes: %+v", s.Sandboxes())
	}
	if _, err := c.Create(ctx(t), image("python:3.12", &types.Resources{CPU: 4, Memory: 8, Disk: 10})); err != nil {
		t.Fatalf("the maximum itself: %v", err)
	}
	deleteAll(t, s, c)

	s = Start(t, Options{Specs: specs, MaxPerSandbox: Quota{CPU: 8}})
	c = client(t, s)
	if _, err := c.Create(ctx(t), image("python:3.12", &types.Resources{CPU: 8})); err != nil {
		t.Fatalf("8 vCPU with MaxPerSandbox.CPU 8: %v", err)
	}
	if _, err := c.Create(ctx(t), image("python:3.12", &types.Resources{Memory: 9})); statusOf(err) != 400 {
		t.Fatalf("the memory maximum stays the default: %v", err)
	}
	deleteAll(t, s, c)
}

func TestUnknownSnapshotIsRefused(t *testing.T) {
	s := Start(t, Options{Specs: specs, Snapshots: []string{"my-snap"}})
	c := client(t, s)
	snap := func(name string) types.SnapshotParams { return types.SnapshotParams{Snapshot: name} }
	_, err := c.Create(ctx(t), snap("my-agent-snap"))
	if want := "Snapshot my-agent-snap not found. Did you add it through the Daytona Dashboard?"; statusOf(err) != 400 || message(err) != want {
		t.Fatalf("unknown snapshot: %v, want 400 %q", err, want)
	}
	if len(s.Sandboxes()) != 0 {
		t.Fatal("the refused create made a sandbox")
	}
	sb, err := c.Create(ctx(t), snap("my-snap"))
	if err != nil {
		t.Fatalf("known snapshot: %v", err)
	}
	if info := s.Sandboxes()[0]; info.ID != sb.ID || info.Snapshot != "my-snap" {
		t.Fatalf("info %+v", info)
	}
	if _, err := c.Create(ctx(t), snap("")); err != nil {
		t.Fatalf("default snapshot: %v", err)
	}
	deleteAll(t, s, c)

	// With no Snapshots, the organization has only the default one.
	s = Start(t, Options{Specs: specs})
	c = client(t, s)
	if _, err := c.Create(ctx(t), snap("my-snap")); statusOf(err) != 400 {
		t.Fatalf("a named snapshot with none known: %v", err)
	}
	deleteAll(t, s, c)
}

// rawSandbox GETs a sandbox as JSON, to see fields the SDK drops.
func rawSandbox(t *testing.T, s *Server, id string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL()+"/sandbox/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+s.APIKey())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestFailStart(t *testing.T) {
	for _, delay := range []time.Duration{0, 300 * time.Millisecond} {
		t.Run(fmt.Sprint("StartDelay=", delay), func(t *testing.T) {
			s := Start(t, Options{Specs: specs, StartDelay: delay, Quota: Quota{CPU: 4},
				FailStart: map[string]string{"broken-snap": "error", "broken:1": "build_failed"}})
			c := client(t, s)
			for _, tc := range []struct {
				params      any
				label, want string
				// wantStatus is the SDK error's status: the API's 400 for a
				// snapshot that fails within its wait, 0 for the SDK's own
				// verdict on the state.
				wantStatus int
			}{
				{types.SnapshotParams{Snapshot: "broken-snap", SandboxBaseParams: types.SandboxBaseParams{Labels: map[string]string{"t": "snap"}}}, "snap", "error", 400},
				{types.ImageParams{Image: "broken:1", SandboxBaseParams: types.SandboxBaseParams{Labels: map[string]string{"t": "img"}}}, "img", "build_failed", 0},
			} {
				var err error
				switch p := tc.params.(type) {
				case types.SnapshotParams:
					_, err = c.Create(ctx(t), p)
				case types.ImageParams:
					_, err = c.Create(ctx(t), p)
				}
				wantStatus := tc.wantStatus
				if delay > 0 {
					wantStatus = 0 // the failure is seen by polling
				}
				if err == nil || !strings.HasPrefix(message(err), "Sandbox failed to start") || statusOf(err) != wantStatus {
					t.Fatalf("%s: %v (status %d), want \"Sandbox failed to start\" with status %d", tc.label, err, statusOf(err), wantStatus)
				}
				page, err := c.List(ctx(t), map[string]string{"t": tc.label}, nil, nil)
				if err != nil || page.Total != 1 || string(page.Items[0].State) != tc.want {
					t.Fatalf("%s: listed %+v, %v", tc.label, page, err)
				}
				sb := page.Items[0]
				if m := rawSandbox(t, s, sb.ID); m["errorReason"] != failReasons[tc.want] {
					t.Fatalf("%s: errorReason %v", tc.label, m["errorReason"])
				}
				if u := s.Usage(); u.CPU != 0 {
					t.Fatalf("%s: a failed sandbox holds %+v", tc.label, u)
				}
				if err := sb.Delete(ctx(t)); err != nil {
					t.Fatalf("%s: delete: %v", tc.label, err)
				}
				if _, err := c.Get(ctx(t), sb.ID); !isNotFound(err) {
					t.Fatalf("%s: get after delete: %v", tc.label, err)
				}
				if page, err := c.List(ctx(t), map[string]string{"t": tc.label}, nil, nil); err != nil || page.Total != 0 {
					t.Fatalf("%s: listed after delete: %+v, %v", tc.label, page, err)
				}
			}
			if delay > 0 && s.Calls(OpGetSandbox) == 0 {
				t.Fatal("the SDK never polled")
			}
			// While creating, a sandbox that will fail holds its quota.
			if delay > 0 && s.PeakUsage().CPU != 1 {
				t.Fatalf("peak usage %+v", s.PeakUsage())
			}
			deleteAll(t, s, c)
		})
	}
}

func TestToolboxWarmupAnswers502(t *testing.T) {
	const warmup = 2 * time.Second
	s := Start(t, Options{Specs: specs, ToolboxWarmup: warmup})
	c := client(t, s)
	sb := create(t, c, "warm")
	started := time.Now()
	_, err := sb.GetUserHomeDir(ctx(t))
	if time.Since(started) < warmup {
		if statusOf(err) != 502 {
			t.Fatalf("toolbox during warm-up: %v, want 502", err)
		}
		if _, err := sb.Process.ExecuteCommand(ctx(t), "true"); statusOf(err) != 502 {
			t.Fatalf("execute during warm-up: %v, want 502", err)
		}
	} else {
		t.Logf("the machine is slow: %v passed; not checking the warm-up", time.Since(started))
	}
	WaitFor(t, "the toolbox answers", func() bool {
		_, err := sb.GetUserHomeDir(ctx(t))
		return err == nil
	})
	if r, err := sb.Process.ExecuteCommand(ctx(t), "echo ok"); err != nil || strings.TrimSpace(r.Result) != "ok" {
		t.Fatalf("after warm-up: %+v, %v", r, err)
	}
	n502 := 0
	for _, call := range s.CallLog() {
		if call.Status == 502 {
			n502++
		}
	}
	if time.Since(started) < warmup && n502 == 0 {
		t.Fatal("no 502 in the call log")
	}
	deleteAll(t, s, c)
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
