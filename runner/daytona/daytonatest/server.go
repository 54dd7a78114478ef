package daytonatest

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/gorilla/websocket"
)

const (
	apiPrefix     = "/api"
	toolboxPrefix = "/toolbox/"
)

// DefaultAPIKey is the key a Server accepts unless Options.APIKey says
// otherwise.
const DefaultAPIKey = "emulator-test-key"

// Operation IDs (from the specs) of the routes forge uses, for Inject,
// SetLatency and Calls.
const (
	OpCreateSandbox     = "createSandbox"
	OpGetSandbox        = "getSandbox"
	OpListSandboxes     = "listSandboxesPaginated"
	OpDeleteSandbox     = "deleteSandbox"
	OpCreateVolume      = "createVolume"
	OpGetVolumeByName   = "getVolumeByName"
	OpCreateSnapshot    = "createSnapshot"
	OpGetSnapshot       = "getSnapshot"
	OpListSnapshots     = "getAllSnapshots"
	OpDeleteSnapshot    = "removeSnapshot"
	OpSnapshotBuildLogs = "getSnapshotBuildLogs" // plain text, followed with follow=true
	OpUserHomeDir       = "GetUserHomeDir"
	OpWorkDir           = "GetWorkDir"
	OpUploadFile        = "UploadFile"
	OpDownloadFile      = "DownloadFile"
	OpCreateFolder      = "CreateFolder"
	OpExecute           = "ExecuteCommand"
	OpCreateSession     = "CreateSession"
	OpDeleteSession     = "DeleteSession"
	OpSessionExec       = "SessionExecuteCommand"
	OpSessionCommand    = "GetSessionCommand"
	OpSessionLogs       = "GetSessionCommandLogs"
	OpGetSession        = "GetSession"
	// OpSessionLogsStream is GetSessionCommandLogs with follow=true and a
	// WebSocket upgrade, counted, slowed and faulted apart; recorded with
	// status 101 once upgraded, its End when the stream ended.
	OpSessionLogsStream = "GetSessionCommandLogs/stream"
)

// Options configure a Server. The zero value is a fast, well-behaved
// service.
type Options struct {
	APIKey string // the only bearer token accepted; default DefaultAPIKey
	// Listener is where it serves (the emulator's -port); nil: a free port
	// of 127.0.0.1.
	Listener net.Listener
	Specs    *Specs // the parsed OpenAPI documents; nil loads them (LoadSpecs)
	// StartDelay keeps new sandboxes "creating" this long (the SDK polls
	// until "started"); zero answers "started" at once, as the real API
	// does for snapshots that start within its 30 s wait.
	StartDelay time.Duration
	// DestroyDelay keeps deleted sandboxes "destroying" this long, holding
	// their share of Quota.
	DestroyDelay     time.Duration
	VolumeReadyDelay time.Duration // keeps new volumes "pending_create"
	Dir              string        // the sandboxes' file systems; empty: a temporary directory
	MaxLog           int           // caps each command's stdout and stderr; default 8 MiB

	// Quota is the organization's totals; a zero field is unlimited. A
	// create that would go over one (the request's cpu, memory, disk, else
	// 1 vCPU, 1 GiB, 3 GiB as the real API; the default snapshot the same)
	// is refused with the real API's message (CPU, then memory, then disk)
	// and QuotaStatus, and makes no sandbox. Creating and started sandboxes
	// count, a deleted one until destroyed, one in error or build_failed
	// not. Quota.Sandboxes caps sandboxes holding resources: the real API
	// has no such quota (the message is the emulator's own).
	Quota Quota
	// QuotaStatus is a Quota refusal's status: 0 means 400, as the real API
	// (v0.170.0) answers; 403 is what it answered before.
	QuotaStatus int
	// MaxPerSandbox is the most one sandbox may ask; a zero field means the
	// documented 4 vCPU, 8 GiB, 10 GiB. More is refused 400 with the real
	// API's message: a permanent error, not a quota one.
	MaxPerSandbox Quota
	// Snapshots are the organization's snapshots, names only (always
	// active). A create naming any other (but the default, no name, and
	// FailStart's keys) is refused 400 "Snapshot <name> not found. Did you
	// add it through the Daytona Dashboard?" before any quota check.
	// Snapshots made through POST /snapshots count too.
	Snapshots []string
	// FailStart makes sandboxes of a snapshot or image (the create's
	// snapshot name, or the image of its "FROM <image>") end "error" or
	// "build_failed" instead of started, with the real API's errorReason.
	// The sandbox exists and must be deleted (then it disappears at once);
	// it holds no quota once failed. With StartDelay the state comes at its
	// end (the SDK's polling fails); without, a snapshot's create is
	// answered 400 "Sandbox failed to start: <errorReason>" and an image's
	// 200 with the failed state, as the real API answers.
	FailStart map[string]string
	// ToolboxWarmup, for this long after a sandbox starts, answers its
	// toolbox calls 502 with an empty body, as the real proxy does while
	// the daemon does not listen yet.
	ToolboxWarmup time.Duration

	// SnapshotQuota is the most snapshots the organization may have (0:
	// unlimited); over it a create is refused 400 "Snapshot quota exceeded.
	// Maximum allowed: N" as the real API refuses it. Pending, building,
	// pulling and active snapshots count.
	SnapshotQuota int
	// SnapshotBuildDelay keeps a new snapshot "building" (or "pulling", for
	// one made from an image name) this long before its steps run.
	SnapshotBuildDelay time.Duration
	// SnapshotBuildHold, when not nil, keeps every build waiting until it
	// is closed: a test's handle on the moment a build proceeds.
	SnapshotBuildHold <-chan struct{}
	// SnapshotRemoveDelay keeps a deleted snapshot "removing", its name
	// taken (a create of it is refused 409), this long.
	SnapshotRemoveDelay time.Duration

	// With RootFS, every sandbox has a network namespace of its own,
	// loopback only: two sandboxes can listen on one port, and neither
	// reaches the other's, nor this machine's. HostNetwork makes
	// sandboxes share this machine's network: for tests whose candidates
	// must reach a server running on this machine, as a real sandbox
	// reaches the internet. Sandboxes created with networkBlockAll always
	// have their own. Without RootFS, sandboxes are always on this
	// machine's network.
	HostNetwork bool
	// Shared are directories of this machine bound into every sandbox's
	// root at the same path, read-write, as a Daytona volume would be:
	// for tests that leave markers or tools on this machine for their
	// sandboxes, or read what they write there. Each must be an absolute
	// path to an existing directory. Without RootFS, sandboxes see this
	// machine's files anyway.
	Shared []string
}

// Server is a running emulator. Its methods are safe for concurrent use.
type Server struct {
	opts    Options // with the defaults filled in
	hs      *httptest.Server
	ownDir  bool // opts.Dir is the server's own, removed by Close
	closing chan struct{}
	once    sync.Once
	workers sync.WaitGroup

	// cgroups is the server's own cgroup, its sessions' cgroups under it;
	// "" when there is none (see session_linux.go).
	cgroups string

	mu        sync.Mutex
	apiKey    string
	seq       int // numbers sandboxes, volumes, sessions and commands
	sandboxes map[string]*sandbox
	order     []*sandbox
	volumes   map[string]*volume
	snapOrder []*snapshot // every snapshot, in creation order
	faults    map[string][]*Fault
	chaos     *chaos
	latency   map[string]time.Duration
	calls     []Call
	// unfinished counts, per session command, the times a log stream of
	// it looked for its exit code and found none (the tests' ExitCodeLooks).
	unfinished map[string]int
	peak       int // the most sandboxes alive at once
	peakUsage  Quota
	violations []string
	storage    *objectStorage
}

// NewServer starts an emulator. It panics, as httptest.NewServer does, when
// it cannot start.
func NewServer(opts Options) *Server {
	s, err := newServer(opts)
	if err != nil {
		panic("daytonatest: " + err.Error())
	}
	return s
}

// Start starts an emulator for a test and, at the end of the test, closes it
// and fails the test for every OpenAPI violation it saw.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := newServer(opts)
	if err != nil {
		t.Fatalf("start Daytona emulator: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		for _, v := range s.Violations() {
			t.Errorf("Daytona emulator: OpenAPI violation: %s", v)
		}
	})
	return s
}

func newServer(opts Options) (*Server, error) {
	opts.APIKey = cmp.Or(opts.APIKey, DefaultAPIKey)
	opts.MaxLog = positiveOr(opts.MaxLog, 8<<20)
	for k, v := range opts.FailStart {
		if failReasons[v] == "" {
			return nil, fmt.Errorf("FailStart[%q] = %q: want \"error\" or \"build_failed\"", k, v)
		}
	}
	for _, d := range opts.Shared {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("Shared: %q is not an absolute path", d)
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("Shared: %q is not a directory", d)
		}
	}
	var err error
	if opts.Specs == nil {
		if opts.Specs, err = LoadSpecs(); err != nil {
			return nil, err
		}
	}
	s := &Server{
		opts:       opts,
		closing:    make(chan struct{}),
		apiKey:     opts.APIKey,
		sandboxes:  map[string]*sandbox{},
		volumes:    map[string]*volume{},
		faults:     map[string][]*Fault{},
		latency:    map[string]time.Duration{},
		unfinished: map[string]int{},
	}
	if s.storage, err = newObjectStorage(); err != nil {
		return nil, err
	}
	if s.opts.Dir == "" {
		d, err := os.MkdirTemp("", "daytonatest-")
		if err != nil {
			return nil, fmt.Errorf("make sandbox directory: %w", err)
		}
		s.opts.Dir, s.ownDir = d, true
	}
	if RootFS() {
		s.cgroups = newServerCgroup()
	}
	s.hs = httptest.NewUnstartedServer(s)
	if l := s.opts.Listener; l != nil {
		s.hs.Listener.Close()
		s.hs.Listener = l
	}
	s.hs.Start()
	return s, nil
}

// URL is the API URL to give the SDK (DAYTONA_API_URL), without a trailing
// slash.
func (s *Server) URL() string { return s.hs.URL + apiPrefix }

// APIKey is the key the server currently accepts.
func (s *Server) APIKey() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apiKey
}

// SetAPIKey changes the accepted key, e.g. to revoke the one in use.
func (s *Server) SetAPIKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiKey = key
}

// Close kills every process the emulator started, stops the server and
// waits for everything it started to end.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closing)
		s.mu.Lock()
		for _, sb := range s.order {
			sb.shutdown()
		}
		s.mu.Unlock()
		s.hs.CloseClientConnections()
		s.hs.Close()
		s.workers.Wait()
		removeServerCgroup(s.cgroups)
		if s.ownDir {
			os.RemoveAll(s.opts.Dir)
		}
	})
}

// emptyBodyOK are the operations whose real answer has no body.
var emptyBodyOK = map[string]bool{
	OpDownloadFile: true, // a zero-byte file
	OpUploadFile:   true, OpCreateFolder: true, OpCreateSession: true, OpDeleteSession: true,
	OpDeleteSnapshot: true, // the controller returns nothing
}

// ServeHTTP routes a request to the API or a sandbox's toolbox, checking it
// and the answer against the specs.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	call := Call{Method: r.Method, Path: r.URL.Path, Start: time.Now()}
	w := &statusWriter{ResponseWriter: rw}
	defer s.record(&call, w)
	body, err := io.ReadAll(io.LimitReader(r.Body, 512<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	call.Query, call.Body = r.URL.RawQuery, body[:min(len(body), MaxRecordedBody)]
	// notFound answers a call the emulator cannot route, as a violation.
	notFound := func(format string, args ...any) {
		s.violation(format, args...)
		http.NotFound(w, r)
	}

	if strings.HasPrefix(r.URL.Path, storagePrefix+"/") {
		s.storage.handler.ServeHTTP(w, r)
		call.Op = OpStorage
		return
	}
	toolbox, sandboxID, specPath, err := route(r.URL.Path)
	if err != nil {
		notFound("%s %s: %v", r.Method, r.URL.Path, err)
		return
	}
	v, op, err := s.opts.Specs.findRoute(toolbox, r, specPath, body)
	if err != nil {
		notFound("%s %s: not in the spec: %v", r.Method, specPath, err)
		return
	}
	// The spec describes the log stream's request (path, follow, bearer
	// token), not the upgrade or the 101 answer: the request is validated,
	// the stream is not.
	stream := op == OpSessionLogs && toolbox && r.URL.Query().Get("follow") == "true" && websocket.IsWebSocketUpgrade(r)
	if stream {
		op = OpSessionLogsStream
	}
	call.Op = op
	if err := openapi3filter.ValidateRequest(r.Context(), v); err != nil {
		s.violation("%s request: %v", op, err)
	}

	h := &handlerCtx{w: w, r: r, op: op, params: v.PathParams, toolbox: toolbox, sandboxID: sandboxID}
	s.delay(r, op)
	f, by := s.fault(h, body)
	if f != nil && stream && f.After {
		f = nil // a stream has no answer to replace after the fact
	}
	if s.faultBefore(h, f, by, &call) {
		return
	}

	switch {
	case op == OpSnapshotBuildLogs && !toolbox:
		// A plain-text stream, written as it comes: the spec describes no
		// body to check.
		if f != nil && f.Drop {
			call.Fault = by + "drop"
			panic(http.ErrAbortHandler)
		}
		s.serveBuildLogs(h)
	case stream:
		s.serveLogStream(h, f, &call)
	default:
		s.answer(w, h, v, f, by, &call)
	}
}

// record notes a call once answered, with the status written to w unless
// the call has one of its own (a WebSocket upgrade's).
func (s *Server) record(call *Call, w *statusWriter) {
	call.Status = cmp.Or(call.Status, w.status)
	call.End = time.Now()
	s.mu.Lock()
	s.calls = append(s.calls, *call)
	s.mu.Unlock()
}

// delay waits out the latency set for op (SetLatency).
func (s *Server) delay(r *http.Request, op string) {
	s.mu.Lock()
	d := s.latency[op]
	s.mu.Unlock()
	if d > 0 {
		await(s, r, time.After(d))
	}
}

// route splits a request's path into the surface it calls (the API, or a
// sandbox's toolbox) and the path as that surface's spec sees it.
func route(path string) (toolbox bool, sandboxID, specPath string, err error) {
	switch {
	case strings.HasPrefix(path, apiPrefix+"/"):
		return false, "", path, nil
	case strings.HasPrefix(path, toolboxPrefix):
		rest := path[len(toolboxPrefix):]
		i := strings.IndexByte(rest, '/')
		if i <= 0 {
			return false, "", "", errors.New("no toolbox route")
		}
		return true, rest[:i], rest[i:], nil
	}
	return false, "", "", fmt.Errorf("neither the API (%s) nor the toolbox (%s)", apiPrefix, toolboxPrefix)
}

// answer handles a call into a recorder, checks a successful answer
// against the spec, and sends it unless fault f replaces it.
func (s *Server) answer(w http.ResponseWriter, h *handlerCtx, v *openapi3filter.RequestValidationInput, f *Fault, by string, call *Call) {
	rec := httptest.NewRecorder()
	h.w = rec
	if h.toolbox {
		s.serveToolbox(h)
	} else {
		s.serveAPI(h)
	}
	res := rec.Result()
	resBody := rec.Body.Bytes()
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		if len(resBody) == 0 && !emptyBodyOK[h.op] {
			s.violation("%s response %d: empty body", h.op, res.StatusCode)
		} else if len(resBody) > 0 {
			if err := validateResponse(h.r.Context(), v, res.StatusCode, res.Header, resBody); err != nil {
				s.violation("%s response %d: %v", h.op, res.StatusCode, err)
			}
		}
	}
	if s.faultAfter(w, h, f, by, call) {
		return
	}
	maps.Copy(w.Header(), res.Header)
	w.WriteHeader(res.StatusCode)
	w.Write(resBody)
}
