//go:build linux

package local

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/forge-run/forge/internal/linux"
)

func TestRemoveStaleCgroups(t *testing.T) {
	parent := t.TempDir()
	dead, live := deadAndLivePids(t)
	self := os.Getpid()
	names := map[string]bool{ // name: should remain
		fmt.Sprintf("forge-%d-1234", dead):     false,
		fmt.Sprintf("forge-%d-busy", dead):     true,  // not empty: rmdir fails
		fmt.Sprintf("forge-%d-tree", dead):     false, // a child cgroup, removed first
		fmt.Sprintf("forge-%d-busytree", dead): true,  // a child cgroup still busy
		fmt.Sprintf("forge-%d-5678", live):     true,
		fmt.Sprintf("forge-%d-9012", self):     true,
		"forge-job-3456":                       true,
		"other":                                true,
	}
	for n := range names {
		if err := os.Mkdir(filepath.Join(parent, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(parent, fmt.Sprintf("forge-%d-busy", dead), "tasks"), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"tree", "busytree"} {
		if err := os.MkdirAll(filepath.Join(parent, fmt.Sprintf("forge-%d-%s", dead, n), "forge-1-child"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	busyChild := filepath.Join(parent, fmt.Sprintf("forge-%d-busytree", dead), "forge-1-child", "tasks")
	if err := os.WriteFile(busyChild, []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	removeStale(parent, linux.RemoveCgroupTree)
	for n, remain := range names {
		_, err := os.Stat(filepath.Join(parent, n))
		if remain != (err == nil) {
			t.Errorf("%s: still there %v, want %v", n, err == nil, remain)
		}
	}
}
