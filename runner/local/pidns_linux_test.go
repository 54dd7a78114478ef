package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/linux"
	"github.com/forge-run/forge/internal/testkit/wait"
)

// TestPidnsHolderReapsOrphans: the namespace's init reaps the orphans it
// inherits (no zombie stays) and its read goes on through their SIGCHLDs.
func TestPidnsHolderReapsOrphans(t *testing.T) {
	p, err := probe(ContainPIDNamespace, DefaultMaxProcs, t.TempDir())
	if err != nil {
		t.Skipf("pidns is not available here: %v", err)
	}
	if !p.holderReaps {
		t.Skipf("the init does not reap here: %s", p.describe())
	}
	tr, err := p.newPidns(view{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ns := tr.(*pidnsTier)
	ended := false
	defer func() {
		if !ended {
			_ = ns.end(nil)
		}
		_ = ns.release()
	}()
	cmd := &exec.Cmd{
		Path: "/bin/sh", Dir: "/",
		Args:        []string{"sh", "-c", `i=0; while [ $i -lt 300 ]; do (sleep 0 &); i=$((i+1)); done`},
		SysProcAttr: &syscall.SysProcAttr{},
	}
	if err := ns.start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(ns.holder.Pid)
	children := "/proc/" + pid + "/task/" + pid + "/children"
	wait.For(t, "the init to reap its children (zombies)", 5*time.Second, func() bool {
		if st, err := os.ReadFile("/proc/" + pid + "/stat"); err != nil || strings.Contains(string(st), ") Z ") {
			t.Fatalf("the init ended while forge holds its pipe: %q %v", st, err)
		}
		b, err := os.ReadFile(children)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b)) == ""
	})
	// Its read went on through the SIGCHLDs: it is blocked reading its
	// stdin (read is syscall 0 on fd 0), not exiting; and it ends as the
	// tier ends it.
	if runtime.GOARCH == "amd64" {
		b, err := os.ReadFile("/proc/" + pid + "/syscall")
		if err != nil || !strings.HasPrefix(string(b), "0 0x0 ") {
			t.Fatalf("the init is not blocked in read(0): %q %v", b, err)
		}
		// and it is the one the probe chose: the built-in one where it works
		if linux.HaveBuiltinInit() && p.holder.Name != linux.BuiltinName {
			t.Fatalf("the probe chose %s although the built-in init works here", p.holder.Name)
		}
		if b, err := os.ReadFile("/proc/" + pid + "/comm"); err != nil || string(b) != p.holder.Name+"\n" {
			t.Fatalf("the init is %q %v, want %s", b, err, p.holder.Name)
		}
	}
	ended = true
	if err := ns.end(nil); err != nil {
		t.Fatal(err)
	}
}

// TestPidnsFallsBackFromAnInitThatCannotRun: when the preferred init cannot
// be started (a kernel that refuses it, say), the tier is
// still pidns, with the next init.
func TestPidnsFallsBackFromAnInitThatCannotRun(t *testing.T) {
	all := holders()
	if len(all) == 0 {
		missingTier(t, ContainPIDNamespace, "no init for the PID namespace")
	}
	notExecutable := filepath.Join(t.TempDir(), "init")
	if err := os.WriteFile(notExecutable, []byte("not a program"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := probe(ContainPIDNamespace, DefaultMaxProcs, t.TempDir()); err != nil {
		missingTier(t, ContainPIDNamespace, err) // without the broken init
	}
	saved := holders
	holders = func() []linux.Init {
		return append([]linux.Init{{Name: "broken-init", Argv: []string{notExecutable, "broken-init"}}}, all...)
	}
	defer func() { holders = saved }()
	p, err := probe(ContainPIDNamespace, DefaultMaxProcs, t.TempDir())
	if err != nil {
		t.Fatalf("pidns works with %v but not with a broken init before it: %v", all[0], err)
	}
	if p.tier != ContainPIDNamespace || p.holder.Name != all[0].Name {
		t.Fatalf("tier %s with init %v, want pidns with %v", p.tier, p.holder, all[0])
	}
}
