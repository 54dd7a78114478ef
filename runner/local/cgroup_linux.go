package local

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/forge-run/forge/internal/linux"
	"golang.org/x/sys/unix"
)

// jobCgroups are a job's cgroups: a v2 one its processes are cloned into,
// else a v1 pids one that the spawning thread joins.
type jobCgroups struct {
	v2      string
	v2fd    int
	v1      string
	v1Tasks int // the v1 cgroup's tasks file, open for writing
	// pidsMax is the cap, when one is set.
	pidsMax int
	// killed: cgroup.kill was written to v2, which is then never taken
	// again (Linux kills whatever is cloned into it after that).
	killed bool
	// emptied: found empty once its box ended, which it stays: no task
	// is left in it to fork.
	emptied bool
	// pool gets them back once the job ended, empty.
	pool *kept[jobCgroups]
	// threads start the job's processes; steps time the starts.
	threads *spawnThreads
	steps   *jobSteps
}

// closeCgroups removes the cgroups kept for later jobs.
func (p *platform) closeCgroups() error {
	var errs []error
	for _, c := range p.cgPool.takeAll() {
		errs = append(errs, c.remove())
	}
	return errors.Join(errs...)
}

// newJobCgroups gives a job cgroups (v2 whenever withV2), pids.max set:
// an ended job's, or new ones; steps time that and the starts in them.
func (p *platform) newJobCgroups(withV2 bool, steps *jobSteps) (c jobCgroups, err error) {
	defer steps.add(stepCgroup, steps.now())
	withV2 = withV2 || p.v2Pids
	if c, ok := p.cgPool.take(func(c jobCgroups) bool { return (c.v2 != "") == withV2 }); ok {
		c.threads, c.steps = p.threads, steps
		// Set again: a job running as root may have changed it.
		if err := c.setPidsMax(); err == nil {
			return c, nil
		}
		_ = c.remove()
	}
	c = jobCgroups{v2fd: -1, v1Tasks: -1, pool: &p.cgPool, threads: p.threads, steps: steps}
	if p.v2Pids || p.v1Pids {
		c.pidsMax = p.maxProcs
	}
	defer func() {
		if err != nil {
			_ = c.remove()
		}
	}()
	if withV2 {
		if c.v2, err = makeCgroup(p.cg.V2); err != nil {
			return c, err
		}
		if c.v2fd, err = unix.Open(c.v2, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			c.v2fd = -1
			return c, fmt.Errorf("open cgroup %s: %w", c.v2, err)
		}
	}
	if !p.v2Pids && p.v1Pids {
		if c.v1, err = makeCgroup(p.cg.Pids); err != nil {
			return c, err
		}
		tasks := filepath.Join(c.v1, "tasks")
		if c.v1Tasks, err = unix.Open(tasks, unix.O_WRONLY|unix.O_CLOEXEC, 0); err != nil {
			c.v1Tasks = -1
			return c, fmt.Errorf("open %s: %w", tasks, err)
		}
	}
	return c, c.setPidsMax()
}

// pidsDir is the cgroup whose pids.max caps the job, or "".
func (c *jobCgroups) pidsDir() string {
	switch {
	case c.pidsMax == 0:
		return ""
	case c.v1 != "":
		return c.v1
	}
	return c.v2
}

func (c *jobCgroups) setPidsMax() error {
	if dir := c.pidsDir(); dir != "" {
		return linux.SetPidsMax(dir, c.pidsMax)
	}
	return nil
}

// empty reports whether no task is in the job's cgroups, not even one
// waiting to be reaped (pids.current counts those).
func (c *jobCgroups) empty() bool {
	if c.v2 != "" {
		if empty, err := linux.CgroupEmpty(c.v2); err != nil || !empty {
			return false
		}
	}
	if dir := c.pidsDir(); dir != "" {
		b, err := os.ReadFile(filepath.Join(dir, "pids.current"))
		if err != nil || strings.TrimSpace(string(b)) != "0" {
			return false
		}
	}
	return true
}

// release gives the ended job's cgroups back to the pool when they are
// empty, else removes them.
func (c *jobCgroups) release() error {
	if c.pool != nil && !c.killed && (c.v2 != "" || c.v1 != "") && (c.emptied || c.empty()) {
		c.threads, c.steps, c.emptied = nil, nil, false // the next job's
		c.pool.put(*c)
		*c = jobCgroups{v2fd: -1, v1Tasks: -1}
		return nil
	}
	return c.remove()
}

// start starts cmd in the job's cgroups, and in PID namespace nsfd if >= 0.
func (c *jobCgroups) start(cmd *exec.Cmd, nsfd int, v view) error {
	if c.v2fd >= 0 {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = c.v2fd
	}
	return spawn(cmd, nsfd, c.v1Tasks, v, c.steps, c.threads)
}

// remove removes the job's cgroups. A busy v1 cgroup may still hold a thread
// of forge's own: that is moved home first.
func (c *jobCgroups) remove() error {
	var err error
	if c.v2fd >= 0 {
		unix.Close(c.v2fd)
		c.v2fd = -1
	}
	if c.v1Tasks >= 0 {
		unix.Close(c.v1Tasks)
		c.v1Tasks = -1
	}
	if c.v2 != "" {
		err = linux.RemoveCgroup(c.v2)
	}
	if c.v1 != "" && syscall.Rmdir(c.v1) != nil {
		rescueThreads(c.v1)
		err = errors.Join(err, linux.RemoveCgroup(c.v1))
	}
	return err
}

// cgroupTier is the cgroup tier: the job's own cgroup v2, ended by
// cgroup.kill; view is how the job sees the file system.
type cgroupTier struct {
	cg   jobCgroups
	view view
}

func (t *cgroupTier) start(cmd *exec.Cmd) error { return t.cg.start(cmd, -1, t.view) }

func (t *cgroupTier) signal(sig syscall.Signal, _ []*os.Process) {
	for _, pid := range linux.CgroupPids(t.cg.v2) {
		linux.SignalIf(pid, sig, nil)
	}
}

// end kills the cgroup's processes and waits until it is empty; one empty
// already is left as it is, so that a later job may have it.
func (t *cgroupTier) end([]*os.Process) error {
	killed, err := linux.EndCgroup(t.cg.v2, killWait)
	t.cg.killed = t.cg.killed || killed
	return err
}

func (t *cgroupTier) release() error { return t.cg.release() }

// makeCgroup makes a job's cgroup beneath parent, named after this process
// so that a later forge can tell what a killed forge left behind.
func makeCgroup(parent string) (string, error) {
	return linux.MakeCgroup(parent, fmt.Sprintf("forge-%d-", os.Getpid()))
}
