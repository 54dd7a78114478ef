package local

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupPlaces are where this process sits in the usable cgroup hierarchies.
type cgroupPlaces struct {
	v2   string // this process's cgroup v2 directory, "" when there is none
	pids string // this process's cgroup v1 pids directory, "" when there is none
}

// findCgroups reads mountinfo and forge's own cgroups from a locked thread
// (/proc/thread-self): /proc/self names the main thread, which may sit in a
// job's pids cgroup to spawn there, and taking that for home would be wrong.
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
		if hasOption(parts[1], "pids") {
			pidsPath, havePids = parts[2], true
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

// place is the directory of cgroup cg under this mount, or "" if not shown.
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
	return slices.Contains(strings.Split(opts, ","), name)
}

// makeCgroup makes a job's cgroup beneath parent, named after this process
// so that a later forge can tell what a killed forge left behind.
func makeCgroup(parent string) (string, error) {
	dir, err := os.MkdirTemp(parent, fmt.Sprintf("forge-%d-", os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("make cgroup under %s: %w", parent, err)
	}
	return dir, nil
}

// setPidsMax caps the tasks of the cgroup dir.
func setPidsMax(dir string, n int) error {
	if err := writeSmall(filepath.Join(dir, "pids.max"), strconv.Itoa(n)); err != nil {
		return fmt.Errorf("set pids.max of %s: %w", dir, err)
	}
	return nil
}

// writeSmall writes s to a cgroup control file in one write: fewer system
// calls than os.WriteFile, which readies the file for the poller.
func writeSmall(path, s string) error {
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

// cgroupEmpty reports whether the cgroup v2 dir holds no process.
func cgroupEmpty(dir string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false, err
	}
	return populatedZero(b, dir)
}

// eventsEmpty is cgroupEmpty on cgroup.events (path) open as fd, read
// from its start: a poll on fd then wakes at its next change.
func eventsEmpty(fd int, path string) (bool, error) {
	var buf [256]byte
	n, err := unix.Pread(fd, buf[:], 0)
	if err != nil {
		return false, &os.PathError{Op: "read", Path: path, Err: err}
	}
	return populatedZero(buf[:n], filepath.Dir(path))
}

// populatedZero reads the populated line of dir's cgroup.events, b.
func populatedZero(b []byte, dir string) (bool, error) {
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

// removeCgroupTree removes dir and the cgroups beneath it, deepest first.
// A cgroup that still holds a process cannot be removed, nor those above it.
func removeCgroupTree(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			_ = removeCgroupTree(filepath.Join(dir, e.Name()))
		}
	}
	return syscall.Rmdir(dir)
}

// removeCgroup removes dir, retrying up to a second while its tasks exit.
func removeCgroup(dir string) error {
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

// ownThreadsIn names forge's own threads a cgroup still holds, for the error
// that it cannot be removed: the job's processes are gone by then.
func ownThreadsIn(dir string) string {
	own, all := ownThreads(dir)
	if len(all) == 0 {
		return ""
	}
	if len(own) == 0 {
		return fmt.Sprintf("; it holds tasks %s, none of them forge's", strings.Join(all, ", "))
	}
	return fmt.Sprintf("; forge's own threads %s are in it", strings.Join(own, ", "))
}

// ownThreads lists the cgroup's tasks that are this process's threads, and all.
func ownThreads(dir string) (own, all []string) {
	b, _ := os.ReadFile(filepath.Join(dir, "tasks"))
	all = strings.Fields(string(b))
	for _, tid := range all {
		if _, err := os.Stat("/proc/self/task/" + tid); err == nil {
			own = append(own, tid)
		}
	}
	return own, all
}

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
	// pool gets them back once the job ended, empty.
	pool *cgroupPool
	// threads start the job's processes; steps time the starts.
	threads *spawnThreads
	steps   *jobSteps
}

// cgroupPool keeps the cgroups of ended jobs, empty, for the next jobs:
// making and removing cgroups cost each job more than taking them again
// (a v1 cgroup's mkdir is a third of a millisecond). Close removes them.
type cgroupPool struct {
	mu   sync.Mutex
	free []jobCgroups
}

// take returns free cgroups, with a v2 one or without, if there are any.
func (p *cgroupPool) take(withV2 bool) (jobCgroups, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, c := range p.free {
		if (c.v2 != "") == withV2 {
			p.free = slices.Delete(p.free, i, i+1)
			return c, true
		}
	}
	return jobCgroups{}, false
}

func (p *cgroupPool) put(c jobCgroups) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.threads, c.steps = nil, nil
	p.free = append(p.free, c)
}

// removeAll removes the free cgroups.
func (p *cgroupPool) removeAll() error {
	p.mu.Lock()
	free := p.free
	p.free = nil
	p.mu.Unlock()
	var errs []error
	for _, c := range free {
		c.pool = nil
		errs = append(errs, c.remove())
	}
	return errors.Join(errs...)
}

// closeCgroups removes the cgroups kept for later jobs.
func (p *platform) closeCgroups() error { return p.cgPool.removeAll() }

// newJobCgroups gives a job cgroups (v2 whenever withV2), pids.max set:
// an ended job's, or new ones; steps time the starts in them.
func (p *platform) newJobCgroups(withV2 bool, steps *jobSteps) (c jobCgroups, err error) {
	withV2 = withV2 || p.v2Pids
	if c, ok := p.cgPool.take(withV2); ok {
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
		if c.v2, err = makeCgroup(p.cg.v2); err != nil {
			return c, err
		}
		if c.v2fd, err = unix.Open(c.v2, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			c.v2fd = -1
			return c, fmt.Errorf("open cgroup %s: %w", c.v2, err)
		}
	}
	if !p.v2Pids && p.v1Pids {
		if c.v1, err = makeCgroup(p.cg.pids); err != nil {
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
		return setPidsMax(dir, c.pidsMax)
	}
	return nil
}

// empty reports whether no task is in the job's cgroups, not even one
// waiting to be reaped (pids.current counts those).
func (c *jobCgroups) empty() bool {
	if c.v2 != "" {
		if empty, err := cgroupEmpty(c.v2); err != nil || !empty {
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
	if c.pool != nil && !c.killed && (c.v2 != "" || c.v1 != "") && c.empty() {
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
		err = removeCgroup(c.v2)
	}
	if c.v1 != "" && syscall.Rmdir(c.v1) != nil {
		rescueThreads(c.v1)
		err = errors.Join(err, removeCgroup(c.v1))
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
	for _, pid := range cgroupPids(t.cg.v2) {
		signalIf(pid, sig, nil)
	}
}

// end writes cgroup.kill (else kills the listed tasks until none are left)
// and waits until the cgroup is empty, woken by cgroup.events; one empty
// already is left as it is, so that a later job may have it.
func (t *cgroupTier) end([]*os.Process) error {
	dir := t.cg.v2
	path := filepath.Join(dir, "cgroup.events")
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("watch cgroup %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if empty, err := eventsEmpty(fd, path); err == nil && empty {
		return nil // and the box starts nothing more
	}
	t.cg.killed = true
	err = writeSmall(filepath.Join(dir, "cgroup.kill"), "1")
	deadline := time.Now().Add(killWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		if err != nil {
			for _, pid := range cgroupPids(dir) {
				signalIf(pid, syscall.SIGKILL, nil)
			}
		}
		empty, eerr := eventsEmpty(fd, path)
		if eerr != nil {
			return fmt.Errorf("watch cgroup %s: %w", dir, eerr)
		}
		if empty {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s still has processes %s after SIGKILL", dir, killWait)
		}
		// A change of cgroup.events since the read above ends the wait at
		// once; pause only paces the kills when cgroup.kill failed.
		_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}, int(pause/time.Millisecond))
	}
}

func (t *cgroupTier) release() error { return t.cg.release() }
