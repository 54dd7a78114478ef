package agenttest

// The OpenAI Responses API, as codex calls it: POST /v1/responses
// (streaming or not) and the models list, with the API's error shape.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

type responsesRequest struct {
	Model        string          `json:"model"`
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"` // a string or items
	Tools        []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

// openaiItem is an input or output item of any type, the fields a type has.
type openaiItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id,omitempty"`
	Role      string          `json:"role,omitempty"`
	Status    string          `json:"status,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // a string or parts
	Name      string          `json:"name,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"` // a string or parts
}

// partsText is the text of a string or a list of content parts.
func partsText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var texts []string
	for _, p := range parts {
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n")
}

type openaiErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// openaiError answers status, noted in req, with the API's error shape:
// every error here is an invalid_request_error.
func openaiError(w http.ResponseWriter, req *Request, status int, body openaiErrorBody) {
	req.Status = status
	body.Type = "invalid_request_error"
	writeJSON(w, status, map[string]openaiErrorBody{"error": body})
}

// openaiCheck answers the request's key and model as the API does; false
// when it has answered an error. model "" is not checked.
func (s *Server) openaiCheck(w http.ResponseWriter, r *http.Request, req *Request, model string) bool {
	bearer, hasBearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	req.KeyOK = hasBearer && bearer == s.key
	switch {
	case !hasBearer || bearer == "":
		openaiError(w, req, http.StatusUnauthorized, openaiErrorBody{
			Message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."})
	case !req.KeyOK:
		openaiError(w, req, http.StatusUnauthorized, openaiErrorBody{Code: new("invalid_api_key"),
			Message: "Incorrect API key provided: " + maskKey(bearer) + ". You can find your API key at https://platform.openai.com/account/api-keys."})
	case model != "" && !s.known(model):
		openaiError(w, req, http.StatusBadRequest, openaiErrorBody{Param: new("model"), Code: new("model_not_found"),
			Message: fmt.Sprintf("The requested model '%s' does not exist.", model)})
	default:
		return true
	}
	return false
}

// maskKey shows a key as OpenAI's errors do: its ends.
func maskKey(k string) string {
	if len(k) < 8 {
		return strings.Repeat("*", len(k))
	}
	return k[:3] + strings.Repeat("*", len(k)-7) + k[len(k)-4:]
}

// parseResponses reads a responses request and checks its key and model;
// false when it has answered an error.
func (s *Server) parseResponses(w http.ResponseWriter, r *http.Request, body []byte, req *Request) (responsesRequest, bool) {
	var m responsesRequest
	jsonErr := json.Unmarshal(body, &m)
	req.Model, req.Stream = m.Model, m.Stream
	if !s.openaiCheck(w, r, req, "") {
		return m, false
	}
	if jsonErr != nil || m.Model == "" {
		msg := "Missing required parameter: 'model'."
		if jsonErr != nil {
			msg = "We could not parse the JSON body of your request: " + jsonErr.Error()
		}
		openaiError(w, req, http.StatusBadRequest, openaiErrorBody{Message: msg})
		return m, false
	}
	if !s.openaiCheck(w, r, req, m.Model) {
		return m, false
	}
	for _, t := range m.Tools {
		req.Tools = append(req.Tools, cmp.Or(t.Name, t.Type))
	}
	return m, true
}

// conversation reads the request's input: the user's texts, the parts
// whose tokens count, and (into req) the tool results.
func (m responsesRequest) conversation(req *Request) (user, parts []string) {
	var items []openaiItem
	var input string
	if json.Unmarshal(m.Input, &input) == nil {
		items = []openaiItem{{Type: "message", Role: "user", Content: m.Input}}
	} else {
		json.Unmarshal(m.Input, &items)
	}
	parts = []string{m.Instructions}
	for _, it := range items {
		switch it.Type {
		case "message":
			text := partsText(it.Content)
			parts = append(parts, text)
			if it.Role == "user" {
				user = append(user, text)
			}
		case "function_call", "custom_tool_call":
			parts = append(parts, it.Arguments)
		case "function_call_output", "custom_tool_call_output":
			out := partsText(it.Output)
			parts = append(parts, out)
			req.ToolResults = append(req.ToolResults, out)
		}
	}
	return user, parts
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request, body []byte) {
	req := Request{API: "openai", Method: r.Method, Path: r.URL.Path, Body: body}
	defer func() { s.log(req) }()
	m, ok := s.parseResponses(w, r, body, &req)
	if !ok {
		return
	}
	user, parts := m.conversation(&req)
	turn, usage := s.play(&req, user, parts, len(m.Tools) > 0)
	n := s.seq.Add(1)
	output := responseOutput(turn, n, req.Tools)
	resp := map[string]any{
		"id": fmt.Sprintf("resp_fake%04d", n), "object": "response", "created_at": time.Now().Unix(),
		"status": "completed", "model": m.Model, "output": output, "error": nil, "incomplete_details": nil,
		"usage": map[string]any{
			"input_tokens":          usage.Input,
			"input_tokens_details":  map[string]int{"cached_tokens": usage.Cached},
			"output_tokens":         usage.Output,
			"output_tokens_details": map[string]int{"reasoning_tokens": 0},
			"total_tokens":          usage.Input + usage.Output,
		},
	}
	w.Header().Set("x-request-id", fmt.Sprintf("req_fake%04d", n))
	if !m.Stream {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	streamResponse(newSSE(w), resp, output, turn.Text)
}

// responseOutput is what turn says as output items: its shell command is a
// call of the shell tool the request offers (exec_command, else shell).
func responseOutput(turn Turn, n int64, tools []string) []openaiItem {
	var output []openaiItem
	if turn.Text != "" {
		content := marshal([]map[string]any{{"type": "output_text", "text": turn.Text, "annotations": []any{}}})
		output = append(output, openaiItem{Type: "message", ID: fmt.Sprintf("msg_fake%04d", n), Role: "assistant", Status: "completed", Content: content})
	}
	if turn.Shell == "" {
		return output
	}
	var name string
	var args []byte
	switch {
	case slices.Contains(tools, "exec_command"):
		name, args = "exec_command", marshal(map[string]string{"cmd": turn.Shell})
	case slices.Contains(tools, "shell"):
		name, args = "shell", marshal(map[string][]string{"command": {"bash", "-lc", turn.Shell}})
	default:
		return output
	}
	return append(output, openaiItem{Type: "function_call", ID: fmt.Sprintf("fc_fake%04d", n), Status: "completed",
		Name: name, Arguments: string(args), CallID: fmt.Sprintf("call_fake%04d", n)})
}

// streamResponse sends resp as the API streams it: response.created and
// in_progress (no output yet), each output item's events, then
// response.completed. text is the message item's text.
func streamResponse(e sse, resp map[string]any, output []openaiItem, text string) {
	seq := 0
	event := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		e.event(typ, fields)
	}
	started := maps.Clone(resp)
	started["status"], started["output"], started["usage"] = "in_progress", []any{}, nil
	event("response.created", map[string]any{"response": started})
	event("response.in_progress", map[string]any{"response": started})
	for i, it := range output {
		added := it
		added.Status = "in_progress"
		switch it.Type {
		case "message":
			added.Content = json.RawMessage(`[]`)
			event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			event("response.content_part.added", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "part": part})
			for _, chunk := range chunks(text) {
				event("response.output_text.delta", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "delta": chunk})
			}
			event("response.output_text.done", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "text": text})
			part["text"] = text
			event("response.content_part.done", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "part": part})
		case "function_call":
			added.Arguments = ""
			event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			for _, chunk := range chunks(it.Arguments) {
				event("response.function_call_arguments.delta", map[string]any{"item_id": it.ID, "output_index": i, "delta": chunk})
			}
			event("response.function_call_arguments.done", map[string]any{"item_id": it.ID, "output_index": i, "arguments": it.Arguments})
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	event("response.completed", map[string]any{"response": resp})
}

func (s *Server) openaiModels(w http.ResponseWriter, r *http.Request) {
	req := Request{API: "openai", Method: r.Method, Path: r.URL.Path}
	defer func() { s.log(req) }()
	if !s.openaiCheck(w, r, &req, "") {
		return
	}
	model := func(id string) map[string]any {
		return map[string]any{"id": id, "object": "model", "created": 1759104000, "owned_by": "fake"}
	}
	req.Status = http.StatusOK
	if id, one := strings.CutPrefix(r.URL.Path, "/v1/models/"); one {
		req.Model = id
		if !s.known(id) {
			openaiError(w, &req, http.StatusNotFound, openaiErrorBody{Param: new("model"), Code: new("model_not_found"),
				Message: fmt.Sprintf("The model '%s' does not exist", id)})
			return
		}
		writeJSON(w, req.Status, model(id))
		return
	}
	data := []map[string]any{}
	for _, id := range s.models {
		data = append(data, model(id))
	}
	writeJSON(w, req.Status, map[string]any{"object": "list", "data": data})
}
