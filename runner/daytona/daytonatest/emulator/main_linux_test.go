package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/testkit/wait"
)

// TestEndsWithItsParent: the emulator started by a process that is then
// killed (go run, ended with kill $!) ends too, instead of serving on,
// orphaned; and -port serves where it says.
func TestEndsWithItsParent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	// sh stands for go run: it starts the emulator, says its pid, waits.
	emu := emulatorCmd("-port", port)
	parent := exec.Command("sh", "-c", `"$0" & echo $!; wait`, os.Args[0])
	parent.Env = emu.Env
	stdout, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	var got []string
	for len(got) < 3 && lines.Scan() {
		got = append(got, lines.Text())
	}
	if len(got) < 3 || got[1] != "export DAYTONA_API_URL=http://127.0.0.1:"+port+"/api" {
		parent.Process.Kill()
		t.Fatalf("the emulator printed %q; want its pid, then DAYTONA_API_URL on port %s", got, port)
	}
	pid, err := strconv.Atoi(got[0])
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL) // on failure
	parent.Process.Kill()
	parent.Wait()
	wait.For(t, "the emulator to end with its parent", 10*time.Second, func() bool {
		b, err := os.ReadFile("/proc/" + got[0] + "/stat")
		if err != nil {
			return true // gone, reaped
		}
		// A zombie (Z) has ended; its new parent has not reaped it yet.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		return len(f) > 0 && f[0] == "Z"
	})
}
