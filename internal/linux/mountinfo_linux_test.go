package linux

import (
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
43 24 0:38 / /x rw - fstype src
`)
	got := ParseMountinfo(mi)
	want := []Mount{
		{"/", "/sys", "sysfs", "rw"},
		{"/", "/sys/fs/cgroup", "tmpfs", "ro,mode=755"},
		{"/", "/sys/fs/cgroup/unified", "cgroup2", "rw,nsdelegate"},
		{"/", "/sys/fs/cgroup/pids", "cgroup", "rw,pids"},
		{"/sub", "/sys/fs/cgroup/cpu set", "cgroup", "rw,cpuset"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("ParseMountinfo =\n%+v\nwant\n%+v", got, want)
	}
	if !HasOption("rw,pids", "pids") || HasOption("rw,pidsx", "pids") {
		t.Error("HasOption")
	}
}

func TestMountPlace(t *testing.T) {
	root := Mount{Root: "/", Point: "/sys/fs/cgroup"}
	if got := root.Place("/user.slice/a"); got != "/sys/fs/cgroup/user.slice/a" {
		t.Errorf("place = %q", got)
	}
	sub := Mount{Root: "/docker/abc", Point: "/sys/fs/cgroup"}
	if got := sub.Place("/docker/abc/x"); got != "/sys/fs/cgroup/x" {
		t.Errorf("place under a sub-root = %q", got)
	}
	if got := sub.Place("/docker/abcdef"); got != "" {
		t.Errorf("place outside the mount's root = %q, want empty", got)
	}
}
