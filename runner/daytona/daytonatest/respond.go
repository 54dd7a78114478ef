package daytonatest

// How the emulator answers: JSON bodies and the two error shapes (the
// API's and the toolbox's), and the writer that records a status.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
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

// Hijack lets the WebSocket upgrader take the connection over.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// handlerCtx is one call being handled.
type handlerCtx struct {
	w         http.ResponseWriter
	r         *http.Request
	op        string
	params    map[string]string
	sandboxID string
}

func (h *handlerCtx) json(status int, v any) { writeJSON(h.w, status, v) }

// authorized says whether the call bears the key the server accepts.
func (s *Server) authorized(h *handlerCtx) bool {
	return h.r.Header.Get("Authorization") == "Bearer "+s.APIKey()
}

func (h *handlerCtx) apiError(status int, format string, args ...any) {
	writeAPIError(h.w, h.r, status, fmt.Sprintf(format, args...))
}

func (h *handlerCtx) toolboxError(status int, format string, args ...any) {
	writeToolboxError(h.w, h.r, status, fmt.Sprintf(format, args...))
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

// writeAPIError writes the API's error body (all-exceptions.filter.ts).
func writeAPIError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	writeJSON(w, status, map[string]any{
		"path": r.URL.Path, "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"statusCode": status, "error": http.StatusText(status), "message": msg,
	})
}

// writeToolboxError writes the daemon's error body (common-go errors/http.go).
func writeToolboxError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	writeJSON(w, status, map[string]any{
		"statusCode": status, "message": msg, "code": strings.ToUpper(strings.ReplaceAll(http.StatusText(status), " ", "_")),
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "path": r.URL.Path, "method": r.Method,
	})
}

func readCloser(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }
