package runner

import (
	"strings"
	"testing"
)

func usageOf(t *testing.T, js string) (*Usage, string) {
	t.Helper()
	m, err := ParseSubmitted([]byte(js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return ParseUsage(m)
}

func TestParseUsageShapes(t *testing.T) {
	for _, tc := range []struct {
		name, js string
		want     []ModelUsage
		cost     float64 // -1: none
	}{
		{"openai chat", `{"usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150, "prompt_tokens_details": {"cached_tokens": 100}}, "model": "gpt-4o-mini"}`,
			[]ModelUsage{{Model: "gpt-4o-mini", Calls: 1, InputTokens: 120, CachedInputTokens: 100, OutputTokens: 30, TotalTokens: 150}}, -1},
		{"a list of calls, summed per model", `{"usage": [{"prompt_tokens": 10, "completion_tokens": 5, "model": "a"}, {"prompt_tokens": 20, "completion_tokens": 1, "model": "b"}, {"prompt_tokens": 1, "completion_tokens": 1, "model": "a"}]}`,
			[]ModelUsage{{Model: "a", Calls: 2, InputTokens: 11, OutputTokens: 6, TotalTokens: 17}, {Model: "b", Calls: 1, InputTokens: 20, OutputTokens: 1, TotalTokens: 21}}, -1},
		{"per model map", `{"usage": {"gpt-4o": {"input_tokens": 7, "output_tokens": 3}, "o3": [{"input_tokens": 1, "output_tokens": 1}, {"input_tokens": 2, "output_tokens": 2}]}}`,
			[]ModelUsage{{Model: "gpt-4o", Calls: 1, InputTokens: 7, OutputTokens: 3, TotalTokens: 10}, {Model: "o3", Calls: 2, InputTokens: 3, OutputTokens: 3, TotalTokens: 6}}, -1},
		{"anthropic cache", `{"usage": {"input_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20, "output_tokens": 9}, "model": "claude"}`,
			[]ModelUsage{{Model: "claude", Calls: 1, InputTokens: 125, CachedInputTokens: 100, OutputTokens: 9, TotalTokens: 134}}, -1},
		{"responses api cache", `{"usage": {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 40}, "output_tokens": 5, "total_tokens": 55}}`,
			[]ModelUsage{{Model: "", Calls: 1, InputTokens: 50, CachedInputTokens: 40, OutputTokens: 5, TotalTokens: 55}}, -1},
		{"total only", `{"usage": {"total_tokens": 99}}`, []ModelUsage{{Calls: 1, TotalTokens: 99}}, -1},
		{"cost and usage", `{"usage": {"prompt_tokens": 1, "completion_tokens": 2}, "cost_usd": 0.25}`, []ModelUsage{{Calls: 1, InputTokens: 1, OutputTokens: 2, TotalTokens: 3}}, 0.25},
		{"cost only", `{"cost_usd": 0}`, nil, 0},
	} {
		u, note := usageOf(t, tc.js)
		if note != "" || u == nil {
			t.Errorf("%s: %+v, note %q", tc.name, u, note)
			continue
		}
		if len(u.Models) != len(tc.want) {
			t.Errorf("%s: models %+v, want %+v", tc.name, u.Models, tc.want)
			continue
		}
		for i := range tc.want {
			if u.Models[i] != tc.want[i] {
				t.Errorf("%s: model %d %+v, want %+v", tc.name, i, u.Models[i], tc.want[i])
			}
		}
		if (tc.cost < 0) != (u.CostUSD == nil) || (u.CostUSD != nil && *u.CostUSD != tc.cost) {
			t.Errorf("%s: cost %v, want %v", tc.name, u.CostUSD, tc.cost)
		}
	}
	if u, note := usageOf(t, `{"score": 3}`); u != nil || note != "" {
		t.Errorf("nothing reported: %+v %q", u, note)
	}
}

// Bad shapes: a note saying where, no usage (never half of one), never a
// panic.
func TestParseUsageBadShapes(t *testing.T) {
	for js, want := range map[string]string{
		`{"usage": "lots"}`:                                                              `usage is "lots", want a usage object`,
		`{"usage": {"prompt_tokens": "12"}}`:                                             `usage.prompt_tokens is "12", want a whole number`,
		`{"usage": {"prompt_tokens": -1}}`:                                               `usage.prompt_tokens is -1`,
		`{"usage": {"completion_tokens": 1.5}}`:                                          `usage.completion_tokens is 1.5`,
		`{"usage": {"prompt_tokens": 1e300}}`:                                            `usage.prompt_tokens is 1e300`,
		`{"usage": [{"prompt_tokens": 1}, 7]}`:                                           `usage[1] is 7`,
		`{"usage": [{"prompt_tokens": 1}, {"x": {"y": 1}}]}`:                             `usage[1].x has no token counts`,
		`{"usage": {"a": {"b": {"prompt_tokens": 1}}}}`:                                  `usage.a has no token counts`,
		`{"usage": {}}`:                                                                  `usage has no token counts`,
		`{"usage": {"prompt_tokens": 1, "model": 5}}`:                                    `usage.model is 5`,
		`{"usage": {"prompt_tokens": 1, "prompt_tokens_details": {"cached_tokens": 2}}}`: `1 input tokens`,
		`{"usage": [[{"prompt_tokens": 1}]]}`:                                            `usage[0] is [{"prompt_tokens":1}]`,
		`{"cost_usd": "free"}`:                                                           `cost_usd is "free"`,
		`{"cost_usd": -2}`:                                                               `cost_usd is -2`,
	} {
		u, note := usageOf(t, js)
		if !strings.Contains(note, want) {
			t.Errorf("%s: note %q, want it to say %q", js, note, want)
		}
		if u != nil && len(u.Models) > 0 {
			t.Errorf("%s: usage %+v kept", js, u)
		}
	}
	// A bad cost leaves good tokens; bad tokens leave a good cost.
	if u, note := usageOf(t, `{"usage": {"prompt_tokens": 4, "completion_tokens": 1}, "cost_usd": null}`); u == nil || u.Tokens() != 5 || u.CostUSD != nil || note == "" {
		t.Errorf("bad cost: %+v %q", u, note)
	}
	if u, note := usageOf(t, `{"usage": {"prompt_tokens": "x"}, "cost_usd": 1}`); u == nil || u.CostUSD == nil || len(u.Models) != 0 || note == "" {
		t.Errorf("bad tokens: %+v %q", u, note)
	}
	// Many calls: bounded.
	var b strings.Builder
	b.WriteString(`{"usage": [`)
	for i := range maxUsageEntries + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"total_tokens": 1}`)
	}
	b.WriteString(`]}`)
	if u, note := usageOf(t, b.String()); u != nil || !strings.Contains(note, "more than 100000 calls") {
		t.Errorf("too many calls: %v %q", u != nil, note)
	}
}

// Submit keeps the metrics, reads the usage out of them, and a bad usage
// fails nothing.
func TestSubmitReadsUsage(t *testing.T) {
	var r Result
	r.Submit([]byte(`{"quality": 0.5, "usage": {"prompt_tokens": 3, "completion_tokens": 4}, "model": "m"}`))
	if r.SubmitError != "" || r.Submitted["quality"] != 0.5 || r.Submitted["usage"] != nil || r.Usage.Tokens() != 7 || r.Usage.Models[0].Model != "m" {
		t.Errorf("%+v", r)
	}
	var bad Result
	bad.Submit([]byte(`{"quality": 1, "usage": {"prompt_tokens": {"deep": [1, 2, {"x": "y"}]}}}`))
	if bad.SubmitError != "" || bad.Submitted["quality"] != 1.0 || bad.Usage != nil || bad.UsageNote == "" {
		t.Errorf("%+v", bad)
	}
}
