package report

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/forge-run/forge/internal/text"
)

// costChart plots score against mean cost per trial, one point per fully
// priced candidate, with the Pareto front joined by a line.
type costChart struct {
	Width, Height  float64
	PlotX0, PlotX1 float64
	PlotY0, PlotY1 float64 // top and bottom
	XTicks, YTicks []costTick
	Points         []costPoint
	// Front is the polyline of the Pareto front's points, by cost.
	Front string
	// Left are the candidates with something unpriced.
	Left []string
}

type costTick struct {
	At    float64 // x for XTicks, y for YTicks
	Label string
}

type costPoint struct {
	X, Y         float64
	Label, Title string
	Front        bool
	Winner       bool
}

// newCostChart is nil when fewer than one candidate has a priced cost.
func newCostChart(cs []candidate) *costChart {
	type pt struct {
		c           candidate
		cost, score float64
	}
	var pts []pt
	var left []string
	for _, c := range cs {
		k := c.standing.Cost
		switch {
		case k == nil:
		case k.UnpricedTrials > 0:
			left = append(left, text.OneLine(c.standing.CandidateID))
		default:
			pts = append(pts, pt{c, k.MeanUSD, c.standing.Score})
		}
	}
	if len(pts) == 0 {
		return nil
	}
	ch := &costChart{Width: chartWidth, Height: 340, PlotX0: 90, PlotX1: chartWidth - 160, PlotY0: 16, PlotY1: 290, Left: left}
	hi := 0.0
	for _, p := range pts {
		hi = max(hi, p.cost)
	}
	xs, x0, x1, _ := niceTicks(0, hi, 5)
	ax := axis{x0, x1, ch.PlotX0, ch.PlotX1}
	for _, v := range xs {
		ch.XTicks = append(ch.XTicks, costTick{ax.x(v), text.USD(v)})
	}
	ay := axis{0, 1, ch.PlotY1, ch.PlotY0}
	for _, v := range []float64{0, 0.25, 0.5, 0.75, 1} {
		ch.YTicks = append(ch.YTicks, costTick{ay.x(v), strconv.FormatFloat(v, 'f', 2, 64)})
	}
	// The front: by cost (then score, best first), each point that scores
	// more than every cheaper one.
	slices.SortStableFunc(pts, func(a, b pt) int { return cmp.Or(cmp.Compare(a.cost, b.cost), cmp.Compare(b.score, a.score)) })
	best := -1.0
	var front []string
	for _, p := range pts {
		onFront := p.score > best
		if onFront {
			best = p.score
		}
		cp := costPoint{X: ax.x(p.cost), Y: ay.x(min(1, max(0, p.score))), Front: onFront, Winner: p.c.winner,
			Label: text.Shorten(text.OneLine(p.c.standing.CandidateID), 18)}
		cp.Title = cp.Label + ": " + p.c.scoreText() + " at " + text.USD(p.cost) + " a trial"
		if onFront {
			front = append(front, f1(cp.X)+","+f1(cp.Y))
		}
		ch.Points = append(ch.Points, cp)
	}
	ch.Front = strings.Join(front, " ")
	return ch
}
