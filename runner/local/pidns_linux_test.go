package local

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPidnsHolderReapsOrphans: the namespace's init reaps the orphans it
// inherits (no zombie stays) and its read goes on through their SIGCHLDs.
func TestPidnsHolderReapsOrphans(t *testing.T) {
	p, err := probe(ContainPIDNamespace, DefaultMaxProcs)
	if err != nil {
		t.Skipf("pidns is not available here: %v", err)
	}
	if !p.holderReaps {
		t.Skipf("the init does not reap here: %s", p.describe())
	}
	tr, err := p.newPidns()
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
	pid := strconv.Itoa(ns.holder.Process.Pid)
	children := "/proc/" + pid + "/task/" + pid + "/children"
	deadline := time.Now().Add(5 * time.Second)
	for {
		if st, err := os.ReadFile("/proc/" + pid + "/stat"); err != nil || strings.Contains(string(st), ") Z ") {
			t.Fatalf("the init ended while forge holds its pipe: %q %v", st, err)
		}
		b, err := os.ReadFile(children)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(b)) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the init still has children (zombies) %s", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Its read went on through the SIGCHLDs: it is blocked reading its
	// stdin (read is syscall 0 on fd 0), not exiting; and it ends as the
	// tier ends it.
	if runtime.GOARCH == "amd64" {
		b, err := os.ReadFile("/proc/" + pid + "/syscall")
		if err != nil || !strings.HasPrefix(string(b), "0 0x0 ") {
			t.Fatalf("the init is not blocked in read(0): %q %v", b, err)
		}
		// and it is the built-in one
		if b, err := os.ReadFile("/proc/" + pid + "/comm"); err != nil || string(b) != "forge-init\n" {
			t.Fatalf("the init is %q %v, want the built-in forge-init", b, err)
		}
	}
	ended = true
	if err := ns.end(nil); err != nil {
		t.Fatal(err)
	}
}

// TestHolderImage: the built-in init is a well-formed static executable for
// this machine, entered inside its one segment.
func TestHolderImage(t *testing.T) {
	if holderCode == nil {
		t.Skip("no built-in init for " + runtime.GOARCH)
	}
	f, err := elf.NewFile(bytes.NewReader(holderImage()))
	if err != nil {
		t.Fatal(err)
	}
	if f.Machine != elf.Machine(holderMachine) || f.Type != elf.ET_EXEC || len(f.Progs) != 1 {
		t.Fatalf("machine %v type %v segments %d", f.Machine, f.Type, len(f.Progs))
	}
	p := f.Progs[0]
	if p.Type != elf.PT_LOAD || f.Entry < p.Vaddr || f.Entry >= p.Vaddr+p.Filesz || p.Filesz != uint64(len(holderImage())) {
		t.Fatalf("entry %#x outside the segment %+v", f.Entry, p.ProgHeader)
	}
	if _, err := builtinHolder(); err != nil {
		t.Fatal(err)
	}
}

// TestPidnsFallsBackFromAnInitThatCannotRun: when the preferred init cannot
// be executed (a kernel that refuses to execute memfds, say), the tier is
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
	if _, err := probe(ContainPIDNamespace, DefaultMaxProcs); err != nil {
		missingTier(t, ContainPIDNamespace, err) // without the broken init
	}
	saved := holders
	holders = func() [][]string { return append([][]string{{notExecutable, "broken-init"}}, all...) }
	defer func() { holders = saved }()
	p, err := probe(ContainPIDNamespace, DefaultMaxProcs)
	if err != nil {
		t.Fatalf("pidns works with %v but not with a broken init before it: %v", all[0], err)
	}
	if p.tier != ContainPIDNamespace || p.holder[0] != all[0][0] {
		t.Fatalf("tier %s with init %v, want pidns with %v", p.tier, p.holder, all[0])
	}
}
