package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local/localtest"
)

// needReadOnly fails the test when jobs cannot see the environment
// cache read-only although this is Linux as root (the tiers that must be
// offered then can mount), and skips it otherwise.
func needReadOnly(t *testing.T, r *Runner) {
	t.Helper()
	if r.platform.readOnly() {
		return
	}
	if mustOffer(r.Containment()) {
		t.Fatalf("environments are not read-only to jobs although this is Linux as root: %s", r.Describe())
	}
	t.Skipf("environments are writable by jobs here: %s", r.Describe())
}

// hostMounts is the mount points of forge's own mount namespace (its main
// thread's) under dir.
func hostMounts(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var under []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && within(f[4], dir) {
			under = append(under, f[4])
		}
	}
	return under
}

// TestEnvironmentIsReadOnlyToJobs: on every tier that can mount, a job's
// setup lines and candidate find the environment cache read-only (writing,
// removing, changing and renaming its files fail with EROFS, in their
// environment and beside it) while its bin/ still runs and its files
// read; the next trial finds it as it was built, the environment is not
// "changed" for the next run, and no mount is left in forge's own
// namespace.
func TestEnvironmentIsReadOnlyToJobs(t *testing.T) {
	eachTier(t, Options{}, func(t *testing.T, r *Runner) {
		needReadOnly(t, r)
		cache := localtest.TempDir(t)
		r.opts.EnvCache = cache
		mntBefore, err := os.Readlink("/proc/self/ns/mnt")
		if err != nil {
			t.Fatal(err)
		}
		env := hashed(t, runner.Environment{
			Name: "tools",
			Build: []string{`mkdir -p bin && printf '#!/bin/sh\necho tool ok\n' > bin/tool && chmod +x bin/tool`,
				`echo original > data.txt`},
		})
		b, err := r.BuildEnvironment(context.Background(), env, nil)
		if err != nil {
			t.Fatal(err)
		}
		script := filepath.Join(localtest.TempDir(t), "cand.sh")
		src := `d="$FORGE_ENV_DIR"
tool > "$2"
cat "$d/data.txt" >> "$2"
awk -v d="$(dirname "$d")" '$5 == d { split($6, o, ","); print "cache " o[1] }' /proc/self/mountinfo >> "$2"
echo hostile > "$d/data.txt" && echo "wrote data.txt"
rm "$d/data.txt" && echo "removed data.txt"
touch "$d/new" && echo "created a file"
chmod 700 "$d/bin/tool" && echo "changed bin/tool"
mv "$d/bin" "$d/bin2" && echo "renamed bin"
touch "$d/../beside" && echo "wrote into the cache"
echo done`
		if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		job := runner.Job{
			RunID: newRunID(t), CandidateID: "alpha", Objective: "o",
			Command:     []string{"sh", "cand.sh"},
			Files:       []runner.File{{Src: script, Dst: "cand.sh"}},
			Setup:       []string{`if echo x > "$FORGE_ENV_DIR/setup.txt"; then exit 1; fi`, `tool`},
			Timeout:     30 * time.Second,
			Environment: env,
		}
		for trial := 1; trial <= 2; trial++ {
			job.Trial = trial
			res := mustRun(t, r, job)
			assertKind(t, res, runner.ErrNone)
			if want := "tool ok\noriginal\ncache ro\n"; res.ArtifactContent != want {
				t.Errorf("trial %d: artifact %q, want %q", trial, res.ArtifactContent, want)
			}
			if res.Output != "done\n" {
				t.Errorf("trial %d: the candidate changed its environment: %q", trial, res.Output)
			}
			if n := strings.Count(res.Stderr, "Read-only file system"); n != 6 {
				t.Errorf("trial %d: %d of 6 changes failed with EROFS: %q", trial, n, res.Stderr)
			}
		}
		if got, err := os.ReadFile(filepath.Join(b.Where, "data.txt")); err != nil || string(got) != "original\n" {
			t.Errorf("data.txt is %q, %v", got, err)
		}
		for _, p := range []string{"new", "setup.txt", "bin/tool", "../beside"} {
			fi, err := os.Stat(filepath.Join(b.Where, p))
			if (p == "bin/tool") != (err == nil) || p == "bin/tool" && fi.Mode().Perm() != 0o755 {
				t.Errorf("%s: %v, %v", p, fi, err)
			}
		}
		if ok, stale, err := r.isReady(b.Where, env.Hash); !ok || stale != "" || err != nil {
			t.Errorf("after the jobs the environment is finished %v, stale %q, %v; want it as built", ok, stale, err)
		}
		if m := hostMounts(t, cache); len(m) != 0 {
			t.Errorf("mounts left in forge's namespace: %q", m)
		}
		if mnt, _ := os.Readlink("/proc/self/ns/mnt"); mnt != mntBefore {
			t.Errorf("forge's main thread moved from mount namespace %s to %s", mntBefore, mnt)
		}
	})
}

// TestReadOnlyJobKeepsItsArgvAndDirectory: in the mount namespace, a
// candidate's argv reaches it as it is (shell metacharacters included,
// no shell in between), it runs in its working directory, writes there
// and in TMPDIR, and a job without an environment in a Runner that holds
// none gets no mount namespace.
func TestReadOnlyJobKeepsItsArgvAndDirectory(t *testing.T) {
	t.Parallel()
	r := tierRunner(t, ContainPIDNamespace, Options{EnvCache: localtest.TempDir(t)})
	needReadOnly(t, r)
	env := hashed(t, runner.Environment{Name: "empty", Build: []string{"true"}})
	if _, err := r.BuildEnvironment(context.Background(), env, nil); err != nil {
		t.Fatal(err)
	}
	args := []string{"a b", "$HOME", "`id`", `'"*;|&<>`, "", "\\n", "--"}
	script := `for a in "$@"; do printf '[%s]\n' "$a"; done; pwd; echo x > "$TMPDIR/t" && echo y > here && readlink /proc/self/ns/mnt`
	job := runner.Job{
		RunID: newRunID(t), CandidateID: "argv", Trial: 1, Objective: "o",
		Command:          append([]string{"/bin/sh", "-c", script, "sh"}, args...),
		Timeout:          30 * time.Second,
		Environment:      env,
		ArtifactOptional: true,
	}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	lines := strings.Split(strings.TrimSuffix(res.Output, "\n"), "\n")
	want := len(args) + 2 + 2 // args, the objective and output path, pwd, the namespace
	if len(lines) != want {
		t.Fatalf("output %q: want %d lines", res.Output, want)
	}
	for i, a := range args {
		if lines[i] != "["+a+"]" {
			t.Errorf("argument %d reached the candidate as %q, want [%s]", i, lines[i], a)
		}
	}
	if !strings.HasPrefix(lines[want-2], r.opts.TempDir+"/forge-") {
		t.Errorf("the candidate ran in %s, not its working directory", lines[want-2])
	}
	own, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	if lines[want-1] == own {
		t.Errorf("the candidate ran in forge's own mount namespace %s", own)
	}

	// Without environments, as root (no user of its own to name in an
	// /etc/passwd of its own): forge's own namespace, nothing to mount.
	bare := job
	bare.Environment = nil
	bare.RunID = newRunID(t)
	other := tierRunner(t, ContainPIDNamespace, Options{EnvCache: localtest.TempDir(t), User: UserRoot})
	res = mustRun(t, other, bare)
	assertKind(t, res, runner.ErrNone)
	if got := res.Output[strings.LastIndexByte(strings.TrimSuffix(res.Output, "\n"), '\n')+1:]; got != own+"\n" {
		t.Errorf("a job without environments ran in mount namespace %q; want forge's own %s", got, own)
	}
}

// TestReadOnlyWorkdirInsideTheCache: a Runner whose working directories
// are inside the environment cache gets the job's environment alone
// read-only, so that the job can still write its own directory.
func TestReadOnlyWorkdirInsideTheCache(t *testing.T) {
	t.Parallel()
	cache := localtest.TempDir(t)
	work := filepath.Join(cache, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, Options{TempDir: work, EnvCache: cache})
	needReadOnly(t, r)
	env := hashed(t, runner.Environment{Name: "tools", Build: []string{"echo original > data.txt"}})
	b, err := r.BuildEnvironment(context.Background(), env, nil)
	if err != nil {
		t.Fatal(err)
	}
	job := runner.Job{
		RunID: newRunID(t), CandidateID: "inside", Trial: 1, Objective: "o",
		Command:     []string{"/bin/sh", "-c", `echo hostile > "$FORGE_ENV_DIR/data.txt" || cat "$FORGE_ENV_DIR/data.txt" > "$2"`, "sh"},
		Timeout:     30 * time.Second,
		Environment: env,
	}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	if res.ArtifactContent != "original\n" || !strings.Contains(res.Stderr, "Read-only file system") {
		t.Errorf("artifact %q, stderr %q: want the environment read-only and the working directory writable", res.ArtifactContent, res.Stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(b.Where, "data.txt")); string(got) != "original\n" {
		t.Errorf("data.txt is %q", got)
	}
}
