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

	"golang.org/x/sys/unix"

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
		if haveBuiltinInit() && p.holder.name != "forge-init" {
			t.Fatalf("the probe chose %s although the built-in init works here", p.holder.name)
		}
		if b, err := os.ReadFile("/proc/" + pid + "/comm"); err != nil || string(b) != p.holder.name+"\n" {
			t.Fatalf("the init is %q %v, want %s", b, err, p.holder.name)
		}
	}
	ended = true
	if err := ns.end(nil); err != nil {
		t.Fatal(err)
	}
}

// TestBuiltinInit: the built-in init, started as the pidns tier starts it,
// holds nothing of forge's but its pipe (fd 0), is in a process group of
// its own, named forge-init, ignores SIGCHLD, catches nothing, blocks
// nothing, waits in read(0), and exits 0 when the pipe closes, while forge
// goes on.
func TestBuiltinInit(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("no built-in init for " + runtime.GOARCH)
	}
	if !haveBuiltinInit() {
		t.Skip("close_range is refused here: the built-in init cannot work (pidns uses bash)")
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	p, err := holderInit{name: "forge-init"}.start(r)
	r.Close()
	defer w.Close() // on failure: ends the init
	if err != nil {
		missingTier(t, ContainPIDNamespace, err) // not root, no CAP_SYS_ADMIN
	}
	proc := "/proc/" + strconv.Itoa(p.Pid)
	wait.For(t, "the init to block in read(0)", 5*time.Second, func() bool {
		b, err := os.ReadFile(proc + "/syscall")
		if err != nil {
			t.Fatal(err)
		}
		return strings.HasPrefix(string(b), "0 0x0 ") // read(0, …)
	})
	status, err := os.ReadFile(proc + "/status")
	if err != nil {
		t.Fatal(err)
	}
	field := func(name string) string {
		for line := range strings.Lines(string(status)) {
			if v, ok := strings.CutPrefix(line, name+":"); ok {
				return strings.TrimSpace(v)
			}
		}
		t.Fatalf("no %s in %s", name, status)
		return ""
	}
	want := map[string]string{
		"Name": "forge-init", "SigIgn": "0000000000010000", "SigCgt": "0000000000000000",
		"SigBlk": "0000000000000000", "NSpid": strconv.Itoa(p.Pid) + "\t1",
	}
	for k, v := range want {
		if got := field(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	fds0, err := os.ReadDir(proc + "/fd")
	if err != nil || len(fds0) != 1 || fds0[0].Name() != "0" {
		t.Errorf("its descriptors: %v %v, want only 0", fds0, err)
	}
	if pgid, err := syscall.Getpgid(p.Pid); err != nil || pgid != p.Pid {
		t.Errorf("its process group %d %v, want its own", pgid, err)
	}
	w.Close()
	st, err := p.Wait()
	if err != nil || !st.Exited() || st.ExitCode() != 0 {
		t.Fatalf("after its pipe closed: %v %v, want exit 0", st, err)
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
	holders = func() []holderInit {
		return append([]holderInit{{"broken-init", []string{notExecutable, "broken-init"}}}, all...)
	}
	defer func() { holders = saved }()
	p, err := probe(ContainPIDNamespace, DefaultMaxProcs, t.TempDir())
	if err != nil {
		t.Fatalf("pidns works with %v but not with a broken init before it: %v", all[0], err)
	}
	if p.tier != ContainPIDNamespace || p.holder.name != all[0].name {
		t.Fatalf("tier %s with init %v, want pidns with %v", p.tier, p.holder, all[0])
	}
}
