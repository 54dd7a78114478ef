package report

import (
	"github.com/forge-run/forge/internal/text"

	"fmt"
	"io"
	"strings"

	"github.com/forge-run/forge/forge"
)

// Markdown writes the standings as GitHub-flavoured Markdown, ready for a PR
// comment or $GITHUB_STEP_SUMMARY: a heading with the run, the standings
// table, the winner line, then the failures in a collapsed <details> block.
// Text from candidates is escaped so it cannot break the table or inject
// markup.
func Markdown(w io.Writer, rec *forge.Record, opts Options) error {
	if _, err := prepare(rec, opts); err != nil {
		return err
	}
	cs := candidates(rec)
	var b strings.Builder

	fmt.Fprintf(&b, "### forge run %s\n\n", mdCode(rec.RunID))
	if obj := text.OneLine(rec.Objective); obj != "" {
		fmt.Fprintf(&b, "**Objective:** %s  \n", text.Markdown(text.Shorten(obj, 200)))
	}
	fmt.Fprintf(&b, "%s\n\n", text.Markdown(runFacts(rec, cs)))

	if len(cs) == 0 {
		b.WriteString("No results.\n\n")
	} else {
		b.WriteString("| Rank | Candidate | Status | Score | Success | Runtime | Trials | Artifact | Notes |\n")
		b.WriteString("|---:|:---|:---|---:|---:|---:|---:|---:|:---|\n")
		for _, c := range cs {
			cand := text.Markdown(c.standing.CandidateID)
			if c.winner {
				cand = "**" + cand + "**"
			}
			status := text.Markdown(c.statusText())
			switch c.health() {
			case healthOK:
				status = "✅ " + status
			case healthPartial:
				status = "⚠️ " + status
			case healthFailed:
				status = "❌ " + status
			}
			cells := []string{
				text.Markdown(c.rankText()), cand, status, text.Markdown(c.scoreText()), text.Markdown(c.successText()),
				text.Markdown(c.runtimeText()), fmt.Sprint(c.trials()), text.Markdown(c.artifactText()),
				text.Markdown(text.Shorten(c.notes(), notesWidth)),
			}
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
		b.WriteString("\n")
	}

	line := text.Markdown(winnerLine(rec, cs))
	if rec.Winner != nil {
		line = "🏆 **" + line + "**"
	}
	b.WriteString(line + "\n")
	if rec.Interrupted {
		b.WriteString("\n> [!WARNING]\n> The run was interrupted: these are partial results.\n")
	}
	if len(rec.UndeletedSandboxes) > 0 {
		ids := make([]string, len(rec.UndeletedSandboxes))
		for i, id := range rec.UndeletedSandboxes {
			ids[i] = mdCode(id)
		}
		fmt.Fprintf(&b, "\n> [!CAUTION]\n> %d sandbox(es) could not be deleted: %s. Delete them with `forge gc`.\n",
			len(ids), strings.Join(ids, ", "))
	}
	writeFailures(&b, cs)

	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write Markdown report: %w", err)
	}
	return nil
}

// writeFailures lists every failed trial with its full (one-line) error, in
// a collapsed block so a long list does not swamp the comment.
func writeFailures(b *strings.Builder, cs []candidate) {
	n := 0
	for _, c := range cs {
		for _, r := range c.results {
			if !r.Success {
				n++
			}
		}
	}
	if n == 0 {
		return
	}
	word := "failures"
	if n == 1 {
		word = "failure"
	}
	fmt.Fprintf(b, "\n<details><summary>%d %s</summary>\n\n", n, word)
	for _, c := range cs {
		for _, r := range c.results {
			if r.Success {
				continue
			}
			name := c.standing.CandidateID
			if c.trials() > 1 {
				name = fmt.Sprintf("%s#%d", name, r.Trial)
			}
			fmt.Fprintf(b, "- **%s** — %s", text.Markdown(name), text.Markdown(kindLabel(r.ErrorKind)))
			if msg := text.OneLine(r.ErrorMessage); msg != "" {
				fmt.Fprintf(b, ": %s", text.Markdown(text.Shorten(msg, 300)))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n</details>\n")
}

// mdCode writes s as an inline code span, choosing a fence longer than any
// run of backticks inside it; a '|' is escaped so it cannot end a table
// cell.
func mdCode(s string) string {
	s = text.OneLine(s)
	if s == "" {
		return "—"
	}
	return text.MarkdownCode(s)
}
