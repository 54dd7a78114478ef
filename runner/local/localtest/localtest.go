// Package localtest holds test helpers for code that runs jobs with the
// local backend, such as CLI tests that must prove no candidate process is
// left behind. It is meant for tests only and knows nothing of the backend's
// internals: it looks at the machine the way an outside observer would.
package localtest

import (
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Survivors returns the pids of live processes whose environment carries
// FORGE_RUN_ID=runID, excluding the calling process. After a run it should
// be empty. Zombies are not listed (they are dead, and have no readable
// environment).
//
// It reads /proc and so only works on Linux; elsewhere it returns nil, so a
// test asserting emptiness proves nothing there. It sees processes of other
// users only when the caller may read their environment (root may).
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
