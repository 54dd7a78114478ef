package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// CgroupPlaces are where this process sits in the usable cgroup hierarchies.
type CgroupPlaces struct {
	V2   string // this process's cgroup v2 directory, "" when there is none
	Pids string // this process's cgroup v1 pids directory, "" when there is none
}

// FindCgroups reads mountinfo and this process's cgroups from a locked
// thread (/proc/thread-self): /proc/self names the main thread, which may
// sit in a job's pids cgroup to spawn there, and taking that for home
// would be wrong.
func FindCgroups() CgroupPlaces {
	var p CgroupPlaces
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return p
	}
	runtime.LockOSThread()
	cg, err := os.ReadFile("/proc/thread-self/cgroup")
	runtime.UnlockOSThread()
	if err != nil {
		return p
	}
	var v2Path, pidsPath string // never "" once found: a cgroup's path starts with /
	for _, line := range strings.Split(string(cg), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path = parts[2]
		}
		if HasOption(parts[1], "pids") {
			pidsPath = parts[2]
		}
	}
	for _, m := range ParseMountinfo(mi) {
		switch {
		case m.FSType == "cgroup2" && v2Path != "" && p.V2 == "":
			p.V2 = m.Place(v2Path)
		case m.FSType == "cgroup" && pidsPath != "" && p.Pids == "" && HasOption(m.SuperOpts, "pids"):
			p.Pids = m.Place(pidsPath)
		}
	}
	return p
}

// MakeCgroup makes a cgroup beneath parent named prefix and a random tail.
func MakeCgroup(parent, prefix string) (string, error) {
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return "", fmt.Errorf("make cgroup under %s: %w", parent, err)
	}
	return dir, nil
}

// SetPidsMax caps the tasks of the cgroup dir.
func SetPidsMax(dir string, n int) error {
	if err := WriteSmall(filepath.Join(dir, "pids.max"), strconv.Itoa(n)); err != nil {
		return fmt.Errorf("set pids.max of %s: %w", dir, err)
	}
	return nil
}

// WriteSmall writes s to a cgroup control file in one write: fewer system
// calls than os.WriteFile, which readies the file for the poller.
func WriteSmall(path, s string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(s)); err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// CgroupEmpty reports whether the cgroup v2 dir holds no process.
func CgroupEmpty(dir string) (bool, error) {
	path := filepath.Join(dir, "cgroup.events")
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	return eventsEmpty(fd, path)
}

// eventsEmpty is CgroupEmpty on cgroup.events (path) open as fd, read
// from its start: a poll on fd then wakes at its next change.
func eventsEmpty(fd int, path string) (bool, error) {
	var buf [256]byte
	n, err := unix.Pread(fd, buf[:], 0)
	if err != nil {
		return false, &os.PathError{Op: "read", Path: path, Err: err}
	}
	for line := range strings.Lines(string(buf[:n])) {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return strings.TrimSpace(v) == "0", nil
		}
	}
	return false, fmt.Errorf("%s has no populated line", path)
}

// CgroupPids lists the processes of the cgroup dir (v1 or v2).
func CgroupPids(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// KillCgroup kills every process in the cgroup v2 dir without waiting:
// cgroup.kill, else (before Linux 5.14) each process it lists.
func KillCgroup(dir string) {
	if WriteSmall(filepath.Join(dir, "cgroup.kill"), "1") != nil {
		for _, pid := range CgroupPids(dir) {
			SignalIf(pid, syscall.SIGKILL, nil)
		}
	}
}

// EndCgroup kills every process in the cgroup v2 dir and waits until it is
// empty, woken by cgroup.events, for at most wait. One empty already is
// left as it is (killed false): cgroup.kill was not written, so it may be
// taken again (Linux kills whatever is cloned into a killed cgroup).
func EndCgroup(dir string, wait time.Duration) (killed bool, err error) {
	path := filepath.Join(dir, "cgroup.events")
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("watch cgroup %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if empty, err := eventsEmpty(fd, path); err == nil && empty {
		return false, nil
	}
	err = WriteSmall(filepath.Join(dir, "cgroup.kill"), "1")
	deadline := time.Now().Add(wait)
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		if err != nil {
			for _, pid := range CgroupPids(dir) {
				SignalIf(pid, syscall.SIGKILL, nil)
			}
		}
		empty, eerr := eventsEmpty(fd, path)
		if eerr != nil {
			return true, fmt.Errorf("watch cgroup %s: %w", dir, eerr)
		}
		if empty {
			return true, nil
		}
		if time.Now().After(deadline) {
			return true, fmt.Errorf("cgroup %s still has processes %s after SIGKILL", dir, wait)
		}
		// A change of cgroup.events since the read above ends the wait at
		// once; pause only paces the kills when cgroup.kill failed.
		_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}, int(pause/time.Millisecond))
	}
}

// RemoveCgroupTree removes dir and the cgroups beneath it, deepest first.
// A cgroup that still holds a process cannot be removed, nor those above it.
func RemoveCgroupTree(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			_ = RemoveCgroupTree(filepath.Join(dir, e.Name()))
		}
	}
	return syscall.Rmdir(dir)
}

// RemoveCgroup removes dir, retrying up to a second while its tasks exit.
func RemoveCgroup(dir string) error {
	deadline := time.Now().Add(time.Second)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w%s", dir, err, ownThreadsIn(dir))
		}
		time.Sleep(pause)
	}
}

// ownThreadsIn names this process's threads a cgroup still holds, for the
// error that it cannot be removed: the processes it held are gone by then.
func ownThreadsIn(dir string) string {
	own, all := OwnThreads(dir)
	if len(all) == 0 {
		return ""
	}
	if len(own) == 0 {
		return fmt.Sprintf("; it holds tasks %s, none of them forge's", strings.Join(all, ", "))
	}
	return fmt.Sprintf("; forge's own threads %s are in it", strings.Join(own, ", "))
}

// OwnThreads lists the cgroup's tasks that are this process's threads, and all.
func OwnThreads(dir string) (own, all []string) {
	b, _ := os.ReadFile(filepath.Join(dir, "tasks"))
	all = strings.Fields(string(b))
	for _, tid := range all {
		if _, err := os.Stat("/proc/self/task/" + tid); err == nil {
			own = append(own, tid)
		}
	}
	return own, all
}
