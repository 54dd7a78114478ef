package daytonatest

// How the emulator answers: JSON bodies and the two error shapes (the
// API's and the toolbox's), and the writer that records a status.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// statusWriter remembers the status of an answer written directly (not
// through a recorder), for the call log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// Unwrap lets http.ResponseController reach the connection: the
// WebSocket upgrader takes it over, a build log is flushed as it comes.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// handlerCtx is one call being handled.
type handlerCtx struct {
	w         http.ResponseWriter
	r         *http.Request
	op        string
	params    map[string]string
	toolbox   bool // a call to the toolbox of the sandbox sandboxID, not the API
	sandboxID string
}

func (h *handlerCtx) json(status int, v any) { writeJSON(h.w, status, v) }

// authorized says whether the call bears the key the server accepts.
func (s *Server) authorized(h *handlerCtx) bool {
	return h.r.Header.Get("Authorization") == "Bearer "+s.APIKey()
}

func (h *handlerCtx) apiError(status int, format string, args ...any) {
	writeError(h.w, h.r, false, status, fmt.Sprintf(format, args...))
}

func (h *handlerCtx) toolboxError(status int, format string, args ...any) {
	writeError(h.w, h.r, true, status, fmt.Sprintf(format, args...))
}

// badRequest answers the toolbox's 400 with err's message.
func (h *handlerCtx) badRequest(err error) { h.toolboxError(http.StatusBadRequest, "%v", err) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// writeError writes the toolbox daemon's error body (common-go
// errors/http.go), else the API's (all-exceptions.filter.ts).
func writeError(w http.ResponseWriter, r *http.Request, toolbox bool, status int, msg string) {
	body := map[string]any{
		"statusCode": status, "message": msg, "path": r.URL.Path, "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
	}
	if toolbox {
		body["code"], body["method"] = strings.ToUpper(strings.ReplaceAll(http.StatusText(status), " ", "_")), r.Method
	} else {
		body["error"] = http.StatusText(status)
	}
	writeJSON(w, status, body)
}
