//go:build linux

package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local/localtest"
)

// envRunner makes a Runner whose environment cache is a fresh
// t.TempDir(), never the real one.
func envRunner(t *testing.T, opts Options) *Runner {
	t.Helper()
	if opts.EnvCache == "" {
		opts.EnvCache = localtest.TempDir(t)
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
	return filepath.Join(localtest.SharedDir(t), "counter")
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
	g.block = filepath.Join(localtest.TempDir(t), "block")
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
	cache := localtest.TempDir(t)
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
	req := filepath.Join(localtest.TempDir(t), "requirements.txt")
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
	out := filepath.Join(localtest.SharedDir(t), "seen")
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
