package agent

// codex's log (codex exec --json): one JSON object a line, thread.started,
// turn.started, item.started / item.completed (agent_message,
// command_execution, file_change, mcp_tool_call, web_search, error, ...),
// error (a reconnection), and turn.completed with the turn's usage or
// turn.failed with the error that ended it.

import (
	"cmp"
	"encoding/json"
	"strings"

	"github.com/forge-run/forge/runner"
)

type codexLog struct {
	started map[string]bool // command items whose call is a step already
	usage   *runner.ModelUsage
}

type codexItem struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Message string          `json:"message"`
	Command string          `json:"command"`
	Output  string          `json:"aggregated_output"`
	Exit    *int            `json:"exit_code"`
	Status  string          `json:"status"`
	Changes json.RawMessage `json:"changes"`
	Server  string          `json:"server"`
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"arguments"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
	Query   string          `json:"query"`
}

type codexUsage struct {
	Input  int64 `json:"input_tokens"`
	Cached int64 `json:"cached_input_tokens"`
	Output int64 `json:"output_tokens"`
}

func (c *codexLog) event(log *Log, ev map[string]json.RawMessage) bool {
	switch str(ev, "type") {
	case "thread.started":
	case "turn.started":
		log.Turns++
	case "item.started", "item.updated", "item.completed":
		var it codexItem
		if field(ev, "item", &it) {
			c.item(log, it, str(ev, "type") == "item.completed")
		}
	case "error":
		log.Steps = append(log.Steps, runner.Step{Role: "system", Type: "event", Content: content(str(ev, "message"))})
	case "turn.completed":
		var u codexUsage
		if field(ev, "usage", &u) {
			if c.usage == nil {
				c.usage = &runner.ModelUsage{}
			}
			c.usage.Calls++
			c.usage.InputTokens += u.Input
			c.usage.CachedInputTokens += u.Cached
			c.usage.OutputTokens += u.Output
			c.usage.TotalTokens += u.Input + u.Output
		}
	case "turn.failed":
		var e struct {
			Message string `json:"message"`
		}
		field(ev, "error", &e)
		log.Error = cmp.Or(e.Message, "turn.failed")
	default:
		return false
	}
	return true
}

// item makes an item's steps: a command's call when it starts, its result
// when it completes; the rest when they complete.
func (c *codexLog) item(log *Log, it codexItem, completed bool) {
	add := func(st runner.Step) { log.Steps = append(log.Steps, st) }
	call := func(name string, args any) {
		b, _ := json.Marshal(args)
		add(runner.Step{Role: "assistant", Type: "tool_call", ToolCallID: it.ID, Tool: &runner.ToolCall{Name: name, Arguments: b}})
	}
	if it.Type == "command_execution" && !c.started[it.ID] {
		c.started[it.ID] = true
		call("exec_command", map[string]string{"command": it.Command})
	}
	if !completed {
		return
	}
	result := func(out string) runner.Step {
		st := runner.Step{Role: "tool", Type: "tool_result", ToolCallID: it.ID, Content: content(excerpt(out))}
		if it.Status != "" {
			st.Extra = extra("status", it.Status)
		}
		return st
	}
	switch it.Type {
	case "agent_message":
		add(runner.Step{Role: "assistant", Type: "message", Content: content(it.Text)})
	case "command_execution":
		st := result(it.Output)
		if it.Exit != nil {
			if st.Extra == nil {
				st.Extra = map[string]json.RawMessage{}
			}
			st.Extra["exit_code"], _ = json.Marshal(*it.Exit)
		}
		add(st)
	case "file_change":
		call("apply_patch", map[string]json.RawMessage{"changes": it.Changes})
		var changes []struct{ Path, Kind string }
		json.Unmarshal(it.Changes, &changes)
		var lines []string
		for _, ch := range changes {
			lines = append(lines, ch.Kind+" "+ch.Path)
		}
		add(result(strings.Join(lines, "\n")))
	case "mcp_tool_call":
		call(it.Server+"/"+it.Tool, it.Args)
		out := it.Result
		if len(it.Error) > 0 && string(it.Error) != "null" {
			out = it.Error
		}
		add(result(string(out)))
	case "web_search":
		call("web_search", map[string]string{"query": it.Query})
	case "error":
		add(runner.Step{Role: "system", Type: "event", Content: content(it.Message)})
	}
}

func (c *codexLog) end(log *Log) {
	// codex reports tokens, not cost, and does not name the model in its
	// log: the usage is model "" (the run's model, which forge knows).
	if c.usage != nil {
		log.Usage = &runner.Usage{Models: []runner.ModelUsage{*c.usage}}
	}
}
