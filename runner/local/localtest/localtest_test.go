package localtest

import (
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
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), "FORGE_RUN_ID="+runID)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
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
