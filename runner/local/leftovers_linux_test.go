package local

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forge-run/forge/runner"
	"golang.org/x/sys/unix"
)

// TestTempWatchTellsWhatAppeared: the watch tells the entries made or moved
// into the top of its directories since a mark, nothing deeper or older;
// a directory it cannot watch, and everything once events were lost, are to
// be looked at whole.
func TestTempWatchTellsWhatAppeared(t *testing.T) {
	root := t.TempDir()
	a, b, missing := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "missing")
	for _, d := range []string{a, b, filepath.Join(a, "sub")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	touch := func(p string) {
		t.Helper()
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := newTempWatch([]string{a, b, missing})
	if w == nil {
		t.Skip("no inotify here")
	}
	touch(filepath.Join(a, "before"))
	m := w.mark()
	touch(filepath.Join(a, "new"))
	touch(filepath.Join(a, "sub", "deep"))
	if err := os.Mkdir(filepath.Join(b, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(a, "before"), filepath.Join(a, "moved")); err != nil {
		t.Fatal(err)
	}
	check := func(m int64, wantAppeared, wantUnwatched []string) {
		t.Helper()
		appeared, unwatched := w.since(m)
		slices.Sort(appeared)
		if !slices.Equal(appeared, wantAppeared) || !slices.Equal(unwatched, wantUnwatched) {
			t.Errorf("since mark %d: appeared %q, unwatched %q; want %q, %q", m, appeared, unwatched, wantAppeared, wantUnwatched)
		}
	}
	check(m, []string{filepath.Join(a, "moved"), filepath.Join(a, "new"), filepath.Join(b, "dir")}, []string{missing})
	m2 := w.mark()
	check(m2, nil, []string{missing})

	w.mu.Lock()
	w.lose() // as when the queue overflows
	w.mu.Unlock()
	check(m2, nil, []string{a, b, missing})
	m3 := w.mark()
	touch(filepath.Join(a, "later"))
	check(m3, []string{filepath.Join(a, "later")}, []string{missing})

	if err := os.Remove(filepath.Join(b, "dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	check(m3, nil, []string{a, b, missing}) // what b held meanwhile is unknown
	check(w.mark(), nil, []string{b, missing})
}

// TestJobLeavesNothingInSharedTemps: as root, what a job's user leaves at
// the top of /tmp and /dev/shm goes with the job.
func TestJobLeavesNothingInSharedTemps(t *testing.T) {
	r := newRunner(t, Options{})
	if r.users == nil {
		t.Skip("jobs run as forge's user: only root gives them users of their own")
	}
	job := pyJob(t, "litter", `import os, sys, tempfile
d = tempfile.mkdtemp(prefix="forge-test-left-", dir="/tmp")
open(os.path.join(d, "f"), "w").write("x")
f = tempfile.NamedTemporaryFile(prefix="forge-test-left-", dir="/dev/shm", delete=False)
open(sys.argv[2], "w").write(d + "\n" + f.name + "\n")
`)
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	left := strings.Fields(string(res.Artifact))
	if len(left) != 2 {
		t.Fatalf("artifact %q: want the two paths the job left", res.Artifact)
	}
	for _, p := range left {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s, the job's, is still there", p)
			os.RemoveAll(p)
		}
	}
}

// TestLeftoversAreTheUsersAlone: what appeared in /tmp while a uid was
// held goes at its end when the uid owns it, and stays when another does.
func TestLeftoversAreTheUsersAlone(t *testing.T) {
	u, err := newUsers(UserUnprivileged)
	if err != nil {
		t.Fatal(err)
	}
	if u == nil {
		t.Skip("not root: jobs run as forge's user")
	}
	j, err := u.acquire()
	if err != nil {
		t.Fatal(err)
	}
	defer u.release(j)
	id := newRunID(t)
	mine, roots, kept := "/tmp/forge-test-mine-"+id, "/tmp/forge-test-roots-"+id, "/tmp/forge-test-kept-"+id
	for _, p := range []string{mine, roots, kept} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(p) })
	}
	for _, p := range []string{mine, kept} {
		if err := os.Lchown(p, int(j.uid), int(j.gid)); err != nil {
			t.Fatal(err)
		}
	}
	if err := u.removeLeftovers(j, kept); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{mine: false, roots: true, kept: true} {
		if _, err := os.Lstat(p); (err == nil) != want {
			t.Errorf("%s still there: %v, want %v", p, err == nil, want)
		}
	}
}

// TestKilledForgesLeftoversGo: a uid whose last job's forge was killed
// (its byte still set) may own leftovers its watch never saw: the next
// job of that uid looks at every entry, and they go with it.
func TestKilledForgesLeftoversGo(t *testing.T) {
	u, err := newUsers(UserUnprivileged)
	if err != nil {
		t.Fatal(err)
	}
	if u == nil || u.watch == nil {
		t.Skip("not root, or no inotify: every job's end looks at every entry")
	}
	j, err := u.acquire()
	if err != nil {
		t.Fatal(err)
	}
	if j.mark < 0 {
		u.release(j)
		t.Skipf("uid %d was left by a killed forge", j.uid)
	}
	left := filepath.Join("/tmp", "forge-test-killed-"+newRunID(t))
	if err := os.WriteFile(left, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(left) })
	if err := os.Lchown(left, int(j.uid), int(j.gid)); err != nil {
		t.Fatal(err)
	}
	// The forge is killed: its lock goes, its byte stays.
	off := j.uid - u.base
	u.mu.Lock()
	if err := u.setLock(off, unix.F_UNLCK); err != nil {
		t.Fatal(err)
	}
	delete(u.held, off)
	u.next = off
	u.mu.Unlock()

	again, err := u.acquire()
	if err != nil {
		t.Fatal(err)
	}
	defer u.release(again)
	if again.uid != j.uid || again.mark >= 0 {
		t.Fatalf("got uid %d, mark %d; want uid %d again, looking at every entry", again.uid, again.mark, j.uid)
	}
	if err := u.removeLeftovers(again); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(left); err == nil {
		t.Errorf("%s, left by the killed forge's job, is still there", left)
	}
}
