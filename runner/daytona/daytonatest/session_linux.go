//go:build linux

package daytonatest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// What a session started, found again to be killed when it is deleted.
// A session's commands run in its sandbox's PID namespace, so what they
// leave running outlives them; the real daemon kills a session's process
// tree when it is deleted, and forge deletes the session of a command it
// timed out, so everything the session started must be found, daemons
// that called setsid (and were reparented to the namespace's init)
// included. Where this machine has a writable cgroup v2 hierarchy, each
// session has a cgroup of its own, which its commands are forked into
// (CLONE_INTO_CGROUP) and which nothing leaves: cgroup.kill ends it all.
// Elsewhere, its commands carry a marker in their environment, which
// their children inherit, and the session's end kills every process of
// the sandbox's PID namespace that carries it (one that cleared its
// environment escapes; it still dies with the sandbox).

// sessionEnv is the marker's name, in the fallback.
const sessionEnv = "DAYTONATEST_SESSION"

// cgroupProbe decides once per process where session cgroups go.
var cgroupProbe struct {
	once sync.Once
	dir  string // the emulators' parent cgroup; "" when there is none
	err  error
}

// cgroupParent is the cgroup v2 directory this process's sessions'
// cgroups go under (this process's own cgroup), or why there is none.
func cgroupParent() (string, error) {
	p := &cgroupProbe
	p.once.Do(func() { p.dir, p.err = probeCgroups() })
	return p.dir, p.err
}

func probeCgroups() (string, error) {
	mnt, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	var own string
	for line := range strings.Lines(string(self)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			own = rest
		}
	}
	if own == "" {
		return "", errors.New("this process is in no cgroup v2")
	}
	parent := filepath.Join(mnt, own)
	sweepCgroups(parent)
	// A cgroup of the probe's own, a process forked into it, and the
	// cgroup removed: what every session does.
	g, err := newCgroup(parent, fmt.Sprintf("daytonatest-probe-%d", os.Getpid()))
	if err != nil {
		return "", err
	}
	defer g.remove()
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.fd}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("fork into a cgroup: %w", err)
	}
	return parent, nil
}

// sweepCgroups removes the cgroups left under parent by emulators that
// ended without closing (a test binary killed at its timeout): their
// sandboxes' processes ended with them (a holder ends when its emulator's
// end of its stdin closes), their directories did not.
func sweepCgroups(parent string) {
	ents, _ := os.ReadDir(parent)
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "daytonatest-")
		rest = strings.TrimPrefix(rest, "probe-")
		pid, err := strconv.Atoi(strings.Split(rest, "-")[0])
		if !ok || !e.IsDir() || err != nil || processExists(pid) {
			continue
		}
		removeServerCgroup(filepath.Join(parent, e.Name()))
	}
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted, read-write.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ... - fstype source super-options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, fs := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 6 || len(fs) < 1 || fs[0] != "cgroup2" || fields[3] != "/" {
			continue
		}
		if !strings.Contains(","+fields[5]+",", ",rw,") {
			continue
		}
		return fields[4], nil
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted read-write")
}

// cgroup is one cgroup v2 directory, open for forking into.
type cgroup struct {
	dir string
	fd  int
}

func newCgroup(parent, name string) (*cgroup, error) {
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	return &cgroup{dir: dir, fd: fd}, nil
}

// kill kills every process in the cgroup.
func (g *cgroup) kill() {
	if err := os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0); err == nil {
		return
	}
	// Before Linux 5.14: each process, until none is left (a fork on the
	// way lands in the cgroup and is found next time round).
	for range 100 {
		b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
		if err != nil || len(bytes.TrimSpace(b)) == 0 {
			return
		}
		for f := range strings.FieldsSeq(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// remove kills what is left in the cgroup, waits for it to be empty and
// removes it.
func (g *cgroup) remove() {
	g.kill()
	unix.Close(g.fd)
	events, err := os.Open(filepath.Join(g.dir, "cgroup.events"))
	if err != nil {
		os.Remove(g.dir)
		return
	}
	defer events.Close()
	buf := make([]byte, 512)
	// Killed processes take a moment to exit; the kernel wakes a poll on
	// cgroup.events when "populated" changes. Bounded, in case a process
	// cannot die (uninterruptible sleep): the cgroup is then left behind.
	for range 100 {
		n, _ := unix.Pread(int(events.Fd()), buf, 0)
		if bytes.Contains(buf[:max(n, 0)], []byte("populated 0")) {
			break
		}
		unix.Poll([]unix.PollFd{{Fd: int32(events.Fd()), Events: unix.POLLPRI}}, 100)
	}
	os.Remove(g.dir)
}

// sessionProcs is how a session keeps track of what it started.
type sessionProcs struct {
	g      *cgroup // nil in the fallback
	marker string  // sessionEnv's value, in the fallback
	ns     uint64  // the sandbox's PID namespace, in the fallback
}

// newSessionProcs sets up the tracking of a session of sb (a rooted one).
func (s *Server) newSessionProcs(sb *sandbox, seq int) *sessionProcs {
	if s.cgroups != "" {
		if g, err := newCgroup(s.cgroups, fmt.Sprintf("session-%d", seq)); err == nil {
			return &sessionProcs{g: g}
		}
	}
	return &sessionProcs{marker: fmt.Sprintf("%s/%d", sb.id, seq), ns: sb.fs.pidNSIno}
}

// track makes cmd, before it starts, one of the session's.
func (sp *sessionProcs) track(cmd *exec.Cmd) {
	if sp.g != nil {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, sp.g.fd
		return
	}
	cmd.Env = append(cmd.Env, sessionEnv+"="+sp.marker)
}

// kill kills everything the session started that is still running.
func (sp *sessionProcs) kill() {
	if sp.g != nil {
		sp.g.kill()
		return
	}
	want := []byte(sessionEnv + "=" + sp.marker + "\x00")
	for range 100 {
		found := false
		eachProcIn(sp.ns, func(pid int) {
			env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			if err == nil && bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
				syscall.Kill(pid, syscall.SIGKILL)
				found = true
			}
		})
		if !found {
			return
		}
	}
}

// end kills what the session left and lets go of its cgroup.
func (sp *sessionProcs) end() {
	sp.kill()
	if sp.g != nil {
		sp.g.remove()
	}
}

// eachProcIn calls f with this machine's pid of every live process of the
// PID namespace ns.
func eachProcIn(ns uint64, f func(pid int)) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(fmt.Sprintf("/proc/%d/ns/pid", pid), &st) == nil && st.Ino == ns {
			f(pid)
		}
	}
}

// nsPID is the pid the process pid (this machine's) has in its own PID
// namespace; 0 if it is gone.
func nsPID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.Atoi(f[len(f)-1])
				return n
			}
		}
	}
	return 0
}

// serverCgroups counts the servers' cgroups made by this process.
var serverCgroups atomic.Int64

// newServerCgroup makes a server's cgroup, which its sessions' go under;
// "" when there can be none.
func newServerCgroup() string {
	parent, err := cgroupParent()
	if err != nil {
		return ""
	}
	dir := filepath.Join(parent, fmt.Sprintf("daytonatest-%d-%d", os.Getpid(), serverCgroups.Add(1)))
	if os.Mkdir(dir, 0o755) != nil {
		return ""
	}
	return dir
}

// removeServerCgroup removes a server's cgroup once its sessions have
// ended.
func removeServerCgroup(dir string) {
	if dir == "" {
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	os.Remove(dir)
}
