package compare

import (
	"bytes"
	"fmt"
	"io"
	"slices"

	"github.com/forge-run/forge/internal/text"
)

// WriteTable writes the comparison as a table, then the winner, manifest,
// tally and notes: with borders on a terminal (tty), plain columns else.
func WriteTable(w io.Writer, rep Report, tty bool) error {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "base %s (%s)  →  head %s (%s)\n\n",
		id(rep.Base.RunID), when(rep.Base.StartedAt), id(rep.Head.RunID), when(rep.Head.StartedAt))

	if len(rep.Candidates) == 0 {
		buf.WriteString("no candidates in either run\n")
	} else {
		header, align, withCost := tableHeader, tableAlign, costed(rep)
		if withCost {
			header = append(slices.Clone(header), "COST")
			align = append(slices.Clone(align), text.Right)
		}
		rows := make([][]string, len(rep.Candidates))
		for i, c := range rep.Candidates {
			rows[i] = row(c, withCost)
		}
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

// row is c's cells in the table and the Markdown, COST last when withCost.
func row(c Change, withCost bool) []string {
	cells := []string{id(c.CandidateID), string(c.Status), scoreText(c.Base), scoreText(c.Head), deltaText(c),
		testText(c), runtimeText(c), successText(c), trialsText(c)}
	if withCost {
		cells = append(cells, costText(c))
	}
	return cells
}

// tableHeader names WriteTable's columns; tableAlign aligns them.
var (
	tableHeader = []string{"CANDIDATE", "STATUS", "BASE", "HEAD", "DELTA", "TEST", "RUNTIME", "SUCCESS", "TRIALS"}
	tableAlign  = []text.Align{text.Left, text.Left, text.Right, text.Right, text.Right, text.Left, text.Right, text.Right, text.Right}
)
