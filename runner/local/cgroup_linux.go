//go:build linux

package local

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupPlaces is where this process sits in the cgroup hierarchies that
// forge can use: a job's cgroups are made beneath these directories.
type cgroupPlaces struct {
	v2   string // this process's cgroup v2 directory, "" when there is none
	pids string // this process's cgroup v1 pids directory, "" when there is none
}

// findCgroups reads /proc/self/mountinfo and forge's own cgroups. Those are
// read from a locked thread of this goroutine (/proc/thread-self), not from
// /proc/self, which names the main thread: that may be a thread another
// Runner has moved into a job's pids cgroup to start a process there, and
// taking that cgroup for forge's own would send every later spawning
// thread "home" into it.
func findCgroups() cgroupPlaces {
	var p cgroupPlaces
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
	var v2Path, pidsPath string
	haveV2, havePids := false, false
	for _, line := range strings.Split(string(cg), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path, haveV2 = parts[2], true
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "pids" {
				pidsPath, havePids = parts[2], true
			}
		}
	}
	for _, m := range parseMountinfo(mi) {
		switch {
		case m.fstype == "cgroup2" && haveV2 && p.v2 == "":
			p.v2 = m.place(v2Path)
		case m.fstype == "cgroup" && havePids && p.pids == "" && hasOption(m.superOpts, "pids"):
			p.pids = m.place(pidsPath)
		}
	}
	return p
}

type mount struct {
	root, point, fstype, superOpts string
}

// place returns the directory of cgroup path cg under this mount, or "" when
// the mount does not show it.
func (m mount) place(cg string) string {
	if m.root == "/" {
		return filepath.Join(m.point, cg)
	}
	if cg == m.root || strings.HasPrefix(cg, m.root+"/") {
		return filepath.Join(m.point, strings.TrimPrefix(cg, m.root))
	}
	return ""
}

func parseMountinfo(b []byte) []mount {
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 5 || sep < 0 || sep+3 > len(f) {
			continue
		}
		out = append(out, mount{
			root:      unescapeMount(f[3]),
			point:     unescapeMount(f[4]),
			fstype:    f[sep+1],
			superOpts: f[sep+3],
		})
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func hasOption(opts, name string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// makeCgroup makes a fresh cgroup directory for one job beneath parent,
// named after this process so that a later forge can tell which ones a
// killed forge left behind.
func makeCgroup(parent string) (string, error) {
	dir, err := os.MkdirTemp(parent, fmt.Sprintf("forge-%d-", os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("make cgroup under %s: %w", parent, err)
	}
	return dir, nil
}

// removeStaleCgroups removes the empty job cgroups under parent whose forge
// process is gone (it was killed before it could clean up). One that still
// holds processes cannot be removed and stays.
func removeStaleCgroups(parent string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() && ownerGone(e.Name()) {
			_ = syscall.Rmdir(filepath.Join(parent, e.Name()))
		}
	}
}

// setPidsMax caps the tasks of the cgroup dir.
func setPidsMax(dir string, n int) error {
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(n)), 0); err != nil {
		return fmt.Errorf("set pids.max of %s: %w", dir, err)
	}
	return nil
}

// cgroupEmpty reports whether the cgroup v2 dir holds no process.
func cgroupEmpty(dir string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return strings.TrimSpace(v) == "0", nil
		}
	}
	return false, fmt.Errorf("%s/cgroup.events has no populated line", dir)
}

// cgroupPids lists the processes of the cgroup dir (v1 or v2).
func cgroupPids(dir string) []int {
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

// removeCgroup removes the cgroup dir, retrying while its last tasks finish
// exiting.
func removeCgroup(dir string, within time.Duration) error {
	deadline := time.Now().Add(within)
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

// ownThreadsIn names the threads of this process that a cgroup still
// holds ("; forge's own threads 12, 13 are in it"), for the error that it
// cannot be removed: a job's processes are gone by then, so a thread of
// forge's that did not get back out is the likely reason.
func ownThreadsIn(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "tasks"))
	if err != nil {
		return ""
	}
	var own []string
	for _, tid := range strings.Fields(string(b)) {
		if _, err := os.Stat("/proc/self/task/" + tid); err == nil {
			own = append(own, tid)
		}
	}
	if len(own) == 0 {
		return fmt.Sprintf("; it holds tasks %s, none of them forge's", strings.Join(strings.Fields(string(b)), ", "))
	}
	return fmt.Sprintf("; forge's own threads %s are in it", strings.Join(own, ", "))
}
