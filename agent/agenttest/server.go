package agenttest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// DefaultKey is the API key a server accepts when Options.Key is "".
const DefaultKey = "fake-key"

// DefaultModels are the models a server knows when Options.Models is nil:
// models the agents know by themselves (codex warns of one it has no
// metadata for), their defaults (claude-opus-5-5, gpt-6.2-sol) among them.
var DefaultModels = []string{
	"claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-5-5",
	"gpt-5.5", "gpt-6.2-sol", "gpt-5-codex",
}

// Options configure a server.
type Options struct {
	Key    string   // the API key it accepts ("": DefaultKey)
	Models []string // the models it knows (nil: DefaultModels)
	Script Script
	// OnRequest, if set, is told of every request once answered.
	OnRequest func(Request)
}

// Server is a fake model server: the Anthropic Messages API and the OpenAI
// Responses API on one address.
type Server struct {
	// URL is its base URL, "http://127.0.0.1:PORT", as ANTHROPIC_BASE_URL
	// takes it; OpenAIBase is the OpenAI SDKs' (with /v1).
	URL string

	key    string
	models []string
	script Script
	notify func(Request)
	hs     *httptest.Server
	seq    atomic.Int64 // numbers the ids of answers

	mu   sync.Mutex
	reqs []Request
}

// Request is one request the server answered, as a test inspects it.
type Request struct {
	API    string // "anthropic", "openai", or "" for a path neither has
	Method string
	Path   string // without the query
	Model  string
	// KeyOK says the request bore the server's key, where the vendor wants it.
	KeyOK  bool
	Stream bool
	Tools  []string // the names of the tools it offered
	// Rule is the When of the rule that answered ("" the default script);
	// Turn the turn played, from 0.
	Rule string
	Turn int
	// ToolResults are the tool outputs the conversation holds, in order.
	ToolResults []string
	Status      int
	// Answer is what the model said: its text, then the shell command it
	// called ("$ CMD"), one per line.
	Answer string
	Usage  Usage
	Body   []byte // as received
}

// Usage is the tokens one answer reported. Input counts every input token,
// Cached those of them read from the cache.
type Usage struct {
	Input, Cached, Output int
}

// Start serves a fake model for the test, closed at its end.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if err := opts.Script.Validate(); err != nil {
		t.Fatalf("agenttest: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := Serve(l, opts)
	t.Cleanup(s.Close)
	return s
}

// Serve serves a fake model on l until Close.
func Serve(l net.Listener, opts Options) *Server {
	s := &Server{key: cmp.Or(opts.Key, DefaultKey), models: opts.Models, script: opts.Script, notify: opts.OnRequest}
	if s.models == nil {
		s.models = DefaultModels
	}
	s.hs = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(s.serveHTTP)}}
	s.hs.Start()
	s.URL = s.hs.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.hs.Close() }

// Key is the API key the server accepts.
func (s *Server) Key() string { return s.key }

// OpenAIBase is the base URL as OpenAI's SDKs take it (OPENAI_BASE_URL).
func (s *Server) OpenAIBase() string { return s.URL + "/v1" }

// Requests are the requests answered so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

func (s *Server) log(r Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.mu.Unlock()
	if s.notify != nil {
		s.notify(r)
	}
}

func (s *Server) known(model string) bool { return slices.Contains(s.models, model) }

// maxBody bounds a request body: an agent's long conversation fits.
const maxBody = 32 << 20

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	anthropic := r.Header.Get("x-api-key") != "" || r.Header.Get("anthropic-version") != ""
	switch {
	case r.URL.Path == "/v1/messages" && r.Method == http.MethodPost:
		s.messages(w, r, body)
	case r.URL.Path == "/v1/messages/count_tokens" && r.Method == http.MethodPost:
		s.countTokens(w, r, body)
	case r.URL.Path == "/v1/responses" && r.Method == http.MethodPost:
		s.responses(w, r, body)
	case (r.URL.Path == "/v1/models" || strings.HasPrefix(r.URL.Path, "/v1/models/")) && r.Method == http.MethodGet:
		if anthropic {
			s.anthropicModels(w, r)
		} else {
			s.openaiModels(w, r)
		}
	default:
		req := Request{Method: r.Method, Path: r.URL.Path, Body: body}
		if anthropic {
			req.API = "anthropic"
			anthropicError(w, &req, http.StatusNotFound, "not_found_error", "Not Found")
		} else {
			openaiError(w, &req, http.StatusNotFound, openaiErrorBody{Message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)})
		}
		s.log(req)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(marshal(v))
}

// marshal is v's JSON as the vendors write it: <, > and & as they are.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // our own values
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// sse writes server-sent events, flushing each.
type sse struct {
	w http.ResponseWriter
}

func newSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

func (e sse) event(name string, data any) {
	fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, marshal(data))
	http.NewResponseController(e.w).Flush()
}

// play picks the turn for a conversation (the user's texts, the tool
// results in req) and counts its tokens, noting both in req: input is the
// conversation's parts; on a later call (after a tool result) all but the
// last part are read from the cache.
func (s *Server) play(req *Request, user, parts []string, tools bool) (turn Turn, usage Usage) {
	turn = Turn{Text: cmp.Or(s.script.Plain, "OK")}
	toolResults := len(req.ToolResults)
	if tools {
		turn, req.Rule = s.script.turnFor(strings.Join(user, "\n"), toolResults)
		req.Turn = toolResults
	}
	for i, p := range parts {
		n := Tokens(p)
		usage.Input += n
		if toolResults > 0 && i < len(parts)-1 {
			usage.Cached += n
		}
	}
	usage.Output = max(1, Tokens(turn.Text)+Tokens(turn.Shell))
	req.Answer, req.Usage, req.Status = turn.said(), usage, http.StatusOK
	return turn, usage
}

// said is a turn as Request.Answer shows it.
func (t Turn) said() string {
	var lines []string
	if t.Text != "" {
		lines = append(lines, t.Text)
	}
	if t.Shell != "" {
		lines = append(lines, "$ "+t.Shell)
	}
	return strings.Join(lines, "\n")
}
