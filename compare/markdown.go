package compare

import (
	"fmt"
	"io"
	"strings"

	"github.com/forge-run/forge/internal/text"
)

// statusBadge marks a status in Markdown.
var statusBadge = map[Status]string{
	StatusImproved:  "📈 ",
	StatusRegressed: "📉 ",
	StatusUnchanged: "",
	StatusNew:       "🆕 ",
	StatusGone:      "➖ ",
}

// WriteMarkdown writes the comparison as GitHub-flavoured Markdown, for a PR
// comment or $GITHUB_STEP_SUMMARY: a heading naming both runs, the table, the
// winner, the manifest and the tally, then any notes. Ids from the records
// are escaped so they cannot break the table or inject markup.
func WriteMarkdown(w io.Writer, rep Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### forge compare %s → %s\n\n", mdCode(rep.Base.RunID), mdCode(rep.Head.RunID))
	fmt.Fprintf(&b, "base started %s · head started %s (UTC)\n\n", when(rep.Base.StartedAt), when(rep.Head.StartedAt))
	if len(rep.Candidates) == 0 {
		b.WriteString("No candidates in either run.\n\n")
	} else {
		header, rows, align := grid(rep)
		for i := range header {
			header[i] = header[i][:1] + strings.ToLower(header[i][1:])
		}
		b.WriteString("| " + strings.Join(header, " | ") + " |\n" + text.MarkdownRule(align) + "\n")
		for r, c := range rep.Candidates {
			row := rows[r]
			for i := range row {
				row[i] = text.Markdown(row[i])
			}
			row[1] = statusBadge[c.Status] + string(c.Status)
			if c.Status == StatusImproved || c.Status == StatusRegressed {
				row[1] = "**" + row[1] + "**"
			}
			b.WriteString("| " + strings.Join(row, " | ") + " |\n")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "**Winner:** %s  \n", text.Markdown(winnerText(rep)))
	fmt.Fprintf(&b, "**Manifest:** %s  \n", text.Markdown(manifestText(rep)))
	fmt.Fprintf(&b, "%s (%s, α = %g)\n", text.Markdown(tally(rep)), testsText(rep), rep.Alpha)
	if len(rep.Notes) > 0 {
		b.WriteString("\n> [!NOTE]\n")
		for _, n := range rep.Notes {
			fmt.Fprintf(&b, "> %s  \n", text.Markdown(n))
		}
	}
	if lines := taskLines(rep); len(lines) > 0 {
		b.WriteString("\n<details><summary>Tasks that changed, most worsened first</summary>\n\n")
		for _, l := range lines {
			if strings.HasPrefix(l, "  ") { // a task, under its candidate
				b.WriteString("  ")
			}
			b.WriteString("- " + text.Markdown(l) + "\n")
		}
		b.WriteString("\n</details>\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write comparison markdown: %w", err)
	}
	return nil
}

// mdCode writes an id as an inline code span (text.MarkdownCode).
func mdCode(s string) string { return text.MarkdownCode(id(s)) }
