package daytonatest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

type volume struct {
	id, name  string
	createdAt time.Time
	readyAt   time.Time
}

// volumeDir is where the volume id keeps its files on this machine.
func (s *Server) volumeDir(id string) string { return filepath.Join(s.opts.Dir, "volumes", id) }

func checkMountPath(p string) error {
	dots := func(c string) bool { return c == "." || c == ".." }
	if !strings.HasPrefix(p, "/") || p == "/" || strings.Contains(p, "//") || slices.ContainsFunc(strings.Split(p[1:], "/"), dots) {
		return fmt.Errorf("invalid mount path %q", p)
	}
	for _, f := range forbiddenMountRoots {
		if p == f || strings.HasPrefix(p, f+"/") {
			return fmt.Errorf("mount path %q is under %s", p, f)
		}
	}
	return nil
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
	if s.volumeNamed(req.Name) != nil {
		h.apiError(http.StatusBadRequest, "Volume with name %s already exists", req.Name)
		return
	}
	s.seq++
	v := &volume{
		id: fmt.Sprintf("vol-%04d", s.seq), name: req.Name, createdAt: now,
		readyAt: now.Add(s.opts.VolumeReadyDelay),
	}
	if err := os.MkdirAll(s.volumeDir(v.id), 0o755); err != nil {
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
	if v := s.volumeNamed(h.params["name"]); v != nil {
		h.json(http.StatusOK, v.dto(now))
		return
	}
	h.apiError(http.StatusNotFound, "Volume with name %s not found", h.params["name"])
}

// volumeNamed is the volume called name, or nil. The caller holds s.mu.
func (s *Server) volumeNamed(name string) *volume {
	for _, v := range s.volumes {
		if v.name == name {
			return v
		}
	}
	return nil
}

// VolumeFile reads a file from a volume's durable storage.
func (s *Server) VolumeFile(volumeName, rel string) ([]byte, error) {
	s.mu.Lock()
	v := s.volumeNamed(volumeName)
	s.mu.Unlock()
	if v == nil {
		return nil, fmt.Errorf("no volume %q", volumeName)
	}
	return os.ReadFile(filepath.Join(s.volumeDir(v.id), filepath.FromSlash(path.Clean("/"+rel))))
}
