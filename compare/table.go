package compare

import (
	"bytes"
	"fmt"
	"io"

	"github.com/forge-run/forge/internal/text"
)

// WriteTable writes the comparison as a table, one row per candidate, then
// the winner, the manifest, a tally of the statuses and any notes. On a
// terminal (tty) the table has borders; otherwise it is plain columns
// aligned with spaces, for logs and pipes, as report.Table does.
func WriteTable(w io.Writer, rep Report, tty bool) error {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "base %s (%s)  →  head %s (%s)\n\n",
		id(rep.Base.RunID), when(rep.Base.StartedAt), id(rep.Head.RunID), when(rep.Head.StartedAt))

	if len(rep.Candidates) == 0 {
		buf.WriteString("no candidates in either run\n")
	} else {
		header, rows, align := grid(rep)
		if err := text.Table(&buf, header, rows, align, tty); err != nil {
			return fmt.Errorf("render comparison table: %w", err)
		}
	}

	fmt.Fprintf(&buf, "\nwinner: %s\n", winnerText(rep))
	fmt.Fprintf(&buf, "manifest: %s\n", manifestText(rep))
	fmt.Fprintf(&buf, "%s (%s, alpha %g)\n", tally(rep), testsText(rep), rep.Alpha)
	for _, n := range rep.Notes {
		fmt.Fprintf(&buf, "note: %s\n", n)
	}
	if lines := taskLines(rep); len(lines) > 0 {
		buf.WriteString("\ntasks that changed, most worsened first:\n")
		for _, l := range lines {
			buf.WriteString(l + "\n")
		}
	}
	if _, err := w.Write(text.TrimLines(buf.Bytes())); err != nil {
		return fmt.Errorf("write comparison table: %w", err)
	}
	return nil
}

// grid is the comparison as a table of plain text, a row per candidate, and
// its columns' alignment: COST last when some candidate has a cost.
func grid(rep Report) (header []string, rows [][]string, align []text.Align) {
	header = []string{"CANDIDATE", "STATUS", "BASE", "HEAD", "DELTA", "TEST", "RUNTIME", "SUCCESS", "TRIALS"}
	align = []text.Align{text.Left, text.Left, text.Right, text.Right, text.Right, text.Left, text.Right, text.Right, text.Right}
	if costed(rep) {
		header, align = append(header, "COST"), append(align, text.Right)
	}
	for _, c := range rep.Candidates {
		row := []string{
			id(c.CandidateID), string(c.Status), scoreText(c.Base), scoreText(c.Head), deltaText(c),
			testText(c), runtimeText(c), successText(c), trialsText(c), costText(c),
		}
		rows = append(rows, row[:len(header)])
	}
	return header, rows, align
}
