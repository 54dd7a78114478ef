package linux

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/testkit/wait"
)

// TestBuiltinInit: the built-in init holds nothing of this process's but
// its pipe (fd 0), is in a process group of its own, named forge-init,
// ignores SIGCHLD, catches nothing, blocks nothing, waits in read(0), and
// exits 0 when the pipe closes, while this process goes on.
func TestBuiltinInit(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("no built-in init for " + runtime.GOARCH)
	}
	if !HaveBuiltinInit() {
		t.Skip("close_range is refused here: the built-in init cannot work")
	}
	p, w, err := Init{Name: BuiltinName}.Hold(0)
	if err != nil {
		t.Skipf("no PID namespace can be made here (root, CAP_SYS_ADMIN): %v", err)
	}
	defer w.Close() // on failure: ends the init
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
		"Name": BuiltinName, "SigIgn": "0000000000010000", "SigCgt": "0000000000000000",
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

// BenchmarkInit is what each init costs to start, hold its namespace and
// end once its pipe closes: the built-in one against bash's and cat's,
// which a local job's PID namespace would otherwise start.
func BenchmarkInit(b *testing.B) {
	for _, in := range Inits() {
		name := in.Name
		if in.Argv != nil {
			name += ":" + in.Argv[0]
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				p, w, err := in.Hold(0)
				if err != nil {
					b.Skipf("no PID namespace can be made here: %v", err)
				}
				w.Close()
				if _, err := p.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
