package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// attack sets a terminal's title and clears its screen (issue 41).
const attack = "\033]0;TITLE\007\033[2J"

// TestProgressIsInert: every line of the plain progress that carries what a
// candidate or a build printed shows its control characters as escapes.
func TestProgressIsInert(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, false, true)
	failed := &record.Trial{Result: runner.Result{ErrorKind: runner.ErrCandidateFailed, ErrorMessage: attack}}
	line := attack + "\r"
	p.event(forge.Event{Kind: forge.EventDone, Job: "a", Result: failed})
	p.event(forge.Event{Kind: forge.EventRetry, Job: "a", Result: failed, Attempt: 1, Attempts: 2})
	p.event(forge.Event{Kind: forge.EventEnvironment, Job: "img", Line: &line, Env: &runner.Environment{}})
	p.echo("a", "stderr", line)
	fmt.Fprintf(p.warnings(), "warning: %s\n", attack)
	out := buf.String()
	if i := strings.IndexFunc(out, func(r rune) bool { return unicode.IsControl(r) && r != '\n' }); i >= 0 {
		t.Errorf("a control character at byte %d reached the terminal:\n%q", i, out)
	}
	for _, want := range []string{
		`[a] failed 0.0s: candidate_failed: \x1b]0;TITLE\x07\x1b[2J` + "\n",
		`[a] retrying (attempt 1 of 2) after candidate_failed: \x1b]0;TITLE\x07\x1b[2J` + "\n",
		`[environment img] | \x1b]0;TITLE\x07\x1b[2J\x0d` + "\n",
		`[a] ! \x1b]0;TITLE\x07\x1b[2J\x0d` + "\n",
		`warning: \x1b]0;TITLE\x07\x1b[2J` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}
}

// TestProgressEnvironmentLines: an environment found ready says only that;
// one that builds says "building" once its log begins, then how it ended.
func TestProgressEnvironmentLines(t *testing.T) {
	env := &runner.Environment{Name: "img", Hash: "0123456789abcdef0123"}
	log := "step 1"
	for _, tc := range []struct {
		name   string
		events []forge.Event
		want   string
	}{
		{"reused", []forge.Event{{}, {Built: &record.EnvironmentBuilt{Reused: true, Where: "snapshot s"}}},
			"[environment img] ready: snapshot s, built by an earlier run\n"},
		{"built", []forge.Event{{}, {Line: &log}, {Line: &log}, {Built: &record.EnvironmentBuilt{BuildSeconds: 2, Where: "snapshot s"}}},
			"[environment img] building " + runner.ShortHash(env.Hash) + "\n[environment img] built in 2.0s: snapshot s\n"},
		{"silent failure", []forge.Event{{}, {Built: &record.EnvironmentBuilt{BuildSeconds: 1}, Err: errors.New("no")}},
			"[environment img] failed to build " + runner.ShortHash(env.Hash) + " after 1.0s\n"},
	} {
		var buf bytes.Buffer
		p := newProgress(&buf, false, false)
		for _, e := range tc.events {
			e.Kind, e.Job, e.Env = forge.EventEnvironment, "img", env
			p.event(e)
		}
		if buf.String() != tc.want {
			t.Errorf("%s: progress\n%s\nwant\n%s", tc.name, buf.String(), tc.want)
		}
	}
}
