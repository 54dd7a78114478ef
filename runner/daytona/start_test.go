package daytona

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// countingJob is a shell candidate that appends a line to a file of this
// machine each time it runs, in dir, which the test shares with its
// sandboxes (daytonatest.Options.Shared), so a test counts its runs.
func countingJob(dir string) (job func() int, source string) {
	runs := filepath.Join(dir, "runs")
	return func() int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), "ran\n")
	}, "echo ran >> '" + runs + "'\necho out\necho art > \"$2\"\n"
}

// A start answered 502 before it reached the toolbox is sent again.
func TestStartIsRetriedAfter5xx(t *testing.T) {
	shared := t.TempDir()
	e := newEnv(t, daytonatest.Options{Shared: []string{shared}}, nil)
	e.srv.Inject(daytonatest.OpSessionExec, daytonatest.Fault{Status: 502, Times: 2})
	runs, src := countingJob(shared)
	res := e.run(e.shJob("s", src))
	if !res.Success || res.Output != "out\n" {
		t.Fatalf("%s %s: %q", res.ErrorKind, res.ErrorMessage, res.Output)
	}
	if n := runs(); n != 1 {
		t.Errorf("the candidate ran %d times", n)
	}
	if n := e.srv.Calls(daytonatest.OpSessionExec); n != 3 {
		t.Errorf("%d starts, want 3", n)
	}
}

// A start whose answer was lost after the command started is found among
// the session's commands and followed, not sent again.
func TestLostStartIsFollowedNotRepeated(t *testing.T) {
	for name, f := range map[string]daytonatest.Fault{
		"dropped":   {Drop: true},
		"502 after": {Status: 502, After: true},
	} {
		t.Run(name, func(t *testing.T) {
			shared := t.TempDir()
			e := newEnv(t, daytonatest.Options{Shared: []string{shared}}, nil)
			e.srv.Inject(daytonatest.OpSessionExec, f)
			runs, src := countingJob(shared)
			res := e.run(e.shJob("l", src))
			if !res.Success || res.Output != "out\n" || res.RuntimeSeconds <= 0 {
				t.Fatalf("%s %s: %q, runtime %v", res.ErrorKind, res.ErrorMessage, res.Output, res.RuntimeSeconds)
			}
			if n := runs(); n != 1 {
				t.Errorf("the candidate ran %d times", n)
			}
			if n, m := e.srv.Calls(daytonatest.OpSessionExec), e.srv.Calls(daytonatest.OpGetSession); n != 1 || m != 1 {
				t.Errorf("%d starts and %d session lookups, want 1 and 1", n, m)
			}
		})
	}
}

// When forge cannot tell whether a lost start got there (the session
// cannot be read), it sends the start again: the second start runs nothing
// and reports what the first did.
func TestRepeatedStartRunsTheCandidateOnce(t *testing.T) {
	shared := t.TempDir()
	e := newEnv(t, daytonatest.Options{Shared: []string{shared}}, func(o *Options) { o.Retry.Tries = 2 })
	e.srv.Inject(daytonatest.OpSessionExec, daytonatest.Fault{Drop: true})
	e.srv.Inject(daytonatest.OpGetSession, daytonatest.Fault{Status: 503, Times: 2})
	runs, src := countingJob(shared)
	res := e.run(e.shJob("r", src+"exit 0\n"))
	if !res.Success || res.Output != "out\n" || res.RuntimeSeconds <= 0 {
		t.Fatalf("%s %s: %q, runtime %v", res.ErrorKind, res.ErrorMessage, res.Output, res.RuntimeSeconds)
	}
	if n := runs(); n != 1 {
		t.Errorf("the candidate ran %d times", n)
	}
	if n := e.srv.Calls(daytonatest.OpSessionExec); n != 2 {
		t.Errorf("%d starts, want 2", n)
	}
}

// A start that always fails ends the job infra after the retries, with the
// cause, and the sandbox is deleted.
func TestStartThatNeverWorksIsInfra(t *testing.T) {
	shared := t.TempDir()
	e := newEnv(t, daytonatest.Options{Shared: []string{shared}}, func(o *Options) { o.Retry.Tries = 3 })
	e.srv.Inject(daytonatest.OpSessionExec, daytonatest.Fault{Status: 502, Times: 100})
	runs, src := countingJob(shared)
	res := e.run(e.shJob("n", src))
	if res.Success || res.ErrorKind != "infra" || !strings.HasPrefix(res.ErrorMessage, "start the command: ") || !strings.Contains(res.ErrorMessage, "(HTTP 502)") {
		t.Fatalf("%s %q", res.ErrorKind, res.ErrorMessage)
	}
	if n := runs(); n != 0 {
		t.Errorf("the candidate ran %d times", n)
	}
	if n := e.srv.Calls(daytonatest.OpSessionExec); n != 3 {
		t.Errorf("%d starts, want 3 (Retry.Tries)", n)
	}
}
