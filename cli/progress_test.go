package cli

import (
	"bytes"
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
