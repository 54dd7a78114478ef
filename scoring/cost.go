package scoring

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// Pricing is the manifest's pricing: block, in US dollars. forge never
// invents a price: what it cannot price is counted and said to be unpriced.
type Pricing struct {
	// Models are token prices by model name.
	Models map[string]ModelPrice `yaml:"models"`
	// Sandbox prices a trial's sandbox by its lifetime.
	Sandbox SandboxPrice `yaml:"sandbox"`
}

// ModelPrice is one model's dollars per million tokens; CachedInput defaults to Input.
type ModelPrice struct {
	Input       *float64 `yaml:"input"`
	CachedInput *float64 `yaml:"cached_input"`
	Output      *float64 `yaml:"output"`
}

// SandboxPrice prices a sandbox's lifetime (a trial's job time): per vCPU-
// and GiB-hour of its resources, or a flat price per sandbox-hour.
type SandboxPrice struct {
	VCPUHour    *float64 `yaml:"vcpu_hour"`
	GiBHour     *float64 `yaml:"gib_hour"`
	SandboxHour *float64 `yaml:"sandbox_hour"`
}

// IsZero says the manifest gave no pricing.
func (p *Pricing) IsZero() bool {
	return p == nil || len(p.Models) == 0 && p.Sandbox == (SandboxPrice{})
}

// Check says what is wrong with the prices, with key paths below "pricing".
func (p *Pricing) Check() []PricingProblem {
	if p == nil {
		return nil
	}
	var out []PricingProblem
	bad := func(v *float64, path ...string) {
		if v != nil && !(*v >= 0 && *v < 1e6) {
			out = append(out, PricingProblem{Path: path, Msg: fmt.Sprintf("%v dollars: a price is a number of dollars, not negative", *v)})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Models)) {
		mp := p.Models[name]
		if strings.TrimSpace(name) == "" {
			out = append(out, PricingProblem{Path: []string{"models"}, Msg: "a model's name is empty"})
		}
		if mp.Input == nil && mp.Output == nil {
			out = append(out, PricingProblem{Path: []string{"models", name}, Msg: "gives no price: want input and output (dollars per million tokens)"})
		}
		bad(mp.Input, "models", name, "input")
		bad(mp.CachedInput, "models", name, "cached_input")
		bad(mp.Output, "models", name, "output")
	}
	s := p.Sandbox
	bad(s.VCPUHour, "sandbox", "vcpu_hour")
	bad(s.GiBHour, "sandbox", "gib_hour")
	bad(s.SandboxHour, "sandbox", "sandbox_hour")
	if s.SandboxHour != nil && (s.VCPUHour != nil || s.GiBHour != nil) {
		out = append(out, PricingProblem{Path: []string{"sandbox", "sandbox_hour"}, Msg: "give a flat sandbox_hour or vcpu_hour and gib_hour, not both"})
	}
	return out
}

// PricingProblem is one problem of a Pricing, at a key path below pricing.
type PricingProblem struct {
	Path []string
	Msg  string
}

// Price is what r cost: its model usage (or its own cost_usd) plus its
// sandbox's lifetime; nil when nothing about it has a cost.
func (p *Pricing) Price(r *record.Trial) *record.Cost {
	if r.Usage == nil && (p == nil || p.Sandbox == (SandboxPrice{})) {
		return nil
	}
	c := &record.Cost{}
	var unpriced []string
	if u := r.Usage; u != nil {
		c.Tokens = u.Tokens()
		if u.CostUSD != nil {
			c.ModelUSD = *u.CostUSD
		} else {
			for _, m := range u.Models {
				usd, why := p.modelCost(m) // 0 when it cannot
				c.ModelUSD += usd
				if why != "" {
					unpriced = append(unpriced, why)
				}
			}
		}
	}
	if p != nil {
		usd, why := p.sandboxCost(r)
		if why != "" {
			unpriced = append(unpriced, why)
		}
		c.SandboxUSD = usd
	}
	c.USD = c.ModelUSD + c.SandboxUSD
	c.Unpriced = strings.Join(unpriced, "; ")
	return c
}

// modelCost prices one model's tokens, or says why it cannot.
func (p *Pricing) modelCost(m runner.ModelUsage) (float64, string) {
	name := m.Model
	if name == "" {
		return 0, fmt.Sprintf("%d tokens of no named model", m.TotalTokens)
	}
	var mp ModelPrice
	ok := false
	if p != nil {
		mp, ok = p.Models[name]
	}
	if !ok {
		return 0, fmt.Sprintf("no price for model %s (%d tokens)", name, m.TotalTokens)
	}
	if m.InputTokens == 0 && m.OutputTokens == 0 && m.TotalTokens > 0 {
		return 0, fmt.Sprintf("%d tokens of %s not split into input and output", m.TotalTokens, name)
	}
	in := m.InputTokens - m.CachedInputTokens
	var usd float64
	for _, part := range []struct {
		tokens int64
		price  *float64
		what   string
	}{{in, mp.Input, "input"}, {m.CachedInputTokens, cmp.Or(mp.CachedInput, mp.Input), "cached input"}, {m.OutputTokens, mp.Output, "output"}} {
		if part.tokens == 0 {
			continue
		}
		if part.price == nil {
			return 0, fmt.Sprintf("no %s price for model %s", part.what, name)
		}
		usd += float64(part.tokens) * *part.price / 1e6
	}
	return usd, ""
}

// sandboxCost prices r's sandbox lifetime, or says why it cannot.
func (p *Pricing) sandboxCost(r *record.Trial) (float64, string) {
	s := p.Sandbox
	hours := r.JobSeconds / 3600
	switch {
	case s.SandboxHour != nil:
		return hours * *s.SandboxHour, ""
	case s.VCPUHour == nil && s.GiBHour == nil:
		return 0, ""
	case r.Resources == nil:
		return 0, "the sandbox's resources are unknown (" + r.Backend + ": only a flat sandbox_hour prices it)"
	}
	var usd float64
	if s.VCPUHour != nil {
		usd += hours * r.Resources.CPU * *s.VCPUHour
	}
	if s.GiBHour != nil {
		usd += hours * r.Resources.MemoryGiB * *s.GiBHour
	}
	return usd, ""
}

// costTally adds up a candidate's trial costs.
type costTally struct {
	n, unpriced         int
	usd, model, sandbox float64
	tokens              int64
}

func (c *costTally) add(cost *record.Cost) {
	if cost == nil {
		return
	}
	c.n++
	c.usd += cost.USD
	c.model += cost.ModelUSD
	c.sandbox += cost.SandboxUSD
	c.tokens += cost.Tokens
	if cost.Unpriced != "" {
		c.unpriced++
	}
}

// standing is the tally as a standing; nil when no trial had a cost.
func (c *costTally) standing(successes int) *record.CostStanding {
	if c.n == 0 {
		return nil
	}
	st := &record.CostStanding{USD: c.usd, MeanUSD: c.usd / float64(c.n), ModelUSD: c.model, SandboxUSD: c.sandbox,
		Tokens: c.tokens, CostedTrials: c.n, UnpricedTrials: c.unpriced}
	// No price for a win when no trial had one: it is not free.
	if successes > 0 && c.unpriced < c.n {
		st.PerSuccessUSD = new(c.usd / float64(successes))
	}
	return st
}

// costLine is what the winner line adds when the runner-up, fully priced, is
// cheaper than rank 1: "; beta solves 96% of what alpha solves at 31% of its
// cost". Costs compare per trial. Empty otherwise.
func costLine(es []*tally) string {
	top, second, noWinner := contenders(es)
	if noWinner != "" || second == nil {
		return ""
	}
	a, b := top.st.Cost, second.st.Cost
	if a == nil || b == nil || a.UnpricedTrials > 0 || b.UnpricedTrials > 0 || a.MeanUSD <= 0 || b.MeanUSD >= a.MeanUSD {
		return ""
	}
	who := second.id
	if second.st.Rank == top.st.Rank {
		who += ", within noise of " + top.id + ","
	}
	var what string
	switch su, sb := top.st.Suite, second.st.Suite; {
	case su != nil && sb != nil && su.Solved > 0:
		what = fmt.Sprintf("solves %s of what %s solves", text.Percent(float64(sb.Solved)/float64(su.Solved)), top.id)
	case top.st.Score > 0:
		what = fmt.Sprintf("scores %s of %s's score", text.Percent(second.st.Score/top.st.Score), top.id)
	default:
		return ""
	}
	return fmt.Sprintf("; %s %s at %s of its cost", who, what, text.Percent(b.MeanUSD/a.MeanUSD))
}
