package daytonatest

import (
	"cmp"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Snapshot states (api-client-go SnapshotState).
const (
	snapPending     = "pending"
	snapBuilding    = "building"
	snapPulling     = "pulling"
	snapActive      = "active"
	snapError       = "error"
	snapBuildFailed = "build_failed"
	snapRemoving    = "removing"
)

// snapshot is one snapshot of the organization. Its fields are guarded by
// Server.mu.
type snapshot struct {
	id, name, imageName string
	dockerfile          string // buildInfo.dockerfileContent; "" for one pulled from imageName
	contextHashes       []string
	built               bool // made from buildInfo
	cpu, gpu, mem, disk int
	entrypoint          []string
	createdAt           time.Time
	updatedAt           time.Time
	lastUsedAt          time.Time // zero until a sandbox is made from it
	state               string
	errorReason         string
	removedAt           time.Time // zero unless deleted
	goneAt              time.Time // when a deleted one stops being shown

	// root is the snapshot's file system, with the image's absolute paths
	// under it; env is what the image's ENV set and workdir its WORKDIR
	// ("" for none), both mapped under root unless RootFS.
	root    string
	env     map[string]string
	workdir string
	account *account // the image's USER; nil for root

	log     []byte
	changed chan struct{} // closed (and replaced) whenever log or state changes
}

// terminal says whether the snapshot's build has ended.
func (sn *snapshot) terminal() bool {
	return !slices.Contains([]string{snapPending, snapBuilding, snapPulling}, sn.state)
}

// gone says whether the snapshot was deleted and is past SnapshotRemoveDelay.
func (sn *snapshot) gone(now time.Time) bool {
	return !sn.removedAt.IsZero() && !now.Before(sn.goneAt)
}

// notify wakes whoever follows the build log. The caller holds s.mu.
func (sn *snapshot) notify() {
	close(sn.changed)
	sn.changed = make(chan struct{})
}

// dto is the API's SnapshotDto, every required key present.
func (sn *snapshot) dto() map[string]any {
	m := map[string]any{
		"id": sn.id, "organizationId": "org-emulator", "general": false, "name": sn.name,
		"state": sn.state, "size": nil, "entrypoint": sn.entrypoint,
		"cpu": sn.cpu, "gpu": sn.gpu, "mem": sn.mem, "disk": sn.disk,
		"errorReason": nil, "createdAt": sn.createdAt.UTC().Format(time.RFC3339Nano),
		"updatedAt": sn.updatedAt.UTC().Format(time.RFC3339Nano), "lastUsedAt": nil,
		"regionIds": []string{"us"},
	}
	if sn.imageName != "" {
		m["imageName"] = sn.imageName
	}
	if sn.errorReason != "" {
		m["errorReason"] = sn.errorReason
	}
	if !sn.lastUsedAt.IsZero() {
		m["lastUsedAt"] = sn.lastUsedAt.UTC().Format(time.RFC3339Nano)
	}
	if sn.state == snapActive {
		m["size"] = 0.1
	}
	if sn.built {
		m["buildInfo"] = map[string]any{
			"dockerfileContent": sn.dockerfile, "contextHashes": append([]string{}, sn.contextHashes...), // never null
			"createdAt": sn.createdAt.UTC().Format(time.RFC3339Nano),
			"updatedAt": sn.createdAt.UTC().Format(time.RFC3339Nano), "snapshotRef": "emulator/" + sn.id,
		}
	}
	return m
}

// imageNameRE is the API's IMAGE_NAME_REGEX (snapshot.service.ts), which it
// applies to snapshot names and image names.
var imageNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.\-:]+(/[a-zA-Z0-9_.\-:]+)*(@sha256:[a-f0-9]{64})?$`)

// imageNameProblem is the API's validateImageName message, or "".
func imageNameProblem(name string) string {
	if img, digest, ok := strings.Cut(name, "@sha256:"); ok {
		if img == "" || !regexp.MustCompile(`^[a-f0-9]{64}$`).MatchString(digest) {
			return "Invalid digest format. Must be image@sha256:64_hex_characters"
		}
		return ""
	}
	switch {
	case !strings.Contains(name, ":") || strings.HasSuffix(strings.TrimRight(name, " \t"), ":"):
		return "Image name must include a tag (e.g., ubuntu:22.04) or digest (@sha256:...)"
	case strings.HasSuffix(name, ":latest"):
		return `Images with tag ":latest" are not allowed`
	case !imageNameRE.MatchString(name):
		return "Invalid image name format. Must be lowercase, may contain digits, dots, dashes, and single slashes between components"
	}
	return ""
}

// newUUID is a random version 4 UUID, the form of the API's snapshot IDs.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// snapshotUsage is how many snapshots count against SnapshotQuota: all but
// those in error, build_failed, inactive or removing (the API's
// SNAPSHOT_STATES_CONSUMING_RESOURCES). The caller holds s.mu.
func (s *Server) snapshotUsage(now time.Time) int {
	return count(s.snapOrder, func(sn *snapshot) bool {
		return !sn.gone(now) && !slices.Contains([]string{snapError, snapBuildFailed, "inactive", snapRemoving}, sn.state)
	})
}

// snapshotNamed is the organization's snapshot with that name or ID, nil if
// none. The caller holds s.mu.
func (s *Server) snapshotNamed(key string, now time.Time) *snapshot {
	for _, sn := range s.snapOrder {
		if (sn.id == key || sn.name == key) && !sn.gone(now) {
			return sn
		}
	}
	return nil
}

// snapshotRequest is the body of POST /snapshots.
type snapshotRequest struct {
	Name       string   `json:"name"`
	ImageName  *string  `json:"imageName"`
	Entrypoint []string `json:"entrypoint"`
	CPU        *int     `json:"cpu"`
	GPU        *int     `json:"gpu"`
	Memory     *int     `json:"memory"`
	Disk       *int     `json:"disk"`
	BuildInfo  *struct {
		DockerfileContent string   `json:"dockerfileContent"`
		ContextHashes     []string `json:"contextHashes"`
	} `json:"buildInfo"`
}

func (s *Server) createSnapshot(h *handlerCtx) {
	var req snapshotRequest
	if err := json.NewDecoder(h.r.Body).Decode(&req); err != nil {
		h.apiError(http.StatusBadRequest, "bad request body: %v", err)
		return
	}
	// The real API's order (v0.170.0 snapshot.controller.ts createSnapshot,
	// then snapshot.service.ts createFromPull or createFromBuildInfo): the
	// request's own checks (snapshotRefusal), the snapshot quota (both
	// BadRequestError: 400), and the unique name only when the row is
	// inserted (409).
	if msg := s.snapshotRefusal(req); msg != "" {
		h.apiError(http.StatusBadRequest, "%s", msg)
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.opts.SnapshotQuota; q > 0 && s.snapshotUsage(now)+1 > q {
		h.apiError(http.StatusBadRequest, "Snapshot quota exceeded. Maximum allowed: %d", q)
		return
	}
	if s.snapshotNamed(req.Name, now) != nil {
		h.apiError(http.StatusConflict, "Snapshot with name %q already exists for this organization", req.Name)
		return
	}
	sn := s.newSnapshot(req, now)
	s.snapOrder = append(s.snapOrder, sn)
	s.workers.Add(1)
	go s.buildSnapshot(sn)
	h.json(http.StatusOK, sn.dto())
}

// snapshotRefusal is why the API refuses req by itself, in its order: the
// controller's checks of buildInfo against imageName and entrypoint, the
// snapshot name, the image name, the per-sandbox limits; "" if none.
func (s *Server) snapshotRefusal(req snapshotRequest) string {
	image := valueOr(req.ImageName, "")
	switch {
	case req.BuildInfo != nil && image != "":
		return "Cannot specify an image name when using a build info entry"
	case req.BuildInfo != nil && req.Entrypoint != nil:
		return "Cannot specify an entrypoint when using a build info entry"
	case req.BuildInfo == nil && image == "":
		return "Must specify an image name when not using a build info entry"
	case !imageNameRE.MatchString(req.Name):
		return "Invalid snapshot name format. May contain letters, digits, dots, colons, and dashes"
	}
	if req.BuildInfo == nil {
		if msg := imageNameProblem(image); msg != "" {
			return msg
		}
	}
	return s.perSandboxRefusal(valueOr(req.CPU, 0), valueOr(req.Memory, 0), valueOr(req.Disk, 0))
}

// newSnapshot is the pending snapshot req makes, with the entity's
// defaults for what it leaves out (1 vCPU, 1 GiB, 3 GiB, no GPU), as for an
// image's sandbox.
func (s *Server) newSnapshot(req snapshotRequest, now time.Time) *snapshot {
	sn := &snapshot{
		id: newUUID(), name: req.Name, createdAt: now, updatedAt: now, state: snapPending,
		cpu: cmp.Or(valueOr(req.CPU, 0), defaultCPU), gpu: valueOr(req.GPU, 0),
		mem: cmp.Or(valueOr(req.Memory, 0), defaultMemory), disk: cmp.Or(valueOr(req.Disk, 0), defaultDisk),
		entrypoint: req.Entrypoint, changed: make(chan struct{}),
	}
	if req.BuildInfo != nil {
		sn.built, sn.dockerfile, sn.contextHashes = true, req.BuildInfo.DockerfileContent, req.BuildInfo.ContextHashes
		if len(sn.entrypoint) == 0 {
			sn.entrypoint = dockerfileEntrypoint(sn.dockerfile)
		}
	} else {
		sn.imageName = *req.ImageName
	}
	if len(sn.entrypoint) == 0 {
		sn.entrypoint = []string{"sleep", "infinity"}
	}
	sn.root = filepath.Join(s.opts.Dir, "snapshots", sn.id)
	return sn
}

// dockerfileEntrypoint is the API's getEntrypointFromDockerfile.
func dockerfileEntrypoint(df string) []string {
	m := regexp.MustCompile(`ENTRYPOINT\s+(.*)`).FindStringSubmatch(df)
	if m == nil {
		return []string{"sleep", "infinity"}
	}
	raw := strings.TrimSpace(m[1])
	var parsed []string
	if json.Unmarshal([]byte(raw), &parsed) == nil {
		return parsed
	}
	return []string{strings.NewReplacer(`"`, "", "'", "").Replace(raw)}
}

func (s *Server) getSnapshot(h *handlerCtx) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if sn := s.snapshotNamed(h.params["id"], now); sn != nil {
		h.json(http.StatusOK, sn.dto())
		return
	}
	h.apiError(http.StatusNotFound, snapshotNotFound, h.params["id"])
}

// snapshotNotFound is the API's 404 for a snapshot an ID or name does not
// find: the access guards fall back to snapshot.service.ts
// getSnapshotByName, whose message it is.
const snapshotNotFound = "Snapshot with name %s not found"

// uuidPattern is what Nest's ParseUUIDPipe accepts.
var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func (s *Server) listSnapshots(h *handlerCtx) {
	q := h.r.URL.Query()
	sortBy, desc := cmp.Or(q.Get("sort"), "lastUsedAt"), q.Get("order") != "asc"
	name := strings.ToLower(q.Get("name"))
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	match := slices.DeleteFunc(slices.Clone(s.snapOrder), func(sn *snapshot) bool {
		return sn.gone(now) || !strings.Contains(strings.ToLower(sn.name), name)
	})
	// The API's order: the sort field (nulls last), then createdAt desc.
	slices.SortStableFunc(match, func(a, b *snapshot) int {
		c := 0
		switch sortBy {
		case "name":
			c = strings.Compare(a.name, b.name)
		case "state":
			c = strings.Compare(a.state, b.state)
		case "createdAt":
			c = a.createdAt.Compare(b.createdAt)
		default:
			if a.lastUsedAt.IsZero() != b.lastUsedAt.IsZero() {
				if a.lastUsedAt.IsZero() {
					return 1
				}
				return -1
			}
			c = a.lastUsedAt.Compare(b.lastUsedAt)
		}
		if desc {
			c = -c
		}
		return cmp.Or(c, b.createdAt.Compare(a.createdAt))
	})
	paginate(h, match, (*snapshot).dto)
}

// deleteSnapshot marks the snapshot removing, gone after
// SnapshotRemoveDelay; its sandboxes keep their file systems. As in the API
// (removeSnapshot), the access guard finds it by ID or name, then the
// route wants a UUID (ParseUUIDPipe): a name is refused 400.
func (s *Server) deleteSnapshot(h *handlerCtx) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := s.snapshotNamed(h.params["id"], now)
	switch {
	case sn == nil:
		h.apiError(http.StatusNotFound, snapshotNotFound, h.params["id"])
		return
	case !uuidPattern.MatchString(h.params["id"]):
		h.apiError(http.StatusBadRequest, "Validation failed (uuid is expected)")
		return
	}
	if sn.removedAt.IsZero() {
		sn.removedAt, sn.goneAt = now, now.Add(s.opts.SnapshotRemoveDelay)
	}
	sn.state, sn.updatedAt = snapRemoving, now
	sn.notify()
	h.w.WriteHeader(http.StatusOK)
}

// serveBuildLogs answers the build log as plain text, with follow=true as
// it comes until the build ends; an active snapshot's is empty. As in the
// API (getSnapshotBuildLogs), the guard finds the snapshot by ID or name,
// then the route by ID alone: a name is a database error, 500. A snapshot
// pulled from an image has no log (404).
func (s *Server) serveBuildLogs(h *handlerCtx) {
	if !s.authorized(h) {
		h.apiError(http.StatusUnauthorized, "Invalid credentials")
		return
	}
	follow := h.r.URL.Query().Get("follow") == "true"
	key := h.params["id"]
	s.mu.Lock()
	sn := s.snapshotNamed(key, time.Now())
	active := sn != nil && sn.state == snapActive
	s.mu.Unlock()
	switch {
	case sn == nil:
		h.apiError(http.StatusNotFound, snapshotNotFound, key)
		return
	case !uuidPattern.MatchString(key):
		h.apiError(http.StatusInternalServerError, "Internal server error")
		return
	case !sn.built:
		h.apiError(http.StatusNotFound, "Snapshot %s has no build info", key)
		return
	case active:
		h.w.WriteHeader(http.StatusOK)
		return
	}
	h.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	h.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(h.w)
	off := 0
	for {
		s.mu.Lock()
		chunk := sn.log[off:]
		done, changed := sn.terminal(), sn.changed
		s.mu.Unlock()
		if len(chunk) > 0 {
			if _, err := h.w.Write(chunk); err != nil {
				return
			}
			rc.Flush()
			off += len(chunk)
		}
		if done || !follow {
			return
		}
		select {
		case <-changed:
		case <-h.r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
}

// SnapshotInfo describes one snapshot as the emulator saw it.
type SnapshotInfo struct {
	ID, Name, State, ErrorReason string
	ImageName, Dockerfile        string
	// Root is the snapshot's file system (a directory on this machine).
	// With RootFS, its directories overlaid on the host's (usr, etc…)
	// hold only what the build wrote there.
	Root string
	// Env is what its image's ENV set and Workdir its WORKDIR: as the
	// image sees them with RootFS (the file is under Root), else mapped
	// under Root.
	Env     map[string]string
	Workdir string
	// Log is its build log so far.
	Log string
}

// Snapshots describes every snapshot ever created, in creation order,
// deleted ones included.
func (s *Server) Snapshots() []SnapshotInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SnapshotInfo, 0, len(s.snapOrder))
	for _, sn := range s.snapOrder {
		out = append(out, SnapshotInfo{
			ID: sn.id, Name: sn.name, State: sn.state, ErrorReason: sn.errorReason,
			ImageName: sn.imageName, Dockerfile: sn.dockerfile, Root: sn.root,
			Env: copyMap(sn.env), Workdir: sn.workdir, Log: string(sn.log),
		})
	}
	return out
}

// makeSnapshotRoot is the empty root a build starts from.
func makeSnapshotRoot(root string) error {
	for _, d := range []string{"tmp", "root"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	return nil
}
