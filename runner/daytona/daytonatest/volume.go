package daytonatest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

type volume struct {
	id, name  string
	createdAt time.Time
	readyAt   time.Time
	dir       string
}

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
