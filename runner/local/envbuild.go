package local

// Building an environment: its files, its steps in a box of their own, its log.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/forge-run/forge/runner"
)

const (
	// buildTailLines are the log's last lines a BuildError carries.
	buildTailLines = 20
	// buildLogCap caps the build log; the rest is read and dropped.
	buildLogCap = 64 << 20
)

// build builds env in dir under the exclusive lock, first emptying an
// unfinished build. The done marker is written last; on failure dir is removed.
// It builds at the final path, never moved there afterwards: a Python
// virtualenv writes its own absolute path into its scripts.
func (r *Runner) build(ctx context.Context, env *runner.Environment, root, dir string, log func(string)) error {
	begin := time.Now()
	if err := removeAll(dir); err != nil {
		return fmt.Errorf("environment %s: remove the unfinished build in %s: %w", env.Name, dir, err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("environment %s: %w", env.Name, err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask: jobs read it
		return fmt.Errorf("environment %s: %w", env.Name, err)
	}
	done := false
	defer func() {
		if !done {
			_ = removeAll(dir)
		}
	}()
	bd := &building{env: env, root: root, dir: dir, short: runner.ShortHash(env.Hash)}
	bd.logPath = filepath.Join(root, bd.short+buildingLogSuffix)
	logFile, err := os.Create(bd.logPath)
	if err != nil {
		return fmt.Errorf("environment %s: %w", env.Name, err)
	}
	defer logFile.Close()
	defer os.Remove(bd.logPath) // when it was not moved: a cancelled build
	bd.log = &buildLog{file: logFile, log: log}
	builder := r.builder()
	if err := r.runBuild(ctx, bd, builder); err != nil {
		return err
	}
	if err := logFile.Close(); err != nil {
		return fmt.Errorf("environment %s: %w", env.Name, err)
	}
	if err := os.Rename(bd.logPath, filepath.Join(dir, envLogFile)); err != nil {
		return fmt.Errorf("environment %s: %w", env.Name, err)
	}
	tree, err := treeFingerprint(dir)
	if err != nil {
		return fmt.Errorf("environment %s: %w", env.Name, err)
	}
	m := envMarker{Hash: env.Hash, Name: env.Name, BuiltAt: time.Now().UTC(), BuildSeconds: time.Since(begin).Seconds(), Tree: tree}
	if builder != nil {
		m.BuiltAs = builder.uid
	}
	if err := writeMarker(dir, m); err != nil {
		return fmt.Errorf("environment %s: %w", env.Name, err)
	}
	_ = os.Remove(filepath.Join(root, bd.short+failedLogSuffix)) // an earlier build's
	done = true
	return nil
}

// building is one build of an environment in dir, its log at logPath.
type building struct {
	env              *runner.Environment
	root, dir, short string
	logPath          string
	log              *buildLog
}

// failed keeps the failed build's log and makes the BuildError.
func (bd *building) failed(why error) error {
	bd.log.note("forge: " + why.Error())
	bd.log.file.Close()
	kept := filepath.Join(bd.root, bd.short+failedLogSuffix)
	if err := os.Rename(bd.logPath, kept); err != nil {
		why = fmt.Errorf("%w (its log could not be kept: %w)", why, err)
	} else {
		why = fmt.Errorf("%w; the build log is %s", why, kept)
	}
	return &runner.BuildError{Name: bd.env.Name, Hash: bd.env.Hash, Tail: bd.log.tail(), Err: why}
}

// runBuild writes the environment's files and runs its steps as builder,
// in a box of their own with a HOME of their own.
func (r *Runner) runBuild(ctx context.Context, bd *building, builder *jobUser) error {
	env, dir := bd.env, bd.dir
	if err := upload(dir, env.Files); err != nil {
		return bd.failed(fmt.Errorf("write its files: %w", err))
	}
	// A HOME of the build's own, so that caches such as pip's stay out of
	// the environment. forge-<pid>-…: a later forge removes it if this one
	// is killed first.
	home, err := os.MkdirTemp(r.opts.TempDir, fmt.Sprintf("forge-%d-env-%s-", os.Getpid(), bd.short))
	if err != nil {
		return fmt.Errorf("environment %s: make the build's home directory: %w", env.Name, err)
	}
	defer removeAll(home)
	if err := os.Mkdir(filepath.Join(home, "tmp"), 0o700); err != nil {
		return fmt.Errorf("environment %s: %w", env.Name, err)
	}
	lines := env.Build
	if builder != nil {
		for _, d := range []string{dir, home} {
			if err := give(d, builder); err != nil {
				return bd.failed(fmt.Errorf("give %s to the builder: %w", d, err))
			}
		}
		// What it makes, the jobs' users read, whatever forge's umask.
		lines = make([]string, len(env.Build))
		for i, l := range env.Build {
			lines[i] = "umask 022\n" + l
		}
	}
	// The build steps' environment, with the build's own HOME.
	vars := r.baseEnv(home)
	maps.Copy(vars, env.Env)
	inEnvironment(vars, dir)
	// The pgroup tier's sweep finds the build's processes by these.
	b, err := r.platform.newBox(boxSpec{marker: []string{runner.EnvDirVar + "=" + dir, "HOME=" + vars["HOME"]}})
	if err != nil {
		return fmt.Errorf("environment %s: contain the build: %w", env.Name, err)
	}
	timeout := cmp.Or(env.BuildTimeout, runner.DefaultBuildTimeout)
	i, p, startErr := r.runSteps(ctx, b, shellSteps{lines: lines, starting: bd.log.step, proc: process{
		dir: dir, env: runner.EnvList(vars), user: builder,
		timeout: timeout,
		echo:    bd.log.echo,
	}})
	endErr := b.close()
	switch {
	case i >= 0 && p.cancelled:
		return cmp.Or(ctx.Err(), context.Canceled)
	case i >= 0:
		why := stepError(i, env.Build[i], p, startErr, timeout)
		if endErr != nil {
			why = fmt.Errorf("%w; and the build's processes could not all be ended: %w", why, endErr)
		}
		return bd.failed(why)
	case endErr != nil:
		return fmt.Errorf("environment %s: could not end the build's processes: %w", env.Name, endErr)
	}
	return nil
}

// builder is who builds environments: nil, forge's user, unless jobs have
// users of their own.
func (r *Runner) builder() *jobUser {
	if r.users == nil {
		return nil
	}
	return r.users.builder()
}

// inEnvironment adds the environment's bin/ first on PATH and
// runner.EnvDirVar; applied last, so the manifest's env cannot override them.
func inEnvironment(m map[string]string, dir string) {
	bin := filepath.Join(dir, "bin")
	if p := m["PATH"]; p != "" {
		bin += string(os.PathListSeparator) + p
	}
	m["PATH"] = bin
	m[runner.EnvDirVar] = dir
}

// stepError says how step i (line) failed.
func stepError(i int, line string, p finished, startErr error, timeout time.Duration) error {
	step := fmt.Sprintf("step %d `%s`", i+1, brief(line))
	switch {
	case startErr != nil:
		return fmt.Errorf("%s could not start: %w", step, startErr)
	case p.timedOut:
		return fmt.Errorf("%s timed out (the build's timeout, for all its steps, is %s)", step, timeout)
	case p.exitCode == nil:
		return fmt.Errorf("%s was killed by a signal", step)
	}
	return fmt.Errorf("%s exited %d", step, *p.exitCode)
}

// brief is line's first line, cut at 100 characters.
func brief(line string) string {
	first, _, more := strings.Cut(strings.TrimSpace(line), "\n")
	if utf8.RuneCountInString(first) > 100 {
		first, more = string([]rune(first)[:100]), true
	}
	if more {
		first += " …"
	}
	return first
}

// buildLog sends a build's log to build.log and to the caller line by line,
// keeping its last lines for a BuildError. Safe for concurrent use.
type buildLog struct {
	file *os.File
	log  func(string)

	mu      sync.Mutex
	written int64
	capped  bool
	last    []string
}

// echo takes a line the build printed (runSteps' echo).
func (b *buildLog) echo(_, line string) { b.line(line) }

// step logs that step i, line, starts: "+ " before each of its lines.
func (b *buildLog) step(_ int, line string) {
	for l := range strings.SplitSeq(strings.TrimRight(line, "\n"), "\n") {
		b.line("+ " + l)
	}
}

func (b *buildLog) line(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = append(b.last, s)
	if len(b.last) > buildTailLines {
		b.last = b.last[len(b.last)-buildTailLines:]
	}
	if b.capped {
		return
	}
	if b.written+int64(len(s))+1 > buildLogCap {
		b.capped = true
		s = fmt.Sprintf("… (the build log reached %d MiB: the rest is not kept)", buildLogCap>>20)
	}
	b.written += int64(len(s)) + 1
	_, _ = b.file.WriteString(s + "\n")
	if b.log != nil {
		b.log(s)
	}
}

// note writes s to build.log only.
func (b *buildLog) note(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, _ = b.file.WriteString(s + "\n")
}

// tail is the log's last lines.
func (b *buildLog) tail() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.last...)
}
