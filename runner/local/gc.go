package local

// What forge gc needs of the environment cache.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/runner"
)

// ErrEnvironmentInUse refuses to remove an environment a live forge holds.
var ErrEnvironmentInUse = errors.New("in use by a running forge")

// EnvironmentInfo is what ListEnvironments found of one environment.
type EnvironmentInfo struct {
	// Short is the first 16 hex digits of its hash, its directory's name.
	Short string
	// Hash, Name, BuiltAt and BuildSeconds are its done marker's.
	Hash         string
	Name         string
	BuiltAt      time.Time
	BuildSeconds float64
	// Dir is empty when only logs or a lock file are left.
	Dir string
	// Bytes is the apparent size of its files and logs.
	Bytes int64
	// LastUsed is when a forge last built or reused it, else BuiltAt.
	LastUsed time.Time
	// InUse: a live forge holds it, so RemoveEnvironment would refuse.
	InUse bool
	// Leftover: not a finished environment but what a build left (one
	// under way when InUse).
	Leftover bool
	// FailedLog is the log of its last failed build, when one is kept.
	FailedLog string
}

// ListEnvironments lists the environments in root, finished or left over, by
// short hash. A root that does not exist holds none.
func ListEnvironments(root string) ([]EnvironmentInfo, error) {
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("environment cache: %w", err)
	}
	found := map[string]*EnvironmentInfo{}
	get := func(short string) *EnvironmentInfo {
		if found[short] == nil {
			found[short] = &EnvironmentInfo{Short: short}
		}
		return found[short]
	}
	for _, e := range ents {
		name := e.Name()
		if short, ok := strings.CutSuffix(name, failedLogSuffix); ok && validShort(short) {
			get(short).FailedLog = filepath.Join(root, name)
		} else if short, ok := strings.CutSuffix(name, buildingLogSuffix); ok && validShort(short) {
			get(short) // a build's under way, or interrupted
		} else if short, ok := strings.CutSuffix(name, lockSuffix); ok && validShort(short) {
			get(short)
		} else if e.IsDir() && validShort(name) {
			get(name).Dir = filepath.Join(root, name)
		}
	}
	var out []EnvironmentInfo
	for _, info := range found {
		info.Leftover = true
		if info.Dir != "" {
			if m, err := readMarker(info.Dir); err == nil && runner.ShortHash(m.Hash) == info.Short {
				info.Leftover = false
				info.Hash, info.Name, info.BuiltAt, info.BuildSeconds = m.Hash, m.Name, m.BuiltAt, m.BuildSeconds
				info.LastUsed = m.BuiltAt
				if fi, err := os.Stat(filepath.Join(info.Dir, envUsedFile)); err == nil {
					info.LastUsed = fi.ModTime()
				}
			}
			info.Bytes = treeSize(info.Dir)
		}
		for _, suffix := range []string{failedLogSuffix, buildingLogSuffix} {
			if fi, err := os.Stat(filepath.Join(root, info.Short+suffix)); err == nil {
				info.Bytes += fi.Size()
			}
		}
		info.InUse = inUse(filepath.Join(root, info.Short+lockSuffix))
		out = append(out, *info)
	}
	slices.SortFunc(out, func(a, b EnvironmentInfo) int { return strings.Compare(a.Short, b.Short) })
	return out, nil
}

// RemoveEnvironment removes the environment short (short or full hash) from
// root. It takes the lock exclusive without waiting, so it refuses, wrapping
// ErrEnvironmentInUse, while a live forge holds it; one not there is an
// fs.ErrNotExist error.
func RemoveEnvironment(root, short string) error {
	if len(short) == 64 && validHash(short) {
		short = runner.ShortHash(short)
	}
	if !validShort(short) {
		return fmt.Errorf("%q does not name an environment: want its short hash (16 hex digits)", short)
	}
	dir := filepath.Join(root, short)
	lockPath, logs := dir+lockSuffix, []string{dir + failedLogSuffix, dir + buildingLogSuffix}
	if !exists(dir) && !exists(logs[0]) && !exists(logs[1]) && !exists(lockPath) {
		return fmt.Errorf("no environment %s in %s: %w", short, root, fs.ErrNotExist)
	}
	f, err := tryLockFile(lockPath, true)
	if errors.Is(err, errLocked) {
		return fmt.Errorf("environment %s: %w", short, ErrEnvironmentInUse)
	}
	if err != nil {
		return fmt.Errorf("environment %s: %w", short, err)
	}
	defer f.Close()
	// The done marker first: a removal cut short leaves an unfinished
	// build (the next build removes it), never what looks finished. The
	// lock file last, while held: whoever waits for it finds the path gone
	// once it has it, and opens a new one (lockFile).
	err = removeIfThere(filepath.Join(dir, envMarkerFile))
	if err == nil {
		err = removeAll(dir)
	}
	for _, p := range append(logs, lockPath) {
		if err == nil {
			err = removeIfThere(p)
		}
	}
	if err != nil {
		return fmt.Errorf("environment %s: %w", short, err)
	}
	return nil
}

// removeIfThere removes the file p; one that is not there is no error.
func removeIfThere(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// inUse reports whether a live forge holds the lock file path.
func inUse(path string) bool {
	f, err := tryLockFile(path, false)
	if err == nil {
		f.Close()
	}
	return errors.Is(err, errLocked)
}

// validShort reports whether s is a short hash: 16 lowercase hex digits.
func validShort(s string) bool { return len(s) == 16 && validHash(s) }

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// treeSize is the apparent size of the files under dir.
func treeSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// GCOptions says which environments GCEnvironments removes.
type GCOptions struct {
	// OlderThan spares environments used more recently; zero spares none.
	OlderThan time.Duration
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// GCEnvironments removes the environments no live forge holds that were last
// used more than g.OlderThan ago, and what failed builds left. It prints a
// line per environment to w, then a summary, as the Daytona gc does.
func GCEnvironments(root string, g GCOptions, w io.Writer) error {
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	envs, err := ListEnvironments(root)
	if err != nil {
		return err
	}
	slices.SortStableFunc(envs, func(a, b EnvironmentInfo) int { return a.LastUsed.Compare(b.LastUsed) })
	tally := runner.GCTally{W: w, DryRun: g.DryRun}
	var errs []error
	for _, e := range envs {
		what := "left by an unfinished or failed build"
		if !e.Leftover {
			what = e.Name + ", last used " + now().Sub(e.LastUsed).Round(time.Second).String() + " ago"
		}
		desc := "environment " + e.Short + " (" + what + ", " + text.Bytes(float64(e.Bytes)) + ")"
		var err error
		switch {
		case e.InUse:
			err = ErrEnvironmentInUse
		case !e.Leftover && g.OlderThan > 0 && now().Sub(e.LastUsed) < g.OlderThan:
			tally.Keep(desc, "used more recently than "+g.OlderThan.String())
			continue
		case !g.DryRun:
			err = RemoveEnvironment(root, e.Short)
		}
		switch {
		case errors.Is(err, ErrEnvironmentInUse):
			tally.Keep(desc, ErrEnvironmentInUse.Error())
		case err != nil:
			tally.Fail(desc, err.Error())
			errs = append(errs, err)
		default:
			tally.Delete(desc)
		}
	}
	tally.Summary("local environments in " + root)
	return errors.Join(errs...)
}
