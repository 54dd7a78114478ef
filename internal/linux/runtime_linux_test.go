package linux

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestAwaitExitReturnsOnceTheChildExited: AwaitExit returns when the child
// has exited and not before, and leaves it to its owner's Wait.
func TestAwaitExitReturnsOnceTheChildExited(t *testing.T) {
	cmd := exec.Command("sh", "-c", "read x; exit 3")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	state := make(chan string, 1)
	go func() {
		AwaitExit(cmd.Process.Pid)
		state <- procState(cmd.Process.Pid) // read the moment it returns
	}()
	in.Close() // the child reads EOF and exits
	if s := <-state; s != "Z" {
		t.Errorf("AwaitExit returned with the child in state %q, want Z (exited, not yet waited for)", s)
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 3 {
		t.Errorf("Wait after AwaitExit: exit code %d (%v), want 3", code, err)
	}
}

// procState is the state letter of pid in /proc/PID/stat.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "gone"
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	state, _, _ := strings.Cut(rest, " ")
	return state
}

// TestEaseMonitorSlowsOnlyTheMonitor: where this process may set another
// thread's timer slack (root), the runtime's first thread after the main one
// (sysmon) gets 1 ms and no other thread changes; elsewhere nothing changes.
func TestEaseMonitorSlowsOnlyTheMonitor(t *testing.T) {
	before := slacks(t)
	EaseMonitor()
	after := slacks(t)
	tids := make([]int, 0, len(after))
	for tid := range after {
		tids = append(tids, tid)
	}
	slices.Sort(tids)
	if len(tids) < 2 {
		t.Fatalf("threads %v: want the main thread and the monitor at least", tids)
	}
	monitor := tids[1]
	want := before[monitor]
	switch {
	case tids[0] != os.Getpid(): // ids wrapped around: the monitor is not told, nothing changes
		monitor = 0
	case os.Geteuid() == 0:
		want = monitorSlack
	}
	if monitor != 0 && after[monitor] != want {
		t.Errorf("the monitor thread %d: slack %s, want %s", monitor, after[monitor], want)
	}
	for tid, s := range after {
		if was, ok := before[tid]; ok && tid != monitor && s != was {
			t.Errorf("thread %d: slack %s, was %s: only the monitor's may change", tid, s, was)
		}
	}
}

// slacks are the timer slacks (ns) of this process's threads.
func slacks(t *testing.T) map[int]string {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	m := map[int]string{}
	for _, e := range tasks {
		tid, _ := strconv.Atoi(e.Name())
		if b, err := os.ReadFile("/proc/" + e.Name() + "/timerslack_ns"); err == nil {
			m[tid] = strings.TrimSpace(string(b))
		}
	}
	return m
}
