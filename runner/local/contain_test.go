//go:build linux

package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/testkit/wait"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local/localtest"
)

// openDaemonFifo makes the fifo a daemon writes to, opened for reading
// before the daemon starts so its open does not block.
func openDaemonFifo(t *testing.T) (string, *os.File) {
	t.Helper()
	p := mkfifo(t, "daemon.fifo")
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return p, f
}

// assertDaemonGone reads the daemon's fifo: "alive" proves it existed, EOF
// proves nothing holds the fifo any more, i.e. the daemon is dead.
func assertDaemonGone(t *testing.T, f *os.File) {
	t.Helper()
	if err := f.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the daemon still holds its fifo open after Run returned (read %q)", b)
	}
	if err != nil || string(b) != "alive\n" {
		t.Fatalf("fifo read %q, %v: want \"alive\\n\" then EOF (did the daemon run at all?)", b, err)
	}
}

func TestRunLeavesNoDaemon(t *testing.T) {
	eachTier(t, Options{}, func(t *testing.T, r *Runner) {
		fifo, f := openDaemonFifo(t)
		job := pyJob(t, "daemon", daemonScript)
		job.Env = map[string]string{"DAEMON_FIFO": fifo}
		res := mustRun(t, r, job)
		assertKind(t, res, runner.ErrNone)
		if !strings.Contains(res.Output, "daemon running") {
			t.Errorf("output %q: the daemon should have held stdout", res.Output)
		}
		assertDaemonGone(t, f)
		assertNoSurvivors(t, job.RunID)
	})
}

func TestRunCancelledMidRun(t *testing.T) {
	eachTier(t, Options{KillGrace: 5 * time.Second}, func(t *testing.T, r *Runner) {
		fifo, f := openDaemonFifo(t)
		ready, br, rf := readyFifo(t)
		job := pyJob(t, "cancelme", daemonScript)
		job.Env = map[string]string{"DAEMON_FIFO": fifo, "READY_FIFO": ready}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			// Cancel once the candidate says it is ready (or never, if it
			// does not, and the Run deadline fails the test).
			if err := rf.SetReadDeadline(time.Now().Add(runDeadline)); err == nil {
				if line, err := br.ReadString('\n'); err == nil && strings.TrimSpace(line) == "ready" {
					cancel()
				}
			}
		}()
		res, err := run(t, ctx, r, job)
		if err != nil {
			t.Fatal(err)
		}
		assertKind(t, res, runner.ErrCancelled)
		if res.ExitCode != nil {
			t.Errorf("exit code %d for a candidate ended by SIGTERM", *res.ExitCode)
		}
		assertDaemonGone(t, f)
		assertNoSurvivors(t, job.RunID)
	})
}

func TestRunTimeoutKillsWhatIgnoresSIGTERM(t *testing.T) {
	eachTier(t, Options{KillGrace: 300 * time.Millisecond}, func(t *testing.T, r *Runner) {
		job := pyJob(t, "stubborn", `
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c",
    "import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('child up', flush=True)\ntime.sleep(600)"],
    stdout=subprocess.PIPE)
child.stdout.readline()
print("ready", flush=True)
time.sleep(600)
`)
		job.Timeout = 5 * time.Second
		res := mustRun(t, r, job)
		assertKind(t, res, runner.ErrTimeout)
		if res.ErrorMessage != "timed out after 5s" || res.ExitCode != nil {
			t.Errorf("message %q exit %v", res.ErrorMessage, res.ExitCode)
		}
		// A timed-out candidate ran for its timeout (as on Daytona); the
		// job also waited out the grace period.
		if res.RuntimeSeconds != 5 || res.JobSeconds < res.RuntimeSeconds {
			t.Errorf("runtime %.3fs, job %.3fs; want 5s and at least that", res.RuntimeSeconds, res.JobSeconds)
		}
		if res.Output != "ready\n" {
			t.Fatalf("output %q: the candidate did not get to start its child within the timeout, the test proves nothing", res.Output)
		}
		assertNoSurvivors(t, job.RunID)
	})
}

func TestRunTimeoutSendsSIGTERMToEveryProcess(t *testing.T) {
	// A long grace: SIGTERM, not the SIGKILL after it, must end them.
	eachTier(t, Options{KillGrace: 60 * time.Second}, func(t *testing.T, r *Runner) {
		job := pyJob(t, "polite", `
import os, signal, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", """
import os, signal, sys, time
def term(*_):
    print("child got SIGTERM", file=sys.stderr, flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
os.setsid()   # out of the candidate's process group
print("child up", flush=True)
time.sleep(600)
"""], stdout=subprocess.PIPE)
child.stdout.readline()
def term(*_):
    child.wait()
    print("parent got SIGTERM", file=sys.stderr, flush=True)
    sys.exit(7)
signal.signal(signal.SIGTERM, term)
print("ready", flush=True)
time.sleep(600)
`)
		job.Timeout = 5 * time.Second
		res := mustRun(t, r, job)
		assertKind(t, res, runner.ErrTimeout)
		if res.Output != "ready\n" {
			t.Fatalf("output %q: the candidate was not ready within the timeout, the test proves nothing", res.Output)
		}
		if !strings.Contains(res.Stderr, "child got SIGTERM") || !strings.Contains(res.Stderr, "parent got SIGTERM") {
			t.Errorf("stderr %q: want both processes to have got SIGTERM", res.Stderr)
		}
		if res.ExitCode == nil || *res.ExitCode != 7 {
			t.Errorf("exit code %v, want the candidate's own 7", res.ExitCode)
		}
		assertNoSurvivors(t, job.RunID)
	})
}

func TestRunPidsLimit(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{MaxProcs: 16})
	if r.PidsLimit() == 0 {
		missingTier(t, ContainPIDNamespace, "no pids limit: "+r.Describe())
	}
	job := pyJob(t, "spawner", `
import subprocess, sys
procs = []
err = ""
for i in range(40):
    try:
        procs.append(subprocess.Popen(["sleep", "600"]))
    except OSError as e:
        err = str(e)
        break
open(sys.argv[2], "w").write("%d %s" % (len(procs), err))
`)
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	var n int
	var msg string
	fmt.Sscanf(res.ArtifactContent, "%d %s", &n, &msg)
	if n == 0 || n >= 16 || msg == "" {
		t.Errorf("candidate started %d processes before failing (%q); want some, fewer than the limit of 16", n, res.ArtifactContent)
	}
	assertNoSurvivors(t, job.RunID)
}

func TestRunForkBombIsContained(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{MaxProcs: 64, KillGrace: 200 * time.Millisecond})
	if r.PidsLimit() == 0 {
		// Without a cap a fork bomb would take the machine down.
		missingTier(t, ContainPIDNamespace, "no pids limit, no fork bomb: "+r.Describe())
	}
	dir := t.TempDir()
	// The bomb goes off in a subshell while the script itself becomes a
	// sleep (exec: no fork), so it outlives the limit it hits and times out
	// rather than failing when its own next fork is refused.
	bomb := filepath.Join(dir, "bomb.sh")
	if err := os.WriteFile(bomb, []byte("bomb() { bomb | bomb & }\n( bomb ) &\nexec sleep 600\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	job := runner.Job{
		RunID: newRunID(t), CandidateID: "bomb", Trial: 1, Objective: "o",
		Command: []string{"/bin/sh", "bomb.sh"},
		Files:   []runner.File{{Src: bomb, Dst: "bomb.sh"}},
		Timeout: 2 * time.Second,
	}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrTimeout)
	if !strings.Contains(strings.ToLower(res.Stderr), "fork") {
		t.Errorf("stderr %.300q: want the shell's fork failures, proof that the limit held", res.Stderr)
	}
	assertNoSurvivors(t, job.RunID)
}

func TestNewReportsContainment(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	t.Logf("containment here: %s", r.Describe())
	if !strings.HasPrefix(r.Describe(), string(r.Containment())+":") {
		t.Errorf("Describe %q does not start with the tier %q", r.Describe(), r.Containment())
	}
	if r.Containment() != ContainPIDNamespace && mustOffer(ContainPIDNamespace) {
		t.Errorf("Linux as root, yet the strongest tier is %s (set %s if this machine cannot have PID namespaces)", r.Describe(), bestEffort)
	}
}

// TestRunLeavesForgeThreadsClean: the threads that started jobs' processes
// in their PID namespace and pids cgroup must be back in forge's own, or
// forge's later children would start in a dead namespace (or a job's cgroup).
func TestRunLeavesForgeThreadsClean(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	for i := range 4 {
		job := pyJob(t, fmt.Sprintf("t%d", i), "import sys\nopen(sys.argv[2], 'w').write('x')\n")
		job.Setup = []string{"true"}
		assertKind(t, mustRun(t, r, job), runner.ErrNone)
	}
	// forge's own namespace and cgroups, read from an ordinary thread:
	// /proc/self names the main thread, which may be one starting a job's
	// process in another test at this very moment.
	runtime.LockOSThread()
	ownNS, err := os.Readlink("/proc/thread-self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	ownCgroup, err := os.ReadFile("/proc/thread-self/cgroup")
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := exec.Command("sh", "-c", "readlink /proc/self/ns/pid; cat /proc/self/cgroup").Output()
			if err != nil {
				t.Errorf("an ordinary child of forge failed to start or run: %v", err)
				return
			}
			ns, cg, _ := strings.Cut(string(out), "\n")
			if ns != ownNS || cg != string(ownCgroup) {
				t.Errorf("an ordinary child of forge is in PID namespace %s, cgroups\n%s\nwant %s,\n%s", ns, cg, ownNS, ownCgroup)
			}
		}()
	}
	wg.Wait()
}

// TestMain doubles as the forge process of TestRunForgeKilledLeavesNothing:
// with LOCAL_TEST_HELPER_JOB set, the test binary runs that one job and
// waits to be killed; and of TestBuildEnvironmentAcrossProcesses: with
// LOCAL_TEST_HELPER_BUILD set, it builds that environment (helperBuild).
func TestMain(m *testing.M) {
	if spec := os.Getenv("LOCAL_TEST_HELPER_JOB"); spec != "" {
		os.Exit(helperForge(spec))
	}
	if spec := os.Getenv("LOCAL_TEST_HELPER_BUILD"); spec != "" {
		os.Exit(helperBuild(spec))
	}
	os.Exit(m.Run())
}

func helperForge(spec string) int {
	var job runner.Job
	if err := json.Unmarshal([]byte(spec), &job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r, err := New(Options{TempDir: os.Getenv("LOCAL_TEST_HELPER_TMP"), Containment: ContainPIDNamespace})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r.Run(context.Background(), job)
	fmt.Fprintln(os.Stderr, "Run returned; it should have been killed first")
	return 1
}

func TestRunForgeKilledLeavesNothing(t *testing.T) {
	t.Parallel()
	if _, err := New(Options{TempDir: localtest.TempDir(t), Containment: ContainPIDNamespace}); err != nil {
		missingTier(t, ContainPIDNamespace, fmt.Sprintf("only the pidns tier survives forge's death: %v", err))
	}
	fifo, f := openDaemonFifo(t)
	ready, br, rf := readyFifo(t)
	job := pyJob(t, "orphaned", daemonScript)
	job.Env = map[string]string{"DAEMON_FIFO": fifo, "READY_FIFO": ready}
	spec, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	tmp := localtest.TempDir(t)
	forge := exec.Command(os.Args[0])
	forge.Env = append(os.Environ(), "LOCAL_TEST_HELPER_JOB="+string(spec), "LOCAL_TEST_HELPER_TMP="+tmp)
	forge.Stdout, forge.Stderr = os.Stderr, os.Stderr
	if err := forge.Start(); err != nil {
		t.Fatal(err)
	}
	if line := waitLine(t, rf, br, 60*time.Second); line != "ready" {
		t.Fatalf("candidate said %q", line)
	}
	if err := forge.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	forge.Wait()
	// forge is gone without cleaning up; the namespace's init sees EOF and
	// the kernel ends the rest.
	assertDaemonGone(t, f)
	defer assertNoSurvivors(t, job.RunID) // and kill them, should the wait fail
	wait.For(t, "the run's processes to end", 10*time.Second, func() bool {
		return len(localtest.Survivors(job.RunID)) == 0
	})
}
