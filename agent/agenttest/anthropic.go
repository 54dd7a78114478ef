package agenttest

// The Anthropic Messages API, as claude-code calls it: POST /v1/messages
// (streaming or not), count_tokens and the models list, with the API's
// error shapes.

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

type messagesRequest struct {
	Model     string            `json:"model"`
	MaxTokens int               `json:"max_tokens"`
	Stream    bool              `json:"stream"`
	System    json.RawMessage   `json:"system"`
	Messages  []anthropicMsg    `json:"messages"`
	Tools     []json.RawMessage `json:"tools"`
}

type anthropicMsg struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or blocks
}

// anthropicBlock is a content block of any type, the fields a type has.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // a tool result's: a string or blocks
}

// blocks reads content: a string is one text block.
func blocks(content json.RawMessage) []anthropicBlock {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}
	}
	var bs []anthropicBlock
	json.Unmarshal(content, &bs)
	return bs
}

// blockText is the text of content: strings, text blocks, tool inputs and
// results, one per line.
func blockText(content json.RawMessage) string {
	var parts []string
	for _, b := range blocks(content) {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "tool_use":
			parts = append(parts, string(b.Input))
		case "tool_result":
			parts = append(parts, blockText(b.Content))
		}
	}
	return strings.Join(parts, "\n")
}

// anthropicError answers status, noted in req, with the API's error shape.
func anthropicError(w http.ResponseWriter, req *Request, status int, typ, msg string) {
	req.Status = status
	writeJSON(w, status, map[string]any{
		"type":  "error",
		"error": map[string]string{"type": typ, "message": msg},
	})
}

// anthropicKey answers 401 unless the request bears the server's key.
func (s *Server) anthropicKey(w http.ResponseWriter, r *http.Request, req *Request) bool {
	if req.KeyOK = r.Header.Get("x-api-key") == s.key; !req.KeyOK {
		anthropicError(w, req, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
	}
	return req.KeyOK
}

// anthropicCheck answers the request's key, version header and model as
// the API does; false when it has answered an error. model "" is not checked.
func (s *Server) anthropicCheck(w http.ResponseWriter, r *http.Request, req *Request, model string) bool {
	switch {
	case !s.anthropicKey(w, r, req):
	case r.Header.Get("anthropic-version") == "":
		anthropicError(w, req, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
	case model != "" && !s.known(model):
		anthropicError(w, req, http.StatusNotFound, "not_found_error", "model: "+model)
	default:
		return true
	}
	return false
}

// parseMessages reads a messages request; false when it has answered 400.
func (s *Server) parseMessages(w http.ResponseWriter, r *http.Request, body []byte, req *Request) (messagesRequest, bool) {
	var m messagesRequest
	bad := func(msg string) (messagesRequest, bool) {
		if s.anthropicKey(w, r, req) {
			anthropicError(w, req, http.StatusBadRequest, "invalid_request_error", msg)
		}
		return m, false
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return bad("There was an error parsing the body of your request: " + err.Error())
	}
	req.Model, req.Stream = m.Model, m.Stream
	if m.Model == "" {
		return bad("model: Field required")
	}
	if len(m.Messages) == 0 {
		return bad("messages: at least one message is required")
	}
	for _, t := range m.Tools {
		var tool struct {
			Name string `json:"name"`
		}
		json.Unmarshal(t, &tool)
		req.Tools = append(req.Tools, tool.Name)
	}
	return m, true
}

// conversation reads the request's messages: the user's texts, the parts
// whose tokens count, and (into req) the tool results.
func (m messagesRequest) conversation(req *Request) (user, parts []string) {
	parts = []string{blockText(m.System)}
	for _, msg := range m.Messages {
		parts = append(parts, blockText(msg.Content))
		for _, b := range blocks(msg.Content) {
			switch {
			case b.Type == "tool_result":
				req.ToolResults = append(req.ToolResults, blockText(b.Content))
			case b.Type == "text" && msg.Role == "user":
				user = append(user, b.Text)
			}
		}
	}
	return user, parts
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request, body []byte) {
	req := Request{API: "anthropic", Method: r.Method, Path: r.URL.Path, Body: body}
	defer func() { s.log(req) }()
	m, ok := s.parseMessages(w, r, body, &req)
	if !ok || !s.anthropicCheck(w, r, &req, m.Model) {
		return
	}
	if m.MaxTokens <= 0 {
		anthropicError(w, &req, http.StatusBadRequest, "invalid_request_error", "max_tokens: Field required")
		return
	}
	user, parts := m.conversation(&req)
	turn, usage := s.play(&req, user, parts, len(m.Tools) > 0)
	n := s.seq.Add(1)
	content, stop := messageContent(turn, n, slices.Contains(req.Tools, "Bash"))
	msg := map[string]any{
		"id": fmt.Sprintf("msg_fake%04d", n), "type": "message", "role": "assistant", "model": m.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": messageUsage(usage, usage.Output),
	}
	w.Header().Set("request-id", fmt.Sprintf("req_fake%04d", n))
	if !m.Stream {
		writeJSON(w, http.StatusOK, msg)
		return
	}
	streamMessage(newSSE(w), msg, content, usage)
}

// messageContent is what turn says as content blocks, and why it stops:
// its shell command is a Bash call when the request offers Bash.
func messageContent(turn Turn, n int64, bash bool) (content []anthropicBlock, stop string) {
	content = []anthropicBlock{}
	if turn.Text != "" {
		content = append(content, anthropicBlock{Type: "text", Text: turn.Text})
	}
	if turn.Shell == "" || !bash {
		return content, "end_turn"
	}
	input := marshal(map[string]string{"command": turn.Shell})
	content = append(content, anthropicBlock{Type: "tool_use", ID: fmt.Sprintf("toolu_fake%04d", n), Name: "Bash", Input: input})
	return content, "tool_use"
}

// messageUsage is a message's usage field, reporting output tokens.
func messageUsage(u Usage, output int) map[string]any {
	return map[string]any{
		"input_tokens":                u.Input - u.Cached,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     u.Cached,
		"output_tokens":               output,
	}
}

// streamMessage sends msg as the API streams it: message_start (no content
// yet, one output token), each block's start, deltas and stop, then
// message_delta with the stop reason and usage, and message_stop.
func streamMessage(e sse, msg map[string]any, content []anthropicBlock, usage Usage) {
	start := maps.Clone(msg)
	start["content"], start["stop_reason"], start["usage"] = []any{}, nil, messageUsage(usage, 1)
	e.event("message_start", map[string]any{"type": "message_start", "message": start})
	e.event("ping", map[string]any{"type": "ping"})
	for i, b := range content {
		switch b.Type {
		case "text":
			e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			for _, chunk := range chunks(b.Text) {
				e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "text_delta", "text": chunk}})
			}
		case "tool_use":
			e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			for _, chunk := range chunks(string(b.Input)) {
				e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": chunk}})
			}
		}
		e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	e.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": msg["stop_reason"], "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": usage.Output}})
	e.event("message_stop", map[string]any{"type": "message_stop"})
}

// chunks cuts s in pieces of about 16 bytes, as a stream delivers it.
func chunks(s string) []string {
	var out []string
	for len(s) > 16 {
		cut := 16
		for cut < len(s) && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return append(out, s)
}

func (s *Server) countTokens(w http.ResponseWriter, r *http.Request, body []byte) {
	req := Request{API: "anthropic", Method: r.Method, Path: r.URL.Path, Body: body}
	defer func() { s.log(req) }()
	m, ok := s.parseMessages(w, r, body, &req)
	if !ok || !s.anthropicCheck(w, r, &req, m.Model) {
		return
	}
	n := Tokens(blockText(m.System))
	for _, msg := range m.Messages {
		n += Tokens(blockText(msg.Content))
	}
	req.Status = http.StatusOK
	writeJSON(w, req.Status, map[string]int{"input_tokens": n})
}

func (s *Server) anthropicModels(w http.ResponseWriter, r *http.Request) {
	req := Request{API: "anthropic", Method: r.Method, Path: r.URL.Path}
	defer func() { s.log(req) }()
	if !s.anthropicCheck(w, r, &req, "") {
		return
	}
	model := func(id string) map[string]string {
		return map[string]string{"type": "model", "id": id, "display_name": id, "created_at": "2025-09-29T00:00:00Z"}
	}
	req.Status = http.StatusOK
	if id, one := strings.CutPrefix(r.URL.Path, "/v1/models/"); one {
		req.Model = id
		if !s.known(id) {
			anthropicError(w, &req, http.StatusNotFound, "not_found_error", "model: "+id)
			return
		}
		writeJSON(w, req.Status, model(id))
		return
	}
	data := []map[string]string{}
	for _, id := range s.models {
		data = append(data, model(id))
	}
	list := map[string]any{"data": data, "has_more": false, "first_id": nil, "last_id": nil}
	if len(s.models) > 0 {
		list["first_id"], list["last_id"] = s.models[0], s.models[len(s.models)-1]
	}
	writeJSON(w, req.Status, list)
}
