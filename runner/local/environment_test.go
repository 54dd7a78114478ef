//go:build linux

package local

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
)

// envRunner makes a Runner whose environment cache is a fresh
// t.TempDir(), never the real one.
func envRunner(t *testing.T, opts Options) *Runner {
	t.Helper()
	if opts.EnvCache == "" {
		opts.EnvCache = t.TempDir()
	}
	return newRunner(t, opts)
}

// hashed is e with its hash.
func hashed(t *testing.T, e runner.Environment) *runner.Environment {
	t.Helper()
	h, err := runner.EnvironmentHash(&e)
	if err != nil {
		t.Fatal(err)
	}
	e.Hash = h
	return &e
}

// counter is a file outside any environment that build steps append a
// line to each time they run.
func counter(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "counter")
}

// count is how many lines the counter file has.
func count(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// gate is a build step that blocks until the test lets it go.
type gate struct {
	counter string
	block   string // the step blocks only while this file exists
	ready   string // the step writes "started" to this fifo, then blocks
	fifo    string // ... opening this fifo, until the test opens it too
	br      *bufio.Reader
	rf      *os.File
}

func newGate(t *testing.T) *gate {
	t.Helper()
	g := &gate{counter: counter(t), fifo: mkfifo(t, "gate.fifo")}
	g.ready, g.br, g.rf = readyFifo(t)
	g.block = filepath.Join(t.TempDir(), "block")
	if err := os.WriteFile(g.block, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return g
}

// env is an environment whose one step counts, then blocks while the
// gate's block file exists.
func (g *gate) env(t *testing.T, name string) *runner.Environment {
	return hashed(t, runner.Environment{
		Name: name,
		Build: []string{`echo ran >> "$COUNTER"
if [ -e "$BLOCK" ]; then echo started > "$READY"; read x < "$GATE"; fi
echo done`},
		Env: map[string]string{"COUNTER": g.counter, "BLOCK": g.block, "READY": g.ready, "GATE": g.fifo},
	})
}

// started waits until a step has started and blocks.
func (g *gate) started(t *testing.T) {
	t.Helper()
	if line := waitLine(t, g.rf, g.br, 60*time.Second); line != "started" {
		t.Fatalf("the step said %q", line)
	}
}

// open lets the blocked step go: it opens the gate for writing, which
// waits until the step has it open for reading.
func (g *gate) open(t *testing.T) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(g.fifo, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString("go\n")
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		if f, err := os.OpenFile(g.fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			defer f.Close() // lets the open above return
		}
		t.Fatal("no step came to the gate")
	}
}

// unblock makes later runs of the step not block.
func (g *gate) unblock(t *testing.T) {
	t.Helper()
	if err := os.Remove(g.block); err != nil {
		t.Fatal(err)
	}
}

// assertNobodyAtGate fails when a process still waits at the gate: the
// build's processes must all be gone.
func (g *gate) assertNobodyAtGate(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(g.fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err == nil {
		f.Close()
		t.Errorf("a build step still waits at the gate after BuildEnvironment returned")
	} else if !errors.Is(err, syscall.ENXIO) {
		t.Errorf("open the gate: %v, want ENXIO (no reader)", err)
	}
}

func assertNoDir(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s is there (%v); want it gone", dir, err)
	}
}

func assertMarker(t *testing.T, dir string, env *runner.Environment) {
	t.Helper()
	m, err := readMarker(dir)
	if err != nil {
		t.Fatalf("done marker of %s: %v", dir, err)
	}
	if m.Hash != env.Hash || m.Name != env.Name || m.BuiltAt.IsZero() || m.BuildSeconds <= 0 {
		t.Errorf("done marker %+v; want hash %s, name %s, a build time and seconds", m, env.Hash, env.Name)
	}
}

// TestBuildEnvironmentOnceForConcurrentCallers: 8 goroutines ask for the
// same environment while its build is under way; the steps run once, and
// the other 7 find it built.
func TestBuildEnvironmentOnceForConcurrentCallers(t *testing.T) {
	t.Parallel()
	r := envRunner(t, Options{})
	g := newGate(t)
	env := g.env(t, "agent")
	var waiting atomic.Int32
	allWaiting := make(chan struct{})
	r.onEnvWait = func() {
		if waiting.Add(1) == 7 {
			close(allWaiting)
		}
	}
	type out struct {
		b   runner.EnvironmentBuild
		err error
	}
	outs := make(chan out, 8)
	for range 8 {
		go func() {
			b, err := r.BuildEnvironment(context.Background(), env, nil)
			outs <- out{b, err}
		}()
	}
	g.started(t)
	select {
	case <-allWaiting:
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d of the other 7 callers wait for the build", waiting.Load())
	}
	g.open(t)
	built := 0
	for range 8 {
		o := <-outs
		if o.err != nil {
			t.Fatalf("BuildEnvironment: %v", o.err)
		}
		if !o.b.Reused {
			built++
		}
		if o.b.Hash != env.Hash || o.b.Where != filepath.Join(r.opts.EnvCache, runner.ShortHash(env.Hash)) {
			t.Errorf("build %+v", o.b)
		}
	}
	if built != 1 {
		t.Errorf("%d callers say they built it, want 1", built)
	}
	if n := count(t, g.counter); n != 1 {
		t.Errorf("the build steps ran %d times, want 1", n)
	}
	assertMarker(t, filepath.Join(r.opts.EnvCache, runner.ShortHash(env.Hash)), env)
}

// TestBuildEnvironmentReusedByALaterRun: a second Runner on the same cache
// (a later run) finds the environment built and runs nothing; so does a
// second call on the first Runner.
func TestBuildEnvironmentReusedByALaterRun(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	c := counter(t)
	env := hashed(t, runner.Environment{
		Name: "agent",
		Build: []string{
			`[ -z "$(ls -A)" ] || { echo "the directory is not empty:"; ls -A; exit 1; }`, // git clone URL . needs that
			`echo ran >> "$COUNTER"`,
			`echo to-stdout; echo to-stderr >&2`,
		},
		Env: map[string]string{"COUNTER": c},
	})
	var mu sync.Mutex
	var logged []string
	log := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, line)
	}
	r1 := envRunner(t, Options{EnvCache: cache})
	b1, err := r1.BuildEnvironment(context.Background(), env, log)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, runner.ShortHash(env.Hash))
	if b1.Reused || b1.Where != dir || b1.Hash != env.Hash || b1.Seconds <= 0 {
		t.Errorf("first build %+v; want built in %s", b1, dir)
	}
	assertMarker(t, dir, env)
	mu.Lock()
	for _, want := range []string{`+ echo ran >> "$COUNTER"`, "to-stdout", "to-stderr"} {
		if !strings.Contains(strings.Join(logged, "\n"), want) {
			t.Errorf("log got %q; want a line %q", logged, want)
		}
	}
	mu.Unlock()
	if b, err := os.ReadFile(filepath.Join(dir, envLogFile)); err != nil || !strings.Contains(string(b), "to-stderr\n") {
		t.Errorf("build.log: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, envUsedFile)); err != nil {
		t.Errorf("not marked used: %v", err)
	}

	r2 := envRunner(t, Options{EnvCache: cache})
	logged = nil
	b2, err := r2.BuildEnvironment(context.Background(), env, log)
	if err != nil {
		t.Fatal(err)
	}
	if !b2.Reused || b2.Where != dir {
		t.Errorf("later run: %+v; want reused from %s", b2, dir)
	}
	b3, err := r1.BuildEnvironment(context.Background(), env, log)
	if err != nil || !b3.Reused {
		t.Errorf("second call on the first runner: %+v, %v; want reused", b3, err)
	}
	if n := count(t, c); n != 1 {
		t.Errorf("the build steps ran %d times, want 1", n)
	}
	if len(logged) != 0 {
		t.Errorf("a reuse logged %q", logged)
	}
}

// TestBuildEnvironmentChangedFileIsAnother: one byte changed in a build
// file makes another hash, built anew beside the first.
func TestBuildEnvironmentChangedFileIsAnother(t *testing.T) {
	t.Parallel()
	r := envRunner(t, Options{})
	c := counter(t)
	req := filepath.Join(t.TempDir(), "requirements.txt")
	mk := func(content string) *runner.Environment {
		if err := os.WriteFile(req, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return hashed(t, runner.Environment{
			Name:  "agent",
			Files: []runner.File{{Src: req, Dst: "req/requirements.txt"}, {Data: []byte("inline\n"), Dst: "data/inline.txt"}},
			Build: []string{`cat req/requirements.txt >> "$COUNTER"`},
			Env:   map[string]string{"COUNTER": c},
		})
	}
	env1 := mk("httpx==1\n")
	b1, err := r.BuildEnvironment(context.Background(), env1, nil)
	if err != nil {
		t.Fatal(err)
	}
	env2 := mk("httpx==2\n")
	if env1.Hash == env2.Hash {
		t.Fatal("one byte of a file changed, the hash did not")
	}
	b2, err := r.BuildEnvironment(context.Background(), env2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b1.Reused || b2.Reused || b1.Where == b2.Where {
		t.Errorf("builds %+v and %+v; want two, in two directories", b1, b2)
	}
	if b, _ := os.ReadFile(c); string(b) != "httpx==1\nhttpx==2\n" {
		t.Errorf("the steps read %q; want each build its own file", b)
	}
	for dir, want := range map[string]string{
		filepath.Join(b1.Where, "req", "requirements.txt"): "httpx==1\n",
		filepath.Join(b2.Where, "req", "requirements.txt"): "httpx==2\n",
		filepath.Join(b2.Where, "data", "inline.txt"):      "inline\n",
	} {
		if b, err := os.ReadFile(dir); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", dir, b, err, want)
		}
	}
}

// TestBuildEnvironmentFailingStep: a failing step is a BuildError naming
// it, with the log's tail; no directory is left, the log is kept beside
// it, and the next attempt builds again.
func TestBuildEnvironmentFailingStep(t *testing.T) {
	t.Parallel()
	r := envRunner(t, Options{})
	c := counter(t)
	env := hashed(t, runner.Environment{
		Name: "agent",
		Build: []string{
			`echo ran >> "$COUNTER"`,
			`echo looking; echo "ERROR: No matching distribution found for nothere" >&2; exit 3`,
			`echo never >> "$COUNTER"`,
		},
		Env: map[string]string{"COUNTER": c},
	})
	dir := filepath.Join(r.opts.EnvCache, runner.ShortHash(env.Hash))
	failedLog := dir + failedLogSuffix
	var logged []string
	var mu sync.Mutex
	for attempt := 1; attempt <= 2; attempt++ {
		_, err := r.BuildEnvironment(context.Background(), env, func(line string) {
			mu.Lock()
			logged = append(logged, line)
			mu.Unlock()
		})
		var be *runner.BuildError
		if !errors.As(err, &be) {
			t.Fatalf("attempt %d: %v; want a BuildError", attempt, err)
		}
		if be.Name != "agent" || be.Hash != env.Hash {
			t.Errorf("BuildError names %s %s", be.Name, be.Hash)
		}
		msg := err.Error()
		for _, want := range []string{"step 2 `echo looking; echo \"ERROR: No matching", "exited 3", failedLog} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not say %q", msg, want)
			}
		}
		tail := strings.Join(be.Tail, "\n")
		if !strings.Contains(tail, "ERROR: No matching distribution found for nothere") || !strings.Contains(tail, "looking") {
			t.Errorf("tail %q lacks the step's output", be.Tail)
		}
		assertNoDir(t, dir)
		assertNoDir(t, dir+buildingLogSuffix)
		if b, err := os.ReadFile(failedLog); err != nil || !strings.Contains(string(b), "No matching distribution") || !strings.Contains(string(b), "exited 3") {
			t.Errorf("failed log %s: %q, %v", failedLog, b, err)
		}
		if n := count(t, c); n != attempt {
			t.Errorf("attempt %d: the steps ran %d times (the third must never run)", attempt, n)
		}
	}
	if !strings.Contains(strings.Join(logged, "\n"), "No matching distribution") {
		t.Errorf("log got %q", logged)
	}
	job := runner.Job{RunID: newRunID(t), CandidateID: "alpha", Trial: 1, Command: []string{"true"}, Environment: env}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrInfra)
	if !strings.Contains(res.ErrorMessage, "is not built") {
		t.Errorf("a job in the failed environment: %q", res.ErrorMessage)
	}
}

// TestBuildEnvironmentCancelledMidStep: cancelled while a step runs, the
// build is ended and leaves nothing that looks finished; the next call
// builds it.
func TestBuildEnvironmentCancelledMidStep(t *testing.T) {
	t.Parallel()
	r := envRunner(t, Options{})
	g := newGate(t)
	env := g.env(t, "agent")
	dir := filepath.Join(r.opts.EnvCache, runner.ShortHash(env.Hash))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := r.BuildEnvironment(ctx, env, nil)
		errc <- err
	}()
	g.started(t)
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the build is not in place in %s: %v", dir, err)
	}
	cancel()
	err := <-errc
	var be *runner.BuildError
	if !errors.Is(err, context.Canceled) || errors.As(err, &be) {
		t.Fatalf("cancelled build: %v; want context.Canceled, not a BuildError", err)
	}
	g.assertNobodyAtGate(t)
	assertNoDir(t, dir)
	assertNoDir(t, dir+failedLogSuffix)
	assertNoDir(t, dir+buildingLogSuffix)

	g.unblock(t)
	b, err := r.BuildEnvironment(context.Background(), env, nil)
	if err != nil || b.Reused {
		t.Fatalf("after the cancelled build: %+v, %v; want it built", b, err)
	}
	if n := count(t, g.counter); n != 2 {
		t.Errorf("the steps ran %d times, want 2", n)
	}
	assertMarker(t, dir, env)
}

// TestBuildEnvironmentRemovesAnInterruptedBuild: a directory without its
// done marker (a forge killed mid-build) is removed and built again; a
// directory whose marker names another hash is refused.
func TestBuildEnvironmentRemovesAnInterruptedBuild(t *testing.T) {
	t.Parallel()
	r := envRunner(t, Options{})
	c := counter(t)
	env := hashed(t, runner.Environment{Name: "agent", Build: []string{`echo ran >> "$COUNTER"`}, Env: map[string]string{"COUNTER": c}})
	dir := filepath.Join(r.opts.EnvCache, runner.ShortHash(env.Hash))
	if err := os.MkdirAll(filepath.Join(dir, "half", "ro"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, "half", "ro"), 0o555)
	if err := os.WriteFile(filepath.Join(dir, ".forge-env-123.tmp"), []byte(`{"hash":"`+env.Hash+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := r.BuildEnvironment(context.Background(), env, nil)
	if err != nil || b.Reused {
		t.Fatalf("%+v, %v; want it built", b, err)
	}
	assertNoDir(t, filepath.Join(dir, "half"))
	if n := count(t, c); n != 1 {
		t.Errorf("the steps ran %d times, want 1", n)
	}

	other := *env
	other.Hash = runner.ShortHash(env.Hash) + strings.Repeat("0", 48)
	if _, err := r.BuildEnvironment(context.Background(), &other, nil); err == nil || !strings.Contains(err.Error(), "holds the environment of hash "+env.Hash) {
		t.Errorf("a short hash shared with another: %v", err)
	}
	assertMarker(t, dir, env)
}

// TestBuildEnvironmentTimeout: a build over its timeout is a BuildError
// that says so, and its processes are ended.
func TestBuildEnvironmentTimeout(t *testing.T) {
	t.Parallel()
	r := envRunner(t, Options{KillGrace: 100 * time.Millisecond})
	g := newGate(t)
	env := g.env(t, "slow")
	env.BuildTimeout = 200 * time.Millisecond
	_, err := r.BuildEnvironment(context.Background(), env, nil)
	var be *runner.BuildError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "step 1 `echo ran >> \"$COUNTER\" …` timed out") {
		t.Fatalf("%v; want a BuildError saying step 1 timed out", err)
	}
	g.assertNobodyAtGate(t)
	assertNoDir(t, filepath.Join(r.opts.EnvCache, runner.ShortHash(env.Hash)))
}

// TestBuildEnvironmentStepsEnvironment: the steps run in the directory,
// with the basics, the environment's variables and FORGE_ENV_DIR (which
// they cannot override), and nothing else of forge's.
func TestBuildEnvironmentStepsEnvironment(t *testing.T) {
	t.Parallel()
	forgeEnv := map[string]string{"PATH": "/usr/bin:/bin", "LANG": "C", "HOME": "/root/forge-home", "SECRET": "leak"}
	r := envRunner(t, Options{Getenv: func(k string) string { return forgeEnv[k] }})
	out := filepath.Join(t.TempDir(), "seen")
	env := hashed(t, runner.Environment{
		Name:  "agent",
		Build: []string{`tr '\0' '\n' < /proc/self/environ > "$OUT"; echo "cwd=$(pwd)" >> "$OUT"; echo "tmpdir_is_dir=$([ -d "$TMPDIR" ] && echo yes)" >> "$OUT"`},
		Env:   map[string]string{"OUT": out, "PIP_NO_CACHE_DIR": "1", runner.EnvDirVar: "/bogus"},
	})
	b, err := r.BuildEnvironment(context.Background(), env, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		seen[k] = v
	}
	dir := b.Where
	home := seen["HOME"]
	if !strings.HasPrefix(home, filepath.Join(r.opts.TempDir, fmt.Sprintf("forge-%d-env-", os.Getpid()))) {
		t.Errorf("HOME %q is not a directory of the build's own", home)
	}
	want := map[string]string{
		"PATH":             filepath.Join(dir, "bin") + ":/usr/bin:/bin",
		"HOME":             home,
		"LANG":             "C",
		"TMPDIR":           filepath.Join(home, "tmp"),
		"PYTHONUNBUFFERED": "1",
		runner.EnvDirVar:   dir,
		"OUT":              out,
		"PIP_NO_CACHE_DIR": "1",
		"cwd":              dir,
		"tmpdir_is_dir":    "yes",
	}
	for k, v := range want {
		if seen[k] != v {
			t.Errorf("the step saw %s=%q, want %q", k, seen[k], v)
		}
	}
	for k := range seen {
		if _, ok := want[k]; !ok {
			t.Errorf("the step saw %s=%q, which it should not", k, seen[k])
		}
	}
	assertNoDir(t, home) // removed after the build
}

// TestJobRunsInItsEnvironment: a job's setup lines and candidate get
// FORGE_ENV_DIR and the environment's bin/ first on PATH (even over the
// manifest's), on every tier; a Runner that did not build the environment
// refuses the job without running anything.
func TestJobRunsInItsEnvironment(t *testing.T) {
	eachTier(t, Options{}, func(t *testing.T, r *Runner) {
		r.opts.EnvCache = t.TempDir()
		env := hashed(t, runner.Environment{
			Name: "tools",
			Build: []string{`mkdir -p bin && printf '#!/bin/sh\necho "hello from $FORGE_ENV_DIR"\n' > bin/hello-env && chmod +x bin/hello-env`,
				`hello-env > built-with-path.txt`},
		})
		b, err := r.BuildEnvironment(context.Background(), env, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := counter(t)
		script := filepath.Join(t.TempDir(), "cand.sh")
		src := `hello-env > "$2"; echo "dir=$FORGE_ENV_DIR"; echo "path=$PATH"; cat setup.txt`
		if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		job := runner.Job{
			RunID: newRunID(t), CandidateID: "alpha", Trial: 1, Objective: "o",
			Command:     []string{"sh", "cand.sh"},
			Files:       []runner.File{{Src: script, Dst: "cand.sh"}},
			Setup:       []string{`echo setup >> "$COUNTER"; hello-env > setup.txt`},
			Env:         map[string]string{"PATH": "/usr/bin:/bin", runner.EnvDirVar: "/bogus", "COUNTER": c},
			Timeout:     30 * time.Second,
			Environment: env,
		}
		res := mustRun(t, r, job)
		assertKind(t, res, runner.ErrNone)
		if want := "hello from " + b.Where + "\n"; res.ArtifactContent != want {
			t.Errorf("artifact %q, want %q", res.ArtifactContent, want)
		}
		for _, want := range []string{"dir=" + b.Where + "\n", "path=" + filepath.Join(b.Where, "bin") + ":/usr/bin:/bin\n", "hello from " + b.Where + "\n"} {
			if !strings.Contains(res.Output, want) {
				t.Errorf("output %q lacks %q", res.Output, want)
			}
		}
		if got, _ := os.ReadFile(filepath.Join(b.Where, "built-with-path.txt")); string(got) != "hello from "+b.Where+"\n" {
			t.Errorf("a later build step did not find bin/ on its PATH: %q", got)
		}

		other := tierRunner(t, r.Containment(), Options{EnvCache: r.opts.EnvCache})
		job.RunID = newRunID(t)
		res = mustRun(t, other, job)
		assertKind(t, res, runner.ErrInfra)
		if want := "environment tools (" + runner.ShortHash(env.Hash) + ") is not built"; !strings.Contains(res.ErrorMessage, want) {
			t.Errorf("message %q; want it to say %q", res.ErrorMessage, want)
		}
		if n := count(t, c); n != 1 {
			t.Errorf("setup ran %d times; want once (never without the environment)", n)
		}
	})
}

// TestJobInAPythonVenv: a virtualenv built in place works at its final
// path: python3 is the venv's.
func TestJobInAPythonVenv(t *testing.T) {
	t.Parallel()
	r := envRunner(t, Options{})
	env := hashed(t, runner.Environment{
		Name:  "venv",
		Build: []string{`"` + pythonPath(t) + `" -m venv --without-pip "$FORGE_ENV_DIR"`},
	})
	b, err := r.BuildEnvironment(context.Background(), env, nil)
	if err != nil {
		t.Fatal(err)
	}
	job := pyJob(t, "alpha", `
import sys
open(sys.argv[2], "w").write(sys.prefix)
`)
	job.Command[0] = "python3"
	job.Environment = env
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	if res.ArtifactContent != b.Where {
		t.Errorf("sys.prefix %q; want the venv %s", res.ArtifactContent, b.Where)
	}
}

// TestRemoveEnvironmentRefusesWhileHeld: ListEnvironments reports a built
// environment; RemoveEnvironment refuses it while a Runner holds it and
// removes it after Close; the Runner then builds it anew.
func TestRemoveEnvironmentRefusesWhileHeld(t *testing.T) {
	t.Parallel()
	r := envRunner(t, Options{})
	cache := r.opts.EnvCache
	c := counter(t)
	env := hashed(t, runner.Environment{Name: "agent", Build: []string{`echo ran >> "$COUNTER"; echo 0123456789 > data`}, Env: map[string]string{"COUNTER": c}})
	short := runner.ShortHash(env.Hash)
	dir := filepath.Join(cache, short)
	if _, err := r.BuildEnvironment(context.Background(), env, nil); err != nil {
		t.Fatal(err)
	}
	list, err := ListEnvironments(cache)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListEnvironments: %+v, %v; want one", list, err)
	}
	e := list[0]
	if e.Short != short || e.Hash != env.Hash || e.Name != "agent" || e.Dir != dir || e.Bytes < 11 ||
		e.BuiltAt.IsZero() || e.LastUsed.IsZero() || e.BuildSeconds <= 0 || !e.InUse || e.Leftover || e.FailedLog != "" {
		t.Errorf("ListEnvironments: %+v", e)
	}

	err = RemoveEnvironment(cache, short)
	if !errors.Is(err, ErrEnvironmentInUse) || !strings.Contains(err.Error(), short) {
		t.Fatalf("RemoveEnvironment while held: %v; want ErrEnvironmentInUse", err)
	}
	assertMarker(t, dir, env)

	r.Close()
	if list, _ := ListEnvironments(cache); len(list) != 1 || list[0].InUse {
		t.Errorf("after Close: %+v; want it not in use", list)
	}
	if err := RemoveEnvironment(cache, env.Hash); err != nil {
		t.Fatalf("RemoveEnvironment after Close: %v", err)
	}
	assertNoDir(t, dir)
	assertNoDir(t, dir+lockSuffix)
	if list, err := ListEnvironments(cache); err != nil || len(list) != 0 {
		t.Errorf("after RemoveEnvironment: %+v, %v", list, err)
	}
	if err := RemoveEnvironment(cache, short); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("removing it twice: %v; want fs.ErrNotExist", err)
	}
	if err := RemoveEnvironment(cache, "../../etc"); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a name that is no short hash: %v", err)
	}

	b, err := r.BuildEnvironment(context.Background(), env, nil)
	if err != nil || b.Reused {
		t.Errorf("after its removal: %+v, %v; want it built anew", b, err)
	}
	if n := count(t, c); n != 2 {
		t.Errorf("the steps ran %d times, want 2", n)
	}
}

// TestListEnvironmentsFlagsLeftovers: an interrupted build's directory
// and a failed build's log are listed as leftovers, and removable.
func TestListEnvironmentsFlagsLeftovers(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	half, failed := "0123456789abcdef", "fedcba9876543210"
	if err := os.MkdirAll(filepath.Join(cache, half, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, content := range map[string]string{
		filepath.Join(cache, half, "bin", "x"):         "12345",
		filepath.Join(cache, half+buildingLogSuffix):   "+ x",
		filepath.Join(cache, failed+failedLogSuffix):   "boom\n",
		filepath.Join(cache, "not-an-environment.txt"): "",
	} {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	list, err := ListEnvironments(cache)
	if err != nil || len(list) != 2 {
		t.Fatalf("%+v, %v; want two leftovers", list, err)
	}
	if e := list[0]; e.Short != half || !e.Leftover || e.Dir != filepath.Join(cache, half) || e.Bytes != 8 || e.Hash != "" || e.InUse {
		t.Errorf("interrupted build: %+v", e)
	}
	if e := list[1]; e.Short != failed || !e.Leftover || e.Dir != "" || e.FailedLog != filepath.Join(cache, failed+failedLogSuffix) || e.Bytes != 5 {
		t.Errorf("failed build: %+v", e)
	}
	for _, short := range []string{half, failed} {
		if err := RemoveEnvironment(cache, short); err != nil {
			t.Errorf("remove %s: %v", short, err)
		}
	}
	if left := leftovers(t, cache); len(left) != 1 || left[0] != "not-an-environment.txt" {
		t.Errorf("left: %v", left)
	}
	if list, err := ListEnvironments(filepath.Join(cache, "missing")); err != nil || list != nil {
		t.Errorf("a missing cache: %+v, %v", list, err)
	}
}

// helperBuild is a forge process of TestBuildEnvironmentAcrossProcesses:
// it builds one environment and prints what BuildEnvironment returned.
func helperBuild(spec string) int {
	var s struct {
		Cache, Temp string
		Env         runner.Environment
	}
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r, err := New(Options{TempDir: s.Temp, EnvCache: s.Cache})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer r.Close()
	b, err := r.BuildEnvironment(context.Background(), &s.Env, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	json.NewEncoder(os.Stdout).Encode(b)
	return 0
}

// TestBuildEnvironmentAcrossProcesses: two forge processes ask for the
// same environment at once: the one that waits, waits on the lock file
// (seen in /proc/locks) while the other builds, then reuses its build.
func TestBuildEnvironmentAcrossProcesses(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	g := newGate(t)
	env := g.env(t, "agent")
	spec, err := json.Marshal(map[string]any{"Cache": cache, "Temp": t.TempDir(), "Env": env})
	if err != nil {
		t.Fatal(err)
	}
	var forges []*exec.Cmd
	var outs []*bytes.Buffer
	for range 2 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "LOCAL_TEST_HELPER_BUILD="+string(spec))
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		forges, outs = append(forges, cmd), append(outs, out)
	}
	g.started(t)
	lock := filepath.Join(cache, runner.ShortHash(env.Hash)+lockSuffix)
	waitForBlockedFlock(t, lock, forges[0].Process.Pid, forges[1].Process.Pid)
	g.open(t)
	built := 0
	for i, cmd := range forges {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("forge %d: %v", i, err)
		}
		var b runner.EnvironmentBuild
		if err := json.Unmarshal(outs[i].Bytes(), &b); err != nil {
			t.Fatalf("forge %d said %q: %v", i, outs[i], err)
		}
		if !b.Reused {
			built++
		}
	}
	if built != 1 {
		t.Errorf("%d forges built it, want 1", built)
	}
	if n := count(t, g.counter); n != 1 {
		t.Errorf("the steps ran %d times, want 1", n)
	}
	assertMarker(t, filepath.Join(cache, runner.ShortHash(env.Hash)), env)
}

// waitForBlockedFlock waits until /proc/locks shows one of pids waiting
// for a flock on the file path.
func waitForBlockedFlock(t *testing.T, path string, pids ...int) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ino := ":" + strconv.FormatUint(fi.Sys().(*syscall.Stat_t).Ino, 10)
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, err := os.ReadFile("/proc/locks")
		if err != nil {
			t.Skipf("cannot see who waits for the lock: %v", err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) < 7 || f[1] != "->" || f[2] != "FLOCK" || !strings.HasSuffix(f[6], ino) {
				continue
			}
			for _, pid := range pids {
				if f[5] == strconv.Itoa(pid) {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("neither forge waits for the lock on %s:\n%s", path, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGCEnvironments: gc keeps an environment a live Runner holds and one
// used within OlderThan, removes the others and what builds left, and a
// dry run removes nothing.
func TestGCEnvironments(t *testing.T) {
	t.Parallel()
	held := envRunner(t, Options{})
	cache := held.opts.EnvCache
	build := func(r *Runner, name string) *runner.Environment {
		env := hashed(t, runner.Environment{Name: name, Build: []string{"echo " + name + " > data"}})
		if _, err := r.BuildEnvironment(context.Background(), env, nil); err != nil {
			t.Fatal(err)
		}
		return env
	}
	heldEnv := build(held, "held")
	other := envRunner(t, Options{EnvCache: cache})
	oldEnv := build(other, "old")
	other.Close()
	if err := os.MkdirAll(filepath.Join(cache, "0123456789abcdef"), 0o755); err != nil { // an interrupted build
		t.Fatal(err)
	}
	later := time.Now().Add(2 * time.Hour)
	var out strings.Builder
	if err := GCEnvironments(cache, GCOptions{OlderThan: time.Hour, DryRun: true, Now: func() time.Time { return later }}, &out); err != nil {
		t.Fatal(err)
	}
	if list, _ := ListEnvironments(cache); len(list) != 3 {
		t.Fatalf("a dry run removed something: %+v", list)
	}
	for _, want := range []string{
		"keep    environment " + runner.ShortHash(heldEnv.Hash) + " (held, ",
		"would delete environment " + runner.ShortHash(oldEnv.Hash) + " (old, last used 2h",
		"would delete environment 0123456789abcdef (left by an unfinished or failed build",
		": would delete 2, kept 1, failed 0",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run: no %q in\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := GCEnvironments(cache, GCOptions{OlderThan: 3 * time.Hour, Now: func() time.Time { return later }}, &out); err != nil {
		t.Fatal(err)
	}
	list, _ := ListEnvironments(cache)
	if len(list) != 2 || !strings.Contains(out.String(), "deleted 1, kept 2") ||
		!strings.Contains(out.String(), "used more recently than 3h0m0s") {
		t.Errorf("young ones must stay, the leftover go: %+v\n%s", list, out.String())
	}
	out.Reset()
	if err := GCEnvironments(cache, GCOptions{}, &out); err != nil {
		t.Fatal(err)
	}
	if list, _ := ListEnvironments(cache); len(list) != 1 || list[0].Hash != heldEnv.Hash {
		t.Errorf("after gc with no age: %+v; want only the held one\n%s", list, out.String())
	}
}

// TestChangedEnvironmentIsBuiltAgain: an environment a job wrote into is
// not reused by the next Runner: it is built again, saying why; Python's
// bytecode caches written as jobs import from it do not count.
func TestChangedEnvironmentIsBuiltAgain(t *testing.T) {
	t.Parallel()
	first := envRunner(t, Options{})
	cache := first.opts.EnvCache
	c := counter(t)
	env := hashed(t, runner.Environment{Name: "tools", Env: map[string]string{"COUNTER": c},
		Build: []string{`echo ran >> "$COUNTER"; mkdir -p bin lib; printf '#!/bin/sh\necho honest\n' > bin/tool; chmod +x bin/tool`}})
	dir := filepath.Join(cache, runner.ShortHash(env.Hash))
	if _, err := first.BuildEnvironment(context.Background(), env, nil); err != nil {
		t.Fatal(err)
	}
	first.Close()

	// Python's caches: reused as it is.
	if err := os.MkdirAll(filepath.Join(dir, "lib", "__pycache__"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lib", "__pycache__", "m.cpython-312.pyc"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	second := envRunner(t, Options{EnvCache: cache})
	if b, err := second.BuildEnvironment(context.Background(), env, nil); err != nil || !b.Reused {
		t.Fatalf("with a __pycache__ written: %+v, %v; want it reused", b, err)
	}
	second.Close()

	for name, change := range map[string]func() error{
		"a tool replaced": func() error {
			return os.WriteFile(filepath.Join(dir, "bin", "tool"), []byte("#!/bin/sh\necho hostile\n"), 0o755)
		},
		"a file added": func() error {
			return os.WriteFile(filepath.Join(dir, "lib", "sitecustomize.py"), []byte("import os\n"), 0o644)
		},
		"a file removed": func() error { return os.Remove(filepath.Join(dir, "bin", "tool")) },
	} {
		if err := change(); err != nil {
			t.Fatal(err)
		}
		r := envRunner(t, Options{EnvCache: cache})
		var lines []string
		b, err := r.BuildEnvironment(context.Background(), env, func(l string) { lines = append(lines, l) })
		r.Close()
		if err != nil || b.Reused {
			t.Fatalf("%s: %+v, %v; want it built again", name, b, err)
		}
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "changed since it was built: building it again") }) {
			t.Errorf("%s: the log does not say why it was built again: %q", name, lines)
		}
		if got, err := os.ReadFile(filepath.Join(dir, "bin", "tool")); err != nil || string(got) != "#!/bin/sh\necho honest\n" {
			t.Errorf("%s: after the build, bin/tool is %q, %v", name, got, err)
		}
		if exists(filepath.Join(dir, "lib", "sitecustomize.py")) {
			t.Errorf("%s: the added file survived the build", name)
		}
	}
	if n := count(t, c); n != 4 {
		t.Errorf("the steps ran %d times, want 4 (the build, then one per change)", n)
	}
}
