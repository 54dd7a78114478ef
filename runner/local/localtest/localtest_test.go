package localtest

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"
)

func TestSurvivorsFindsAndForgets(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Survivors reads /proc")
	}
	runID := "localtest-" + time.Now().Format("150405.000000000")
	// The child says it runs (its exec done: until then, forked, its
	// environment is the test's), then waits on its stdin without any
	// further exec (during one its environment cannot be read).
	cmd := exec.Command("sh", "-c", "echo running; read x")
	cmd.Env = append(os.Environ(), "FORGE_RUN_ID="+runID)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "running\n" {
		t.Fatalf("the child said %q, %v", line, err)
	}
	got := Survivors(runID)
	if !slices.Contains(got, cmd.Process.Pid) {
		t.Errorf("Survivors(%q) = %v, want it to hold %d", runID, got, cmd.Process.Pid)
	}
	if other := Survivors(runID + "-other"); len(other) != 0 {
		t.Errorf("Survivors of an unused run id = %v, want none", other)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if got := Survivors(runID); len(got) != 0 {
		t.Errorf("after kill and wait, Survivors = %v, want none", got)
	}
}
