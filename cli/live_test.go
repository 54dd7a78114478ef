package cli

import (
	"bytes"
	"io"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

func TestLiveViewPrintsFinishedJobsAndStops(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, false, false)
	p.startLive(3)
	ok := &record.Trial{Result: runner.Result{Success: true}}
	failed := &record.Trial{Result: runner.Result{ErrorKind: runner.ErrTimeout, ErrorMessage: "timed out after 1s"}}
	for _, job := range []string{"alpha", "beta"} {
		p.event(forge.Event{Kind: forge.EventStarted, Job: job})
		p.event(forge.Event{Kind: forge.EventPhase, Job: job, Phase: runner.PhaseExecute})
	}
	p.event(forge.Event{Kind: forge.EventDone, Job: "alpha", Result: ok})
	p.event(forge.Event{Kind: forge.EventDone, Job: "beta", Result: failed})
	// The third job never ran (an interrupted run): stop must not hang.
	p.stopLive()
	out := buf.String()
	for _, want := range []string{"[alpha] done", "[beta] failed", "timeout: timed out after 1s", "2/3 jobs"} {
		if !strings.Contains(out, want) {
			t.Errorf("live output lacks %q:\n%s", want, out)
		}
	}
	// After the live view, lines are plain again.
	buf.Reset()
	p.event(forge.Event{Kind: forge.EventStarted, Job: "gamma"})
	if buf.String() != "[gamma] started\n" {
		t.Errorf("after stop: %q", buf.String())
	}
}

func TestQuietPrintsNothing(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, true, false)
	p.startLive(1)
	p.event(forge.Event{Kind: forge.EventStarted, Job: "a"})
	p.event(forge.Event{Kind: forge.EventDone, Job: "a", Result: &record.Trial{Result: runner.Result{Success: true}}})
	p.stopLive()
	if buf.Len() != 0 {
		t.Errorf("--quiet printed %q", buf.String())
	}
}

// Warning lines reach stderr whole, however the backend split its writes.
func TestWarningsAreWholeLines(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, true, false)
	w := p.warnings()
	io.WriteString(w, "daytona: half ")
	if out.Len() != 0 {
		t.Fatalf("half a line was written: %q", out.String())
	}
	io.WriteString(w, "a line\nforge: account limit")
	io.WriteString(w, " reached\n")
	if got, want := out.String(), "daytona: half a line\nforge: account limit reached\n"; got != want {
		t.Errorf("got %q, want %q (--quiet must not silence warnings)", got, want)
	}
}

func TestVersionComesFromTheBuildInfo(t *testing.T) {
	info := &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-23T05:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	cases := []struct {
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{info, true, "v0.3.0 (0123456789ab+dirty, 2026-11-23T05:00:00Z)"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "(devel)"},
		{nil, false, "(devel)"},
	}
	for _, c := range cases {
		if got := version(c.info, c.ok); got != c.want {
			t.Errorf("version = %q, want %q", got, c.want)
		}
	}
}
