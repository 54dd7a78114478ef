package agenttest

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

var testScript = Script{Rules: []Rule{{When: "make hello", Turns: []Turn{
	{Text: "On it.", Shell: "echo hi > hello.txt"},
	{Text: "Made hello.txt."},
}}}, Plain: "A title"}

// post sends body to the server with headers, returning the status and body.
func post(t *testing.T, url string, headers map[string]string, body any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

type event struct {
	name string
	data map[string]any
}

// events reads a server-sent event stream.
func events(t *testing.T, body string) []event {
	t.Helper()
	var evs []event
	sc := bufio.NewScanner(strings.NewReader(body))
	var name string
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
		} else if d, ok := strings.CutPrefix(line, "data: "); ok {
			var data map[string]any
			if err := json.Unmarshal([]byte(d), &data); err != nil {
				t.Fatalf("event %s: %v", name, err)
			}
			if data["type"] != name {
				t.Errorf("event %s has type %v", name, data["type"])
			}
			evs = append(evs, event{name, data})
		}
	}
	return evs
}

func names(evs []event) string {
	var ns []string
	for _, e := range evs {
		if len(ns) == 0 || !strings.HasPrefix(ns[len(ns)-1], e.name) {
			ns = append(ns, e.name)
		} else if !strings.HasSuffix(ns[len(ns)-1], "…") {
			ns[len(ns)-1] += "…"
		}
	}
	return strings.Join(ns, " ")
}

var anthropicHeaders = map[string]string{"x-api-key": DefaultKey, "anthropic-version": "2023-06-01"}

var bash = []map[string]any{{"name": "Bash", "input_schema": map[string]any{"type": "object"}}}

func TestAnthropicStream(t *testing.T) {
	srv := Start(t, Options{Script: testScript})
	status, body := post(t, srv.URL+"/v1/messages?beta=true", anthropicHeaders, map[string]any{
		"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": true, "tools": bash,
		"system":   "You are terse.",
		"messages": []any{map[string]any{"role": "user", "content": "please make hello now"}},
	})
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	evs := events(t, body)
	want := "message_start ping content_block_start content_block_delta content_block_stop " +
		"content_block_start content_block_delta… content_block_stop message_delta message_stop"
	if got := names(evs); got != want {
		t.Errorf("events\n%s\nwant\n%s", got, want)
	}
	var text, input string
	for _, e := range evs {
		if d, ok := e.data["delta"].(map[string]any); ok {
			if s, ok := d["text"].(string); ok {
				text += s
			}
			if s, ok := d["partial_json"].(string); ok {
				input += s
			}
		}
	}
	if text != "On it." || input != `{"command":"echo hi > hello.txt"}` {
		t.Errorf("text %q, input %q", text, input)
	}
	delta := evs[len(evs)-2].data
	if delta["delta"].(map[string]any)["stop_reason"] != "tool_use" {
		t.Errorf("message_delta %v, want stop_reason tool_use", delta)
	}
	// Four tokens per three words, rounded: 4 of "You are terse." and 5 of
	// the user's 4 words in, 3 + 5 out; nothing cached on a first call.
	start := evs[0].data["message"].(map[string]any)["usage"].(map[string]any)
	if start["input_tokens"] != 9.0 || start["cache_read_input_tokens"] != 0.0 {
		t.Errorf("message_start usage %v", start)
	}
	if out := delta["usage"].(map[string]any)["output_tokens"]; out != 8.0 {
		t.Errorf("output tokens %v, want 8", out)
	}
	reqs := srv.Requests()
	want1 := Request{API: "anthropic", Method: "POST", Path: "/v1/messages", Model: "claude-sonnet-4-5", KeyOK: true,
		Stream: true, Tools: []string{"Bash"}, Rule: "make hello", Status: 200,
		Answer: "On it.\n$ echo hi > hello.txt", Usage: Usage{Input: 9, Output: 8}}
	if len(reqs) != 1 {
		t.Fatalf("%d requests logged", len(reqs))
	}
	got := reqs[0]
	got.Body = nil
	if !reflect.DeepEqual(got, want1) {
		t.Errorf("request logged as\n%+v\nwant\n%+v", got, want1)
	}
}

func TestAnthropicJSONAfterToolResult(t *testing.T) {
	srv := Start(t, Options{Script: testScript})
	status, body := post(t, srv.URL+"/v1/messages", anthropicHeaders, map[string]any{
		"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": bash,
		"messages": []any{
			map[string]any{"role": "user", "content": "please make hello now"},
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{"command": "echo hi > hello.txt"}}}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": []any{map[string]any{"type": "text", "text": "done ok"}}}}},
		},
	})
	var msg struct {
		Content    []struct{ Type, Text string }
		StopReason string `json:"stop_reason"`
		Usage      map[string]int
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil || status != 200 {
		t.Fatalf("status %d, %v: %s", status, err, body)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "Made hello.txt." || msg.StopReason != "end_turn" {
		t.Errorf("answer %+v", msg)
	}
	// In: "" (no system), 5 (the prompt), 5 (the tool input's 4 words), 3
	// (the result); all but the result cached.
	if u := msg.Usage; u["input_tokens"] != 3 || u["cache_read_input_tokens"] != 10 || u["output_tokens"] != 3 {
		t.Errorf("usage %v", u)
	}
	if r := srv.Requests()[0]; r.Turn != 1 || !reflect.DeepEqual(r.ToolResults, []string{"done ok"}) || r.Usage != (Usage{Input: 13, Cached: 10, Output: 3}) {
		t.Errorf("logged turn %d, tool results %q, usage %+v", r.Turn, r.ToolResults, r.Usage)
	}
}

func TestAnthropicErrors(t *testing.T) {
	srv := Start(t, Options{Script: testScript})
	ok := map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	for _, c := range []struct {
		name    string
		headers map[string]string
		body    map[string]any
		status  int
		want    string
	}{
		{"no key", map[string]string{"anthropic-version": "2023-06-01"}, ok, 401,
			`{"error":{"message":"invalid x-api-key","type":"authentication_error"},"type":"error"}`},
		{"wrong key", map[string]string{"x-api-key": "nope", "anthropic-version": "2023-06-01"}, ok, 401,
			`{"error":{"message":"invalid x-api-key","type":"authentication_error"},"type":"error"}`},
		{"no version", map[string]string{"x-api-key": DefaultKey}, ok, 400,
			`{"error":{"message":"anthropic-version: header is required","type":"invalid_request_error"},"type":"error"}`},
		{"unknown model", anthropicHeaders, map[string]any{"model": "claude-nope", "max_tokens": 10, "messages": ok["messages"]}, 404,
			`{"error":{"message":"model: claude-nope","type":"not_found_error"},"type":"error"}`},
		{"no max_tokens", anthropicHeaders, map[string]any{"model": "claude-sonnet-4-5", "messages": ok["messages"]}, 400,
			`{"error":{"message":"max_tokens: Field required","type":"invalid_request_error"},"type":"error"}`},
	} {
		status, body := post(t, srv.URL+"/v1/messages", c.headers, c.body)
		if status != c.status || compact(t, body) != c.want {
			t.Errorf("%s: %d %s, want %d %s", c.name, status, body, c.status, c.want)
		}
	}
	for i, r := range srv.Requests() {
		if r.KeyOK != (i >= 2) {
			t.Errorf("request %d: KeyOK %v", i, r.KeyOK)
		}
	}
}

// compact is a JSON body with its keys sorted.
func compact(t *testing.T, body string) string {
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestAnthropicSideCallsAndMore(t *testing.T) {
	srv := Start(t, Options{Script: testScript, Models: []string{"claude-haiku-4-5"}})
	// A call without tools (a title) is answered with the plain text.
	status, body := post(t, srv.URL+"/v1/messages", anthropicHeaders, map[string]any{
		"model": "claude-haiku-4-5", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "make hello: title?"}}})
	if status != 200 || !strings.Contains(body, `"text":"A title"`) {
		t.Errorf("side call: %d %s", status, body)
	}
	status, body = post(t, srv.URL+"/v1/messages/count_tokens", anthropicHeaders, map[string]any{
		"model": "claude-haiku-4-5", "messages": []any{map[string]any{"role": "user", "content": "one two three"}}})
	if status != 200 || compact(t, body) != `{"input_tokens":4}` {
		t.Errorf("count_tokens: %d %s", status, body)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/models", nil)
	for k, v := range anthropicHeaders {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"id":"claude-haiku-4-5"`) {
		t.Errorf("models: %s", b)
	}
	if status, _ := post(t, srv.URL+"/v1/nothing", anthropicHeaders, map[string]any{}); status != 404 {
		t.Errorf("unknown path: %d", status)
	}
	if r := srv.Requests(); len(r) != 4 || r[3].Path != "/v1/nothing" || r[3].Status != 404 {
		t.Errorf("requests %+v", r)
	}
}

var execCommand = []map[string]any{{"type": "function", "name": "exec_command"}, {"type": "web_search"}}

func TestOpenAIStream(t *testing.T) {
	srv := Start(t, Options{Script: testScript})
	status, body := post(t, srv.OpenAIBase()+"/responses", map[string]string{"Authorization": "Bearer " + DefaultKey}, map[string]any{
		"model": "gpt-5.5", "stream": true, "tools": execCommand, "instructions": "Be brief.",
		"input": []any{
			map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "rules here"}}},
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "please make hello now"}}},
		},
	})
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	evs := events(t, body)
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		"response.output_text.delta response.output_text.done response.content_part.done response.output_item.done " +
		"response.output_item.added response.function_call_arguments.delta… response.function_call_arguments.done " +
		"response.output_item.done response.completed"
	if got := names(evs); got != want {
		t.Errorf("events\n%s\nwant\n%s", got, want)
	}
	for i, e := range evs {
		if e.data["sequence_number"] != float64(i) {
			t.Errorf("%s: sequence_number %v, want %d", e.name, e.data["sequence_number"], i)
		}
	}
	call := evs[len(evs)-2].data["item"].(map[string]any)
	if call["type"] != "function_call" || call["name"] != "exec_command" || call["arguments"] != `{"cmd":"echo hi > hello.txt"}` || call["call_id"] == "" {
		t.Errorf("function call %v", call)
	}
	done := evs[len(evs)-1].data["response"].(map[string]any)
	u, _ := json.Marshal(done["usage"])
	if string(u) != `{"input_tokens":11,"input_tokens_details":{"cached_tokens":0},"output_tokens":8,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":19}` {
		t.Errorf("usage %s", u)
	}
	if r := srv.Requests()[0]; r.API != "openai" || !r.KeyOK || r.Rule != "make hello" || !reflect.DeepEqual(r.Tools, []string{"exec_command", "web_search"}) {
		t.Errorf("logged %+v", r)
	}
}

func TestOpenAIAfterToolResult(t *testing.T) {
	srv := Start(t, Options{Script: testScript})
	status, body := post(t, srv.OpenAIBase()+"/responses", map[string]string{"Authorization": "Bearer " + DefaultKey}, map[string]any{
		"model": "gpt-5.5", "tools": execCommand,
		"input": []any{
			map[string]any{"type": "message", "role": "user", "content": "please make hello now"},
			map[string]any{"type": "function_call", "name": "exec_command", "arguments": `{"cmd":"echo hi"}`, "call_id": "c1"},
			map[string]any{"type": "function_call_output", "call_id": "c1", "output": "Process exited with code 0"},
		},
	})
	var resp struct {
		Output []struct {
			Type    string
			Content []struct{ Text string }
		}
		Usage struct {
			InputTokens  int                        `json:"input_tokens"`
			InputDetails struct{ CachedTokens int } `json:"input_tokens_details"`
			OutputTokens int                        `json:"output_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || status != 200 {
		t.Fatalf("%d %v: %s", status, err, body)
	}
	if len(resp.Output) != 1 || resp.Output[0].Type != "message" || resp.Output[0].Content[0].Text != "Made hello.txt." {
		t.Errorf("output %+v", resp.Output)
	}
	if r := srv.Requests()[0]; r.Turn != 1 || r.Usage != (Usage{Input: 15, Cached: 8, Output: 3}) || r.ToolResults[0] != "Process exited with code 0" {
		t.Errorf("logged turn %d, usage %+v, results %q", r.Turn, r.Usage, r.ToolResults)
	}
}

func TestOpenAIErrors(t *testing.T) {
	srv := Start(t, Options{Script: testScript})
	ok := map[string]any{"model": "gpt-5.5", "input": "hi"}
	for _, c := range []struct {
		name, auth string
		body       map[string]any
		status     int
		want       string
	}{
		{"no key", "", ok, 401,
			`{"error":{"code":null,"message":"You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).","param":null,"type":"invalid_request_error"}}`},
		{"wrong key", "Bearer sk-wrong-1234", ok, 401,
			`{"error":{"code":"invalid_api_key","message":"Incorrect API key provided: sk-******1234. You can find your API key at https://platform.openai.com/account/api-keys.","param":null,"type":"invalid_request_error"}}`},
		{"unknown model", "Bearer " + DefaultKey, map[string]any{"model": "gpt-nope", "input": "hi"}, 400,
			`{"error":{"code":"model_not_found","message":"The requested model 'gpt-nope' does not exist.","param":"model","type":"invalid_request_error"}}`},
	} {
		h := map[string]string{}
		if c.auth != "" {
			h["Authorization"] = c.auth
		}
		status, body := post(t, srv.OpenAIBase()+"/responses", h, c.body)
		if status != c.status || compact(t, body) != c.want {
			t.Errorf("%s: %d %s, want %d %s", c.name, status, body, c.status, c.want)
		}
	}
}

func TestParseScript(t *testing.T) {
	s, err := ParseScript([]byte(`
rules:
  - when: fix the bug
    turns:
      - {shell: make test, text: Testing.}
      - text: Fixed.
default:
  - text: Nothing to do.
plain: Title
`))
	want := Script{Rules: []Rule{{When: "fix the bug", Turns: []Turn{{Shell: "make test", Text: "Testing."}, {Text: "Fixed."}}}},
		Default: []Turn{{Text: "Nothing to do."}}, Plain: "Title"}
	if err != nil || !reflect.DeepEqual(s, want) {
		t.Errorf("ParseScript: %+v, %v", s, err)
	}
	if turn, rule := s.turnFor("please fix the bug", 5); turn.Text != "Fixed." || rule != "fix the bug" {
		t.Errorf("past the last turn: %+v %q, want the last turn again", turn, rule)
	}
	if turn, _ := s.turnFor("hello", 0); turn.Text != "Nothing to do." {
		t.Errorf("no rule: %+v, want the default", turn)
	}
	for _, bad := range []string{"rules: [{when: x}]", "rule: []", "rules: [{when: x, turns: [{shel: ls}]}]"} {
		if _, err := ParseScript([]byte(bad)); err == nil {
			t.Errorf("ParseScript(%q) = nil error", bad)
		}
	}
}

func TestTokens(t *testing.T) {
	for in, want := range map[string]int{"": 0, "one": 1, "one two": 3, "one two three": 4, "  a b\nc d e f ": 8} {
		if got := Tokens(in); got != want {
			t.Errorf("Tokens(%q) = %d, want %d", in, got, want)
		}
	}
}
