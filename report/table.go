package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
)

// ANSI SGR sequences for Options.Color.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
)

// Table writes the standings, the winner line and any sandboxes forge could
// not delete: with borders on a terminal, else plain aligned columns for logs
// and pipes; ANSI colour only with opts.Color.
func Table(w io.Writer, rec *record.Record, opts Options) error {
	opts, err := prepare(rec, opts)
	if err != nil {
		return err
	}
	cs := candidates(rec)
	fit, rows := standingsRows(rec, cs, opts)
	opts.TTY = fit.tty
	if opts.Wide {
		opts.Width = 0
	}

	var buf bytes.Buffer
	if len(rows) == 0 {
		buf.WriteString("no results\n")
	} else if err := renderTable(&buf, fit.cols, rows, opts); err != nil {
		return fmt.Errorf("render standings table: %w", err)
	}
	for _, l := range []string{tieLine(rec, opts.Width), fit.footer(rec, opts.Width)} {
		if l != "" {
			buf.WriteString(opts.paint(ansiDim, l) + "\n")
		}
	}
	if err := writeMatrix(&buf, rec, opts); err != nil {
		return err
	}
	if err := writeHeadToHead(&buf, rec, opts); err != nil {
		return err
	}
	writeTableNotes(&buf, rec, cs, opts)
	if _, err := w.Write(text.TrimLines(buf.Bytes())); err != nil {
		return fmt.Errorf("write table report: %w", err)
	}
	return nil
}

// paint wraps s in the ANSI code with opts.Color.
func (o Options) paint(code, s string) string {
	if !o.Color || s == "" || code == "" {
		return s
	}
	return code + s + ansiReset
}

// standingsRows lays the standings out for opts (fitTable) and paints their
// cells: the winner bold, the status by health, the notes dim.
func standingsRows(rec *record.Record, cs []candidate, opts Options) (fitted, [][]string) {
	cols := columns(rec)
	cols[len(cols)-1].cell = candidate.notes // NOTES whole: fitTable cuts them
	fit := fitTable(cols, cells(cols, cs), opts)
	rows := fit.cells
	for r, c := range cs {
		for i, col := range fit.cols {
			cell := rows[r][i]
			switch col.header {
			case colRank:
				if c.winner {
					cell = opts.paint(ansiBold, cell)
				}
			case colCandidate:
				if c.winner {
					cell = opts.paint(ansiBold+ansiGreen, cell)
				}
			case colStatus:
				cell = opts.paint(map[health]string{healthOK: ansiGreen, healthPartial: ansiYellow, healthFailed: ansiRed}[c.health()], cell)
			case colNotes:
				cell = opts.paint(ansiDim, cell)
			}
			rows[r][i] = cell
		}
	}
	return fit, rows
}

// writeTableNotes writes the winner line, then what else the run says:
// interrupted, not run, retried, sandboxes left behind.
func writeTableNotes(buf *bytes.Buffer, rec *record.Record, cs []candidate, opts Options) {
	color := ansiYellow
	if rec.Winner != nil {
		color = ansiBold + ansiGreen
	}
	buf.WriteString("\n" + opts.paint(color, wrap(winnerLine(rec, cs), opts.Width)) + "\n")
	if rec.Interrupted {
		buf.WriteString(opts.paint(ansiYellow, wrap("run interrupted: these are partial results", opts.Width)) + "\n")
	}
	for _, n := range rec.NotRun {
		buf.WriteString(opts.paint(ansiYellow, wrap(fmt.Sprintf("not run: %s (%s)", text.OneLine(n.CandidateID), text.OneLine(n.Reason)), opts.Width)) + "\n")
	}
	if l := retriedLine(rec); l != "" {
		buf.WriteString(opts.paint(ansiYellow, wrap(l, opts.Width)) + "\n")
	}
	if len(rec.UndeletedSandboxes) > 0 {
		ids := make([]string, len(rec.UndeletedSandboxes))
		for i, id := range rec.UndeletedSandboxes {
			ids[i] = text.OneLine(id)
		}
		buf.WriteString(opts.paint(ansiRed, wrap(fmt.Sprintf("%d sandbox(es) could not be deleted: %s", len(ids), strings.Join(ids, ", ")), opts.Width)) + "\n")
		buf.WriteString("delete them with: forge gc\n")
	}
}

// renderTable draws the standings, the header bold with opts.Color.
func renderTable(w io.Writer, cols []column, rows [][]string, opts Options) error {
	header := make([]string, len(cols))
	align := make([]text.Align, len(cols))
	for i, col := range cols {
		header[i], align[i] = opts.paint(ansiBold, col.header), col.align
	}
	return text.Table(w, header, rows, align, opts.TTY)
}
