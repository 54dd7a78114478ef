//go:build unix

package local

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/forge-run/forge/runner/local/localtest"
)

// TestNewRemovesWorkdirsOfKilledForges: a forge killed before it cleaned up
// leaves forge-<pid>-… working directories; the next New removes those whose
// forge is gone (even read-only ones) and nothing else.
func TestNewRemovesWorkdirsOfKilledForges(t *testing.T) {
	dir := localtest.TempDir(t)
	dead, live := deadAndLivePids(t)
	names := map[string]bool{ // name: should remain
		fmt.Sprintf("forge-%d-alpha-123", dead):        false,
		fmt.Sprintf("forge-%d-beta-456", live):         true,
		fmt.Sprintf("forge-%d-gamma-789", os.Getpid()): true,
		"forge-alpha-123":                              true, // no owner in the name
		"not-forge-1":                                  true,
	}
	for name := range names {
		sub := filepath.Join(dir, name, "ro")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "f"), []byte("x"), 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(sub, 0o555); err != nil { // a candidate made it read-only
			t.Fatal(err)
		}
	}
	if _, err := New(Options{TempDir: dir}); err != nil {
		t.Fatal(err)
	}
	for name, keep := range names {
		_, err := os.Stat(filepath.Join(dir, name))
		if exists := err == nil; exists != keep {
			t.Errorf("%s: exists=%v, want %v", name, exists, keep)
		}
	}
	for name := range names { // let t.TempDir clean up
		os.Chmod(filepath.Join(dir, name, "ro"), 0o755)
	}
}

// deadAndLivePids returns the pid of a process that has exited and of one
// that lives until the test ends.
func deadAndLivePids(t *testing.T) (dead, live int) {
	t.Helper()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	alive := exec.Command("sleep", "60")
	if err := alive.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { alive.Process.Kill(); alive.Wait() })
	return gone.Process.Pid, alive.Process.Pid
}
