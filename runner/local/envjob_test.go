//go:build linux

package local

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local/localtest"
)

// TestJobRunsInItsEnvironment: a job's setup lines and candidate get
// FORGE_ENV_DIR and the environment's bin/ first on PATH (even over the
// manifest's), on every tier; a Runner that did not build the environment
// refuses the job without running anything.
func TestJobRunsInItsEnvironment(t *testing.T) {
	eachTier(t, Options{}, func(t *testing.T, r *Runner) {
		r.opts.EnvCache = localtest.TempDir(t)
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
		script := filepath.Join(localtest.TempDir(t), "cand.sh")
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
