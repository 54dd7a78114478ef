package daytona

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"
	"golang.org/x/sync/errgroup"

	"github.com/forge-run/forge/internal/testkit/wait"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// toolEnvironment is an environment whose build leaves a file made from
// one of its files and a command in its bin/, both in its directory.
func toolEnvironment(t *testing.T, name string, extra ...string) *runner.Environment {
	t.Helper()
	env := &runner.Environment{
		Name: name, Image: "python:3.12-slim",
		Files: []runner.File{{Data: []byte("from a file\n"), Dst: "data/input.txt"}},
		Env:   map[string]string{"GREETING": `hello "big" world`},
		Build: append([]string{
			`mkdir -p bin && printf '#!/bin/sh\necho "tool says $GREETING"\n' > bin/forge-tool && chmod +x bin/forge-tool`,
			`cp data/input.txt built.txt && echo step-output`,
		}, extra...),
	}
	hash(t, env)
	return env
}

func hash(t *testing.T, env *runner.Environment) {
	t.Helper()
	h, err := runner.EnvironmentHash(env)
	if err != nil {
		t.Fatal(err)
	}
	env.Hash = h
}

// envJob is a shell job in env that reports what the environment gave it.
func (e *env) envJob(id string, env *runner.Environment) runner.Job {
	j := e.shJob(id, `cat "$FORGE_ENV_DIR/built.txt" > "$2"; forge-tool; echo "dir=$FORGE_ENV_DIR"`)
	j.Environment = env
	return j
}

func (e *env) build(env *runner.Environment) (runner.EnvironmentBuild, []string, error) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var lines []string
	b, err := e.r.BuildEnvironment(ctx, env, func(l string) {
		mu.Lock()
		lines = append(lines, l)
		mu.Unlock()
	})
	return b, lines, err
}

// snapshotCreates is how many snapshot creates the emulator received.
func snapshotCreates(srv *daytonatest.Server) int { return srv.Calls(daytonatest.OpCreateSnapshot) }

// liveSnapshots are the snapshots the API still shows, by name.
func liveSnapshots(t *testing.T, srv *daytonatest.Server) map[string]string {
	t.Helper()
	c, err := sdk.NewClientWithConfig(&types.DaytonaConfig{APIKey: srv.APIKey(), APIUrl: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.Snapshot.List(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, sn := range page.Items {
		out[sn.Name] = sn.State
	}
	return out
}

// TestEnvironmentBuiltOnceForManyJobs: 30 jobs of one environment, at
// once, each making it ready then running: one snapshot is created, every
// sandbox starts from it, and every job sees the file the build made in
// FORGE_ENV_DIR and the command it put on PATH. The next run reuses it.
func TestEnvironmentBuiltOnceForManyJobs(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, func(o *Options) { o.CPU, o.MemoryGB, o.DiskGB = 2, 2, 4 })
	env := toolEnvironment(t, "tools")
	name := runner.SnapshotName(env.Hash)
	const n = 30
	builds := make([]runner.EnvironmentBuild, n)
	results := make([]runner.Result, n)
	errs := make([]error, n)
	var g errgroup.Group
	g.SetLimit(n)
	for i := range n {
		g.Go(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if builds[i], errs[i] = e.r.BuildEnvironment(ctx, env, nil); errs[i] != nil {
				return nil
			}
			results[i], errs[i] = e.r.Run(ctx, e.envJob(fmt.Sprintf("c%02d", i), env))
			return nil
		})
	}
	g.Wait()
	built := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("job %d: %v", i, errs[i])
		}
		res := results[i]
		if !res.Success || string(res.Artifact) != "from a file\n" ||
			!strings.Contains(res.Output, `tool says hello "big" world`) || !strings.Contains(res.Output, "dir=") {
			t.Fatalf("job %d: %+v\nstdout %q\nstderr %q", i, res.ErrorMessage, res.Output, res.Stderr)
		}
		if b := builds[i]; b.Where != name || b.Hash != env.Hash {
			t.Errorf("build %d: %+v", i, b)
		} else if !b.Reused {
			built++
		}
	}
	if built != 1 || snapshotCreates(e.srv) != 1 {
		t.Fatalf("%d builds said they built, %d snapshot creates; want 1 and 1", built, snapshotCreates(e.srv))
	}
	snaps := e.srv.Snapshots()
	if len(snaps) != 1 || snaps[0].Name != name || snaps[0].State != "active" {
		t.Fatalf("snapshots: %+v", snaps)
	}
	for _, c := range e.srv.CallLog() {
		var req struct{ CPU, Memory, Disk int }
		if c.Op == daytonatest.OpCreateSnapshot && (json.Unmarshal(c.Body, &req) != nil || req.CPU != 2 || req.Memory != 2 || req.Disk != 4) {
			t.Errorf("the snapshot's resources are not the runner's: %s", c.Body)
		}
	}
	for _, sb := range e.srv.Sandboxes() {
		if sb.Snapshot != name || sb.Image != "" || sb.CPU != 2 {
			t.Fatalf("sandbox %s started from snapshot %q, image %q, cpu %d", sb.Name, sb.Snapshot, sb.Image, sb.CPU)
		}
	}
	if df := snaps[0].Dockerfile; !strings.HasPrefix(df, "FROM python:3.12-slim\n") || !strings.Contains(df, "WORKDIR "+EnvDir) ||
		!strings.Contains(df, `ENV GREETING="hello \"big\" world"`) {
		t.Errorf("Dockerfile:\n%s", df)
	}
	e.close()

	// The next run: found active, nothing built.
	opts := e.opts
	opts.RunID, opts.LedgerPath = "run2", ""
	r2, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close(context.Background())
	b, err := r2.BuildEnvironment(context.Background(), env, nil)
	if err != nil || !b.Reused || b.Where != name || snapshotCreates(e.srv) != 1 {
		t.Fatalf("second run: %+v, %v; %d creates", b, err, snapshotCreates(e.srv))
	}
}

// TestEnvironmentBuildStreamsItsLog: while the SDK sees the build going,
// its output comes to log as it is made.
func TestEnvironmentBuildStreamsItsLog(t *testing.T) {
	e := newEnv(t, daytonatest.Options{SnapshotBuildDelay: 1500 * time.Millisecond}, nil)
	env := toolEnvironment(t, "streamed")
	b, lines, err := e.build(env)
	if err != nil || b.Reused {
		t.Fatalf("%+v, %v", b, err)
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{"Creating snapshot " + b.Where, "step-output", "Created snapshot " + b.Where} {
		if !strings.Contains(all, want) {
			t.Errorf("log lacks %q:\n%s", want, all)
		}
	}
}

// TestEnvironmentBuildFailure: a failing step is a BuildError carrying the
// step's output; no snapshot is left to be taken for built, and the same
// environment asked again fails at once, without another build.
func TestEnvironmentBuildFailure(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	env := toolEnvironment(t, "broken", "echo about to fail; exit 3")
	_, _, err := e.build(env)
	var be *runner.BuildError
	if !errors.As(err, &be) || be.Hash != env.Hash || be.Name != "broken" {
		t.Fatalf("err = %v", err)
	}
	if tail := strings.Join(be.Tail, "\n"); !strings.Contains(tail, "about to fail") || len(be.Tail) > envTailLines {
		t.Errorf("tail lacks the step's output:\n%s", tail)
	}
	if !strings.Contains(be.Error(), runner.SnapshotName(env.Hash)) {
		t.Errorf("error does not name the snapshot: %v", be)
	}
	if live := liveSnapshots(t, e.srv); len(live) != 0 {
		t.Errorf("snapshots left: %v", live)
	}
	if _, _, err2 := e.build(env); err2 != err || snapshotCreates(e.srv) != 1 {
		t.Errorf("again: %v (%d creates)", err2, snapshotCreates(e.srv))
	}
	res := e.run(e.envJob("after", env))
	if res.Success || res.ErrorKind != runner.ErrInfra || !strings.Contains(res.ErrorMessage, "not made ready") {
		t.Errorf("a job of the failed environment: %+v", res)
	}
}

// TestEnvironmentBuildCancelled: the caller gives up during the build:
// ctx's error, and the half-built snapshot is deleted.
func TestEnvironmentBuildCancelled(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	env := toolEnvironment(t, "slow", `echo waiting-forever; while :; do sleep 0.1; done`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := e.r.BuildEnvironment(ctx, env, func(l string) {
		if strings.Contains(l, "waiting-forever") {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if live := liveSnapshots(t, e.srv); len(live) != 0 {
		t.Errorf("snapshots left: %v", live)
	}
}

// TestEnvironmentBuildTimeout: past the environment's timeout the build is
// a BuildError, and its snapshot is deleted.
func TestEnvironmentBuildTimeout(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	env := toolEnvironment(t, "too-slow", `while :; do sleep 0.1; done`)
	env.BuildTimeout = 2 * time.Second
	_, _, err := e.build(env)
	var be *runner.BuildError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "within 2s") {
		t.Fatalf("err = %v", err)
	}
	if live := liveSnapshots(t, e.srv); len(live) != 0 {
		t.Errorf("snapshots left: %v", live)
	}
}

// TestEnvironmentBuiltByAnotherForge: a snapshot of that name being built
// by someone else is waited for, then reused; nothing is created.
func TestEnvironmentBuiltByAnotherForge(t *testing.T) {
	hold := make(chan struct{})
	e := newEnv(t, daytonatest.Options{SnapshotBuildHold: hold}, nil)
	env := toolEnvironment(t, "shared")
	c, err := sdk.NewClientWithConfig(&types.DaytonaConfig{APIKey: e.srv.APIKey(), APIUrl: e.srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, logs, err := c.Snapshot.Create(ctx, &types.CreateSnapshotParams{
		Name: runner.SnapshotName(env.Hash), Image: sdk.Base("python:3.12-slim").Run("echo other")})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range logs {
		}
	}()
	var once sync.Once
	b, err := e.r.BuildEnvironment(ctx, env, func(l string) {
		if strings.Contains(l, "by another forge") {
			once.Do(func() { close(hold) })
		}
	})
	if err != nil || !b.Reused || snapshotCreates(e.srv) != 1 {
		t.Fatalf("%+v, %v; %d creates", b, err, snapshotCreates(e.srv))
	}
}

// TestEnvironmentFailedSnapshotIsBuiltAgain: a snapshot of that name left
// failed (by an earlier run, an outage) is deleted and built again, once.
func TestEnvironmentFailedSnapshotIsBuiltAgain(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	env := toolEnvironment(t, "retried")
	c, err := sdk.NewClientWithConfig(&types.DaytonaConfig{APIKey: e.srv.APIKey(), APIUrl: e.srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	_, logs, err := c.Snapshot.Create(context.Background(), &types.CreateSnapshotParams{
		Name: runner.SnapshotName(env.Hash), Image: sdk.Base("python:3.12-slim").Run("exit 1")})
	if err != nil {
		t.Fatal(err)
	}
	for range logs {
	}
	b, lines, err := e.build(env)
	if err != nil || b.Reused || snapshotCreates(e.srv) != 2 {
		t.Fatalf("%+v, %v; %d creates", b, err, snapshotCreates(e.srv))
	}
	if all := strings.Join(lines, "\n"); !strings.Contains(all, "deleting it to build it again") {
		t.Errorf("log:\n%s", all)
	}
	if res := e.run(e.envJob("after", env)); !res.Success {
		t.Errorf("job: %+v", res)
	}
}

// TestEnvironmentCreateRetried: a 503 on create is retried; after a 500
// answered once the snapshot was made (the create's outcome unknown) the
// snapshot is found by name and taken for the one this create made, so
// built, not reused, and no second one is made: found still building (the
// build held until forge has looked) or already active (found by a build
// that knows its create was sent).
func TestEnvironmentCreateRetried(t *testing.T) {
	check := func(t *testing.T, e *env, b runner.EnvironmentBuild, err error, retried bool) {
		t.Helper()
		if err != nil || b.Reused {
			t.Fatalf("%+v, %v\n%s", b, err, e.warn.String())
		}
		made := 0
		for _, sn := range e.srv.Snapshots() {
			if sn.State == "active" {
				made++
			}
		}
		if made != 1 || retried != strings.Contains(e.warn.String(), "retrying") {
			t.Errorf("%d snapshots made; warnings:\n%s", made, e.warn.String())
		}
	}
	t.Run("503", func(t *testing.T) {
		e := newEnv(t, daytonatest.Options{}, nil)
		e.srv.Inject(daytonatest.OpCreateSnapshot, daytonatest.Fault{Status: 503})
		b, _, err := e.build(toolEnvironment(t, "flaky"))
		check(t, e, b, err, true)
	})
	t.Run("500/building", func(t *testing.T) {
		hold := make(chan struct{})
		e := newEnv(t, daytonatest.Options{SnapshotBuildHold: hold}, nil)
		e.srv.Inject(daytonatest.OpCreateSnapshot, daytonatest.Fault{Status: 500, After: true})
		type built struct {
			b   runner.EnvironmentBuild
			err error
		}
		done := make(chan built, 1)
		go func() {
			b, _, err := e.build(toolEnvironment(t, "flaky"))
			done <- built{b, err}
		}()
		// Looked up before the create, then found after its retry.
		wait.For(t, "the snapshot to be found", 20*time.Second, func() bool { return e.srv.Calls(daytonatest.OpGetSnapshot) >= 2 })
		close(hold)
		r := <-done
		check(t, e, r.b, r.err, true)
	})
	t.Run("500/active", func(t *testing.T) {
		e := newEnv(t, daytonatest.Options{}, nil)
		env := toolEnvironment(t, "flaky")
		e.srv.Inject(daytonatest.OpCreateSnapshot, daytonatest.Fault{Status: 500, After: true})
		var created *types.Snapshot
		c, err := sdk.NewClientWithConfig(&types.DaytonaConfig{APIKey: e.srv.APIKey(), APIUrl: e.srv.URL()})
		if err != nil {
			t.Fatal(err)
		}
		if created, _, err = c.Snapshot.Create(context.Background(), &types.CreateSnapshotParams{Name: runner.SnapshotName(env.Hash), Image: sdk.Base("python:3.12-slim")}); err == nil {
			t.Fatalf("the create was answered: %+v", created)
		}
		wait.For(t, "the snapshot to be active", 20*time.Second, func() bool {
			sn := e.srv.Snapshots()
			return len(sn) == 1 && sn[0].State == "active"
		})
		// Where the create's retry leaves the build: the name taken, the
		// create's outcome unknown.
		bld := &envBuild{r: e.r, env: env, name: runner.SnapshotName(env.Hash), out: func(string) {}, ambiguous: true}
		reused, err := bld.run(context.Background())
		check(t, e, runner.EnvironmentBuild{Reused: reused}, err, false)
	})
}

// TestEnvironmentCreateRefused: a create the API refuses (the snapshot
// quota) is a BuildError, tried once.
func TestEnvironmentCreateRefused(t *testing.T) {
	e := newEnv(t, daytonatest.Options{SnapshotQuota: 1}, nil)
	if _, _, err := e.build(toolEnvironment(t, "first")); err != nil {
		t.Fatal(err)
	}
	_, _, err := e.build(toolEnvironment(t, "second", "echo another"))
	var be *runner.BuildError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "refused to create snapshot") || !strings.Contains(err.Error(), "quota") {
		t.Fatalf("err = %v", err)
	}
	if snapshotCreates(e.srv) != 2 {
		t.Errorf("%d creates", snapshotCreates(e.srv))
	}
}

// TestEnvironmentImage: what the Dockerfile says, for what Docker would
// take otherwise: quoted ENV values, steps that are not one plain line,
// files in chunks, and the limit on files.
func TestEnvironmentImage(t *testing.T) {
	big := make([]byte, 200<<10)
	for i := range big {
		big[i] = byte(i * 7)
	}
	env := &runner.Environment{
		Name: "odd", Hash: strings.Repeat("ab", 32),
		Env:   map[string]string{"A": `back\slash "q" $HOME`},
		Files: []runner.File{{Data: []byte("x"), Dst: "a/b/c.txt"}, {Data: big, Dst: "big.bin"}, {Data: []byte{}, Dst: "empty"}},
		Build: []string{"echo plain", "echo one\necho two", `printf '%s\n' trailing\\`, "cat <<EOF\nhi\nEOF", `[ -n "x" ] && echo bracket`},
	}
	b := &envBuild{env: env, name: runner.SnapshotName(env.Hash)}
	img, err := b.image()
	if err != nil {
		t.Fatal(err)
	}
	df := img.Dockerfile()
	lines := strings.Split(df, "\n")
	for _, want := range []string{
		"FROM " + runner.DefaultImage, `ENV A="back\\slash \"q\" \$HOME"`, "ENV FORGE_ENV_DIR=" + EnvDir,
		`ENV PATH="` + EnvDir + `/bin:$PATH"`, "WORKDIR " + EnvDir, "RUN echo plain",
	} {
		if !strings.Contains(df, want+"\n") {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "FROM ") && !strings.HasPrefix(l, "ENV ") && !strings.HasPrefix(l, "WORKDIR ") && !strings.HasPrefix(l, "RUN ") {
			t.Errorf("a step or file broke out of its line: %q", l)
		}
		if len(l) > maxRunLine+len("RUN ") {
			t.Errorf("a line of %d bytes", len(l))
		}
	}
	if n := strings.Count(df, "base64 -d"); n < 3 {
		t.Errorf("steps and files not encoded: %d decodes", n)
	}

	// Run by the real shell, line by line as Docker runs them (each line
	// one argument of sh -c), the files and steps come out as they were.
	dir := t.TempDir()
	var script strings.Builder
	for _, l := range lines {
		if cmd, ok := strings.CutPrefix(l, "RUN "); ok {
			script.WriteString("sh -c " + shQuote(cmd) + " || exit 9\n")
		}
	}
	sh := shellOut(t, dir, script.String())
	if !strings.Contains(sh, "one\ntwo\n") || !strings.Contains(sh, "trailing\\\n") || !strings.Contains(sh, "hi\n") || !strings.Contains(sh, "bracket\n") {
		t.Errorf("steps ran as:\n%s", sh)
	}
	for name, want := range map[string][]byte{"a/b/c.txt": []byte("x"), "big.bin": big, "empty": {}} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: %d bytes, %v", name, len(got), err)
		}
	}

	env.Files = []runner.File{{Data: make([]byte, MaxEnvironmentFiles+1), Dst: "huge"}}
	var be *runner.BuildError
	if _, err := b.image(); !errors.As(err, &be) || !strings.Contains(err.Error(), "build contexts") {
		t.Errorf("too much: %v", err)
	}
	env.Files = nil
	env.Env = map[string]string{"NL": "a\nb"}
	if _, err := b.image(); !errors.As(err, &be) {
		t.Errorf("a newline in a value: %v", err)
	}
}

// shellOut runs script with sh in dir and returns its output.
func shellOut(t *testing.T, dir, script string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "script.sh") // one argument holds at most 128 KiB
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", f)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return string(out)
}

// TestEnvironmentBinStaysFirst: a job whose env sets its own PATH still
// finds the environment's commands first.
func TestEnvironmentBinStaysFirst(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	env := toolEnvironment(t, "path")
	if _, _, err := e.build(env); err != nil {
		t.Fatal(err)
	}
	j := e.envJob("own-path", env)
	j.Env = map[string]string{"PATH": os.Getenv("PATH")}
	if res := e.run(j); !res.Success || !strings.Contains(res.Output, "tool says") {
		t.Fatalf("%+v\nstdout %q\nstderr %q", res.ErrorMessage, res.Output, res.Stderr)
	}
}

// TestJobOfAnEnvironmentNotMadeReady: a job naming an environment this
// Runner did not make ready fails as infra, creating nothing.
func TestJobOfAnEnvironmentNotMadeReady(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	res := e.run(e.envJob("lost", toolEnvironment(t, "never-built")))
	if res.Success || res.ErrorKind != runner.ErrInfra || !strings.Contains(res.ErrorMessage, "not made ready") {
		t.Fatalf("%+v", res)
	}
	if len(e.srv.Sandboxes()) != 0 {
		t.Errorf("sandboxes: %+v", e.srv.Sandboxes())
	}
}
