package agent

// claude-code's stream-json log (claude -p --output-format stream-json
// --verbose): one JSON object a line, "system" (init, api_retry),
// "assistant" (one content block a line: text, tool_use), "user"
// (tool_result blocks) and a last "result" with the totals.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/forge-run/forge/runner"
)

type claudeLog struct {
	result bool
	// calls are the model calls seen, by message id, in order: an assistant
	// message comes one content block a line, each with the usage at the
	// start of its stream (its output tokens not yet counted).
	calls []claudeCall
}

type claudeCall struct {
	id, model string
	usage     claudeUsage
}

type claudeUsage struct {
	Input       int64 `json:"input_tokens"`
	Output      int64 `json:"output_tokens"`
	CacheRead   int64 `json:"cache_read_input_tokens"`
	CacheCreate int64 `json:"cache_creation_input_tokens"`
}

// modelUsage is a result's modelUsage entry.
type modelUsage struct {
	Input       int64 `json:"inputTokens"`
	Output      int64 `json:"outputTokens"`
	CacheRead   int64 `json:"cacheReadInputTokens"`
	CacheCreate int64 `json:"cacheCreationInputTokens"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // a tool result's: a string or blocks
	IsError   bool            `json:"is_error"`
}

type claudeMessage struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"` // a string or blocks
	Usage   *claudeUsage    `json:"usage"`
}

// claudeBlocks reads content: a string is one text block.
func claudeBlocks(raw json.RawMessage) []claudeBlock {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []claudeBlock{{Type: "text", Text: s}}
	}
	var bs []claudeBlock
	json.Unmarshal(raw, &bs)
	return bs
}

// blocksText is the text of content: its text blocks, one per line.
func blocksText(raw json.RawMessage) string {
	var texts []string
	for _, b := range claudeBlocks(raw) {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// synthetic is the model claude-code names in messages it writes itself.
const synthetic = "<synthetic>"

func (c *claudeLog) event(log *Log, ev map[string]json.RawMessage) bool {
	switch str(ev, "type") {
	case "system":
		if str(ev, "subtype") == "api_retry" {
			log.Steps = append(log.Steps, runner.Step{Role: "system", Type: "event", Content: content(apiRetry(ev)), Extra: extra("subtype", "api_retry")})
		}
	case "assistant":
		c.assistant(log, ev)
	case "user":
		c.user(log, ev)
	case "result":
		c.resultLine(log, ev)
	default:
		return false
	}
	return true
}

// apiRetry says what an api_retry line says.
func apiRetry(ev map[string]json.RawMessage) string {
	var attempt, maxRetries, delay int
	var status *int
	field(ev, "attempt", &attempt)
	field(ev, "max_retries", &maxRetries)
	field(ev, "retry_delay_ms", &delay)
	field(ev, "error_status", &status)
	s := fmt.Sprintf("API retry %d of %d in %d ms: %s", attempt, maxRetries, delay, str(ev, "error"))
	if status != nil {
		s += fmt.Sprintf(" (HTTP %d)", *status)
	}
	return s
}

func (c *claudeLog) assistant(log *Log, ev map[string]json.RawMessage) {
	var m claudeMessage
	field(ev, "message", &m)
	var apiError bool
	if field(ev, "is_api_error_message", &apiError); apiError || m.Model == synthetic {
		// claude-code's own words (an API error), not the model's.
		if t := blocksText(m.Content); t != "" {
			log.Steps = append(log.Steps, runner.Step{Role: "system", Type: "event", Content: content(t), Extra: extra("error", str(ev, "error"))})
		}
		return
	}
	if m.Usage != nil {
		i := slices.IndexFunc(c.calls, func(cl claudeCall) bool { return cl.id == m.ID })
		if i < 0 {
			c.calls = append(c.calls, claudeCall{id: m.ID, model: m.Model})
			i = len(c.calls) - 1
		}
		c.calls[i].usage = *m.Usage
	}
	for _, b := range claudeBlocks(m.Content) {
		switch b.Type {
		case "text":
			log.Steps = append(log.Steps, runner.Step{Role: "assistant", Type: "message", Content: content(b.Text), Model: m.Model})
		case "tool_use":
			log.Steps = append(log.Steps, runner.Step{Role: "assistant", Type: "tool_call", ToolCallID: b.ID,
				Tool: &runner.ToolCall{Name: b.Name, Arguments: b.Input}, Model: m.Model})
		}
	}
}

// exitCode is how claude-code's Bash tool starts a failed command's result.
var exitCode = regexp.MustCompile(`^Exit code (\d+)\n`)

func (c *claudeLog) user(log *Log, ev map[string]json.RawMessage) {
	var m claudeMessage
	field(ev, "message", &m)
	at, _ := time.Parse(time.RFC3339Nano, str(ev, "timestamp")) // zero when there is none
	for _, b := range claudeBlocks(m.Content) {
		switch b.Type {
		case "tool_result":
			out := blocksText(b.Content)
			st := runner.Step{Role: "tool", Type: "tool_result", ToolCallID: b.ToolUseID, Content: content(excerpt(out)), Time: at}
			if b.IsError {
				st.Extra = extra("is_error", true)
				if m := exitCode.FindStringSubmatch(out); m != nil {
					n, _ := strconv.Atoi(m[1])
					st.Extra["exit_code"], _ = json.Marshal(n)
				}
			}
			log.Steps = append(log.Steps, st)
		case "text":
			log.Steps = append(log.Steps, runner.Step{Role: "user", Type: "message", Content: content(b.Text), Time: at})
		}
	}
}

func (c *claudeLog) resultLine(log *Log, ev map[string]json.RawMessage) {
	c.result = true
	field(ev, "num_turns", &log.Turns)
	var isError bool
	field(ev, "is_error", &isError)
	if isError || strings.HasPrefix(str(ev, "subtype"), "error") {
		log.Error = resultError(ev)
	}
	var models map[string]modelUsage
	field(ev, "modelUsage", &models)
	u := &runner.Usage{Models: c.usage(models)}
	var cost float64
	if field(ev, "total_cost_usd", &cost) {
		u.CostUSD = &cost
	}
	if u.CostUSD != nil || len(u.Models) > 0 {
		log.Usage = u
	}
}

// resultError is a failed result's words: its result text, else its
// errors, else its subtype; with the API's status when one ended it.
func resultError(ev map[string]json.RawMessage) string {
	var errs []string
	field(ev, "errors", &errs)
	words := cmp.Or(str(ev, "result"), strings.Join(errs, "; "), str(ev, "subtype"), "is_error")
	var status *int
	if field(ev, "api_error_status", &status); status != nil {
		words += fmt.Sprintf(" (HTTP %d)", *status)
	}
	return words
}

func (c *claudeLog) end(log *Log) {
	if c.result {
		return
	}
	log.Error = "the log ends before claude-code's result line"
	// Without the totals, the calls' usage as they started: their input
	// is whole, their output not yet counted.
	models := map[string]modelUsage{}
	for _, cl := range c.calls {
		m, u := models[cl.model], cl.usage
		models[cl.model] = modelUsage{Input: m.Input + u.Input, Output: m.Output + u.Output,
			CacheRead: m.CacheRead + u.CacheRead, CacheCreate: m.CacheCreate + u.CacheCreate}
	}
	if len(models) > 0 {
		log.Usage = &runner.Usage{Models: c.usage(models)}
	}
}

// usage is the usage of models, by name, as forge counts it, in the
// names' order, each with the calls seen to it (one at least). Input
// counts the cache's tokens too, as OpenAI's does (runner.ParseUsage).
func (c *claudeLog) usage(models map[string]modelUsage) []runner.ModelUsage {
	var out []runner.ModelUsage
	for _, name := range slices.Sorted(maps.Keys(models)) {
		m := models[name]
		calls := 0
		for _, cl := range c.calls {
			if cl.model == name {
				calls++
			}
		}
		in := m.Input + m.CacheRead + m.CacheCreate
		out = append(out, runner.ModelUsage{Model: name, Calls: max(calls, 1), InputTokens: in, CachedInputTokens: m.CacheRead,
			OutputTokens: m.Output, TotalTokens: in + m.Output})
	}
	return out
}
