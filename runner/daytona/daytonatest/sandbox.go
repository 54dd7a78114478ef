package daytonatest

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SandboxInfo describes one sandbox as the emulator saw it.
type SandboxInfo struct {
	ID   string
	Name string // the name it was created with
	// State is the state the API would show now.
	State     string
	Labels    map[string]string
	Env       map[string]string // the create request's env
	CreatedAt time.Time
	DeletedAt time.Time // zero while alive

	Snapshot, Image string // Image from buildInfo's "FROM <image>"
	CPU, Memory     int
	Disk            int
	NetworkBlockAll bool
	// AutoStopInterval, AutoArchiveInterval and AutoDeleteInterval are the
	// effective values in minutes (the API's defaults when not sent).
	AutoStopInterval, AutoArchiveInterval, AutoDeleteInterval int
	Volumes                                                   []VolumeMount

	// Home is the sandbox's home directory (a directory on this machine).
	Home string
	// ProcessEnvs is the environment of every process started in it.
	ProcessEnvs []map[string]string
	// Commands is every command line it ran, in order.
	Commands []string
}

// VolumeMount is a volume attached to a sandbox.
type VolumeMount struct{ VolumeID, MountPath string }

type sandbox struct {
	id, name, origName, user, target string
	labels, env                      map[string]string
	createdAt, startAt               time.Time
	deletedAt, destroyedAt           time.Time
	public, networkBlockAll          bool
	cpu, gpu, mem, disk              int
	autoStop, autoArchive, autoDel   int
	snapshot, image                  string
	// failState is the state the sandbox ends in instead of "started"
	// (Options.FailStart); empty for one that starts.
	failState  string
	volumes    []VolumeMount
	root, home string

	sessions map[string]*session
	procs    map[*proc]struct{}
	streams  map[*logStream]struct{}
	envs     []map[string]string
	commands []string
}

func (sb *sandbox) state(now time.Time) string {
	switch {
	case !sb.deletedAt.IsZero() && now.Before(sb.destroyedAt):
		if sb.failState != "" {
			return sb.failState // the API shows an errored state as it is
		}
		return "destroying"
	case !sb.deletedAt.IsZero():
		return "destroyed"
	case now.Before(sb.startAt):
		return "creating"
	case sb.failState != "":
		return sb.failState
	default:
		return "started"
	}
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
	envs := make([]map[string]string, len(sb.envs))
	copy(envs, sb.envs)
	return SandboxInfo{
		ID: sb.id, Name: sb.origName, State: sb.state(now),
		Labels: copyMap(sb.labels), Env: copyMap(sb.env),
		CreatedAt: sb.createdAt, DeletedAt: sb.deletedAt,
		Snapshot: sb.snapshot, Image: sb.image, CPU: sb.cpu, Memory: sb.mem, Disk: sb.disk,
		NetworkBlockAll:  sb.networkBlockAll,
		AutoStopInterval: sb.autoStop, AutoArchiveInterval: sb.autoArchive, AutoDeleteInterval: sb.autoDel,
		Volumes: append([]VolumeMount(nil), sb.volumes...), Home: sb.home,
		ProcessEnvs: envs, Commands: append([]string(nil), sb.commands...),
	}
}

// dto is the API's Sandbox object, with every key the SDK requires.
func (sb *sandbox) dto(s *Server, now time.Time) map[string]any {
	vols := make([]map[string]any, 0, len(sb.volumes))
	for _, v := range sb.volumes {
		vols = append(vols, map[string]any{"volumeId": v.VolumeID, "mountPath": v.MountPath})
	}
	m := map[string]any{
		"id": sb.id, "organizationId": "org-emulator", "name": sb.name, "user": sb.user,
		"env": nonNil(sb.env), "labels": nonNil(sb.labels), "public": sb.public,
		"networkBlockAll": sb.networkBlockAll, "target": sb.target,
		"cpu": sb.cpu, "gpu": sb.gpu, "memory": sb.mem, "disk": sb.disk,
		"state": sb.state(now), "toolboxProxyUrl": s.hs.URL + strings.TrimSuffix(toolboxPrefix, "/"),
		"autoStopInterval": sb.autoStop, "autoArchiveInterval": sb.autoArchive,
		"autoDeleteInterval": sb.autoDel, "volumes": vols,
		"createdAt": sb.createdAt.UTC().Format(time.RFC3339Nano),
		"updatedAt": now.UTC().Format(time.RFC3339Nano),
	}
	if sb.snapshot != "" {
		m["snapshot"] = sb.snapshot
	}
	if st := sb.state(now); st == "error" || st == "build_failed" {
		m["errorReason"] = failReasons[st]
	}
	if !sb.deletedAt.IsZero() {
		m["desiredState"] = "destroyed"
	} else {
		m["desiredState"] = "started"
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
	for st := range sb.streams {
		close(st.cut)
	}
	sb.streams = map[*logStream]struct{}{}
}

type volume struct {
	id, name  string
	createdAt time.Time
	readyAt   time.Time
	dir       string
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
	if h.r.Header.Get("Authorization") != "Bearer "+s.APIKey() {
		h.apiError(http.StatusUnauthorized, "Invalid credentials")
		return
	}
	switch h.op {
	case OpCreateSandbox:
		s.createSandbox(h)
	case OpGetSandbox:
		s.getSandbox(h)
	case OpListSandboxes:
		s.listSandboxes(h)
	case OpDeleteSandbox:
		s.deleteSandbox(h)
	case OpCreateVolume:
		s.createVolume(h)
	case OpGetVolumeByName:
		s.getVolumeByName(h)
	default:
		s.violation("%s: the emulator does not implement this API route", h.op)
		h.apiError(http.StatusNotImplemented, "%s is not emulated", h.op)
	}
}

type createRequest struct {
	Name                *string           `json:"name"`
	Snapshot            string            `json:"snapshot"`
	User                string            `json:"user"`
	Env                 map[string]string `json:"env"`
	Labels              map[string]string `json:"labels"`
	Public              bool              `json:"public"`
	NetworkBlockAll     bool              `json:"networkBlockAll"`
	Target              string            `json:"target"`
	CPU                 *int              `json:"cpu"`
	GPU                 *int              `json:"gpu"`
	Memory              *int              `json:"memory"`
	Disk                *int              `json:"disk"`
	AutoStopInterval    *int              `json:"autoStopInterval"`
	AutoArchiveInterval *int              `json:"autoArchiveInterval"`
	AutoDeleteInterval  *int              `json:"autoDeleteInterval"`
	Volumes             []struct {
		VolumeID  string `json:"volumeId"`
		MountPath string `json:"mountPath"`
	} `json:"volumes"`
	BuildInfo *struct {
		DockerfileContent string `json:"dockerfileContent"`
	} `json:"buildInfo"`
}

// forbiddenMountRoots are refused as volume mount points by the real API.
var forbiddenMountRoots = []string{"/proc", "/sys", "/dev", "/boot", "/etc", "/bin", "/sbin", "/lib", "/lib64"}

func checkMountPath(p string) error {
	if !strings.HasPrefix(p, "/") || p == "/" || strings.Contains(p, "//") {
		return fmt.Errorf("invalid mount path %q", p)
	}
	for _, c := range strings.Split(p[1:], "/") {
		if c == "." || c == ".." {
			return fmt.Errorf("invalid mount path %q", p)
		}
	}
	for _, f := range forbiddenMountRoots {
		if p == f || strings.HasPrefix(p, f+"/") {
			return fmt.Errorf("mount path %q is under %s", p, f)
		}
	}
	return nil
}

func (s *Server) createSandbox(h *handlerCtx) {
	var req createRequest
	if err := json.NewDecoder(h.r.Body).Decode(&req); err != nil {
		h.apiError(http.StatusBadRequest, "bad request body: %v", err)
		return
	}
	if req.BuildInfo != nil && req.Snapshot != "" {
		h.apiError(http.StatusBadRequest, "Cannot specify a snapshot when using a build info entry")
		return
	}
	if req.BuildInfo == nil && (req.CPU != nil || req.GPU != nil || req.Memory != nil || req.Disk != nil) {
		h.apiError(http.StatusBadRequest, "Cannot specify Sandbox resources when using a snapshot")
		return
	}
	for k := range req.Env {
		if !envKey(k) {
			h.apiError(http.StatusBadRequest, "invalid env name %q", k)
			return
		}
	}
	// The resources the sandbox gets: the request's for an image (0 means
	// the default, as the API's "||"), the default snapshot's otherwise.
	cpu, mem, disk := defaultCPU, defaultMemory, defaultDisk
	if req.BuildInfo != nil {
		for _, r := range []struct {
			dst *int
			src *int
		}{{&cpu, req.CPU}, {&mem, req.Memory}, {&disk, req.Disk}} {
			if r.src != nil && *r.src > 0 {
				*r.dst = *r.src
			}
		}
	}
	// The real API's order (sandbox.service.ts createFromSnapshot and
	// createFromBuildInfo): the snapshot, the per-sandbox maximum, the
	// organization's quota, the volumes, and the name only when the row is
	// inserted.
	if req.BuildInfo == nil && !s.knownSnapshot(req.Snapshot) {
		h.apiError(http.StatusBadRequest, "Snapshot %s not found. Did you add it through the Daytona Dashboard?", req.Snapshot)
		return
	}
	if msg := s.perSandboxRefusal(cpu, mem, disk); msg != "" {
		h.apiError(http.StatusBadRequest, "%s", msg)
		return
	}
	now := time.Now()

	s.mu.Lock()
	defer s.mu.Unlock()
	if msg := s.quotaRefusal(now, cpu, mem, disk); msg != "" {
		h.apiError(s.quotaStatus(), "%s", msg)
		return
	}
	if req.Name != nil && *req.Name != "" {
		for _, sb := range s.order {
			if sb.name == *req.Name && sb.state(now) != "destroyed" {
				h.apiError(http.StatusConflict, "Sandbox with name %s already exists", *req.Name)
				return
			}
		}
	}
	var mounts []VolumeMount
	var vols []*volume
	for _, vm := range req.Volumes {
		v := s.volumes[vm.VolumeID]
		if v == nil {
			for _, cand := range s.volumes {
				if cand.name == vm.VolumeID {
					v = cand
				}
			}
		}
		if v == nil {
			h.apiError(http.StatusNotFound, "Volume %s not found", vm.VolumeID)
			return
		}
		if now.Before(v.readyAt) {
			h.apiError(http.StatusBadRequest, "Volume %s is not in a ready state", vm.VolumeID)
			return
		}
		if err := checkMountPath(vm.MountPath); err != nil {
			h.apiError(http.StatusBadRequest, "%v", err)
			return
		}
		mounts = append(mounts, VolumeMount{VolumeID: v.id, MountPath: vm.MountPath})
		vols = append(vols, v)
	}

	s.seq++
	id := fmt.Sprintf("sbx-%04d-%x", s.seq, now.UnixNano()&0xffffff)
	sb := &sandbox{
		id: id, name: id, user: "daytona", target: "us",
		labels: copyMap(req.Labels), env: copyMap(req.Env),
		createdAt: now, startAt: now.Add(s.opts.StartDelay),
		public: req.Public, networkBlockAll: req.NetworkBlockAll,
		cpu: cpu, mem: mem, disk: disk, autoStop: 15, autoArchive: 10080, autoDel: -1,
		snapshot: req.Snapshot, volumes: mounts,
		sessions: map[string]*session{}, procs: map[*proc]struct{}{}, streams: map[*logStream]struct{}{},
	}
	if req.Name != nil && *req.Name != "" {
		sb.name = *req.Name
	}
	sb.origName = sb.name
	if req.User != "" {
		sb.user = req.User
	}
	if req.Target != "" {
		sb.target = req.Target
	}
	if req.BuildInfo != nil {
		sb.image = strings.TrimSpace(strings.TrimPrefix(req.BuildInfo.DockerfileContent, "FROM "))
		sb.snapshot = ""
		sb.failState = s.opts.FailStart[sb.image]
	} else if req.Snapshot != "" {
		sb.failState = s.opts.FailStart[req.Snapshot]
	}
	setInt := func(dst *int, src *int) {
		if src != nil {
			*dst = *src
		}
	}
	setInt(&sb.gpu, req.GPU)
	setInt(&sb.autoStop, req.AutoStopInterval)
	setInt(&sb.autoArchive, req.AutoArchiveInterval)
	setInt(&sb.autoDel, req.AutoDeleteInterval)
	if sb.autoArchive == 0 {
		sb.autoArchive = 43200
	}

	sb.root = filepath.Join(s.dir, id)
	sb.home = filepath.Join(sb.root, "home", sb.user)
	s.sandboxes[id] = sb
	s.order = append(s.order, sb)
	s.live++
	if s.live > s.peak {
		s.peak = s.live
	}
	s.notePeakUsage(now)
	dirs := make([]string, len(vols))
	for i, v := range vols {
		dirs[i] = v.dir
	}

	// The file system work happens without the lock: it is slow, and other
	// sandboxes must not wait for it.
	s.mu.Unlock()
	err := s.makeSandboxFS(sb, dirs)
	s.mu.Lock()
	if err != nil {
		sb.deletedAt, sb.destroyedAt = now, now
		s.live--
		h.apiError(http.StatusInternalServerError, "make sandbox: %v", err)
		return
	}
	if st := sb.state(now); req.BuildInfo == nil && (st == "error" || st == "build_failed") {
		// The API waits up to 30 s for a snapshot's sandbox to start and
		// answers its failure as a 400 (sandbox.controller.ts
		// waitForSandboxStarted); the sandbox stays, in its failed state.
		h.apiError(http.StatusBadRequest, "Sandbox failed to start: %s", failReasons[st])
		return
	}
	h.json(http.StatusOK, sb.dto(s, now))
}

// makeSandboxFS makes the sandbox's directories. A volume mounted at an
// absolute path appears at that path under the sandbox's root, which is
// where the emulator keeps its file system.
func (s *Server) makeSandboxFS(sb *sandbox, volumeDirs []string) error {
	for _, d := range []string{sb.home, filepath.Join(sb.root, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for i, m := range sb.volumes {
		at := filepath.Join(sb.root, filepath.FromSlash(m.MountPath))
		err := os.MkdirAll(filepath.Dir(at), 0o755)
		if err == nil {
			err = os.Symlink(volumeDirs[i], at)
		}
		if err != nil {
			return fmt.Errorf("mount volume at %s: %w", m.MountPath, err)
		}
	}
	return nil
}

// lookup finds a sandbox by ID, then by name, as the API does: destroyed
// ones are gone. The caller holds s.mu.
func (s *Server) lookup(idOrName string, now time.Time) *sandbox {
	if sb := s.sandboxes[idOrName]; sb != nil && sb.visible(now) {
		return sb
	}
	for _, sb := range s.order {
		if sb.name == idOrName && sb.visible(now) {
			return sb
		}
	}
	return nil
}

func (s *Server) getSandbox(h *handlerCtx) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	key := h.params["sandboxIdOrName"]
	sb := s.lookup(key, now)
	if sb == nil {
		h.apiError(http.StatusNotFound, "Sandbox with ID or name %s not found", key)
		return
	}
	h.json(http.StatusOK, sb.dto(s, now))
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
	page, limit := 1, 100
	if p := q.Get("page"); p != "" {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 1 {
			h.apiError(http.StatusBadRequest, "bad page %q", p)
			return
		}
		page = int(f)
	}
	if l := q.Get("limit"); l != "" {
		f, err := strconv.ParseFloat(l, 64)
		if err != nil || f < 1 || f > 200 {
			h.apiError(http.StatusBadRequest, "bad limit %q", l)
			return
		}
		limit = int(f)
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var match []*sandbox
	for _, sb := range s.order {
		if !sb.visible(now) {
			continue
		}
		ok := true
		for k, v := range want {
			if got, has := sb.labels[k]; !has || got != v {
				ok = false
			}
		}
		if ok {
			match = append(match, sb)
		}
	}
	sort.SliceStable(match, func(i, j int) bool { return match[i].createdAt.After(match[j].createdAt) })
	items := []map[string]any{}
	for i := (page - 1) * limit; i < len(match) && i < page*limit; i++ {
		items = append(items, match[i].dto(s, now))
	}
	h.json(http.StatusOK, map[string]any{
		"items": items, "total": len(match), "page": page,
		"totalPages": int(math.Ceil(float64(len(match)) / float64(limit))),
	})
}

func (s *Server) deleteSandbox(h *handlerCtx) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	key := h.params["sandboxIdOrName"]
	sb := s.lookup(key, now)
	if sb == nil {
		h.apiError(http.StatusNotFound, "Sandbox with ID or name %s not found", key)
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
	s.live--
	h.json(http.StatusOK, sb.dto(s, now))
}

func (s *Server) createVolume(h *handlerCtx) {
	var req struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(h.r.Body).Decode(&req); err != nil || req.Name == "" {
		h.apiError(http.StatusBadRequest, "a volume needs a name")
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.volumes {
		if v.name == req.Name {
			h.apiError(http.StatusBadRequest, "Volume with name %s already exists", req.Name)
			return
		}
	}
	s.seq++
	v := &volume{
		id: fmt.Sprintf("vol-%04d", s.seq), name: req.Name, createdAt: now,
		readyAt: now.Add(s.opts.VolumeReadyDelay),
	}
	v.dir = filepath.Join(s.dir, "volumes", v.id)
	if err := os.MkdirAll(v.dir, 0o755); err != nil {
		h.apiError(http.StatusInternalServerError, "make volume: %v", err)
		return
	}
	s.volumes[v.id] = v
	h.json(http.StatusOK, v.dto(now))
}

func (s *Server) getVolumeByName(h *handlerCtx) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	name := h.params["name"]
	for _, v := range s.volumes {
		if v.name == name {
			h.json(http.StatusOK, v.dto(now))
			return
		}
	}
	h.apiError(http.StatusNotFound, "Volume with name %s not found", name)
}

// VolumeFile reads a file from a volume's durable storage.
func (s *Server) VolumeFile(volumeName, rel string) ([]byte, error) {
	s.mu.Lock()
	var dir string
	for _, v := range s.volumes {
		if v.name == volumeName {
			dir = v.dir
		}
	}
	s.mu.Unlock()
	if dir == "" {
		return nil, fmt.Errorf("no volume %q", volumeName)
	}
	return os.ReadFile(filepath.Join(dir, filepath.FromSlash(path.Clean("/"+rel))))
}

func envKey(k string) bool {
	if k == "" {
		return false
	}
	for i, c := range k {
		if c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	maps.Copy(out, m)
	return out
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
