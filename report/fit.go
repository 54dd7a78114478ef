package report

// How the standings fit the terminal: borders go first, then the cells'
// asides, then the columns another one says in part; notes take the room
// left, whole when it is enough.

import (
	"slices"
	"strings"

	"github.com/clipperhouse/displaywidth"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/scoring"
)

// minNotes is the fewest columns of a note worth showing before the table
// is made narrower.
const minNotes = 24

// narrowing are the steps to a narrower table after plain columns, least
// lost first: a column's cells lose their asides (" (8/8)", " ± 24ms",
// " ($0.01/solved)"), or a column another one says in part goes.
var narrowing = []struct {
	drop   bool
	header string // the column's, or its start
}{
	{false, "COST"}, {true, "TRIALS"}, {false, "SUCCESS"}, {true, "PASS@"}, {false, "RUNTIME"},
	{true, "RUNTIME"}, {true, "ARTIFACT"}, {false, "SCORE"}, {true, "SOLVED"}, {true, "COST"}, {true, "SUCCESS"},
}

// fitted is the standings as they are drawn.
type fitted struct {
	cols  []column
	cells [][]string // by row, then column
	tty   bool
	// cut: a note was shortened; dropped: the columns left out.
	cut     bool
	dropped []string
	// step counts the narrowing steps taken.
	step int
}

// fitTable lays out the standings' cells (notes whole) for opts: within
// Width columns when it is known, else notes cut at notesWidth; Wide
// keeps everything whole.
func fitTable(cols []column, cells [][]string, opts Options) fitted {
	f := fitted{cols: cols, cells: cells, tty: opts.TTY}
	switch {
	case opts.Wide:
		return f
	case opts.Width <= 0:
		f.shortenNotes(func(s string) string { return text.Shorten(s, notesWidth) })
		return f
	}
	for {
		room := opts.Width - f.width()
		if room >= f.notesWidth() {
			return f
		}
		if room >= minNotes || !f.narrower() {
			n := max(room, 8)
			f.shortenNotes(func(s string) string {
				if displaywidth.String(s) <= n {
					return s
				}
				return strings.TrimRight(displaywidth.TruncateString(s, n-1, ""), " ") + "…"
			})
			return f
		}
	}
}

// narrower takes the next step to a narrower table: plain columns, a
// column's compact cells, a column fewer. False when none is left.
func (f *fitted) narrower() bool {
	if f.tty {
		f.tty = false
		return true
	}
	for ; f.step < len(narrowing); f.step++ {
		n := narrowing[f.step]
		i := f.column(n.header)
		switch {
		case i < 0:
			continue
		case n.drop:
			f.dropped = append(f.dropped, f.cols[i].header)
			f.cols = slices.Delete(slices.Clone(f.cols), i, i+1)
			for r, row := range f.cells {
				f.cells[r] = slices.Delete(row, i, i+1)
			}
		default:
			for _, row := range f.cells {
				row[i] = compactCell(row[i])
			}
		}
		f.step++
		return true
	}
	return false
}

// compactCell is a cell without its aside: "100% (8/8)" → "100%",
// "85ms ± 24ms" → "85ms", "1.00 [0.59–1.00]" → "1.00".
func compactCell(s string) string {
	for _, sep := range []string{" (", " ± ", " ["} {
		s, _, _ = strings.Cut(s, sep)
	}
	return s
}

// column is the index of the column whose header starts with name, or -1.
func (f *fitted) column(name string) int {
	return slices.IndexFunc(f.cols, func(c column) bool { return strings.HasPrefix(c.header, name) })
}

// width is the table's width without its notes' text: every shown column
// (one empty in every row is not drawn), its padding and borders.
func (f *fitted) width() int {
	w, n := 0, 0
	for i, col := range f.cols {
		cw, shown := f.colWidth(i)
		if !shown {
			continue
		}
		n++
		if col.header != colNotes {
			w += cw
		}
	}
	if f.tty {
		return w + 3*n + 1
	}
	return w + 2*(n-1)
}

// notesWidth is the width the notes' column wants whole (0 when hidden).
func (f *fitted) notesWidth() int {
	i := f.column(colNotes)
	if i < 0 {
		return 0
	}
	w, _ := f.colWidth(i)
	return w
}

// colWidth is column i's width, and whether any row has a cell in it.
func (f *fitted) colWidth(i int) (int, bool) {
	w, shown := displaywidth.String(f.cols[i].header), false
	for _, row := range f.cells {
		if row[i] != "" {
			shown = true
			w = max(w, displaywidth.String(row[i]))
		}
	}
	return w, shown
}

// shortenNotes cuts each note too long with short; cut says whether one
// was.
func (f *fitted) shortenNotes(short func(string) string) {
	i := f.column(colNotes)
	if i < 0 {
		return
	}
	for _, row := range f.cells {
		if s := short(row[i]); s != row[i] {
			row[i], f.cut = s, true
		}
	}
}

// footer says what the table left out and where to see it whole.
func (f *fitted) footer(rec *record.Record, width int) string {
	if !f.cut && len(f.dropped) == 0 {
		return ""
	}
	what := "notes cut"
	if len(f.dropped) > 0 {
		what = "left out " + text.AndList(f.dropped)
		if f.cut {
			what += ", notes cut"
		}
	}
	if width > 0 {
		what += " to fit " + text.Count(width, "column", "columns")
	}
	whole := "forge report " + text.ShellWord(rec.RunID) + " --wide"
	if rec.RunID == "" {
		whole = "--wide"
	}
	return wrap(what+"; whole with "+whole+", or in forge view", width)
}

// wrap breaks s at spaces into lines of at most width columns (a word
// longer than that stands alone); width 0 is no limit.
func wrap(s string, width int) string {
	if width <= 0 || displaywidth.String(s) <= width {
		return s
	}
	var b strings.Builder
	n := 0
	for i, word := range strings.Split(s, " ") {
		w := displaywidth.String(word)
		if i > 0 && n+1+w > width {
			b.WriteString("\n")
			n = 0
		} else if i > 0 {
			b.WriteString(" ")
			n++
		}
		b.WriteString(word)
		n += w
	}
	return b.String()
}

// widest is the width of s's widest line, its padding left out.
func widest(s string) int {
	w := 0
	for _, line := range strings.Split(s, "\n") {
		w = max(w, displaywidth.String(strings.TrimRight(line, " ")))
	}
	return w
}

// tieLine says why the table's "=" ranks tie: for the first ones, the
// comparison's reason; else within the noise. "" without a tie.
func tieLine(rec *record.Record, width int) string {
	if !slices.ContainsFunc(rec.Standings, func(st record.Standing) bool { return st.Tied }) {
		return ""
	}
	why := "their scores differ by less than the noise"
	if c := rec.Comparison; c != nil && !c.Clear {
		why = scoring.TieReason(c)
	}
	return wrap("= marks a tie: "+why, width)
}
