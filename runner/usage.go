package runner

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/forge-run/forge/internal/text"
)

// Usage is what a trial's model calls used, as reported in FORGE_RESULT:
// tokens per model and the candidate's own cost, if any.
type Usage struct {
	// Models are sorted by name; Model "" holds calls that named none.
	Models []ModelUsage `json:"models"`
	// CostUSD is the candidate's own figure, used instead of pricing.
	CostUSD *float64 `json:"cost_usd,omitempty"`
}

// ModelUsage is the tokens of one model's calls. InputTokens includes the
// cached ones, as OpenAI's prompt_tokens does.
type ModelUsage struct {
	Model             string `json:"model"`
	Calls             int    `json:"calls"`
	InputTokens       int64  `json:"input_tokens"`
	CachedInputTokens int64  `json:"cached_input_tokens,omitempty"`
	OutputTokens      int64  `json:"output_tokens"`
	// TotalTokens is input plus output, else the total_tokens given.
	TotalTokens int64 `json:"total_tokens"`
}

// Tokens is the usage's total tokens, all models together.
func (u *Usage) Tokens() int64 {
	var n int64
	if u != nil {
		for _, m := range u.Models {
			n += m.TotalTokens
		}
	}
	return n
}

// maxUsageEntries bounds how many calls a usage list may give.
const maxUsageEntries = 100_000

// maxTokens bounds one count: more is not a model call's.
const maxTokens = 1e15

// ParseUsage reads "usage" from a FORGE_RESULT object (docs/protocol.md): an
// OpenAI- or Anthropic-style usage object, a list of them, or a map of model
// names to either; "model" says whose tokens they are, "cost_usd" is the
// candidate's own cost. A shape it cannot read is (nil, note), leaving the
// whole usage out; a bad cost_usd alone keeps the tokens.
func ParseUsage(submitted map[string]any) (*Usage, string) {
	raw, hasUsage := submitted["usage"]
	rawCost, hasCost := submitted["cost_usd"]
	if !hasUsage && !hasCost {
		return nil, ""
	}
	u := &Usage{}
	var notes []string
	if hasCost {
		if c, ok := number(rawCost); ok && c >= 0 && c < 1e9 {
			u.CostUSD = &c
		} else {
			notes = append(notes, fmt.Sprintf("cost_usd is %s, want a non-negative number of dollars; ignored", shown(rawCost)))
		}
	}
	if hasUsage {
		model, _ := submitted["model"].(string)
		p := usageParser{models: map[string]*ModelUsage{}}
		if err := p.value("usage", raw, model, 0); err != nil {
			notes = append(notes, "usage ignored: "+err.Error())
		} else {
			for _, m := range p.models {
				u.Models = append(u.Models, *m)
			}
			slices.SortFunc(u.Models, func(a, b ModelUsage) int { return strings.Compare(a.Model, b.Model) })
		}
	}
	note := strings.Join(notes, "; ")
	if u.CostUSD == nil && len(u.Models) == 0 {
		return nil, note
	}
	return u, note
}

type usageParser struct {
	models  map[string]*ModelUsage
	entries int
}

// value reads usage at path: an object or a list; depth 1 is in a model map.
func (p *usageParser) value(path string, v any, model string, depth int) error {
	switch v := v.(type) {
	case []any:
		for i, e := range v {
			if _, ok := e.(map[string]any); !ok {
				return fmt.Errorf("%s[%d] is %s, want a usage object", path, i, shown(e))
			}
			if err := p.value(fmt.Sprintf("%s[%d]", path, i), e, model, depth); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		if slices.ContainsFunc(tokenKeys, func(k string) bool { _, ok := v[k]; return ok }) {
			return p.call(path, v, model)
		}
		if depth > 0 || len(v) == 0 {
			return fmt.Errorf("%s has no token counts (prompt_tokens, completion_tokens, input_tokens, output_tokens or total_tokens)", path)
		}
		for _, name := range slices.Sorted(maps.Keys(v)) {
			if err := p.value(path+"."+name, v[name], name, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%s is %s, want a usage object or a list of them", path, shown(v))
}

// tokenKeys are the keys that make an object one call's usage.
var tokenKeys = []string{"prompt_tokens", "completion_tokens", "input_tokens", "output_tokens", "total_tokens"}

// call adds one call's usage.
func (p *usageParser) call(path string, m map[string]any, model string) error {
	if p.entries++; p.entries > maxUsageEntries {
		return fmt.Errorf("more than %d calls", maxUsageEntries)
	}
	if name, ok := m["model"]; ok {
		s, isString := name.(string)
		if !isString || s == "" || len(s) > 200 {
			return fmt.Errorf("%s.model is %s, want a model's name", path, shown(name))
		}
		model = s
	}
	// count reads the first of keys that is there; the first bad count is err.
	var err error
	count := func(keys ...string) (int64, bool) {
		if err != nil {
			return 0, false
		}
		for _, k := range keys {
			v, ok := lookup(m, k)
			if !ok {
				continue
			}
			f, isNum := number(v)
			if !isNum || f < 0 || f != math.Trunc(f) || f > maxTokens {
				err = fmt.Errorf("%s.%s is %s, want a whole number of tokens, not negative", path, k, shown(v))
				return 0, true
			}
			return int64(f), true
		}
		return 0, false
	}
	in, hasIn := count("prompt_tokens", "input_tokens")
	out, hasOut := count("completion_tokens", "output_tokens")
	total, hasTotal := count("total_tokens")
	cached, _ := count("prompt_tokens_details.cached_tokens", "input_tokens_details.cached_tokens", "cached_tokens")
	// Anthropic's input_tokens leaves out the cache's: added here, so that
	// input counts every input token as OpenAI's does.
	cacheRead, hasRead := count("cache_read_input_tokens")
	cacheWrite, _ := count("cache_creation_input_tokens")
	if err != nil {
		return err
	}
	if hasRead {
		in += cacheRead + cacheWrite
		cached = cacheRead
	}
	if cached > in {
		return fmt.Errorf("%s: %d cached input tokens of %d input tokens", path, cached, in)
	}
	if hasIn || hasOut {
		total = in + out
	} else if !hasTotal {
		return fmt.Errorf("%s has no token counts", path)
	}
	mu := p.models[model]
	if mu == nil {
		mu = &ModelUsage{Model: model}
		p.models[model] = mu
	}
	mu.Calls++
	mu.InputTokens += in
	mu.CachedInputTokens += cached
	mu.OutputTokens += out
	mu.TotalTokens += total
	if mu.TotalTokens > maxTokens {
		return fmt.Errorf("%s: more than %g tokens in all", path, float64(maxTokens))
	}
	return nil
}

// lookup finds a key, or a dotted path of keys, in m.
func lookup(m map[string]any, key string) (any, bool) {
	for {
		k, rest, nested := strings.Cut(key, ".")
		v, ok := m[k]
		if !ok || !nested {
			return v, ok
		}
		if m, ok = v.(map[string]any); !ok {
			return nil, false
		}
		key = rest
	}
}

// number is v as a finite float64 (float64 or json.Number).
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, !math.IsInf(v, 0) && !math.IsNaN(v)
	case json.Number:
		f, err := v.Float64()
		return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
	}
	return 0, false
}

// shown is v as a note shows it: JSON, cut to 40 bytes.
func shown(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	return text.Shorten(string(b), 40)
}

// Resources are a Daytona sandbox's vCPUs and GiB of memory and disk.
type Resources struct {
	CPU       float64 `json:"cpu"`
	MemoryGiB float64 `json:"memory_gib"`
	DiskGiB   float64 `json:"disk_gib"`
}
