//go:build linux

package local

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local/localtest"
)

// runDeadline fails a test whose Run does not return: Run must never hang.
const runDeadline = 90 * time.Second

// python is the interpreter the tests' candidates run with (localtest.Python).
var python = sync.OnceValues(localtest.Python)

func pythonPath(t *testing.T) string {
	t.Helper()
	p, err := python()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var runSeq atomic.Int64

// newRunID is unique per call so that localtest.Survivors looks only at
// this test's processes.
func newRunID(t *testing.T) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("test-%s-%d-%d", name, os.Getpid(), runSeq.Add(1))
}

// newRunner makes a Runner whose working directories go to a fresh
// t.TempDir().
func newRunner(t *testing.T, opts Options) *Runner {
	t.Helper()
	if opts.TempDir == "" {
		opts.TempDir = localtest.TempDir(t)
	}
	r, err := New(opts)
	if err != nil {
		t.Fatalf("New(%+v): %v", opts, err)
	}
	t.Cleanup(func() { r.Close() }) // before the temp dir's own cleanup
	return r
}

// tierRunner makes a Runner with the named containment. A tier this
// machine must offer (mustOffer) fails the test when it is missing; another
// is skipped.
func tierRunner(t *testing.T, tier Containment, opts Options) *Runner {
	t.Helper()
	opts.Containment = tier
	opts.TempDir = localtest.TempDir(t)
	r, err := New(opts)
	if err != nil {
		missingTier(t, tier, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

var tiers = []Containment{ContainPIDNamespace, ContainCgroup, ContainProcessGroup}

// eachTier runs test in parallel for each of tiers, with a Runner of that
// tier made with opts.
func eachTier(t *testing.T, opts Options, test func(t *testing.T, r *Runner)) {
	t.Parallel()
	for _, tier := range tiers {
		t.Run(string(tier), func(t *testing.T) {
			t.Parallel()
			test(t, tierRunner(t, tier, opts))
		})
	}
}

// bestEffort is the environment variable that lets the containment tests
// skip tiers a machine lacks although it runs them as root on Linux (a
// container without CAP_SYS_ADMIN, a kernel without cgroup v2).
const bestEffort = "FORGE_TEST_CONTAINMENT=best-effort"

// mustOffer says whether this machine must offer tier: as root on Linux,
// the PID namespace and cgroup tiers (and with them a pids limit), unless
// the tests run with bestEffort in the environment.
func mustOffer(tier Containment) bool {
	k, v, _ := strings.Cut(bestEffort, "=")
	if runtime.GOOS != "linux" || os.Geteuid() != 0 || os.Getenv(k) == v {
		return false
	}
	return tier == ContainPIDNamespace || tier == ContainCgroup
}

// missingTier fails the test when the machine must offer tier, and skips
// it otherwise.
func missingTier(t *testing.T, tier Containment, why any) {
	t.Helper()
	if mustOffer(tier) {
		t.Fatalf("containment %s is missing although this is Linux as root: %v (set %s to skip instead)", tier, why, bestEffort)
	}
	t.Skipf("containment %s is not available here: %v", tier, why)
}

// pyJob is a job whose candidate is the Python script src.
func pyJob(t *testing.T, id, src string) runner.Job {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, id+".py")
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return runner.Job{
		RunID:       newRunID(t),
		CandidateID: id,
		Trial:       1,
		Objective:   "Generate weekly AI events",
		Command:     []string{pythonPath(t), id + ".py"},
		Files:       []runner.File{{Src: script, Dst: id + ".py"}},
		Timeout:     60 * time.Second,
	}
}

// run calls r.Run and fails the test if it does not return in time.
func run(t *testing.T, ctx context.Context, r *Runner, job runner.Job) (runner.Result, error) {
	t.Helper()
	type out struct {
		res runner.Result
		err error
	}
	c := make(chan out, 1)
	go func() {
		res, err := r.Run(ctx, job)
		c <- out{res, err}
	}()
	select {
	case o := <-c:
		return o.res, o.err
	case <-time.After(runDeadline):
		t.Fatalf("Run of %s did not return within %s", job.Name(), runDeadline)
		return runner.Result{}, nil
	}
}

// mustRun runs job and fails the test if Run returns an error.
func mustRun(t *testing.T, r *Runner, job runner.Job) runner.Result {
	t.Helper()
	res, err := run(t, context.Background(), r, job)
	if err != nil {
		t.Fatalf("Run(%s) returned error %v; result %+v", job.Name(), err, res)
	}
	return res
}

func assertNoSurvivors(t *testing.T, runID string) {
	t.Helper()
	if pids := localtest.Survivors(runID); len(pids) != 0 {
		t.Errorf("processes of run %s still alive after Run returned: %v", runID, pids)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL) // do not leave them to the next test
		}
	}
}

func assertKind(t *testing.T, res runner.Result, kind runner.ErrorKind) {
	t.Helper()
	if res.ErrorKind != kind || res.Success != (kind == runner.ErrNone) {
		t.Fatalf("error kind %q (success %v, message %q), want %q\nstdout: %.500s\nstderr: %.2000s",
			res.ErrorKind, res.Success, res.ErrorMessage, kind, res.Output, res.Stderr)
	}
}

// mkfifo makes a named pipe in a fresh temp dir, for any user.
func mkfifo(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(localtest.SharedDir(t), name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatalf("mkfifo %s: %v", p, err)
	}
	if err := os.Chmod(p, 0o666); err != nil { // whoever the candidate runs as
		t.Fatal(err)
	}
	return p
}

// readyFifo makes a named pipe that a candidate writes lines to, opened for
// reading (O_RDWR, so it never reads EOF before the candidate opens it).
func readyFifo(t *testing.T) (string, *bufio.Reader, *os.File) {
	t.Helper()
	p := mkfifo(t, "ready.fifo")
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return p, bufio.NewReader(f), f
}

// waitLine reads one line from a fifo opened by readyFifo, failing the test
// when none comes within d.
func waitLine(t *testing.T, f *os.File, br *bufio.Reader, d time.Duration) string {
	t.Helper()
	if err := f.SetReadDeadline(time.Now().Add(d)); err != nil {
		t.Fatal(err)
	}
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("waiting for the candidate's line: %v (got %q)", err, line)
	}
	return strings.TrimSpace(line)
}

// leftovers lists what Run left in dir (working directories must go).
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
