package compare

import (
	"github.com/forge-run/forge/internal/text"

	"fmt"
	"io"
	"strings"
)

// statusBadge marks a status in Markdown.
var statusBadge = map[Status]string{
	StatusImproved:  "📈 ",
	StatusRegressed: "📉 ",
	StatusUnchanged: "",
	StatusNew:       "🆕 ",
	StatusGone:      "➖ ",
}

// WriteMarkdown writes the comparison as GitHub-flavoured Markdown (a PR
// comment, $GITHUB_STEP_SUMMARY), everything from the records escaped.
func WriteMarkdown(w io.Writer, rep Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### forge compare %s → %s\n\n", mdCode(rep.Base.RunID), mdCode(rep.Head.RunID))
	fmt.Fprintf(&b, "base started %s · head started %s (UTC)\n\n", when(rep.Base.StartedAt), when(rep.Head.StartedAt))
	if len(rep.Candidates) == 0 {
		b.WriteString("No candidates in either run.\n\n")
	} else {
		withCost := costed(rep)
		if withCost {
			b.WriteString("| Candidate | Status | Base | Head | Delta | Test | Runtime | Success | Trials | Cost |\n")
			b.WriteString("|:---|:---|---:|---:|---:|:---|---:|---:|---:|---:|\n")
		} else {
			b.WriteString("| Candidate | Status | Base | Head | Delta | Test | Runtime | Success | Trials |\n")
			b.WriteString("|:---|:---|---:|---:|---:|:---|---:|---:|---:|\n")
		}
		for _, c := range rep.Candidates {
			cells := row(c, withCost)
			for i := range cells {
				cells[i] = text.Markdown(cells[i])
			}
			cells[1] = statusBadge[c.Status] + string(c.Status)
			if c.Status == StatusImproved || c.Status == StatusRegressed {
				cells[1] = "**" + cells[1] + "**"
			}
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
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
			indent, l := "", strings.TrimSpace(l)
			if strings.HasPrefix(l, "…") || !strings.Contains(l, ":") {
				indent = "  "
			}
			b.WriteString(indent + "- " + text.Markdown(l) + "\n")
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
