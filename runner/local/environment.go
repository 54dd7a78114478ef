package local

// Environments in the cache: who builds one, its locks and its done marker.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/forge-run/forge/runner"
)

// The files of an environment in the cache (see the package doc).
const (
	envMarkerFile     = ".forge-env.json"
	envUsedFile       = ".forge-env-used"
	envLogFile        = "build.log"
	lockSuffix        = ".lock"
	buildingLogSuffix = ".build.log"
	failedLogSuffix   = ".failed.log"
)

// readyAttempts bounds rebuilds of an environment removed before it is taken.
const readyAttempts = 5

// errLocked is a lock file that another holder has locked.
var errLocked = errors.New("locked by another process")

// DefaultEnvCache is forge/env in os.UserCacheDir, used without
// Options.EnvCache; for root without XDG_CACHE_HOME, /var/cache/forge/env,
// which the jobs' users can reach (root's home they cannot).
func DefaultEnvCache() (string, error) {
	if os.Geteuid() == 0 && os.Getenv("XDG_CACHE_HOME") == "" && runtime.GOOS == "linux" {
		return "/var/cache/forge/env", nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("environment cache: %w", err)
	}
	return filepath.Join(dir, "forge", "env"), nil
}

// EnvCaches are the caches forge gc looks in: DefaultEnvCache, then, for
// root, the one under its home an older forge used (os.UserCacheDir's),
// when that is another directory and is there.
func EnvCaches() ([]string, error) {
	root, err := DefaultEnvCache()
	if err != nil {
		return nil, err
	}
	out := []string{root}
	if dir, err := os.UserCacheDir(); err == nil {
		if old := filepath.Join(dir, "forge", "env"); old != root {
			if fi, err := os.Stat(old); err == nil && fi.IsDir() {
				out = append(out, old)
			}
		}
	}
	return out, nil
}

var _ runner.Builder = (*Runner)(nil)

// envState is what a Runner knows of one environment.
type envState struct {
	// Under Runner.envMu: its directory once ready, and its shared lock.
	dir  string
	lock *os.File
}

// BuildEnvironment makes env ready in the cache, building it once across
// goroutines and processes or finding it built (Reused); the build's lines go
// to log (may be nil). A failed step is a *runner.BuildError; when ctx is done
// the build is ended and ctx's error returned. Until Close the Runner holds
// the environment's lock shared, so RemoveEnvironment refuses it.
func (r *Runner) BuildEnvironment(ctx context.Context, env *runner.Environment, log func(line string)) (out runner.EnvironmentBuild, err error) {
	begin := time.Now()
	defer func() { out.Seconds = time.Since(begin).Seconds() }()
	if env == nil {
		return out, errors.New("no environment to build")
	}
	if env.Dockerfile != "" {
		return out, &runner.BuildError{Name: env.Name, Hash: env.Hash,
			Err: errors.New("it is an image (a Dockerfile), which local processes cannot honour; run it with --daytona")}
	}
	out.Hash = env.Hash
	if !validHash(env.Hash) {
		return out, fmt.Errorf("environment %s: its hash %q is not lowercase hex of at least 16 digits", env.Name, env.Hash)
	}
	root := r.opts.EnvCache
	if root == "" {
		if root, err = DefaultEnvCache(); err != nil {
			return out, err
		}
	}
	dir := filepath.Join(root, runner.ShortHash(env.Hash))
	out.Where = dir

	done, err := r.turns.Take(ctx, env.Hash, r.onEnvWait)
	if err != nil {
		return out, err
	}
	defer done()
	st := r.envState(env.Hash)

	r.envMu.Lock()
	held := st.dir != ""
	r.envMu.Unlock()
	if held {
		_, ok, err := isFinished(dir, env.Hash)
		if err != nil {
			return out, fmt.Errorf("environment %s: %w", env.Name, err)
		}
		if ok {
			touchUsed(dir)
			out.Reused = true
			return out, nil
		}
		// Removed by hand although held: made ready again below.
		r.envMu.Lock()
		st.release()
		r.envMu.Unlock()
	}
	lock, built, err := r.makeReady(ctx, env, root, dir, log)
	if err != nil {
		return out, err
	}
	r.envMu.Lock()
	st.dir, st.lock = dir, lock
	r.envMu.Unlock()
	touchUsed(dir)
	out.Reused = !built
	return out, nil
}

// envState is the state of the environment of that hash, made on first use.
func (r *Runner) envState(hash string) *envState {
	r.envMu.Lock()
	defer r.envMu.Unlock()
	st := r.envs[hash]
	if st == nil {
		st = &envState{}
		r.envs[hash] = st
	}
	return st
}

// release lets go of st's shared lock; the caller holds Runner.envMu.
func (st *envState) release() {
	if st.lock != nil {
		st.lock.Close()
	}
	st.dir, st.lock = "", nil
}

// releaseEnvironments lets go of every environment's shared lock (Close).
func (r *Runner) releaseEnvironments() {
	r.envMu.Lock()
	defer r.envMu.Unlock()
	for _, st := range r.envs {
		st.release()
	}
}

// environment finds the directory of the job's environment, if it has one:
// an error unless its Runner made it ready.
func (j *jobRun) environment() error {
	e := j.job.Environment
	if e == nil {
		return nil
	}
	j.r.envMu.Lock()
	dir := ""
	if st := j.r.envs[e.Hash]; st != nil {
		dir = st.dir
	}
	j.r.envMu.Unlock()
	if dir == "" {
		return fmt.Errorf("environment %s (%s) is not built: the job cannot run without it", e.Name, runner.ShortHash(e.Hash))
	}
	if _, err := os.Stat(filepath.Join(dir, envMarkerFile)); err != nil {
		return fmt.Errorf("environment %s (%s) is no longer in %s: %w", e.Name, runner.ShortHash(e.Hash), dir, err)
	}
	j.envDir = dir
	return nil
}

// makeReady takes env's shared lock, first building env under its exclusive
// lock when it is not finished; built says whether this call built it.
func (r *Runner) makeReady(ctx context.Context, env *runner.Environment, root, dir string, log func(string)) (lock *os.File, built bool, err error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, false, fmt.Errorf("environment cache: %w", err)
	}
	if b := r.builder(); b != nil {
		if err := searchable(root, b); err != nil {
			return nil, false, fmt.Errorf("environment cache %s: jobs run as unprivileged users (forge is root) and cannot reach it: %v; set XDG_CACHE_HOME to a directory they can, or run them as root with local: {user: root}", root, err)
		}
	}
	lockPath := dir + lockSuffix
	for range readyAttempts {
		// Shared first: forges running jobs in it hold it shared, and
		// another forge's build holds it exclusive until it is done.
		f, err := lockFile(ctx, lockPath, false)
		if err != nil {
			return nil, built, lockError(ctx, env, err)
		}
		ok, stale, err := r.isReady(dir, env.Hash)
		if ok && stale == "" && err == nil {
			return f, built, nil
		}
		f.Close()
		if err != nil {
			return nil, built, fmt.Errorf("environment %s: %w", env.Name, err)
		}
		// Not finished: exclusive, to build it, unless another forge built
		// it meanwhile. Once built it is taken shared again (the loop):
		// flock cannot turn one lock into the other atomically everywhere.
		f, err = lockFile(ctx, lockPath, true)
		if err != nil {
			return nil, built, lockError(ctx, env, err)
		}
		ok, stale, err = r.isReady(dir, env.Hash)
		if stale != "" && err == nil {
			// What runs in it must not depend on what ran before.
			if log != nil {
				log("forge: environment " + env.Name + " (" + dir + ") " + stale + ": building it again")
			}
			err = os.Remove(filepath.Join(dir, envMarkerFile))
		}
		if (!ok || stale != "") && err == nil {
			err = r.build(ctx, env, root, dir, log)
			built = err == nil
		}
		f.Close()
		if err != nil {
			return nil, false, err
		}
	}
	return nil, built, fmt.Errorf("environment %s: %s was removed each time before it could be used", env.Name, dir)
}

func lockError(ctx context.Context, env *runner.Environment, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("environment %s: %w", env.Name, err)
}

// envMarker is the done marker: the environment in its directory is finished.
type envMarker struct {
	Hash         string    `json:"hash"`
	Name         string    `json:"name"` // of the first build: one content may have several
	BuiltAt      time.Time `json:"built_at"`
	BuildSeconds float64   `json:"build_seconds"`
	// Tree is treeFingerprint after the build; absent in older markers.
	Tree string `json:"tree,omitempty"`
	// BuiltAs is the uid that built it, 0 (absent) for forge's user.
	BuiltAs uint32 `json:"built_as,omitempty"`
}

// writeMarker writes the done marker by rename, so it is whole or absent.
func writeMarker(dir string, m envMarker) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".forge-env-*.tmp")
	if err != nil {
		return fmt.Errorf("write the done marker: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, envMarkerFile))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write the done marker: %w", err)
	}
	if d, err := os.Open(dir); err == nil { // the rename itself, to disk
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// readMarker reads dir's done marker (errBadMarker when it does not parse).
func readMarker(dir string) (envMarker, error) {
	var m envMarker
	b, err := os.ReadFile(filepath.Join(dir, envMarkerFile))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Hash == "" {
		return m, errBadMarker
	}
	return m, nil
}

var errBadMarker = errors.New("the done marker does not parse")

// isFinished reports whether dir holds the finished environment of hash,
// with its done marker; it is an error when it holds another with the same
// short hash.
func isFinished(dir, hash string) (envMarker, bool, error) {
	m, err := readMarker(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, errBadMarker):
		return m, false, nil
	case err != nil:
		return m, false, err
	case m.Hash != hash:
		return m, false, fmt.Errorf("%s holds the environment of hash %s, not %s", dir, m.Hash, hash)
	}
	return m, true, nil
}

// isReady reports whether dir holds the finished environment of hash and,
// when it is not as this Runner's jobs need it, why (stale): its files
// changed since the build (the done marker's fingerprint: a job, or anyone,
// wrote into it), or another user built it (forge's, say, which may have
// used what the jobs' users cannot reach).
func (r *Runner) isReady(dir, hash string) (finished bool, stale string, err error) {
	m, finished, err := isFinished(dir, hash)
	if !finished || err != nil {
		return finished, "", err
	}
	if b := r.builder(); b != nil && m.BuiltAs != b.uid {
		return true, fmt.Sprintf("was built as uid %d, not as uid %d which builds for unprivileged jobs", m.BuiltAs, b.uid), nil
	}
	if m.Tree == "" {
		return true, "", nil
	}
	tree, err := treeFingerprint(dir)
	if err != nil {
		return true, "", fmt.Errorf("check %s: %w", dir, err)
	}
	if tree != m.Tree {
		return true, "changed since it was built", nil
	}
	return true, "", nil
}

// treeFingerprint digests each entry's path, type, mode, size, mtime and link
// target, leaving out forge's own files and __pycache__ (written on import).
func treeFingerprint(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == envMarkerFile || rel == envUsedFile || rel == envLogFile || strings.HasPrefix(rel, ".forge-env-"):
			return nil
		case d.IsDir() && d.Name() == "__pycache__":
			return filepath.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		target := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ = os.Readlink(p)
		}
		size, mtime := fi.Size(), fi.ModTime().UnixNano()
		if fi.IsDir() {
			size, mtime = 0, 0 // a new __pycache__ changes its directory's
		}
		fmt.Fprintf(h, "%q %v %d %d %q\n", filepath.ToSlash(rel), fi.Mode(), size, mtime, target)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// touchUsed marks the environment in dir used now, for forge gc.
func touchUsed(dir string) {
	p := filepath.Join(dir, envUsedFile)
	now := time.Now()
	if err := os.Chtimes(p, now, now); errors.Is(err, fs.ErrNotExist) {
		if f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
			f.Close()
		}
	}
}

// validHash reports whether h is lowercase hex of at least 16 digits.
func validHash(h string) bool {
	return len(h) >= 16 && strings.Trim(h, "0123456789abcdef") == ""
}
