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
)

// maxSpares bounds the working directories kept for later jobs.
const maxSpares = 16

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
	r.fresh.CompareAndSwap(nil, &shapes)
}

// takeSpare renames a spare working directory for a new job.
func (r *Runner) takeSpare(prefix string) (workdirID, bool) {
	w, ok := r.spares.take(nil)
	if !ok {
		return workdirID{}, false
	}
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
	fresh := r.fresh.Load()
	if fresh == nil || w.ino == 0 || r.spares.full() || emptyAsNew(w, *fresh) != nil || !r.spares.put(w) {
		_ = removeAll(w.path)
	}
}

// removeSpares removes the spare working directories.
func (r *Runner) removeSpares() {
	for _, w := range r.spares.takeAll() {
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
