package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// The HTML report's inline SVG charts.

// Chart geometry, in SVG user units.
const (
	chartWidth  = 1000.0
	chartLabelW = 150.0 // candidate names
	chartRight  = 140.0 // value text after the plot
	chartRowH   = 30.0
	chartTop    = 12.0
	chartAxisH  = 34.0
)

type tick struct {
	X     float64
	Label string
}

// axis maps a value domain onto the plot's x range.
type axis struct{ lo, hi, x0, x1 float64 }

func (a axis) x(v float64) float64 {
	if a.hi == a.lo {
		return a.x0
	}
	return a.x0 + (v-a.lo)/(a.hi-a.lo)*(a.x1-a.x0)
}

// niceTicks returns about n round ticks covering [lo, hi], their span and
// the decimals their labels need.
func niceTicks(lo, hi float64, n int) (ticks []float64, start, end float64, decimals int) {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	start = math.Floor(lo/step+1e-9) * step
	end = math.Ceil(hi/step-1e-9) * step
	for i := 0; start+float64(i)*step <= end+step/2; i++ {
		ticks = append(ticks, start+float64(i)*step)
	}
	decimals = max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	if math.Abs(step/math.Pow(10, -float64(decimals))-math.Round(step/math.Pow(10, -float64(decimals)))) > 1e-9 {
		decimals++ // 2.5, 0.25
	}
	return ticks, start, end, decimals
}

// rowChart is a row per candidate over an x axis with its ticks.
type rowChart struct {
	Width, Height, RowH float64
	PlotX0, PlotX1      float64
	AxisY, PlotBottom   float64
	Ticks               []tick
}

// newRowChart lays out rows over [lo, hi] with ticks at values, and its axis.
func newRowChart(rows int, lo, hi float64, values []float64, label func(float64) string) (rowChart, axis) {
	bottom := chartTop + float64(rows)*chartRowH
	ch := rowChart{Width: chartWidth, Height: bottom + chartAxisH, RowH: chartRowH, PlotX0: chartLabelW,
		PlotX1: chartWidth - chartRight, AxisY: bottom + 16, PlotBottom: bottom}
	ax := axis{lo, hi, ch.PlotX0, ch.PlotX1}
	for _, v := range values {
		ch.Ticks = append(ch.Ticks, tick{ax.x(v), label(v)})
	}
	return ch, ax
}

type scoreChart struct {
	rowChart
	Rows []scoreRow
}

type scoreRow struct {
	Y, TextY           float64
	Label, Value, Note string
	BarX, BarW         float64
	Lo, Hi, Mean       float64
	HasScore, HasCI    bool
	Winner             bool
}

func newScoreChart(cs []candidate) *scoreChart {
	lo, hi := 0.0, 1.0
	for _, c := range cs {
		if !c.scored {
			continue
		}
		st := c.standing
		lo = min(lo, st.Score, st.ScoreCI95[0])
		hi = max(hi, st.Score, st.ScoreCI95[1])
	}
	values, lo, hi, dec := niceTicks(lo, hi, 5)
	frame, ax := newRowChart(len(cs), lo, hi, values, func(v float64) string { return strconv.FormatFloat(v, 'f', dec, 64) })
	ch := &scoreChart{rowChart: frame}
	zero := ax.x(math.Max(lo, 0))
	for i, c := range cs {
		y := chartTop + float64(i)*chartRowH
		row := scoreRow{Y: y, TextY: y + chartRowH/2 + 4, Label: text.Shorten(text.OneLine(c.standing.CandidateID), 18),
			Winner: c.winner}
		if c.scored || c.standing.Score != 0 {
			st := c.standing
			row.HasScore = true
			row.Mean = ax.x(st.Score)
			row.BarX, row.BarW = math.Min(zero, row.Mean), math.Abs(row.Mean-zero)
			row.Value = c.scoreText()
			if st.ScoreCI95[1] > st.ScoreCI95[0] {
				row.HasCI = true
				row.Lo, row.Hi = ax.x(st.ScoreCI95[0]), ax.x(st.ScoreCI95[1])
			}
		} else {
			row.Note = "no score: " + c.statusText()
		}
		ch.Rows = append(ch.Rows, row)
	}
	return ch
}

type runtimeChart struct {
	rowChart
	Rows []runtimeRow
	// Boxes is true when a row is a box plot, not a dot per trial.
	Boxes bool
}

type runtimeRow struct {
	Y, TextY     float64
	Label, Value string
	Dots         []runtimeDot
	// Box stands for the dots of a candidate with more than maxDots trials.
	Box     *runtimeBox
	HasMean bool
	MeanX   float64
}

// maxDots is the most runtimes drawn as dots; beyond, a box plot.
const maxDots = 200

// runtimeBox is a box plot of a candidate's runtimes, as x positions.
type runtimeBox struct {
	Mid                      float64
	Min, Q1, Median, Q3, Max float64
	Title                    string
}

// newRuntimeBox summarises the runtimes of rs on ax.
func newRuntimeBox(id string, rs []*record.Trial, ax axis, mid float64) *runtimeBox {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = r.RuntimeSeconds
	}
	slices.Sort(xs)
	q := func(p float64) float64 { // linear interpolation between order statistics
		h := p * float64(len(xs)-1)
		lo := int(math.Floor(h))
		hi := min(lo+1, len(xs)-1)
		return xs[lo] + (h-float64(lo))*(xs[hi]-xs[lo])
	}
	b := &runtimeBox{Mid: mid, Min: ax.x(xs[0]), Q1: ax.x(q(0.25)), Median: ax.x(q(0.5)), Q3: ax.x(q(0.75)), Max: ax.x(xs[len(xs)-1])}
	b.Title = fmt.Sprintf("%s, %d trials: min %s, quartiles %s, %s, %s, max %s", text.OneLine(id), len(xs),
		text.Seconds(xs[0]), text.Seconds(q(0.25)), text.Seconds(q(0.5)), text.Seconds(q(0.75)), text.Seconds(xs[len(xs)-1]))
	return b
}

type runtimeDot struct {
	X, Y  float64
	Kind  string // ok, timeout, failed
	Title string
}

func newRuntimeChart(cs []candidate) *runtimeChart {
	hi := 0.0
	for _, c := range cs {
		for _, r := range c.results {
			hi = max(hi, r.RuntimeSeconds)
		}
	}
	// A little room right of the slowest trial keeps its dot off the edge.
	values, lo, hi, _ := niceTicks(0, max(hi*1.04, 0.001), 5)
	frame, ax := newRowChart(len(cs), lo, hi, values, text.Seconds)
	ch := &runtimeChart{rowChart: frame}
	for i, c := range cs {
		y := chartTop + float64(i)*chartRowH
		mid := y + chartRowH/2
		row := runtimeRow{Y: y, TextY: mid + 4,
			Label: text.Shorten(text.OneLine(c.standing.CandidateID), 18), Value: c.runtimeText()}
		dots := c.results
		if len(dots) > maxDots {
			row.Box, ch.Boxes, dots = newRuntimeBox(c.standing.CandidateID, c.results, ax, mid), true, nil
		}
		for j, r := range dots {
			kind, status := "ok", "ok"
			if !r.Success {
				kind, status = "failed", KindLabel(r.ErrorKind)
				if r.ErrorKind == runner.ErrTimeout {
					kind = "timeout"
				}
			}
			// Spread the dots of one row over its height so equal runtimes
			// stay visible; deterministic, no randomness.
			offset := float64(j%5-2) * 4
			row.Dots = append(row.Dots, runtimeDot{
				X: ax.x(r.RuntimeSeconds), Y: mid + offset, Kind: kind,
				Title: fmt.Sprintf("%s trial %d: %s, %s", text.OneLine(c.standing.CandidateID), r.Trial, text.Seconds(r.RuntimeSeconds), status),
			})
		}
		if mean, _, n := c.runtime(); n > 1 {
			row.HasMean, row.MeanX = true, ax.x(mean)
		}
		ch.Rows = append(ch.Rows, row)
	}
	return ch
}
