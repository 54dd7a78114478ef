package report

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/internal/text"
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

// Table writes the standings as a table, then the winner line and any
// sandboxes forge could not delete. On a terminal (opts.TTY) the table has
// borders; otherwise it is plain columns aligned with spaces, with no
// box-drawing characters, for logs and pipes. ANSI colour only with
// opts.Color.
func Table(w io.Writer, rec *forge.Record, opts Options) error {
	opts, err := prepare(rec, opts)
	if err != nil {
		return err
	}
	cs := candidates(rec)
	paint := func(code, s string) string {
		if !opts.Color || s == "" {
			return s
		}
		return code + s + ansiReset
	}

	rows := make([][]string, 0, len(cs))
	for _, c := range cs {
		cand := text.OneLine(c.standing.CandidateID)
		rank := c.rankText()
		if c.winner {
			cand = paint(ansiBold+ansiGreen, cand)
			rank = paint(ansiBold, rank)
		}
		status := c.statusText()
		switch c.health() {
		case healthOK:
			status = paint(ansiGreen, status)
		case healthPartial:
			status = paint(ansiYellow, status)
		case healthFailed:
			status = paint(ansiRed, status)
		}
		row := []string{rank, cand, status, c.scoreText(), c.successText(), c.runtimeText(), fmt.Sprint(c.trials())}
		if suite(rec) {
			row = slices.Insert(row, 4, c.solvedText(len(rec.Tasks)), c.passText())
		} else {
			row = append(row, c.artifactText())
		}
		rows = append(rows, append(row, paint(ansiDim, text.Shorten(c.notes(), notesWidth))))
	}

	var buf bytes.Buffer
	if len(rows) == 0 {
		buf.WriteString("no results\n")
	} else if err := renderTable(&buf, rec, rows, opts); err != nil {
		return fmt.Errorf("render standings table: %w", err)
	}
	if err := writeMatrix(&buf, rec, opts); err != nil {
		return err
	}
	if err := writeHeadToHead(&buf, rec, opts); err != nil {
		return err
	}

	line := winnerLine(rec, cs)
	if rec.Winner != nil {
		line = paint(ansiBold+ansiGreen, line)
	} else {
		line = paint(ansiYellow, line)
	}
	buf.WriteString("\n" + line + "\n")
	if rec.Interrupted {
		buf.WriteString(paint(ansiYellow, "run interrupted: these are partial results") + "\n")
	}
	if len(rec.UndeletedSandboxes) > 0 {
		ids := make([]string, len(rec.UndeletedSandboxes))
		for i, id := range rec.UndeletedSandboxes {
			ids[i] = text.OneLine(id)
		}
		buf.WriteString(paint(ansiRed, fmt.Sprintf("%d sandbox(es) could not be deleted: %s", len(ids), strings.Join(ids, ", "))) + "\n")
		buf.WriteString("delete them with: forge gc\n")
	}
	if _, err := w.Write(text.TrimLines(buf.Bytes())); err != nil {
		return fmt.Errorf("write table report: %w", err)
	}
	return nil
}

// tableHeader names Table's columns; tableAlign aligns them. A suite's
// table has SOLVED and PASS@k after SCORE, and no ARTIFACT.
var (
	tableHeader = []string{"RANK", "CANDIDATE", "STATUS", "SCORE", "SUCCESS", "RUNTIME", "TRIALS", "ARTIFACT", "NOTES"}
	tableAlign  = []text.Align{text.Right, text.Left, text.Left, text.Right, text.Right, text.Right, text.Right, text.Right, text.Left}
)

// renderTable draws the standings with text.Table, the header in bold with
// opts.Color.
func renderTable(w io.Writer, rec *forge.Record, rows [][]string, opts Options) error {
	header, align := slices.Clone(tableHeader), tableAlign
	if suite(rec) {
		header = slices.Insert(slices.Delete(header, 7, 8), 4, "SOLVED", passHeader(rec))
		align = slices.Insert(slices.Delete(slices.Clone(align), 7, 8), 4, text.Right, text.Right)
	}
	for i, h := range header {
		if opts.Color {
			header[i] = ansiBold + h + ansiReset
		}
	}
	return text.Table(w, header, rows, align, opts.TTY)
}
