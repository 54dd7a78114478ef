//go:build linux

package daytonatest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/forge-run/forge/internal/linux"
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

// cgroupParent is the cgroup v2 directory this process's sessions'
// cgroups go under (this process's own cgroup), or why there is none;
// probed once per process.
var cgroupParent = sync.OnceValues(probeCgroups)

func probeCgroups() (string, error) {
	parent := linux.FindCgroups().V2
	if parent == "" {
		return "", errors.New("this process is in no cgroup v2 mounted here")
	}
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

// remove kills what is left in the cgroup, waits for it to be empty (for
// a while: a process in uninterruptible sleep cannot die, and its cgroup
// is then left behind) and removes it.
func (g *cgroup) remove() {
	unix.Close(g.fd)
	linux.EndCgroup(g.dir, 10*time.Second)
	linux.RemoveCgroup(g.dir)
}

// sessionProcs is how a session keeps track of what it started.
type sessionProcs struct {
	g      *cgroup         // nil in the fallback
	marker string          // sessionEnv's value, in the fallback
	ns     linux.Namespace // the sandbox's PID namespace, in the fallback
}

// newSessionProcs sets up the tracking of a session of sb (a rooted one).
func (s *Server) newSessionProcs(sb *sandbox, seq int) *sessionProcs {
	if s.cgroups != "" {
		if g, err := newCgroup(s.cgroups, fmt.Sprintf("session-%d", seq)); err == nil {
			return &sessionProcs{g: g}
		}
	}
	return &sessionProcs{marker: fmt.Sprintf("%s/%d", sb.id, seq), ns: sb.fs.pidNSID}
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
		linux.KillCgroup(sp.g.dir)
		return
	}
	marker := []string{sessionEnv + "=" + sp.marker}
	marked := func(pid int) bool { return linux.EnvironHas(pid, marker) }
	for range 100 {
		found := false
		sp.ns.EachPid(func(pid int) {
			if linux.SignalIf(pid, syscall.SIGKILL, marked) {
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

// newServerCgroup makes a server's cgroup, which its sessions' go under;
// "" when there can be none.
func newServerCgroup() string {
	parent, err := cgroupParent()
	if err != nil {
		return ""
	}
	dir, err := linux.MakeCgroup(parent, fmt.Sprintf("daytonatest-%d-", os.Getpid()))
	if err != nil {
		return ""
	}
	return dir
}

// removeServerCgroup removes a server's cgroup once its sessions have
// ended.
func removeServerCgroup(dir string) {
	if dir != "" {
		linux.RemoveCgroupTree(dir)
	}
}
