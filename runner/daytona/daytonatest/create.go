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
	Volumes             []struct {
		VolumeID  string `json:"volumeId"`
		MountPath string `json:"mountPath"`
	} `json:"volumes"`
	BuildInfo *struct {
		DockerfileContent string `json:"dockerfileContent"`
	} `json:"buildInfo"`
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
	// A snapshot the emulator built (or is building) is found by name or
	// ID; it must be active, and the sandbox gets its resources, a copy of
	// its file system and its image's environment.
	now := time.Now()
	var snap, from *snapshot // from: a copy of snap, read under s.mu
	gpu := valueOr(req.GPU, 0)
	if req.BuildInfo == nil && strings.TrimSpace(req.Snapshot) != "" {
		s.mu.Lock()
		if snap = s.snapshotNamed(req.Snapshot, now); snap != nil {
			c := *snap
			c.env = copyMap(snap.env)
			from, cpu, mem, disk, gpu = &c, c.cpu, c.mem, c.disk, c.gpu
		}
		s.mu.Unlock()
	}
	if req.BuildInfo == nil && snap == nil && !s.knownSnapshot(req.Snapshot) {
		h.apiError(http.StatusBadRequest, "Snapshot %s not found. Did you add it through the Daytona Dashboard?", req.Snapshot)
		return
	}
	if from != nil && from.state != snapActive {
		// sandbox.service.ts createFromSnapshot.
		h.apiError(http.StatusBadRequest, "Snapshot %s is %s", req.Snapshot, from.state)
		return
	}
	if msg := s.perSandboxRefusal(cpu, mem, disk); msg != "" {
		h.apiError(http.StatusBadRequest, "%s", msg)
		return
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if msg := s.quotaRefusal(now, cpu, mem, disk); msg != "" {
		h.apiError(cmp.Or(s.opts.QuotaStatus, http.StatusBadRequest), "%s", msg)
		return
	}
	if req.Name != "" {
		for _, sb := range s.order {
			if sb.name == req.Name && sb.state(now) != "destroyed" {
				h.apiError(http.StatusConflict, "Sandbox with name %s already exists", req.Name)
				return
			}
		}
	}
	var mounts []VolumeMount
	var vols []*volume
	for _, vm := range req.Volumes {
		v := s.volumes[vm.VolumeID]
		if v == nil {
			v = s.volumeNamed(vm.VolumeID)
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
	if err := s.startSandbox(sb, vols, entrypoint); err != nil {
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

// newSandbox is the sandbox req makes, from a copy of its snapshot (nil
// for an image's), with the API's defaults for what the request leaves
// out; an auto-archive of 0 means its maximum. The caller holds s.mu.
func (s *Server) newSandbox(req createRequest, now time.Time, from *snapshot, mounts []VolumeMount) *sandbox {
	s.seq++
	id := fmt.Sprintf("sbx-%04d-%x", s.seq, now.UnixNano()&0xffffff)
	name, user, root := cmp.Or(req.Name, id), cmp.Or(req.User, "daytona"), filepath.Join(s.opts.Dir, id)
	home := filepath.Join(root, "home", user)
	rooted := RootFS()
	if rooted {
		home = filepath.Join(root, filepath.FromSlash(userHome(user)))
		if from != nil && from.account != nil {
			home = filepath.Join(root, filepath.FromSlash(from.account.home))
		}
	}
	sb := &sandbox{
		id: id, name: name, origName: name, user: user, target: cmp.Or(req.Target, "us"),
		labels: copyMap(req.Labels), env: copyMap(req.Env),
		createdAt: now, startAt: now.Add(s.opts.StartDelay),
		public: req.Public, networkBlockAll: req.NetworkBlockAll, networkAllowList: valueOr(req.NetworkAllowList, ""),
		autoStop: valueOr(req.AutoStopInterval, 15), autoArchive: cmp.Or(valueOr(req.AutoArchiveInterval, 10080), 43200),
		autoDel: valueOr(req.AutoDeleteInterval, -1), snapshot: req.Snapshot, volumes: mounts, root: root, home: home,
		sessions: map[string]*session{}, procs: map[*proc]struct{}{}, streams: map[chan struct{}]struct{}{},
	}
	if req.BuildInfo != nil {
		sb.image = strings.TrimSpace(strings.TrimPrefix(req.BuildInfo.DockerfileContent, "FROM "))
		sb.failState = s.opts.FailStart[sb.image]
	} else if req.Snapshot != "" {
		sb.failState = s.opts.FailStart[req.Snapshot]
	}
	if from != nil && rooted {
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
	return sb
}

// startSandbox makes sb's file system, without the lock (it is slow, and
// other sandboxes must not wait for it): with RootFS its root, started;
// else its directories under its root. Then it starts entrypoint, the
// image's service, as the daemon starts it: nothing waits for it. The
// caller holds s.mu.
func (s *Server) startSandbox(sb *sandbox, vols []*volume, entrypoint string) error {
	s.mu.Unlock()
	var fs *fsRoot
	var err error
	if RootFS() {
		fs, err = s.makeSandboxRoot(sb, vols)
	} else {
		err = s.makeSandboxDirs(sb, vols)
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
func execLine(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = text.ShellQuote(a)
	}
	return "exec " + strings.Join(q, " ")
}

// makeSandboxRoot makes the sandbox's root: a copy of its snapshot's, its
// home, its volumes' mount points (a volume appears at its mount path),
// and starts it.
func (s *Server) makeSandboxRoot(sb *sandbox, vols []*volume) (*fsRoot, error) {
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
		for i, m := range sb.volumes {
			if err := r.MkdirAll(strings.TrimPrefix(m.MountPath, "/"), 0o755); err != nil {
				return nil, fmt.Errorf("mount volume at %s: %w", m.MountPath, err)
			}
			binds = append(binds, bindMount{src: vols[i].dir, dst: m.MountPath})
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
func (s *Server) makeSandboxDirs(sb *sandbox, vols []*volume) error {
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
	for i, m := range sb.volumes {
		at := filepath.Join(sb.root, filepath.FromSlash(m.MountPath))
		err := os.MkdirAll(filepath.Dir(at), 0o755)
		if err == nil {
			err = os.Symlink(vols[i].dir, at)
		}
		if err != nil {
			return fmt.Errorf("mount volume at %s: %w", m.MountPath, err)
		}
	}
	return nil
}
