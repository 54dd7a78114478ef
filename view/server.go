package view

import (
	"bytes"
	"cmp"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"

	"github.com/forge-run/forge/compare"
	"github.com/forge-run/forge/internal/mask"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/report"
	"github.com/forge-run/forge/runner"
)

//go:embed assets
var assets embed.FS

// Options say what a Server shows.
type Options struct {
	// Out is the output root whose runs the server lists.
	Out string
	// Runs are run directories elsewhere to serve too, by id.
	Runs map[string]string
	// Secrets are values to mask as *** in what the pages show (an
	// artifact is stored as written).
	Secrets []string
	// AnyHost answers whatever the Host header names; otherwise only the
	// loopback names with the server's port.
	AnyHost bool
	// Gates says whether a finished run passes its manifest's gates ("" when
	// that cannot be told); nil: the runs list does not say.
	Gates func(rec *record.Record) string
	// Log receives what went wrong serving a page (nil: log.Default).
	Log *log.Logger
	// Token, when set, is asked of every request: in the URL once
	// (?token=…, which sets an HttpOnly cookie and redirects to the URL
	// without it), then in the cookie; 401 without it. Anyone else on
	// the machine, or on the network, sees nothing.
	Token string
}

// Server serves the viewer's pages. Its zero value is not usable: use New.
type Server struct {
	opts  Options
	tmpl  *template.Template
	mask  *mask.Masker
	cache cache
	// port is the port the server listens on, for the Host check; ""
	// accepts the loopback names with any port.
	mu   sync.Mutex
	port string
}

// New returns a Server for opts.
func New(opts Options) (*Server, error) {
	tmpl, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("view: parse templates: %w", err)
	}
	opts.Log = cmp.Or(opts.Log, log.Default())
	return &Server{opts: opts, tmpl: tmpl, mask: mask.New(opts.Secrets...), cache: cache{runs: map[string]*cached{}}}, nil
}

// Listen listens on addr and returns the listener and the viewer's URL;
// the Host check then admits the loopback names with that port.
func (s *Server) Listen(addr string) (net.Listener, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	s.mu.Lock()
	s.port = port
	s.mu.Unlock()
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return ln, "http://" + net.JoinHostPort(host, port) + "/", nil
}

// CSP is the Content-Security-Policy of every response: the viewer's own
// script, stylesheet and images only, nothing inline, no frame.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// Handler returns the viewer's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.runsPage)
	mux.HandleFunc("GET /run/{id}", s.runPage)
	mux.HandleFunc("GET /run/{id}/trial/{n}", s.trialPage)
	mux.HandleFunc("GET /run/{id}/file/{path...}", s.file)
	mux.HandleFunc("GET /run/{id}/events", s.events)
	mux.HandleFunc("GET /compare", s.comparePage)
	mux.HandleFunc("GET /static/report.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Write([]byte(report.StyleSheet()))
	})
	static, _ := fs.Sub(assets, "assets/static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	return s.guard(mux)
}

// guard sets the security headers on every response and refuses a Host
// not this machine's loopback (DNS rebinding) and a path that would leave
// where it points (404, before the mux would clean it).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if !s.hostAllowed(r.Host) {
			http.Error(w, "forge view answers only to localhost (the Host header names another site)", http.StatusForbidden)
			return
		}
		if badPath(r.URL) {
			http.NotFound(w, r)
			return
		}
		if !s.authorised(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// tokenCookie carries the viewer's token once the URL gave it.
const tokenCookie = "forge_view_token"

// authorised checks the request's token (Options.Token), answering 401
// when it is missing or wrong, and trades a token in the URL for the
// cookie with a redirect (so the token leaves the address bar and the
// history). Comparisons take constant time.
func (s *Server) authorised(w http.ResponseWriter, r *http.Request) bool {
	want := s.opts.Token
	if want == "" {
		return true
	}
	same := func(got string) bool { return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1 }
	if q := r.URL.Query(); q.Has("token") {
		if !same(q.Get("token")) {
			unauthorised(w)
			return false
		}
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: want, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return false
	}
	if c, err := r.Cookie(tokenCookie); err == nil && same(c.Value) {
		return true
	}
	unauthorised(w)
	return false
}

func unauthorised(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	w.Write([]byte("forge view: open the URL forge printed when it started the viewer: it carries the viewer's token\n"))
}

func (s *Server) hostAllowed(host string) bool {
	if s.opts.AnyHost {
		return true
	}
	s.mu.Lock()
	port := s.port
	s.mu.Unlock()
	name, p, err := net.SplitHostPort(host)
	if err != nil {
		name, p = host, ""
	}
	if port != "" && p != port {
		return false
	}
	switch strings.ToLower(name) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// badPath reports a URL path that would leave where it points: a ".."
// element, or an escaped dot, slash or backslash.
func badPath(u interface{ EscapedPath() string }) bool {
	raw := strings.ToLower(u.EscapedPath())
	if strings.Contains(raw, "%2e") || strings.Contains(raw, "%2f") || strings.Contains(raw, "%5c") || strings.Contains(raw, "\\") {
		return true
	}
	for _, el := range strings.Split(raw, "/") {
		if el == ".." || el == "." {
			return true
		}
	}
	return strings.Contains(raw, "//")
}

// runPath finds run id's results.json: a run directory under Out, or one
// of Options.Runs. An id that is not a plain name is not found.
func (s *Server) runPath(id string) (string, bool) {
	if !runner.ValidID(id) {
		return "", false
	}
	if dir, ok := s.opts.Runs[id]; ok {
		return filepath.Join(dir, record.ResultsFile), true
	}
	if s.opts.Out == "" {
		return "", false
	}
	p, err := compare.Resolve(id, s.opts.Out)
	if err != nil || filepath.Dir(p) != filepath.Join(s.opts.Out, id) {
		return "", false
	}
	return p, true
}

// index returns run id's index, or writes the error page and nil.
func (s *Server) index(w http.ResponseWriter, r *http.Request, id string) *runIndex {
	var x *runIndex
	err := fs.ErrNotExist
	if p, ok := s.runPath(id); ok {
		x, err = s.cache.get(id, p)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.notFound(w, r, "no run "+id)
	case err != nil:
		s.fail(w, r, err)
	}
	return x
}

// render executes template name with data into the response.
func (s *Server) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	var b bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b.Bytes())
}

type errorPage struct {
	Title, Message string
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request, msg string) {
	w.WriteHeader(http.StatusNotFound)
	s.render(w, r, "error.tmpl", errorPage{"Not found", msg})
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	s.opts.Log.Printf("forge view: %s: %v", r.URL.Path, err)
	w.WriteHeader(http.StatusInternalServerError)
	var b bytes.Buffer
	if s.tmpl.ExecuteTemplate(&b, "error.tmpl", errorPage{"Error", err.Error()}) == nil {
		w.Write(b.Bytes())
	}
}

// Opener returns the command that opens a URL in a browser on this
// machine (open on macOS, xdg-open with a display), or nil.
func Opener(goos string, getenv func(string) string, look func(string) (string, error)) []string {
	name := "xdg-open"
	switch {
	case goos == "darwin":
		name = "open"
	case goos == "windows", getenv("DISPLAY") == "" && getenv("WAYLAND_DISPLAY") == "":
		return nil
	}
	if p, err := look(name); err == nil {
		return []string{p}
	}
	return nil
}
