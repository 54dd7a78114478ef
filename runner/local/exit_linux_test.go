package local

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestAwaitExitWaitsForTheExit: awaitExit returns only once the process
// has exited, leaving it a zombie for Wait to reap. The process (cat) runs
// until its stdin closes, which the test does only after awaitExit was
// called; an awaitExit that returned at once sees it still running.
func TestAwaitExitWaitsForTheExit(t *testing.T) {
	cmd := exec.Command("cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait() //nolint:errcheck
	defer stdin.Close()
	calling, state := make(chan struct{}), make(chan string, 1)
	go func() {
		close(calling)
		awaitExit(cmd.Process)
		b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
		if err != nil {
			state <- err.Error()
			return
		}
		_, rest, _ := strings.Cut(string(b), ") ")
		state <- rest[:1]
	}()
	<-calling
	stdin.Close()
	if s := <-state; s != "Z" {
		t.Fatalf("after awaitExit the process is in state %q, want Z (exited, not reaped)", s)
	}
}
