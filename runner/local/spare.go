package local

// Working directories emptied and kept for the next jobs: on a file system
// that skips every inode freed in the last minutes when it allocates one
// (ext4 without a journal), a directory and its tmp/ made and removed per job
// cost every later file made near them more than emptying them does.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// maxSpares bounds the working directories kept for later jobs.
const maxSpares = 16

// spares are emptied working directories, each with its tmp/, owned by
// forge and as a new one is (dirShape), in TempDir under the name of the
// job that had it (forge-<pid>-…: removeStale takes them if forge is killed).
type spares struct {
	mu   sync.Mutex
	dirs []workdirID
	// fresh are a new working directory's shape and its tmp/'s, once seen;
	// known: they were.
	fresh [2]dirShape
	known bool
}

// workdirID is a working directory: its path and the file it was made as.
type workdirID struct {
	path     string
	dev, ino uint64
}

// newWorkdir gives a job a working directory named prefix…, with its tmp/:
// a spare one, or a new one (made reports which).
func (r *Runner) newWorkdir(prefix string) (w workdirID, made bool, err error) {
	if w, ok := r.takeSpare(prefix); ok {
		return w, false, nil
	}
	dir, err := os.MkdirTemp(r.jobsDir, prefix)
	if err != nil {
		return workdirID{}, false, err
	}
	return workdirID{path: dir}, true, nil
}

// noteNew records what a new working directory w (its tmp/ made) is: its
// identity, and the first time its shape.
func (r *Runner) noteNew(w *workdirID) {
	if !r.endsWhole() { // what a job started could write into the next job's
		return
	}
	shapes, id, err := workdirShapes(w.path)
	if err != nil {
		return
	}
	w.dev, w.ino = id.dev, id.ino
	r.spares.mu.Lock()
	defer r.spares.mu.Unlock()
	if !r.spares.known {
		r.spares.fresh, r.spares.known = shapes, true
	}
}

// takeSpare renames a spare working directory for a new job.
func (r *Runner) takeSpare(prefix string) (workdirID, bool) {
	r.spares.mu.Lock()
	n := len(r.spares.dirs)
	if n == 0 {
		r.spares.mu.Unlock()
		return workdirID{}, false
	}
	w := r.spares.dirs[n-1]
	r.spares.dirs = r.spares.dirs[:n-1]
	r.spares.mu.Unlock()
	for range 10 {
		name := filepath.Join(r.jobsDir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
		err := renameNoReplace(w.path, name)
		if err == nil {
			w.path = name
			return w, true
		}
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	_ = removeAll(w.path)
	return workdirID{}, false
}

// recycleWorkdir empties w, the working directory of a finished job whose
// processes are all gone, and keeps it for a later job when it is then as
// a new one is; else it removes it.
func (r *Runner) recycleWorkdir(w workdirID) {
	r.spares.mu.Lock()
	fresh, known, room := r.spares.fresh, r.spares.known, len(r.spares.dirs) < maxSpares
	r.spares.mu.Unlock()
	if !known || !room || w.ino == 0 || emptyAsNew(w, fresh) != nil {
		_ = removeAll(w.path)
		return
	}
	r.spares.mu.Lock()
	r.spares.dirs = append(r.spares.dirs, w)
	r.spares.mu.Unlock()
}

// removeSpares removes the spare working directories.
func (r *Runner) removeSpares() {
	r.spares.mu.Lock()
	dirs := r.spares.dirs
	r.spares.dirs = nil
	r.spares.mu.Unlock()
	for _, w := range dirs {
		_ = removeAll(w.path)
	}
}

// emptyEntries removes every entry of dir but keep.
func emptyEntries(dir, keep string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, name := range names {
		if name == keep {
			continue
		}
		if err := removeAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("empty %s: %w", dir, err)
		}
	}
	return nil
}
