package compare

import (
	"bytes"
	"fmt"
	"io"

	"github.com/forge-run/forge/internal/text"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
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
		rows := make([][]string, len(rep.Candidates))
		for i, c := range rep.Candidates {
			rows[i] = []string{
				id(c.CandidateID), string(c.Status), scoreText(c.Base), scoreText(c.Head), deltaText(c),
				testText(c), runtimeText(c), successText(c), trialsText(c),
			}
		}
		if err := renderTable(&buf, rows, tty); err != nil {
			return fmt.Errorf("render comparison table: %w", err)
		}
	}

	fmt.Fprintf(&buf, "\nwinner: %s\n", winnerText(rep))
	fmt.Fprintf(&buf, "manifest: %s\n", manifestText(rep))
	fmt.Fprintf(&buf, "%s (two-sided Welch t-test on trial scores, alpha %g)\n", tally(rep), rep.Alpha)
	for _, n := range rep.Notes {
		fmt.Fprintf(&buf, "note: %s\n", n)
	}
	if _, err := w.Write(text.TrimLines(buf.Bytes())); err != nil {
		return fmt.Errorf("write comparison table: %w", err)
	}
	return nil
}

// tableHeader names WriteTable's columns.
var tableHeader = []string{"CANDIDATE", "STATUS", "BASE", "HEAD", "DELTA", "TEST", "RUNTIME", "SUCCESS", "TRIALS"}

// renderTable draws rows with tablewriter, styled as report's standings:
// bordered on a terminal, plain aligned columns otherwise.
func renderTable(w io.Writer, rows [][]string, tty bool) error {
	// Numbers align right, words left.
	align := []tw.Align{tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight,
		tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight}
	rendition := tw.Rendition{Symbols: tw.NewSymbols(tw.StyleLight)}
	padding := tw.PaddingDefault
	if !tty {
		rendition = tw.Rendition{
			Borders:  tw.BorderNone,
			Symbols:  tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{Separators: tw.SeparatorsNone, Lines: tw.LinesNone},
		}
		padding = tw.Padding{Left: "", Right: "  ", Overwrite: true}
	}
	cell := tw.CellConfig{
		Formatting: tw.CellFormatting{AutoWrap: tw.WrapNone, AutoFormat: tw.Off},
		Padding:    tw.CellPadding{Global: padding},
		Alignment:  tw.CellAlignment{PerColumn: align},
	}
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(rendition)),
		tablewriter.WithHeaderConfig(cell),
		tablewriter.WithRowConfig(cell),
		tablewriter.WithBehavior(tw.Behavior{TrimSpace: tw.On}),
	)
	t.Header(tableHeader)
	if err := t.Bulk(rows); err != nil {
		return err
	}
	return t.Render()
}
