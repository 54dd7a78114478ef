//go:build linux

package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/testkit/wait"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local/localtest"
)

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
	cache := localtest.TempDir(t)
	g := newGate(t)
	env := g.env(t, "agent")
	spec, err := json.Marshal(map[string]any{"Cache": cache, "Temp": localtest.TempDir(t), "Env": env})
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
	wait.For(t, "either forge to wait for the lock on "+path, 60*time.Second, func() bool {
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
					return true
				}
			}
		}
		return false
	})
}
