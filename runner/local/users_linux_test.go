package local

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local/localtest"
)

// TestJobUsersAreApart: as root, each job takes a uid of its own from the
// range, never the builder's, and one held by another forge (another lock
// file description) is passed over; released, it can be taken again. Not
// root: jobs run as forge's user, with nothing to hand out.
func TestJobUsersAreApart(t *testing.T) {
	u, err := newUsers(UserUnprivileged)
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		if u != nil {
			t.Fatal("not root, yet jobs get users of their own")
		}
		return
	}
	if root, err := newUsers(UserRoot); root != nil || err != nil {
		t.Fatalf("user: root gave %v, %v; want jobs as forge's user", root, err)
	}
	a, err := u.acquire()
	if err != nil {
		t.Fatal(err)
	}
	b, err := u.acquire()
	if err != nil {
		t.Fatal(err)
	}
	builder := u.builder().uid
	for _, j := range []*jobUser{a, b} {
		if j.uid == builder || j.uid <= u.base || j.uid >= u.base+u.count || j.gid != j.uid {
			t.Errorf("job user %+v: want a uid and gid of its own in (%d, %d)", j, u.base, u.base+u.count)
		}
	}
	if a.uid == b.uid {
		t.Fatalf("two jobs got uid %d", a.uid)
	}

	other, err := openUsers() // another forge on the machine
	if err != nil {
		t.Fatal(err)
	}
	defer other.lock.Close()
	defer u.release(b)
	other.next = a.uid - other.base
	c, err := other.acquire()
	if err != nil {
		t.Fatal(err)
	}
	if c.uid == a.uid {
		t.Fatalf("another forge got uid %d, which a job holds", c.uid)
	}
	u.release(a)
	other.next = a.uid - other.base
	d, err := other.acquire()
	if err != nil {
		t.Fatal(err)
	}
	if d.uid != a.uid {
		t.Errorf("released uid %d was passed over (got %d)", a.uid, d.uid)
	}
}

// TestMayReadsModeBits: who may search or execute a path is its owner's,
// group's or others' bits, by which of them the user is.
func TestMayReadsModeBits(t *testing.T) {
	dir := localtest.TempDir(t)
	me := &jobUser{uint32(os.Getuid()), uint32(os.Getgid()), -1}
	stranger := &jobUser{0x7000ffff, 0x7000ffff, -1}
	for _, tc := range []struct {
		mode      os.FileMode
		me, other bool
	}{
		{0o755, true, true},
		{0o700, true, false},
		{0o705, true, true},
		{0o075, false, true}, // the owner's own bits deny the owner
		{0o000, false, false},
	} {
		p := filepath.Join(dir, strconv.FormatUint(uint64(tc.mode), 8))
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, tc.mode); err != nil {
			t.Fatal(err)
		}
		if got := may(p, me, 0o1) == nil; got != tc.me {
			t.Errorf("%o: its owner may execute it: %v, want %v", tc.mode, got, tc.me)
		}
		err := may(p, stranger, 0o1)
		if got := err == nil; got != tc.other {
			t.Errorf("%o: another user may execute it: %v, want %v", tc.mode, got, tc.other)
		}
		if err != nil && !strings.Contains(err.Error(), "may not execute "+p) {
			t.Errorf("%o: %v; want it to say what may not be done to which file", tc.mode, err)
		}
	}
}

// TestReachablePathDropsWhatTheUserCannotSearch: a job's PATH keeps only
// the directories its user may search, all the way from /.
func TestReachablePathDropsWhatTheUserCannotSearch(t *testing.T) {
	dir := localtest.TempDir(t)
	open, closed := filepath.Join(dir, "open"), filepath.Join(dir, "closed")
	inside := filepath.Join(closed, "bin") // searchable itself, under closed
	for _, d := range []string{open, closed, inside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	stranger := &jobUser{0x7000ffff, 0x7000ffff, -1}
	got := reachablePath(strings.Join([]string{open, closed, inside, "relative", filepath.Join(dir, "missing")}, ":"), stranger)
	if want := open + ":relative"; got != want {
		t.Errorf("PATH %q, want %q", got, want)
	}
}

// TestPgroupEndsWhatRunsAsTheJobsUser: on the weakest tier that sweeps, a
// daemon that left the job's process group and cleared its environment
// (no marker) is still ended, as root, by the uid it cannot shed.
func TestPgroupEndsWhatRunsAsTheJobsUser(t *testing.T) {
	r := tierRunner(t, ContainProcessGroup, Options{})
	if r.users == nil {
		if os.Geteuid() == 0 {
			t.Fatal("root, yet jobs get no users of their own")
		}
		return // not root: the marker sweep alone (TestRunLeavesNoDaemon)
	}
	// Popen returns once the child has exec'd: by then it has a session of
	// its own and an empty environment.
	job := pyJob(t, "escape", `import subprocess, sys
p = subprocess.Popen(["/bin/sleep", "600"], env={}, start_new_session=True,
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
open(sys.argv[2], "w").write(str(p.pid))
`)
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	pid, err := strconv.Atoi(strings.TrimSpace(res.ArtifactContent))
	if err != nil {
		t.Fatalf("artifact %q: %v", res.ArtifactContent, err)
	}
	// Run returned: the box was ended, so the pid is dead (a zombie reaped by
	// init at most), never a live sleep.
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && !strings.Contains(string(b), ") Z") {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the daemon %d outlived its job: %s", pid, b)
	}
}

// TestRootBuiltEnvironmentIsBuiltAgainForJobUsers: an environment forge
// built as root (local: {user: root}, or before jobs had users) may hold
// what the jobs' users cannot reach: a Runner whose jobs have users builds
// it again, as its builder, and says why.
func TestRootBuiltEnvironmentIsBuiltAgainForJobUsers(t *testing.T) {
	cache := localtest.TempDir(t)
	asRoot := newRunner(t, Options{EnvCache: cache, User: UserRoot})
	jobs := newRunner(t, Options{EnvCache: cache})
	env := hashed(t, runner.Environment{Name: "tools", Build: []string{"id -u > built-by"}})
	if _, err := asRoot.BuildEnvironment(context.Background(), env, nil); err != nil {
		t.Fatal(err)
	}
	asRoot.Close() // it holds the environment until then
	var log []string
	b, err := jobs.BuildEnvironment(context.Background(), env, func(l string) { log = append(log, l) })
	if err != nil {
		t.Fatal(err)
	}
	by, _ := os.ReadFile(filepath.Join(b.Where, "built-by"))
	if jobs.users == nil {
		if !b.Reused || os.Geteuid() == 0 {
			t.Errorf("not root: reused %v; want the environment as built", b.Reused)
		}
		return
	}
	want := strconv.Itoa(int(jobs.users.builder().uid)) + "\n"
	if b.Reused || string(by) != want {
		t.Errorf("reused %v, built by uid %q; want it built again by %q", b.Reused, by, want)
	}
	if !strings.Contains(strings.Join(log, "\n"), "was built as uid 0, not as uid") {
		t.Errorf("the log does not say why it was built again: %q", log)
	}
}

// BenchmarkRemoveLeftovers is the scan a job's end makes of the shared
// temporary directories (nothing of its user's to remove: the usual case)
// when it cannot tell what appeared there since the job began.
func BenchmarkRemoveLeftovers(b *testing.B) {
	j := &jobUser{0x7000fffe, 0x7000fffe, -1}
	for b.Loop() {
		if err := scanLeftovers(j, nil, sharedTemps); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCommandOutOfTheJobUsersReach: a command forge's PATH has only where
// the job's user cannot reach (root's pyenv under a private /root, say) is
// not found, and the error says where it is and why it cannot run.
func TestCommandOutOfTheJobUsersReach(t *testing.T) {
	closed := filepath.Join(localtest.TempDir(t), "closed")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(closed, "forge-only-tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho ran > \"$2\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := closed + ":/usr/bin:/bin"
	r := newRunner(t, Options{Getenv: func(k string) string { return map[string]string{"PATH": path}[k] }})
	job := runner.Job{RunID: newRunID(t), CandidateID: "reach", Trial: 1, Objective: "o",
		Command: []string{"forge-only-tool"}, Timeout: 30 * time.Second}
	res := mustRun(t, r, job)
	if r.users == nil { // forge's user runs it
		assertKind(t, res, runner.ErrNone)
		return
	}
	assertKind(t, res, runner.ErrCandidateFailed)
	for _, want := range []string{"executable file not found in $PATH: forge's PATH has " + tool, "may not search " + closed, "local: {user: root}"} {
		if !strings.Contains(res.ErrorMessage, want) {
			t.Errorf("error %q does not say %q", res.ErrorMessage, want)
		}
	}
}
