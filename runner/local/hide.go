package local

// What a job must not see of this machine (Options.Hide: the manifest
// directory, the output root). A mount point names its path in the job's
// /proc/self/mountinfo, so a hidden directory is not covered itself: its
// highest ancestor the system does not need is, by an empty read-only
// tmpfs, and what the job needs under that ancestor (the jobs' directories,
// the environment cache, its PATH) is bound back. The job's mountinfo then
// names the cover and what it keeps, never the hidden directory.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// hiding is how a Runner's jobs are kept from Options.Hide.
type hiding struct {
	// covers are the directories covered by an empty read-only tmpfs.
	covers []string
	// keep are the directories under covers bound back (those that exist).
	keep []string
}

// systemDirs are the top-level directories never covered: the system's,
// and /tmp, where a job may leave files (its user's, swept at its end).
var systemDirs = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
	"/nix", "/opt", "/proc", "/run", "/sbin", "/snap", "/sys", "/tmp", "/usr", "/var"}

// newHiding covers each of hide, keeping need: nil when there is nothing to
// hide.
func newHiding(hide, need []string) *hiding {
	var covers []string
	for _, dir := range hide {
		if c := coverOf(filepath.Clean(dir), need); c != "" {
			covers = append(covers, c)
		}
	}
	// A cover inside another is covered already.
	covers = slices.DeleteFunc(covers, func(c string) bool {
		return slices.ContainsFunc(covers, func(o string) bool { return o != c && within(c, o) })
	})
	slices.Sort(covers)
	covers = slices.Compact(covers)
	if len(covers) == 0 {
		return nil
	}
	h := &hiding{covers: covers}
	for _, n := range need {
		if slices.ContainsFunc(covers, func(c string) bool { return n != c && within(n, c) }) && !slices.Contains(h.keep, n) {
			h.keep = append(h.keep, n)
		}
	}
	return h
}

// coverOf is the directory covered to hide dir: its highest ancestor, or
// itself, that is neither / nor a system directory, nor one of need or
// inside one; "" when there is none.
func coverOf(dir string, need []string) string {
	if !filepath.IsAbs(dir) || dir == "/" {
		return ""
	}
	parts := strings.Split(strings.TrimPrefix(dir, "/"), "/")
	for i := range parts {
		a := "/" + strings.Join(parts[:i+1], "/")
		if i == 0 && slices.Contains(systemDirs, a) {
			continue
		}
		if slices.ContainsFunc(need, func(n string) bool { return within(a, n) }) {
			continue
		}
		return a
	}
	return ""
}

// hides reports whether path is under one of h's covers.
func (h *hiding) hides(path string) bool {
	return h != nil && slices.ContainsFunc(h.covers, func(c string) bool { return within(path, c) })
}

// hideFromJobs makes the directory the jobs' own directories go in, under
// TempDir, and the covers that keep Options.Hide from them, where forge can
// mount; jobsDir stays TempDir when there is nothing to hide.
func (r *Runner) hideFromJobs() error {
	r.jobsDir = r.opts.TempDir
	if len(r.opts.Hide) == 0 || !r.platform.readOnly() {
		return nil
	}
	dir, err := os.MkdirTemp(r.opts.TempDir, fmt.Sprintf("forge-%d-jobs-", os.Getpid()))
	if err != nil {
		return fmt.Errorf("make a directory for the jobs in %s: %w", r.opts.TempDir, err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.Remove(dir)
		return err
	}
	need := []string{dir}
	if cache := r.opts.EnvCache; cache != "" {
		need = append(need, cache)
	} else if cache, err := DefaultEnvCache(); err == nil {
		need = append(need, cache)
	}
	for _, p := range filepath.SplitList(r.path) {
		if filepath.IsAbs(p) && p != "/" {
			need = append(need, filepath.Clean(p))
		}
	}
	var hide []string
	for _, h := range r.opts.Hide {
		if abs, err := filepath.Abs(h); err == nil {
			hide = append(hide, abs)
		}
	}
	if r.hiding = newHiding(hide, need); r.hiding != nil {
		r.jobsDir = dir
	} else {
		_ = os.Remove(dir)
	}
	return nil
}

// Visible says what of Options.Hide and of the machine's processes jobs
// can see, "" when nothing: the hidden directories where forge cannot mount.
func (r *Runner) Visible() string {
	if r.hiding != nil || len(r.opts.Hide) == 0 {
		return ""
	}
	seen := "jobs can read " + strings.Join(r.opts.Hide, " and ") + " (the manifest's .env among them)"
	if r.platform.readOnly() {
		return seen + ": it lies in what they need (the temp dir, the environment cache or PATH)"
	}
	return seen + " and see every process in /proc: forge cannot give them a mount namespace here (forge doctor says why)"
}
