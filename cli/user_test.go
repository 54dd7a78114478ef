//go:build unix

package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/forge-run/forge/runner/local/localtest"
)

// TestSamplesPlayAsAnotherUser: a forge that is not root (no namespaces,
// no uids to hand out: its jobs run as itself) plays the sample tournament
// and the suite as a root one does. As root the test is that forge as
// nobody (65534), from a copy of the samples it may read; as another user,
// as that user.
func TestSamplesPlayAsAnotherUser(t *testing.T) {
	t.Parallel()
	dir := localtest.SharedDir(t)
	for _, p := range []string{"forge.yaml", "candidates", "examples"} {
		if err := os.CopyFS(filepath.Join(dir, p), os.DirFS(filepath.Join("..", p))); err != nil {
			if err := copyFile(filepath.Join("..", p), filepath.Join(dir, p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// This test binary is forge under that name (TestMain).
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	forge := filepath.Join(dir, "forge")
	if err := os.WriteFile(forge, b, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o777); err != nil {
		t.Fatal(err)
	}
	who := "as this user"
	for _, tc := range []struct {
		args   []string
		winner string
	}{
		{[]string{"run"}, "winner: alpha"},
		{[]string{"run", "-f", "examples/suite/forge.yaml", "--quiet"}, "winner: careful"},
	} {
		cmd := exec.Command(forge, append(tc.args, "--out", filepath.Join(home, "artifacts"))...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home, "XDG_CACHE_HOME=" + filepath.Join(home, "cache")}
		if os.Geteuid() == 0 {
			who = "as nobody (uid 65534)"
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
		}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), tc.winner) {
			t.Errorf("forge %s %s: %v, want %q\n%s", strings.Join(tc.args, " "), who, err, tc.winner, out)
		}
	}
}
