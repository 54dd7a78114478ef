package daytonatest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// serveToolbox answers a call to one sandbox's toolbox. Like the real proxy,
// it answers 401 for a bad key and for sandboxes that are gone or unknown.
func (s *Server) serveToolbox(h *handlerCtx) {
	sb := s.toolboxSandbox(h)
	if sb == nil {
		return
	}
	route := toolboxRoutes[h.op]
	if route == nil {
		s.violation("%s: the emulator does not implement this toolbox route", h.op)
		h.toolboxError(http.StatusNotImplemented, "%s is not emulated", h.op)
		return
	}
	route(s, h, sb)
}

// toolboxRoutes are the toolbox operations the emulator answers.
var toolboxRoutes = map[string]func(*Server, *handlerCtx, *sandbox){
	OpUserHomeDir: (*Server).homeDir, OpWorkDir: (*Server).workDir,
	OpUploadFile: (*Server).uploadFile, OpDownloadFile: (*Server).downloadFile, OpCreateFolder: (*Server).createFolder,
	OpExecute: (*Server).execute, OpCreateSession: (*Server).createSession, OpDeleteSession: (*Server).deleteSession,
	OpSessionExec: (*Server).sessionExec, OpSessionCommand: (*Server).sessionCommand, OpSessionLogs: (*Server).sessionLogs,
	OpGetSession: (*Server).getSession,
}

func (s *Server) homeDir(h *handlerCtx, sb *sandbox) {
	h.json(http.StatusOK, map[string]string{"dir": sb.homePath()})
}

// workDir is the daemon's work dir: the image's WORKDIR, else home.
func (s *Server) workDir(h *handlerCtx, sb *sandbox) {
	h.json(http.StatusOK, map[string]string{"dir": cmp.Or(sb.workDir, sb.homePath())})
}

// toolboxSandbox is the started sandbox a toolbox call is for; nil when the
// call has been answered with the proxy's error.
func (s *Server) toolboxSandbox(h *handlerCtx) *sandbox {
	if !s.authorized(h) {
		h.toolboxError(http.StatusUnauthorized, "authentication failed: Bearer token is invalid")
		return nil
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.sandboxes[h.sandboxID]
	switch {
	case sb == nil || !sb.deletedAt.IsZero():
		h.toolboxError(http.StatusUnauthorized, "authentication failed: sandbox %s not found", h.sandboxID)
	case sb.state(now) != "started":
		h.toolboxError(http.StatusBadGateway, "sandbox %s is not started (%s)", h.sandboxID, sb.state(now))
	case now.Before(sb.startAt.Add(s.opts.ToolboxWarmup)) || RootFS() && sb.fs == nil:
		// The daemon does not listen yet (a root still being made is a
		// daemon not started yet): the runner's reverse proxy cannot
		// connect and answers as httputil.ReverseProxy does by default,
		// 502 with no body, which the proxy passes on.
		h.w.WriteHeader(http.StatusBadGateway)
	default:
		return sb
	}
	return nil
}

// resolve is the path p names (relative to the home): with a root, the
// path in it, which any absolute path is. Without, the path on this
// machine; the emulator refuses paths outside the sandbox's own directory,
// which is what a path built for another machine (a hard-coded
// /home/daytona) looks like here.
func resolve(sb *sandbox, p string) (string, error) {
	if RootFS() {
		if !path.IsAbs(p) {
			p = path.Join(sb.homePath(), p)
		}
		return path.Clean(p), nil
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(sb.home, p)
	}
	p = filepath.Clean(p)
	if p != sb.root && !strings.HasPrefix(p, sb.root+string(filepath.Separator)) {
		return "", fmt.Errorf("path %s is outside the sandbox (home is %s)", p, sb.home)
	}
	return p, nil
}

// path is the sandbox path the call's "path" names; false when the call
// has been answered 400.
func (h *handlerCtx) path(sb *sandbox) (string, bool) {
	p, err := resolve(sb, h.r.URL.Query().Get("path"))
	if err != nil {
		h.badRequest(err)
	}
	return p, err == nil
}

func (s *Server) uploadFile(h *handlerCtx, sb *sandbox) {
	dst, ok := h.path(sb)
	if !ok {
		return
	}
	f, _, err := h.r.FormFile("file")
	if err != nil {
		h.badRequest(err)
		return
	}
	defer f.Close()
	dir, mkdirAll, create := filepath.Dir(dst), os.MkdirAll, os.Create
	if sb.fs != nil {
		dir, mkdirAll = path.Dir(dst), sb.fs.mkdirAll
		create = func(p string) (*os.File, error) { return sb.fs.create(p, 0o644) }
	}
	var out *os.File
	err = sb.fs.as(sb.account, func() error {
		if err := mkdirAll(dir, 0o750); err != nil {
			return err
		}
		out, err = create(dst)
		return err
	})
	if err != nil {
		h.badRequest(err)
		return
	}
	_, err = io.Copy(out, f)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		h.toolboxError(http.StatusInternalServerError, "%v", err)
		return
	}
	h.w.WriteHeader(http.StatusOK)
}

func (s *Server) downloadFile(h *handlerCtx, sb *sandbox) {
	p, ok := h.path(sb)
	if !ok {
		return
	}
	open := os.Open
	if sb.fs != nil {
		open = sb.fs.open
	}
	var f *os.File
	err := sb.fs.as(sb.account, func() (err error) { f, err = open(p); return err })
	var fi os.FileInfo
	if err == nil {
		defer f.Close()
		fi, err = f.Stat()
	}
	switch {
	case os.IsNotExist(err):
		h.toolboxError(http.StatusNotFound, "file not found: %s", p)
		return
	case err != nil:
		h.badRequest(err)
		return
	case fi.IsDir():
		h.toolboxError(http.StatusBadRequest, "path is a directory: %s", p)
		return
	}
	b, err := io.ReadAll(f)
	if err != nil {
		h.badRequest(err)
		return
	}
	h.w.Header().Set("Content-Type", "application/octet-stream")
	h.w.Header().Set("Content-Disposition", "attachment; filename="+strconv.Quote(filepath.Base(p)))
	h.w.WriteHeader(http.StatusOK)
	h.w.Write(b)
}

func (s *Server) createFolder(h *handlerCtx, sb *sandbox) {
	p, ok := h.path(sb)
	if !ok {
		return
	}
	mode, err := strconv.ParseUint(h.r.URL.Query().Get("mode"), 8, 32)
	if err != nil {
		h.toolboxError(http.StatusBadRequest, "bad mode: %v", err)
		return
	}
	mkdirAll := os.MkdirAll
	if sb.fs != nil {
		mkdirAll = sb.fs.mkdirAll
	}
	if err := sb.fs.as(sb.account, func() error { return mkdirAll(p, os.FileMode(mode)) }); err != nil {
		h.badRequest(err)
		return
	}
	h.w.WriteHeader(http.StatusCreated)
}

// execute runs a command to completion (POST /process/execute): combined
// output, 408 on timeout.
func (s *Server) execute(h *handlerCtx, sb *sandbox) {
	var req struct {
		Command string            `json:"command"`
		Cwd     string            `json:"cwd"`
		Envs    map[string]string `json:"envs"`
		Timeout int               `json:"timeout"`
	}
	if err := json.NewDecoder(h.r.Body).Decode(&req); err != nil || strings.TrimSpace(req.Command) == "" {
		h.toolboxError(http.StatusBadRequest, "command is required")
		return
	}
	cwd := sb.defaultCwd()
	if req.Cwd != "" {
		var err error
		if cwd, err = resolve(sb, req.Cwd); err != nil {
			h.badRequest(err)
			return
		}
	}
	for k := range req.Envs {
		if !envKey(k) {
			h.toolboxError(http.StatusBadRequest, "invalid environment variable name %q", k)
			return
		}
	}
	env := s.baseEnv(sb)
	maps.Copy(env, req.Envs)
	p, err := s.spawn(sb, req.Command, cwd, env, true, nil)
	if err != nil {
		h.badRequest(err)
		return
	}
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		timeout = time.After(time.Duration(req.Timeout) * time.Second)
	}
	// The daemon's CombinedOutput returns once the command has ended and
	// its output is closed: a background process that keeps it open holds
	// the answer (until the timeout) but not one that let go of it.
	for _, end := range []chan struct{}{p.drained, p.done} {
		select {
		case <-end:
		case <-timeout:
			// The daemon kills the command's process group.
			p.kill()
			<-p.done
			h.toolboxError(http.StatusRequestTimeout, "request timeout: command execution timeout")
			return
		case <-h.r.Context().Done():
			// The client gave up; like the daemon, let the command run on.
			panic(http.ErrAbortHandler)
		case <-s.closing:
			panic(http.ErrAbortHandler)
		}
	}
	h.json(http.StatusOK, map[string]any{"result": p.output.String(), "exitCode": valueOr(p.exitCode(), -1)})
}

func (s *Server) createSession(h *handlerCtx, sb *sandbox) {
	var req struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.NewDecoder(h.r.Body).Decode(&req); err != nil || req.SessionID == "" {
		h.toolboxError(http.StatusBadRequest, "sessionId is required")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone(sb) {
		// Deleted (or the emulator closing) since the call came in: a
		// session made now would never be ended.
		h.toolboxError(http.StatusUnauthorized, "authentication failed: sandbox %s not found", sb.id)
		return
	}
	if _, ok := sb.sessions[req.SessionID]; ok {
		h.toolboxError(http.StatusConflict, "session already exists")
		return
	}
	ss := &session{id: req.SessionID, queue: make(chan *sessCmd, 256), stop: make(chan struct{}), cmds: map[string]*sessCmd{}}
	if sb.fs != nil {
		s.seq++
		ss.procs = s.newSessionProcs(sb, s.seq)
	}
	sb.sessions[ss.id] = ss
	s.workers.Add(1)
	go s.runSession(sb, ss)
	h.w.WriteHeader(http.StatusCreated)
}

// session is the session the call names; nil when the call has been
// answered 404. The caller holds s.mu.
func (s *Server) session(h *handlerCtx, sb *sandbox) *session {
	ss := sb.sessions[h.params["sessionId"]]
	if ss == nil {
		h.toolboxError(http.StatusNotFound, "session not found")
	}
	return ss
}

func (s *Server) deleteSession(h *handlerCtx, sb *sandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.session(h, sb); ss != nil {
		delete(sb.sessions, ss.id)
		ss.close()
		h.w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) sessionExec(h *handlerCtx, sb *sandbox) {
	var req struct {
		Command  string `json:"command"`
		RunAsync bool   `json:"runAsync"`
		Async    bool   `json:"async"`
	}
	if err := json.NewDecoder(h.r.Body).Decode(&req); err != nil || strings.TrimSpace(req.Command) == "" {
		h.toolboxError(http.StatusBadRequest, "command is required")
		return
	}
	s.mu.Lock()
	ss := s.session(h, sb)
	if ss == nil {
		s.mu.Unlock()
		return
	}
	s.seq++
	c := &sessCmd{id: fmt.Sprintf("cmd-%06d", s.seq), command: req.Command, done: make(chan struct{})}
	ss.cmds[c.id] = c
	ss.order = append(ss.order, c)
	s.mu.Unlock()
	select {
	case ss.queue <- c:
	default:
		h.toolboxError(http.StatusServiceUnavailable, "session queue is full")
		return
	}
	if req.RunAsync || req.Async {
		h.json(http.StatusAccepted, map[string]any{"cmdId": c.id})
		return
	}
	await(s, h.r, c.done)
	resp := map[string]any{"cmdId": c.id}
	if p := s.procOf(c); p != nil {
		resp["stdout"], resp["stderr"], resp["output"] = p.stdout.String(), p.stderr.String(), p.log.String()
	}
	if code := c.exitCode(); code != nil {
		resp["exitCode"] = *code
	}
	h.json(http.StatusOK, resp)
}

// getSession answers the session with its commands in the order sent,
// each with its exit code once ended.
func (s *Server) getSession(h *handlerCtx, sb *sandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.session(h, sb)
	if ss == nil {
		return
	}
	list := make([]map[string]any, 0, len(ss.order))
	for _, c := range ss.order {
		list = append(list, commandDTO(c))
	}
	h.json(http.StatusOK, map[string]any{"sessionId": ss.id, "commands": list})
}

// findCommand is the session command the call names; nil when the call
// has been answered 404.
func (s *Server) findCommand(h *handlerCtx, sb *sandbox) *sessCmd {
	s.mu.Lock()
	var c *sessCmd
	if ss := sb.sessions[h.params["sessionId"]]; ss != nil {
		c = ss.cmds[h.params["commandId"]]
	}
	s.mu.Unlock()
	if c == nil {
		h.toolboxError(http.StatusNotFound, "not found: command not found")
	}
	return c
}

// procOf is c's process; nil until it starts.
func (s *Server) procOf(c *sessCmd) *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.p
}

func (s *Server) sessionCommand(h *handlerCtx, sb *sandbox) {
	if c := s.findCommand(h, sb); c != nil {
		h.json(http.StatusOK, commandDTO(c))
	}
}

// commandDTO is a session command as the daemon describes it: its exit
// code only once it has ended.
func commandDTO(c *sessCmd) map[string]any {
	resp := map[string]any{"id": c.id, "command": c.command}
	if code := c.exitCode(); code != nil {
		resp["exitCode"] = *code
	}
	return resp
}

// sessionLogs answers a command's logs as JSON, as the daemon answers SDKs
// from 0.167.0 on, even with follow=true but no upgrade: "output" the raw
// log with its markers, "stdout" and "stderr" apart.
func (s *Server) sessionLogs(h *handlerCtx, sb *sandbox) {
	c := s.findCommand(h, sb)
	if c == nil {
		return
	}
	resp := map[string]string{"output": "", "stdout": "", "stderr": ""}
	if p := s.procOf(c); p != nil {
		resp["output"], resp["stdout"], resp["stderr"] = p.log.String(), p.stdout.String(), p.stderr.String()
	}
	h.json(http.StatusOK, resp)
}
