package report

// A suite's parts of the reports: its columns, matrix and head-to-head.

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
)

// suite reports whether the record is of a suite.
func suite(rec *record.Record) bool { return len(rec.Tasks) > 0 }

// passHeader is "PASS@1", with the record's k.
func passHeader(rec *record.Record) string {
	for _, st := range rec.Standings {
		if st.Suite != nil {
			return fmt.Sprintf("PASS@%d", st.Suite.K)
		}
	}
	return "PASS@1"
}

// cellText is a candidate's result on a task: "✓" all passed, "✗" scored 0,
// else its score ("0.67"); "·" without a score.
func cellText(c record.TaskCell) string {
	switch {
	case c.Score == nil:
		return "·"
	case c.Solved:
		return "✓"
	case *c.Score <= 1e-9:
		return "✗"
	}
	return text.Score(*c.Score)
}

// matrixRows is the per-task matrix (never empty), hardest task first (the
// first most when most > 0), a column per candidate, then the task's mean.
func matrixRows(rec *record.Record, most int) (header []string, rows [][]string, align []text.Align) {
	header = []string{"TASK"}
	align = []text.Align{text.Left}
	for _, c := range rec.TaskMatrix[0].Cells {
		header = append(header, text.Shorten(text.OneLine(c.CandidateID), 16))
		align = append(align, text.Right)
	}
	header = append(header, "MEAN")
	align = append(align, text.Right)
	matrix := rec.TaskMatrix
	if most > 0 && len(matrix) > most {
		matrix = matrix[:most]
	}
	for _, row := range matrix {
		if row.Unscored {
			continue // not hard, unplayed: listed apart (unscoredTasks)
		}
		r := []string{text.Shorten(row.TaskID, 32)}
		for _, c := range row.Cells {
			r = append(r, cellText(c))
		}
		rows = append(rows, append(r, text.Score(row.Mean)))
	}
	return header, rows, align
}

// maxMatrixTasks is the most tasks the table prints a matrix for unasked.
const maxMatrixTasks = 40

// writeMatrix writes the per-task matrix when asked or when it fits, else a
// summary: the hardest tasks and those that tell the candidates apart.
func writeMatrix(buf *bytes.Buffer, rec *record.Record, opts Options) error {
	if len(rec.TaskMatrix) == 0 {
		return nil
	}
	if !opts.Matrix && len(rec.TaskMatrix) > maxMatrixTasks {
		// Too long to print unasked: no need to lay it out to know.
		buf.WriteString("\n" + matrixSummary(rec) + "\n")
		return nil
	}
	header, rows, align := matrixRows(rec, 0)
	var m bytes.Buffer
	if err := text.Table(&m, header, rows, align, opts.TTY); err != nil {
		return fmt.Errorf("render task matrix: %w", err)
	}
	fits := len(rows) <= maxMatrixTasks && (opts.Width == 0 || widest(m.String()) <= opts.Width)
	buf.WriteString("\n")
	if opts.Matrix || fits {
		buf.WriteString(wrap("tasks, hardest first (✓ passed, ✗ scored 0, else the task score):", opts.Width) + "\n")
		buf.Write(m.Bytes())
	} else {
		buf.WriteString(wrap(matrixSummary(rec), opts.Width) + "\n")
	}
	if line := unscoredTasks(rec); line != "" {
		buf.WriteString(wrap(line, opts.Width) + "\n")
	}
	return nil
}

// MeanText is a task's mean score, "—" for one without a scored trial.
func MeanText(row record.TaskRow) string {
	if row.Unscored {
		return "—"
	}
	return text.Score(row.Mean)
}

// unscoredTasks is the line that lists the tasks no trial of which could
// be scored (not played, or their verifier failed), "" when there are none.
func unscoredTasks(rec *record.Record) string {
	var ids []string
	for _, row := range rec.TaskMatrix {
		if row.Unscored {
			ids = append(ids, row.TaskID)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return "not scored (no trial played to a score, so not ranked): " + text.FirstOf(ids, 10)
}

// matrixSummary says what the matrix holds when it is not printed.
func matrixSummary(rec *record.Record) string {
	var hard, telling []string
	for _, row := range rec.TaskMatrix {
		if len(hard) < 5 && !row.Unscored {
			hard = append(hard, fmt.Sprintf("%s (%s)", row.TaskID, text.Score(row.Mean)))
		}
	}
	best := slices.Clone(rec.TaskMatrix)
	slices.SortStableFunc(best, func(a, b record.TaskRow) int {
		return cmp.Or(cmp.Compare(b.Spread, a.Spread), strings.Compare(a.TaskID, b.TaskID))
	})
	for _, row := range best {
		if len(telling) == 5 || row.Spread <= 1e-9 {
			break
		}
		telling = append(telling, fmt.Sprintf("%s (± %s)", row.TaskID, text.Score(row.Spread)))
	}
	s := fmt.Sprintf("%d tasks; hardest: %s", len(rec.TaskMatrix), strings.Join(hard, ", "))
	if len(telling) > 0 {
		s += "; most telling: " + strings.Join(telling, ", ")
	}
	return s + " (--matrix prints every task)"
}

// headToHeadRows is the pairwise record, "wins-losses-ties" per opponent.
func headToHeadRows(rec *record.Record) (header []string, rows [][]string, align []text.Align) {
	var ids []string
	for _, c := range rec.TaskMatrix[0].Cells {
		ids = append(ids, c.CandidateID)
	}
	tally := map[[2]string]string{}
	for _, h := range rec.HeadToHead {
		tally[[2]string{h.A, h.B}] = fmt.Sprintf("%d-%d-%d", h.Wins, h.Losses, h.Ties)
		tally[[2]string{h.B, h.A}] = fmt.Sprintf("%d-%d-%d", h.Losses, h.Wins, h.Ties)
	}
	header = []string{"HEAD TO HEAD"}
	align = []text.Align{text.Left}
	for _, a := range ids {
		header = append(header, text.Shorten(text.OneLine(a), 16))
		align = append(align, text.Right)
		row := []string{text.Shorten(text.OneLine(a), 24)}
		for _, b := range ids {
			row = append(row, tally[[2]string{a, b}])
		}
		rows = append(rows, row)
	}
	return header, rows, align
}

// writeHeadToHead writes the pairwise record beyond two candidates.
func writeHeadToHead(buf *bytes.Buffer, rec *record.Record, opts Options) error {
	if len(rec.HeadToHead) < 2 || len(rec.TaskMatrix) == 0 {
		return nil
	}
	header, rows, align := headToHeadRows(rec)
	var t bytes.Buffer
	if err := text.Table(&t, header, rows, align, opts.TTY); err != nil {
		return fmt.Errorf("render head to head: %w", err)
	}
	if opts.Width > 0 && widest(t.String()) > opts.Width {
		buf.WriteString("\n" + wrap(fmt.Sprintf("head to head: too wide for %d columns; --wide shows it", opts.Width), opts.Width) + "\n")
		return nil
	}
	buf.WriteString("\n" + wrap("task by task, wins-losses-ties of the row against the column:", opts.Width) + "\n")
	buf.Write(t.Bytes())
	return nil
}
