//go:build linux

package local

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseMountinfo(t *testing.T) {
	mi := []byte(`24 30 0:22 / /sys rw,nosuid shared:7 - sysfs sysfs rw
33 24 0:28 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755
35 33 0:30 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate
41 33 0:36 / /sys/fs/cgroup/pids rw,nosuid shared:20 - cgroup cgroup rw,pids
42 33 0:37 /sub /sys/fs/cgroup/cpu\040set rw - cgroup cgroup rw,cpuset
bad line
`)
	got := parseMountinfo(mi)
	want := []mount{
		{"/", "/sys", "sysfs", "rw"},
		{"/", "/sys/fs/cgroup", "tmpfs", "ro,mode=755"},
		{"/", "/sys/fs/cgroup/unified", "cgroup2", "rw,nsdelegate"},
		{"/", "/sys/fs/cgroup/pids", "cgroup", "rw,pids"},
		{"/sub", "/sys/fs/cgroup/cpu set", "cgroup", "rw,cpuset"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("parseMountinfo =\n%+v\nwant\n%+v", got, want)
	}
	if !hasOption("rw,pids", "pids") || hasOption("rw,pidsx", "pids") {
		t.Error("hasOption")
	}
}

func TestMountPlace(t *testing.T) {
	root := mount{root: "/", point: "/sys/fs/cgroup"}
	if got := root.place("/user.slice/a"); got != "/sys/fs/cgroup/user.slice/a" {
		t.Errorf("place = %q", got)
	}
	sub := mount{root: "/docker/abc", point: "/sys/fs/cgroup"}
	if got := sub.place("/docker/abc/x"); got != "/sys/fs/cgroup/x" {
		t.Errorf("place under a sub-root = %q", got)
	}
	if got := sub.place("/docker/abcdef"); got != "" {
		t.Errorf("place outside the mount's root = %q, want empty", got)
	}
}

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
	removeStale(parent, removeCgroupTree)
	for n, remain := range names {
		_, err := os.Stat(filepath.Join(parent, n))
		if remain != (err == nil) {
			t.Errorf("%s: still there %v, want %v", n, err == nil, remain)
		}
	}
}
