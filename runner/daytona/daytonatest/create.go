package daytonatest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/forge-run/forge/internal/text"
)

type createRequest struct {
	Name                string            `json:"name"`
	Snapshot            string            `json:"snapshot"`
	User                string            `json:"user"`
	Env                 map[string]string `json:"env"`
	Labels              map[string]string `json:"labels"`
	Public              bool              `json:"public"`
	NetworkBlockAll     bool              `json:"networkBlockAll"`
	NetworkAllowList    *string           `json:"networkAllowList"`
	Target              string            `json:"target"`
	CPU                 *int              `json:"cpu"`
	GPU                 *int              `json:"gpu"`
	Memory              *int              `json:"memory"`
	Disk                *int              `json:"disk"`
	AutoStopInterval    *int              `json:"autoStopInterval"`
	AutoArchiveInterval *int              `json:"autoArchiveInterval"`
	AutoDeleteInterval  *int              `json:"autoDeleteInterval"`
	Volumes             []VolumeMount     `json:"volumes"`
	BuildInfo           *struct {
		DockerfileContent string `json:"dockerfileContent"`
	} `json:"buildInfo"`
}

func (s *Server) createSandbox(h *handlerCtx) {
	var req createRequest
	if err := json.NewDecoder(h.r.Body).Decode(&req); err != nil {
		h.apiError(http.StatusBadRequest, "bad request body: %v", err)
		return
	}
	// The real API's order (sandbox.service.ts createFromSnapshot and
	// createFromBuildInfo): the request's own checks, the snapshot, the
	// per-sandbox maximum, the organization's quota, the volumes, and the
	// name only when the row is inserted.
	now := time.Now()
	snap, from := s.sandboxSnapshot(req, now)
	cpu, gpu, mem, disk := sandboxResources(req, from)
	if msg := s.createRefusal(req, from, cpu, mem, disk); msg != "" {
		h.apiError(http.StatusBadRequest, "%s", msg)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if msg := s.quotaRefusal(now, cpu, mem, disk); msg != "" {
		h.apiError(cmp.Or(s.opts.QuotaStatus, http.StatusBadRequest), "%s", msg)
		return
	}
	taken := func(sb *sandbox) bool { return sb.name == req.Name && sb.state(now) != "destroyed" }
	if req.Name != "" && slices.ContainsFunc(s.order, taken) {
		h.apiError(http.StatusConflict, "Sandbox with name %s already exists", req.Name)
		return
	}
	mounts, ok := s.volumeMounts(h, req, now)
	if !ok {
		return
	}
	sb := s.newSandbox(req, now, from, mounts)
	sb.cpu, sb.gpu, sb.mem, sb.disk = cpu, gpu, mem, disk
	if snap != nil {
		snap.lastUsedAt = now
	}
	s.sandboxes[sb.id] = sb
	s.order = append(s.order, sb)
	s.peak = max(s.peak, s.liveCount())
	s.notePeakUsage(now)
	entrypoint := ""
	if from != nil {
		entrypoint = entrypointCommand(from.entrypoint)
	}
	if err := s.startSandbox(sb, entrypoint); err != nil {
		sb.deletedAt, sb.destroyedAt = now, now
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

// sandboxSnapshot is the emulator's snapshot (built or building) a create
// names by name or ID, and from, a copy read under s.mu; nil for others.
func (s *Server) sandboxSnapshot(req createRequest, now time.Time) (snap, from *snapshot) {
	if req.BuildInfo != nil || strings.TrimSpace(req.Snapshot) == "" {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if snap = s.snapshotNamed(req.Snapshot, now); snap == nil {
		return nil, nil
	}
	c := *snap
	c.env = copyMap(snap.env)
	return snap, &c
}

// sandboxResources are its snapshot's (from), else the request's (0 is the
// default, as the API's "||"): an image's, or the default snapshot's, whose
// create may name none (createRefusal).
func sandboxResources(req createRequest, from *snapshot) (cpu, gpu, mem, disk int) {
	if from != nil {
		return from.cpu, from.gpu, from.mem, from.disk
	}
	return positiveOr(valueOr(req.CPU, 0), defaultCPU), valueOr(req.GPU, 0),
		positiveOr(valueOr(req.Memory, 0), defaultMemory), positiveOr(valueOr(req.Disk, 0), defaultDisk)
}

// createRefusal is the API's 400 message, or "", for a create refused
// before its quota check: the request, the snapshot, the per-sandbox maximum.
func (s *Server) createRefusal(req createRequest, from *snapshot, cpu, mem, disk int) string {
	switch {
	case req.BuildInfo != nil && req.Snapshot != "":
		return "Cannot specify a snapshot when using a build info entry"
	case req.BuildInfo == nil && (req.CPU != nil || req.GPU != nil || req.Memory != nil || req.Disk != nil):
		return "Cannot specify Sandbox resources when using a snapshot"
	}
	for k := range req.Env {
		if !envKey(k) {
			return fmt.Sprintf("invalid env name %q", k)
		}
	}
	switch {
	case req.BuildInfo == nil && from == nil && !s.knownSnapshot(req.Snapshot):
		return fmt.Sprintf("Snapshot %s not found. Did you add it through the Daytona Dashboard?", req.Snapshot)
	case from != nil && from.state != snapActive:
		return fmt.Sprintf("Snapshot %s is %s", req.Snapshot, from.state) // sandbox.service.ts createFromSnapshot
	}
	return s.perSandboxRefusal(cpu, mem, disk)
}

// volumeMounts are the volumes req mounts, each found by ID or name;
// false when the call has been answered. The caller holds s.mu.
func (s *Server) volumeMounts(h *handlerCtx, req createRequest, now time.Time) ([]VolumeMount, bool) {
	var mounts []VolumeMount
	for _, vm := range req.Volumes {
		v, pathErr := cmp.Or(s.volumes[vm.VolumeID], s.volumeNamed(vm.VolumeID)), checkMountPath(vm.MountPath)
		switch {
		case v == nil:
			h.apiError(http.StatusNotFound, "Volume %s not found", vm.VolumeID)
		case now.Before(v.readyAt):
			h.apiError(http.StatusBadRequest, "Volume %s is not in a ready state", vm.VolumeID)
		case pathErr != nil:
			h.apiError(http.StatusBadRequest, "%v", pathErr)
		default:
			mounts = append(mounts, VolumeMount{VolumeID: v.id, MountPath: vm.MountPath})
			continue
		}
		return nil, false
	}
	return mounts, true
}

// newSandbox is the sandbox req makes, from a copy of its snapshot (nil
// for an image's), with the API's defaults for what the request leaves
// out; an auto-archive of 0 means its maximum. The caller holds s.mu.
func (s *Server) newSandbox(req createRequest, now time.Time, from *snapshot, mounts []VolumeMount) *sandbox {
	s.seq++
	id := fmt.Sprintf("sbx-%04d-%x", s.seq, now.UnixNano()&0xffffff)
	name, user, root := cmp.Or(req.Name, id), cmp.Or(req.User, "daytona"), filepath.Join(s.opts.Dir, id)
	sb := &sandbox{
		id: id, name: name, origName: name, user: user, target: cmp.Or(req.Target, "us"),
		labels: copyMap(req.Labels), env: copyMap(req.Env),
		createdAt: now, startAt: now.Add(s.opts.StartDelay),
		public: req.Public, networkBlockAll: req.NetworkBlockAll, networkAllowList: valueOr(req.NetworkAllowList, ""),
		autoStop: valueOr(req.AutoStopInterval, 15), autoArchive: cmp.Or(valueOr(req.AutoArchiveInterval, 10080), 43200),
		autoDel: valueOr(req.AutoDeleteInterval, -1), snapshot: req.Snapshot, volumes: mounts,
		root: root, home: filepath.Join(root, "home", user),
		sessions: map[string]*session{}, procs: map[*proc]struct{}{}, streams: map[chan struct{}]struct{}{},
	}
	if req.BuildInfo != nil {
		sb.image = strings.TrimSpace(strings.TrimPrefix(req.BuildInfo.DockerfileContent, "FROM "))
		sb.failState = s.opts.FailStart[sb.image]
	} else if req.Snapshot != "" {
		sb.failState = s.opts.FailStart[req.Snapshot]
	}
	if from != nil && RootFS() {
		// The image's paths are the sandbox's.
		sb.fromRoot, sb.imageEnv, sb.workDir, sb.account = from.root, from.env, from.workdir, from.account
	} else if from != nil {
		// The image's paths were mapped under the snapshot's root; the
		// sandbox's copy is under its own.
		sb.fromRoot, sb.imageEnv = from.root, map[string]string{}
		for k, v := range from.env {
			sb.imageEnv[k] = strings.ReplaceAll(v, from.root, root)
		}
		if from.workdir != "" {
			sb.workDir = root + strings.TrimPrefix(from.workdir, from.root)
		}
	}
	if RootFS() {
		// Its home is where its processes see it, in its root.
		sb.home = filepath.Join(root, filepath.FromSlash(sb.homePath()))
	}
	return sb
}

// startSandbox makes sb's file system, without the lock (it is slow, and
// other sandboxes must not wait for it): with RootFS its root, started;
// else its directories under its root. Then it starts entrypoint, the
// image's service, as the daemon starts it: nothing waits for it. The
// caller holds s.mu.
func (s *Server) startSandbox(sb *sandbox, entrypoint string) error {
	s.mu.Unlock()
	var fs *fsRoot
	var err error
	if RootFS() {
		fs, err = s.makeSandboxRoot(sb)
	} else {
		err = s.makeSandboxDirs(sb)
	}
	s.mu.Lock()
	if err != nil || fs == nil {
		return err
	}
	sb.fs = fs
	if s.gone(sb) {
		fs.stop() // deleted, or the emulator closing, while it was made
	} else if entrypoint != "" && sb.failState == "" {
		s.mu.Unlock()
		s.spawn(sb, entrypoint, cmp.Or(sb.workDir, "/"), s.baseEnv(sb), false, nil)
		s.mu.Lock()
	}
	return nil
}

// valueOr is *p, or d when p is nil.
func valueOr[T any](p *T, d T) T {
	if p == nil {
		return d
	}
	return *p
}

// positiveOr is v, or d when v is not positive.
func positiveOr(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

// entrypointCommand is the shell command that runs a snapshot's
// entrypoint; "" for none or the API's default, which only keeps a
// container alive.
func entrypointCommand(ep []string) string {
	switch {
	case len(ep) == 0 || slices.Equal(ep, []string{"sleep", "infinity"}):
		return ""
	case len(ep) == 1:
		return ep[0] // the shell form, as the API keeps it
	}
	return execLine(ep)
}

// execLine is the shell line that runs argv, the exec form, as it is.
func execLine(argv []string) string { return "exec " + text.ShellQuoted(argv) }

// makeSandboxRoot makes the sandbox's root: a copy of its snapshot's, its
// home, its volumes' mount points (a volume appears at its mount path),
// and starts it.
func (s *Server) makeSandboxRoot(sb *sandbox) (*fsRoot, error) {
	if sb.fromRoot != "" {
		if err := copyRoot(sb.fromRoot, sb.root); err != nil {
			return nil, fmt.Errorf("copy the snapshot's file system: %w", err)
		}
	}
	if sb.account == nil {
		// The emulator's user stands for the default snapshot's, whose
		// home that image made; an image's own user has what it made.
		if err := os.MkdirAll(sb.home, 0o755); err != nil {
			return nil, err
		}
	}
	var binds []bindMount
	if len(sb.volumes)+len(s.opts.Shared) > 0 {
		// The mount points are made before anything is mounted, in the
		// root's own directories: links there must not lead out of it.
		r, err := os.OpenRoot(sb.root)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		for _, d := range s.opts.Shared {
			if err := r.MkdirAll(strings.TrimPrefix(filepath.Clean(d), "/"), 0o755); err != nil {
				return nil, fmt.Errorf("share %s: %w", d, err)
			}
			binds = append(binds, bindMount{src: d, dst: filepath.Clean(d)})
		}
		for _, m := range sb.volumes {
			if err := r.MkdirAll(strings.TrimPrefix(m.MountPath, "/"), 0o755); err != nil {
				return nil, fmt.Errorf("mount volume at %s: %w", m.MountPath, err)
			}
			binds = append(binds, bindMount{src: s.volumeDir(m.VolumeID), dst: m.MountPath})
		}
	}
	home := ""
	if fi, err := os.Stat(sb.home); err == nil && fi.IsDir() && strings.HasPrefix(sb.homePath(), "/home/") {
		home = sb.homePath()
	}
	ownNet := sb.networkBlockAll || !s.opts.HostNetwork
	return startRoot(sb.root, filepath.Join(s.opts.Dir, "overlay-work", sb.id), home, binds, ownNet, &s.workers)
}

// makeSandboxDirs makes the sandbox's directories under its root, the
// image's paths mapped under it; a volume is a link there.
func (s *Server) makeSandboxDirs(sb *sandbox) error {
	if sb.fromRoot != "" {
		if err := copyTree(sb.fromRoot, sb.root); err != nil {
			return fmt.Errorf("copy the snapshot's file system: %w", err)
		}
	}
	for _, d := range []string{sb.home, filepath.Join(sb.root, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, m := range sb.volumes {
		at := filepath.Join(sb.root, filepath.FromSlash(m.MountPath))
		err := os.MkdirAll(filepath.Dir(at), 0o755)
		if err == nil {
			err = os.Symlink(s.volumeDir(m.VolumeID), at)
		}
		if err != nil {
			return fmt.Errorf("mount volume at %s: %w", m.MountPath, err)
		}
	}
	return nil
}
