package daytona

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"

	"github.com/forge-run/forge/internal/testkit/wait"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// shortHTTP stands for the SDK's 60 s HTTP timeout, shortened.
func shortHTTP() *http.Client { return &http.Client{Timeout: time.Second} }

func TestExecuteOutlivesTheHTTPTimeout(t *testing.T) {
	// Only the log stream tells the job that its candidate ended.
	e := newEnv(t, daytonatest.Options{}, func(o *Options) { o.ToolboxHTTPClient = shortHTTP() })

	// The premise: one synchronous toolbox call cannot outlive the client's
	// timeout.
	c, err := sdk.NewClientWithConfig(&types.DaytonaConfig{APIKey: e.opts.APIKey, APIUrl: e.opts.APIURL})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := c.Create(context.Background(), types.SnapshotParams{})
	if err != nil {
		t.Fatal(err)
	}
	sb.ToolboxClient.GetConfig().HTTPClient = shortHTTP()
	if _, err := sb.Process.ExecuteCommand(context.Background(), "sleep 3"); err == nil {
		t.Fatal("a 3 s synchronous command outlived a 1 s HTTP timeout; the test proves nothing")
	}
	if err := sb.Delete(context.Background()); err != nil {
		t.Fatal(err)
	}

	// A candidate running three times as long as the HTTP timeout.
	res := e.run(e.shJob("long", "echo begin; sleep 3; echo end; echo done > \"$2\"\n"))
	if !res.Success || res.Output != "begin\nend\n" {
		t.Fatalf("%s %q: %q", res.ErrorKind, res.ErrorMessage, res.Output)
	}
	if res.Phases.Execute < 3 {
		t.Errorf("execute phase %.2fs, the candidate slept 3 s", res.Phases.Execute)
	}
	// One stream carried the end and the exit status, over one connection
	// that outlived the HTTP timeout; nothing was polled.
	var streams []daytonatest.Call
	wait.For(t, "the stream to be logged", 20*time.Second, func() bool {
		streams = nil
		for _, c := range e.srv.CallLog() {
			if c.Op == daytonatest.OpSessionLogsStream {
				streams = append(streams, c)
			}
		}
		return len(streams) >= 1
	})
	if len(streams) != 1 || streams[0].Status != http.StatusSwitchingProtocols || streams[0].End.Sub(streams[0].Start) < 3*time.Second {
		t.Errorf("log streams %+v", streams)
	}
	if n := e.srv.Calls(daytonatest.OpSessionCommand); n != 0 {
		t.Errorf("%d polls of the command", n)
	}
}

// streamCalls lists the faults the log stream calls met, once n of them
// are logged (the emulator logs a stream when it is done with it, which
// may be after the job saw its end).
func streamCalls(t *testing.T, srv *daytonatest.Server, n int) []string {
	t.Helper()
	var out []string
	wait.For(t, "the streams to be logged", 20*time.Second, func() bool {
		out = nil
		for _, c := range srv.CallLog() {
			if c.Op == daytonatest.OpSessionLogsStream {
				out = append(out, fmt.Sprintf("%s:%d", c.Fault, c.Status))
			}
		}
		return len(out) >= n
	})
	return out
}

// A toolbox that refuses the stream (an old daemon, a proxy without
// WebSocket) costs one warning and nothing else: each command is polled,
// and its log read for forge.sh's report.
func TestRefusedStreamFallsBackToPolling(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	e.srv.Inject(daytonatest.OpSessionLogsStream, daytonatest.Fault{Status: http.StatusNotFound, Times: 100})
	for i := range 3 {
		res := e.run(e.shJob(fmt.Sprintf("p%d", i), "echo polled; echo done > \"$2\"\n"))
		if !res.Success || res.Output != "polled\n" || res.ArtifactContent != "done\n" {
			t.Fatalf("%d: %s %q %q", i, res.ErrorKind, res.ErrorMessage, res.Output)
		}
	}
	if got := streamCalls(t, e.srv, 3); len(got) != 3 || got[0] != "404:404" {
		t.Errorf("stream calls %v, want 3 refused", got)
	}
	if n := strings.Count(e.warn.String(), "cannot open a command's log stream"); n != 1 {
		t.Errorf("%d warnings:\n%s", n, e.warn.String())
	}
	if n, m := e.srv.Calls(daytonatest.OpSessionLogs), e.srv.Calls(daytonatest.OpExecute); n != 3 || m != 0 {
		t.Errorf("%d logs read, %d other commands; want 3 and 0", n, m)
	}
}

// A stream cut mid-run (no close frame) turns into polling at once.
func TestDroppedStreamFallsBackToPolling(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	e.srv.Inject(daytonatest.OpSessionLogsStream, daytonatest.Fault{Drop: true})
	res := e.run(e.shJob("drop", "echo before; sleep 1; echo after; echo done > \"$2\"\n"))
	if !res.Success || res.Output != "before\nafter\n" {
		t.Fatalf("%s %q %q", res.ErrorKind, res.ErrorMessage, res.Output)
	}
	if got := streamCalls(t, e.srv, 1); len(got) != 1 || got[0] != "drop:101" {
		t.Errorf("stream calls %v", got)
	}
	if e.warn.String() != "" {
		t.Errorf("a dropped stream is not worth a warning: %s", e.warn.String())
	}
}

// A stream that goes silent (a half-open connection) costs time, not the
// trial: at the command's timeout one poll finds it over.
func TestStalledStreamCostsTimeNotTheTrial(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	e.srv.Inject(daytonatest.OpSessionLogsStream, daytonatest.Fault{Stall: true})
	job := e.shJob("stall", "echo quick; echo done > \"$2\"\n")
	job.Timeout = 2 * time.Second
	res := e.run(job)
	if !res.Success || res.Output != "quick\n" {
		t.Fatalf("%s %q %q", res.ErrorKind, res.ErrorMessage, res.Output)
	}
	if got := streamCalls(t, e.srv, 1); len(got) != 1 || got[0] != "stall:101" {
		t.Errorf("stream calls %v", got)
	}
	if n, m := e.srv.Calls(daytonatest.OpSessionCommand), e.srv.Calls(daytonatest.OpDeleteSession); n != 1 || m != 0 {
		t.Errorf("%d polls, %d sessions killed; want 1 and 0", n, m)
	}
}

// With the stream, the outputs come back with the end of the command:
// nothing is polled, no command measures them and nothing is downloaded,
// however big they are within their caps.
func TestOutputsComeWithTheEnd(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	small := e.run(e.shJob("small", "echo out; echo err >&2; printf 'a\\377b' > \"$2\"; echo '{\"n\": 2}' > \"$FORGE_RESULT\"\n"))
	if !small.Success || small.Output != "out\n" || small.Stderr != "err\n" || string(small.Artifact) != "a\xffb" || small.Submitted["n"] != 2.0 {
		t.Fatalf("%s %q %q %q %q %v", small.ErrorKind, small.ErrorMessage, small.Output, small.Stderr, small.Artifact, small.Submitted)
	}
	size := 300 << 10
	big := e.run(e.shJob("big", fmt.Sprintf("echo out; head -c %d /dev/zero | tr '\\000' x > \"$2\"\n", size)))
	if !big.Success || big.ArtifactBytes != int64(size) || big.ArtifactContent != strings.Repeat("x", size) || big.Output != "out\n" {
		t.Fatalf("%s %q %d", big.ErrorKind, big.ErrorMessage, big.ArtifactBytes)
	}
	for _, op := range []string{daytonatest.OpExecute, daytonatest.OpDownloadFile, daytonatest.OpSessionCommand, daytonatest.OpSessionLogs} {
		if n := e.srv.Calls(op); n != 0 {
			t.Errorf("%d calls of %s", n, op)
		}
	}
}

// The exit status comes with the end (forge.sh exits with the status it
// reports: TestForgeShExitsWithTheStatusItReports).
func TestExitStatusComesWithTheEnd(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	for _, c := range []struct {
		script string
		want   int
	}{
		{"echo done > \"$2\"; exit 3\n", 3},
		{"echo done > \"$2\"; kill -9 $$\n", 137},
	} {
		res := e.run(e.shJob(fmt.Sprintf("x%d", c.want), c.script))
		if res.ExitCode == nil || *res.ExitCode != c.want || res.ErrorKind != runner.ErrCandidateFailed {
			t.Errorf("%q: exit %v, %s %q", c.script, res.ExitCode, res.ErrorKind, res.ErrorMessage)
		}
	}
	if n := e.srv.Calls(daytonatest.OpSessionCommand); n != 0 {
		t.Errorf("%d polls", n)
	}
}

// A sandbox without base64 reports its outputs in hex (od).
func TestSandboxWithoutBase64(t *testing.T) {
	bin := toolsWithout(t, "base64")
	e := newEnv(t, daytonatest.Options{Shared: []string{bin}}, func(o *Options) { o.Env = map[string]string{"PATH": bin} })
	res := e.run(e.shJob("nob64", "echo out; printf 'a\\377b' > \"$2\"\n"))
	if !res.Success || res.Output != "out\n" || string(res.Artifact) != "a\xffb" {
		t.Fatalf("%s %q %q %q", res.ErrorKind, res.ErrorMessage, res.Output, res.Artifact)
	}
	if n, m := e.srv.Calls(daytonatest.OpExecute), e.srv.Calls(daytonatest.OpDownloadFile); n != 0 || m != 0 {
		t.Errorf("%d other commands, %d downloads", n, m)
	}
}

func TestExecuteTimeoutKillsTheCandidate(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	job := e.shJob("slow", "echo started; echo $$ > pid; sleep 30; echo never > \"$2\"\n")
	job.Timeout = time.Second
	res := e.run(job)
	if res.ErrorKind != runner.ErrTimeout || res.ErrorMessage != "timed out after 1s" || res.ExitCode != nil {
		t.Fatalf("%s %q exit %v", res.ErrorKind, res.ErrorMessage, res.ExitCode)
	}
	if res.Output != "started\n" {
		t.Errorf("partial output = %q", res.Output)
	}
	if e.srv.Calls(daytonatest.OpDeleteSession) != 1 {
		t.Errorf("the timed-out command's session was not killed (%d deletes)", e.srv.Calls(daytonatest.OpDeleteSession))
	}
	b, err := os.ReadFile(filepath.Join(e.srv.Sandboxes()[0].Home, "forge", "slow", "pid"))
	if err != nil {
		t.Fatal(err)
	}
	// The pid as the sandbox numbers it.
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	wait.For(t, "the candidate to be gone", 20*time.Second, func() bool { return !e.srv.Alive(e.srv.Sandboxes()[0].ID, pid) })
	wait.For(t, "the emulator to see no process running", 20*time.Second, func() bool { return e.srv.Running() == 0 })
}

func TestCancelMidRunDeletesEverySandbox(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	jobs := e.shJobs(3, "s%d", "sleep 30\n")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var res []runner.Result
	var errs []error
	go func() {
		res, errs = e.runAll(ctx, 3, jobs)
		close(done)
	}()
	wait.For(t, "three candidates to run", 20*time.Second, func() bool { return e.srv.Running() == 3 })
	cancel()
	<-done
	for i := range jobs {
		if errs[i] != nil || res[i].ErrorKind != runner.ErrCancelled || res[i].Phases.Cleanup <= 0 {
			t.Errorf("%s: %v %s %+v", jobs[i].CandidateID, errs[i], res[i].ErrorKind, res[i].Phases)
		}
	}
	if n := e.srv.LiveCount(); n != 0 {
		t.Fatalf("after cancel: %d live sandboxes", n)
	}
	// Like the real service, the emulator kills a deleted sandbox's
	// processes as it tears it down, just after answering the delete.
	wait.For(t, "the deleted sandboxes' processes to end", 20*time.Second, func() bool { return e.srv.Running() == 0 })
}

func TestFiftyCandidatesStayWithinConcurrency(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	jobs := e.shJobs(50, "c%02d", "echo \"$FORGE_CANDIDATE_ID\" > \"$2\"\n")
	res, errs := e.runAll(context.Background(), 8, jobs)
	for i := range jobs {
		if errs[i] != nil || !res[i].Success || res[i].ArtifactContent != jobs[i].CandidateID+"\n" {
			t.Fatalf("%s: %v %s %q", jobs[i].CandidateID, errs[i], res[i].ErrorKind, res[i].ErrorMessage)
		}
	}
	if n := len(e.srv.Sandboxes()); n != 50 {
		t.Errorf("%d sandboxes created, want 50", n)
	}
	if e.srv.LiveCount() != 0 || e.srv.PeakLive() > 8 {
		t.Errorf("live %d, peak %d (concurrency 8)", e.srv.LiveCount(), e.srv.PeakLive())
	}
}

func TestSetup(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	ok := e.shJob("ok", "cat made.txt > \"$2\"\n")
	ok.Setup = []string{"echo installing", "printf 'from setup' > made.txt"}
	ok.Files = append(ok.Files, runner.File{Src: e.file("empty", ""), Dst: "e/empty"})
	res := e.run(ok)
	if !res.Success || res.ArtifactContent != "from setup" || res.Phases.Setup <= 0 {
		t.Fatalf("%s %q %q %+v", res.ErrorKind, res.ErrorMessage, res.ArtifactContent, res.Phases)
	}

	bad := e.shJob("bad", "echo ran > \"$2\"\n")
	// The same setup and the same record as runner/local's
	// TestRunSetupFailureSkipsCandidate and TestRunSetupTimeout
	// (runner.Result.SetupFailed).
	bad.Setup = []string{"echo installing", "echo 'ERROR: No matching distribution found for nosuchpkg' >&2; exit 3", "echo unreachable"}
	res = e.run(bad)
	if res.Success || res.ErrorKind != runner.ErrCandidateFailed || res.ErrorMessage != "setup failed: ERROR: No matching distribution found for nosuchpkg" {
		t.Fatalf("%s %q", res.ErrorKind, res.ErrorMessage)
	}
	if !strings.Contains(res.Stderr, "+ echo installing") || strings.Contains(res.Stderr, "unreachable") || res.Phases.Execute != 0 {
		t.Errorf("setup log %q, phases %+v", res.Stderr, res.Phases)
	}

	slow := e.shJob("slowsetup", "echo ran > \"$2\"\n")
	slow.Setup = []string{"echo waiting >&2; exec sleep 600"}
	slow.SetupTimeout = time.Second
	res = e.run(slow)
	if res.ErrorKind != runner.ErrCandidateFailed || res.ErrorMessage != "setup failed: timed out after 1s: waiting" {
		t.Fatalf("%s %q", res.ErrorKind, res.ErrorMessage)
	}

	silent := e.shJob("silentsetup", "echo ran > \"$2\"\n")
	silent.Setup = []string{"exit 4"}
	res = e.run(silent)
	if res.ErrorKind != runner.ErrCandidateFailed || res.ErrorMessage != "setup failed: exit status 4" {
		t.Fatalf("%s %q", res.ErrorKind, res.ErrorMessage)
	}
}

func TestArtifacts(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	empty := e.run(e.shJob("empty", ": > \"$2\"\n"))
	if !empty.Success || empty.ArtifactContent != "" || empty.ArtifactBytes != 0 {
		t.Errorf("zero-byte artifact: %s %q", empty.ErrorKind, empty.ErrorMessage)
	}
	target := filepath.Join(t.TempDir(), "target") // outside the sandbox, removed with the test
	link := e.run(e.shJob("link", fmt.Sprintf("echo secret > '%s'; ln -s '%s' \"$2\"\n", target, target)))
	if link.ErrorKind != runner.ErrArtifactMissing || !strings.Contains(link.ErrorMessage, "symlink") {
		t.Errorf("symlinked artifact: %s %q", link.ErrorKind, link.ErrorMessage)
	}
	big := e.shJob("big", "head -c 5000 /dev/zero | tr '\\000' a; head -c 3000 /dev/zero | tr '\\000' b > \"$2\"; printf '\\377\\376' >> \"$2\"; echo '{\"n\": 1' > \"$FORGE_RESULT\"\n")
	big.Limits = runner.Limits{MaxOutputBytes: 1000, MaxArtifactBytes: 2000}
	res := e.run(big)
	if !res.Success || len(res.Output) != 1000 || !res.OutputTruncated {
		t.Errorf("capped output: %s %d %v", res.ErrorKind, len(res.Output), res.OutputTruncated)
	}
	if !res.ArtifactTruncated || res.ArtifactBytes != 3002 || len(res.Artifact) != 2000 {
		t.Errorf("capped artifact: %v %d %d", res.ArtifactTruncated, res.ArtifactBytes, len(res.Artifact))
	}
	if res.Submitted != nil || !strings.Contains(res.SubmitError, "not a JSON object") {
		t.Errorf("bad FORGE_RESULT: %v %q", res.Submitted, res.SubmitError)
	}
	bin := e.run(e.shJob("bin", "printf 'a\\377b' > \"$2\"\n"))
	if !bin.Success || bin.ArtifactEncoding != "base64" || string(bin.Artifact) != "a\xffb" {
		t.Errorf("binary artifact: %q %q", bin.ArtifactEncoding, bin.Artifact)
	}
}

func TestVolumePersistsAcrossRuns(t *testing.T) {
	e := newEnv(t, daytonatest.Options{VolumeReadyDelay: 300 * time.Millisecond}, func(o *Options) {
		o.Volume = &Volume{Name: "forge-data"}
	})
	job := e.shJob("mem", "n=$(cat \"$HOME/memory/count\" 2>/dev/null || echo 0); echo $((n+1)) > \"$HOME/memory/count\"; cat \"$HOME/memory/count\" > \"$2\"\n")
	first := e.run(job)
	second := e.run(job)
	if first.ArtifactContent != "1\n" || second.ArtifactContent != "2\n" {
		t.Fatalf("counts %q %q (%s %s)", first.ArtifactContent, second.ArtifactContent, first.ErrorMessage, second.ErrorMessage)
	}
	if b, err := e.srv.VolumeFile("forge-data", "count"); err != nil || string(b) != "2\n" {
		t.Fatalf("volume holds %q, %v", b, err)
	}
	for _, sb := range e.srv.Sandboxes() {
		if len(sb.Volumes) != 1 || sb.Volumes[0].MountPath != "/home/daytona/memory" {
			t.Errorf("mounts %+v", sb.Volumes)
		}
	}
	// A second Runner finds the volume instead of creating another.
	r2, err := New(context.Background(), e.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := r2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.srv.Calls(daytonatest.OpCreateVolume); n != 1 {
		t.Errorf("%d volume creations", n)
	}
}

func TestUnreachableAPIIsUnusable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/api"
	l.Close()
	warn := &syncBuffer{}
	r, err := New(context.Background(), Options{
		APIKey: "k", APIURL: url, RunID: "r", Warn: warn,
		Retry: Retry{Initial: time.Millisecond, Max: 5 * time.Millisecond, Tries: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	res, err := r.Run(context.Background(), runner.Job{RunID: "r", CandidateID: "x", Trial: 1, Command: []string{"true"}})
	var ue *runner.UnusableError
	if !errors.As(err, &ue) || ue.Kind != runner.ErrInfra || !strings.Contains(ue.Error(), "cannot reach the Daytona API") {
		t.Fatalf("err = %v", err)
	}
	if res.ErrorKind != runner.ErrInfra {
		t.Errorf("kind %s", res.ErrorKind)
	}
	if strings.Count(warn.String(), "retrying") != 2 {
		t.Errorf("retries: %s", warn.String())
	}
}

func TestDoctor(t *testing.T) {
	srv := daytonatest.Start(t, daytonatest.Options{Specs: specs})
	c, err := sdk.NewClientWithConfig(&types.DaytonaConfig{APIKey: srv.APIKey(), APIUrl: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"forge-env-00000000000000aa", "mine"} {
		_, logs, err := c.Snapshot.Create(context.Background(), &types.CreateSnapshotParams{Name: name, Image: sdk.Base("python:3.12-slim")})
		if err != nil {
			t.Fatal(err)
		}
		for range logs {
		}
	}
	var out strings.Builder
	err = Doctor(context.Background(), Options{APIKey: srv.APIKey(), APIURL: srv.URL()}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"create", "upload", "execute", "download", "verify", "delete", "daytona: ok",
		"daytona: verifier: a reward directory of its own, in a private mount namespace",
		"daytona: snapshots: 2 in the account, 1 of them forge's environments (forge-env-*): 1 active"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out.String())
		}
	}
	// The total is the job's: no less than its phases together.
	var phases, total float64
	for _, line := range strings.Split(out.String(), "\n") {
		var name string
		var s float64
		if n, _ := fmt.Sscanf(line, "  %s %fs", &name, &s); n == 2 {
			if name == "total" {
				total = s
			} else {
				phases += s
			}
		}
	}
	if phases == 0 || total < phases-0.002 {
		t.Errorf("doctor's total %.3fs is less than its phases' %.3fs:\n%s", total, phases, out.String())
	}
	if srv.LiveCount() != 0 || len(srv.Sandboxes()) != 1 || srv.Sandboxes()[0].Labels["forge-doctor"] != "1" {
		t.Errorf("doctor's sandbox: %+v", srv.Sandboxes())
	}

	srv.SetAPIKey("rotated")
	out.Reset()
	err = Doctor(context.Background(), Options{APIKey: "stale-key", APIURL: srv.URL()}, &out)
	var ue *runner.UnusableError
	if !errors.As(err, &ue) || ue.Kind != runner.ErrAuth || strings.Contains(err.Error()+out.String(), "stale-key") {
		t.Fatalf("bad key: %v\n%s", err, out.String())
	}
}

// Doctor says when the sandbox allows its verifier no mount namespace of
// its own: a snapshot without unshare.
func TestDoctorWithoutNamespaces(t *testing.T) {
	if !daytonatest.RootFS() {
		t.Fatal("the emulator gives sandboxes no root file system of their own here (it needs root and overlayfs): an image without unshare cannot be emulated")
	}
	srv := daytonatest.Start(t, daytonatest.Options{Specs: specs})
	c, err := sdk.NewClientWithConfig(&types.DaytonaConfig{APIKey: srv.APIKey(), APIUrl: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	img := sdk.Base("python:3.12-slim").Run("rm -f /usr/bin/unshare /usr/sbin/unshare")
	_, logs, err := c.Snapshot.Create(context.Background(), &types.CreateSnapshotParams{Name: "bare", Image: img})
	if err != nil {
		t.Fatal(err)
	}
	for range logs {
	}
	var out strings.Builder
	if err := Doctor(context.Background(), Options{APIKey: srv.APIKey(), APIURL: srv.URL(), Snapshot: "bare"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if want := "daytona: verifier: this sandbox allows no private mount namespace"; !strings.Contains(out.String(), want) {
		t.Errorf("doctor output lacks %q:\n%s", want, out.String())
	}
}

// The options the SDK is given are honoured on the wire.
func TestSandboxParameters(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, func(o *Options) {
		o.Image, o.CPU, o.MemoryGB, o.DiskGB = "python:3.12", 2, 4, 8
		o.NetworkBlockAll, o.AutoStopMinutes = true, 30
		o.Labels = map[string]string{"team": "ml", LabelApp: "not-forge"}
	})
	e.run(e.shJob("p", "echo > \"$2\"\n"))
	sb := e.srv.Sandboxes()[0]
	if sb.Image != "python:3.12" || sb.CPU != 2 || sb.Memory != 4 || sb.Disk != 8 || !sb.NetworkBlockAll || sb.AutoStopInterval != 30 {
		t.Errorf("sandbox %+v", sb)
	}
	if sb.Labels["team"] != "ml" || sb.Labels[LabelApp] != LabelAppValue {
		t.Errorf("labels %v", sb.Labels)
	}
}

// Resources without an image (the manifest's defaults with the default
// snapshot) are left out, with a warning, instead of a 400 from the API.
func TestResourcesWithoutAnImage(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, func(o *Options) { o.CPU, o.MemoryGB, o.DiskGB = 1, 1, 3 })
	res := e.run(e.shJob("r", "echo > \"$2\"\n"))
	if !res.Success {
		t.Fatalf("%s %s", res.ErrorKind, res.ErrorMessage)
	}
	if !strings.Contains(e.warn.String(), "apply only with an image") {
		t.Errorf("no warning: %s", e.warn.String())
	}
}

// A job cancelled while its timed-out command's session is being killed
// stops the kill: its sandbox, deleted next, ends the command anyway.
func TestCancelDuringKillStopsIt(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	e.srv.Inject(daytonatest.OpDeleteSession, daytonatest.Fault{Hang: true, Times: 100})
	job := e.shJob("kill", "sleep 30; echo never > \"$2\"\n")
	job.Timeout = time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan runner.Result, 1)
	go func() {
		res, _ := e.r.Run(ctx, job)
		done <- res
	}()
	wait.For(t, "the timed-out command to be polled", 20*time.Second, func() bool { return e.srv.Calls(daytonatest.OpSessionCommand) > 0 })
	cancel()
	res := <-done
	if res.ErrorKind != runner.ErrCancelled {
		t.Errorf("%s %q", res.ErrorKind, res.ErrorMessage)
	}
	if strings.Contains(e.warn.String(), "could not kill") {
		t.Errorf("the kill ran on past the cancellation: %s", e.warn.String())
	}
	if n := e.srv.LiveCount(); n != 0 {
		t.Errorf("%d sandboxes left", n)
	}
}
