package daytonatest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SandboxInfo describes one sandbox as the emulator saw it.
type SandboxInfo struct {
	ID        string
	Name      string // the name it was created with
	State     string // the state the API would show now
	Labels    map[string]string
	Env       map[string]string // the create request's env
	CreatedAt time.Time
	DeletedAt time.Time // zero while alive

	Snapshot, Image  string // Image from buildInfo's "FROM <image>"
	CPU, Memory      int
	Disk             int
	NetworkBlockAll  bool
	NetworkAllowList string // comma-separated CIDRs, as created
	// The effective intervals in minutes (the API's defaults when not sent).
	AutoStopInterval, AutoArchiveInterval, AutoDeleteInterval int
	Volumes                                                   []VolumeMount

	// Home is the home directory's path on this machine, which tests
	// read the sandbox's files from (and may write to). With RootFS it is
	// the sandbox's own directory, bound at /home/<user> in its root (for
	// the user root, the upper layer of its /root, where a file the host
	// writes while the sandbox runs may go unseen); Root is the whole
	// root on this machine: the sandbox's own top-level directories, and
	// the upper layers of those overlaid on the host's (usr, etc…), which
	// hold only what the image and the sandbox wrote there.
	Home, Root string
	// UserHome is the home as the sandbox's processes see it, what
	// GetUserHomeDir answers: /home/<user> (/root for root) with RootFS,
	// Home without.
	UserHome    string
	ProcessEnvs []map[string]string // the environment of every process started in it
	Commands    []string            // every command line it ran, in order
}

// VolumeMount is a volume attached to a sandbox, as the API writes it.
type VolumeMount struct {
	VolumeID  string `json:"volumeId"`
	MountPath string `json:"mountPath"`
}

type sandbox struct {
	id, name, origName, user, target string
	labels, env                      map[string]string
	createdAt, startAt               time.Time
	deletedAt, destroyedAt           time.Time
	public, networkBlockAll          bool
	cpu, gpu, mem, disk              int
	autoStop, autoArchive, autoDel   int
	snapshot, image                  string
	networkAllowList                 string
	// failState is the state the sandbox ends in instead of "started"
	// (Options.FailStart); empty for one that starts.
	failState  string
	volumes    []VolumeMount
	root, home string // on this machine
	// account is who its processes run as, its image's USER; nil for the
	// emulator's own user (root, at home in /home/<user>).
	account *account
	// fs is its root file system of its own (where RootFS) once made (set
	// under Server.mu, never changed after).
	fs *fsRoot
	// fromRoot is the root of the emulated snapshot the sandbox was made
	// from ("" for none): its file system starts as a copy of it.
	// imageEnv is that image's ENV and workDir its WORKDIR ("" for none):
	// as the image sees them with RootFS, else mapped under root.
	fromRoot, workDir string
	imageEnv          map[string]string

	sessions map[string]*session
	procs    map[*proc]struct{}
	// streams are the open log streams, each cut by closing its channel
	// when the sandbox is deleted or the server closes.
	streams  map[chan struct{}]struct{}
	envs     []map[string]string
	commands []string
}

func (sb *sandbox) state(now time.Time) string {
	switch {
	case !sb.deletedAt.IsZero() && !now.Before(sb.destroyedAt):
		return "destroyed"
	case !sb.deletedAt.IsZero():
		return cmp.Or(sb.failState, "destroying") // the API shows an errored state as it is
	case now.Before(sb.startAt):
		return "creating"
	}
	return cmp.Or(sb.failState, "started")
}

// visible says whether the API still shows the sandbox (Get, List): not
// destroyed, and not a failed one that was deleted (the real API hides
// error and build_failed sandboxes whose desired state is destroyed).
func (sb *sandbox) visible(now time.Time) bool {
	switch sb.state(now) {
	case "destroyed":
		return false
	case "error", "build_failed":
		return sb.deletedAt.IsZero()
	}
	return true
}

func (sb *sandbox) info(now time.Time) SandboxInfo {
	return SandboxInfo{
		ID: sb.id, Name: sb.origName, State: sb.state(now),
		Labels: copyMap(sb.labels), Env: copyMap(sb.env),
		CreatedAt: sb.createdAt, DeletedAt: sb.deletedAt,
		Snapshot: sb.snapshot, Image: sb.image, CPU: sb.cpu, Memory: sb.mem, Disk: sb.disk,
		NetworkBlockAll: sb.networkBlockAll, NetworkAllowList: sb.networkAllowList,
		AutoStopInterval: sb.autoStop, AutoArchiveInterval: sb.autoArchive, AutoDeleteInterval: sb.autoDel,
		Volumes: append([]VolumeMount(nil), sb.volumes...), Home: sb.home, Root: sb.root, UserHome: sb.homePath(),
		ProcessEnvs: slices.Clone(sb.envs), Commands: slices.Clone(sb.commands),
	}
}

// dto is the API's Sandbox object, with every key the SDK requires.
func (sb *sandbox) dto(s *Server, now time.Time) map[string]any {
	m := map[string]any{
		"id": sb.id, "organizationId": "org-emulator", "name": sb.name, "user": sb.user,
		"env": sb.env, "labels": sb.labels, "public": sb.public,
		"networkBlockAll": sb.networkBlockAll, "target": sb.target,
		"cpu": sb.cpu, "gpu": sb.gpu, "memory": sb.mem, "disk": sb.disk,
		"state": sb.state(now), "toolboxProxyUrl": s.hs.URL + strings.TrimSuffix(toolboxPrefix, "/"),
		"autoStopInterval": sb.autoStop, "autoArchiveInterval": sb.autoArchive,
		"autoDeleteInterval": sb.autoDel, "volumes": append([]VolumeMount{}, sb.volumes...), // never null
		"createdAt": sb.createdAt.UTC().Format(time.RFC3339Nano),
		"updatedAt": now.UTC().Format(time.RFC3339Nano), "desiredState": "started",
	}
	if sb.snapshot != "" {
		m["snapshot"] = sb.snapshot
	}
	if st := sb.state(now); st == "error" || st == "build_failed" {
		m["errorReason"] = failReasons[st]
	}
	if !sb.deletedAt.IsZero() {
		m["desiredState"] = "destroyed"
	}
	return m
}

// shutdown kills everything running in the sandbox. The caller holds s.mu.
func (sb *sandbox) shutdown() {
	for _, ss := range sb.sessions {
		ss.close()
	}
	sb.sessions = map[string]*session{}
	for p := range sb.procs {
		p.kill()
	}
	for cut := range sb.streams {
		close(cut)
	}
	sb.streams = map[chan struct{}]struct{}{}
	if sb.fs != nil {
		sb.fs.stop()
	}
}

// homePath is the home directory as the sandbox's processes see it.
func (sb *sandbox) homePath() string {
	switch {
	case !RootFS():
		return sb.home
	case sb.account != nil:
		return sb.account.home
	case sb.user == "root":
		return "/root"
	}
	return "/home/" + sb.user
}

// processUser is the name its processes run as (USER).
func (sb *sandbox) processUser() string {
	if sb.account != nil {
		return sb.account.name
	}
	return sb.user
}

// defaultCwd is where a command runs when the call names no directory:
// with a root, the daemon's own working directory, which is the image's
// WORKDIR or the home; else the home, as the emulator always did.
func (sb *sandbox) defaultCwd() string {
	if RootFS() {
		return cmp.Or(sb.workDir, sb.homePath())
	}
	return sb.home
}

func (v *volume) dto(now time.Time) map[string]any {
	state := "ready"
	if now.Before(v.readyAt) {
		state = "pending_create"
	}
	return map[string]any{
		"id": v.id, "name": v.name, "organizationId": "org-emulator", "state": state,
		"createdAt": v.createdAt.UTC().Format(time.RFC3339), "updatedAt": now.UTC().Format(time.RFC3339),
		"errorReason": nil,
	}
}

func (s *Server) serveAPI(h *handlerCtx) {
	if !s.authorized(h) {
		h.apiError(http.StatusUnauthorized, "Invalid credentials")
		return
	}
	route := apiRoutes[h.op]
	if route == nil {
		s.violation("%s: the emulator does not implement this API route", h.op)
		h.apiError(http.StatusNotImplemented, "%s is not emulated", h.op)
		return
	}
	route(s, h)
}

// apiRoutes are the API operations the emulator answers.
var apiRoutes = map[string]func(*Server, *handlerCtx){
	OpCreateSandbox: (*Server).createSandbox, OpGetSandbox: (*Server).getSandbox,
	OpListSandboxes: (*Server).listSandboxes, OpDeleteSandbox: (*Server).deleteSandbox,
	OpCreateVolume: (*Server).createVolume, OpGetVolumeByName: (*Server).getVolumeByName,
	OpCreateSnapshot: (*Server).createSnapshot, OpGetSnapshot: (*Server).getSnapshot,
	OpListSnapshots: (*Server).listSnapshots, OpDeleteSnapshot: (*Server).deleteSnapshot,
	OpPushAccess: (*Server).pushAccess,
}

// forbiddenMountRoots are refused as volume mount points by the real API.
var forbiddenMountRoots = []string{"/proc", "/sys", "/dev", "/boot", "/etc", "/bin", "/sbin", "/lib", "/lib64"}

// lookup finds the sandbox the call names by ID, then by name, as the API
// does: destroyed ones are gone. It is nil when the call has been answered
// 404. The caller holds s.mu.
func (s *Server) lookup(h *handlerCtx, now time.Time) *sandbox {
	key := h.params["sandboxIdOrName"]
	if sb := s.sandboxes[key]; sb != nil && sb.visible(now) {
		return sb
	}
	for _, sb := range s.order {
		if sb.name == key && sb.visible(now) {
			return sb
		}
	}
	h.apiError(http.StatusNotFound, "Sandbox with ID or name %s not found", key)
	return nil
}

func (s *Server) getSandbox(h *handlerCtx) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb := s.lookup(h, now); sb != nil {
		h.json(http.StatusOK, sb.dto(s, now))
	}
}

func (s *Server) listSandboxes(h *handlerCtx) {
	q := h.r.URL.Query()
	var want map[string]string
	if l := q.Get("labels"); l != "" {
		if err := json.Unmarshal([]byte(l), &want); err != nil {
			h.apiError(http.StatusBadRequest, "labels is not a JSON object of strings: %v", err)
			return
		}
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	match := slices.DeleteFunc(slices.Clone(s.order), func(sb *sandbox) bool {
		for k, v := range want {
			if got, has := sb.labels[k]; !has || got != v {
				return true
			}
		}
		return !sb.visible(now)
	})
	slices.SortStableFunc(match, func(a, b *sandbox) int { return b.createdAt.Compare(a.createdAt) })
	paginate(h, match, func(sb *sandbox) map[string]any { return sb.dto(s, now) })
}

// paginate answers the page and limit (at most 200) the call asks of all,
// as the API's paginated objects.
func paginate[T any](h *handlerCtx, all []T, dto func(T) map[string]any) {
	q := h.r.URL.Query()
	page, limit := 1, 100
	for _, p := range []struct {
		key string
		dst *int
		max float64
	}{{"page", &page, math.Inf(1)}, {"limit", &limit, 200}} {
		if v := q.Get(p.key); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 1 || f > p.max {
				h.apiError(http.StatusBadRequest, "bad %s %q", p.key, v)
				return
			}
			*p.dst = int(f)
		}
	}
	items := []map[string]any{}
	for i := (page - 1) * limit; i < len(all) && i < page*limit; i++ {
		items = append(items, dto(all[i]))
	}
	h.json(http.StatusOK, map[string]any{"items": items, "total": len(all), "page": page, "totalPages": (len(all) + limit - 1) / limit})
}

func (s *Server) deleteSandbox(h *handlerCtx) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(h, now)
	if sb == nil {
		return
	}
	switch sb.state(now) {
	case "creating":
		h.apiError(http.StatusConflict, "Sandbox state change in progress")
		return
	case "destroying":
		h.json(http.StatusOK, sb.dto(s, now))
		return
	}
	sb.deletedAt = now
	sb.destroyedAt = now.Add(s.opts.DestroyDelay)
	sb.name = fmt.Sprintf("DESTROYED_%s_%d", sb.name, now.UnixMilli())
	sb.shutdown()
	h.json(http.StatusOK, sb.dto(s, now))
}

// envKey is the service's check of an env name, written here rather than
// taken from runner.ValidEnvName: the emulator must answer as the real API
// does, so that a wrong rule in forge shows in the tests instead of being
// shared by both sides.
var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString

// copyMap copies m; never nil, so that a DTO's env and labels are objects.
func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	maps.Copy(out, m)
	return out
}
