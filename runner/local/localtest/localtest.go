// Package localtest holds test helpers for code that runs local jobs, such as
// proving no candidate process is left behind. It looks at the machine as an
// outside observer would, knowing nothing of the backend's internals.
package localtest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Python is the real interpreter (not a pyenv shim, which would add its own
// variables to a candidate's environment and slow every start) behind the
// first python3 on PATH that every user may run: when forge is root its jobs
// run as users of their own (root's pyenv, under a private /root, is not
// theirs).
func Python() (string, error) {
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(d, "python3")
		if !filepath.IsAbs(d) || !everyoneRuns(p) {
			continue
		}
		out, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output()
		if err != nil {
			continue
		}
		if exe := strings.TrimSpace(string(out)); everyoneRuns(exe) {
			return exe, nil
		}
	}
	return "", errors.New("these tests need a python3 on PATH that every user may run")
}

// everyoneRuns reports whether any user may execute p: others may search
// every directory above it and execute it.
func everyoneRuns(p string) bool {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	for d := filepath.Dir(real); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	fi, err := os.Stat(real)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o001 != 0
}

// TempDir is t.TempDir(), which other users may search (not list): when
// forge is root its jobs run as users of their own, who must reach their
// working directories in it. Only the directories below os.TempDir() that
// the test made are changed.
func TempDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	top := filepath.Clean(os.TempDir())
	for d := dir; d != top && filepath.Dir(d) != d; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, fi.Mode().Perm()|0o001); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Survivors returns the pids of live processes, other than the caller, whose
// environment carries FORGE_RUN_ID=runID; after a run it should be empty. It
// reads /proc: elsewhere it returns nil and proves nothing, and it sees other
// users' processes only when it may read their environment.
func Survivors(runID string) []int {
	if runtime.GOOS != "linux" {
		return nil
	}
	want := "FORGE_RUN_ID=" + runID
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && slices.Contains(strings.Split(string(env), "\x00"), want) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// SharedDir is a directory every user may write in: where a test and its
// candidates, which may run as users of their own, leave each other files.
// It is one of its own in os.TempDir(), not under t.TempDir(): a run hides
// its manifest's directory and output root from its jobs, with the top
// directory holding them in os.TempDir(). Removed when the test ends.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "forge-test-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}
