// Package localtest holds test helpers for code that runs local jobs, such as
// proving no candidate process is left behind. It looks at the machine as an
// outside observer would, knowing nothing of the backend's internals.
package localtest

import (
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Survivors returns the pids of live processes, other than the caller, whose
// environment carries FORGE_RUN_ID=runID; after a run it should be empty. It
// reads /proc: elsewhere it returns nil and proves nothing, and it sees other
// users' processes only when it may read their environment.
func Survivors(runID string) []int {
	if runtime.GOOS != "linux" {
		return nil
	}
	want := "FORGE_RUN_ID=" + runID
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	self := os.Getpid()
	var pids []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + n + "/environ")
		if err != nil || len(env) == 0 {
			continue
		}
		if slices.Contains(strings.Split(string(env), "\x00"), want) {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids
}
