//go:build linux

package local

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// How long kill waits for a job's processes to be gone before giving up.
const killWait = 10 * time.Second

// platform is what this machine allows, found once by New.
type platform struct {
	tier     Containment
	maxProcs int
	cg       cgroupPlaces
	// cgKill: job cgroups v2 can be made and have cgroup.kill.
	cgKill bool
	// v2Pids: job cgroups v2 have pids.max.
	v2Pids bool
	// v1Pids: job cgroups can be made in the v1 pids hierarchy.
	v1Pids bool
	// holder is the PID namespace init's path and argv.
	holder []string
	// holderReaps: the init ignores SIGCHLD, so orphans are reaped at once.
	holderReaps bool
	// notes say why stronger tiers were not used.
	notes []string
}

func probe(want Containment, maxProcs int) (*platform, error) {
	p := &platform{maxProcs: maxProcs, cg: findCgroups()}
	p.probeCgroups()
	tiers := []Containment{want}
	if want == ContainAuto {
		tiers = []Containment{ContainPIDNamespace, ContainCgroup, ContainProcessGroup}
	}
	for _, t := range tiers {
		err := p.try(t)
		if err == nil {
			p.tier = t
			return p, nil
		}
		if want != ContainAuto {
			return nil, fmt.Errorf("containment %q is not available here: %w", t, err)
		}
		p.notes = append(p.notes, fmt.Sprintf("%s: %v", t, err))
	}
	return nil, errors.New("no containment tier works here") // unreachable: pgroup always works
}

func (p *platform) probeCgroups() {
	for _, dir := range []string{p.cg.v2, p.cg.pids} {
		if dir != "" {
			removeStaleCgroups(dir)
		}
	}
	if p.cg.v2 != "" {
		if dir, err := makeCgroup(p.cg.v2); err == nil {
			_, errKill := os.Stat(filepath.Join(dir, "cgroup.kill"))
			p.cgKill = errKill == nil
			p.v2Pids = setPidsMax(dir, p.maxProcs) == nil
			_ = removeCgroup(dir, time.Second)
		}
	}
	if !p.v2Pids && p.cg.pids != "" {
		if dir, err := makeCgroup(p.cg.pids); err == nil {
			p.v1Pids = setPidsMax(dir, p.maxProcs) == nil
			_ = removeCgroup(dir, time.Second)
		}
	}
}

// try checks that tier t works by containing a process that does nothing.
func (p *platform) try(t Containment) error {
	switch t {
	case ContainPIDNamespace, ContainCgroup:
		if t == ContainCgroup && !p.cgKill {
			return errors.New("no writable cgroup v2 with cgroup.kill")
		}
		if t == ContainPIDNamespace {
			h, err := holderCommand()
			if err != nil {
				return err
			}
			p.holder = h
		}
		probeTier := *p
		probeTier.tier = t
		b, err := probeTier.newBox(boxSpec{})
		if err != nil {
			return err
		}
		if lb, ok := b.(*linuxBox); ok && lb.holder != nil {
			p.holderReaps = holderIgnoresSIGCHLD(lb.holder.Process.Pid)
		}
		cmd := &exec.Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "exit 0"}, Dir: "/"}
		err = b.start(cmd)
		if err == nil {
			err = cmd.Wait()
		}
		if cerr := b.close(); err == nil {
			err = cerr
		}
		return err
	case ContainProcessGroup, ContainProcess:
		return nil
	}
	return fmt.Errorf("unknown containment %q", t)
}

func (p *platform) describe() string {
	var b strings.Builder
	switch p.tier {
	case ContainPIDNamespace:
		b.WriteString("pidns: each job runs in its own PID namespace, ended as a whole")
		if !p.holderReaps {
			b.WriteString(" (orphans are reaped only when the job ends: no bash for the init)")
		}
	case ContainCgroup:
		b.WriteString("cgroup: each job runs in its own cgroup v2, ended with cgroup.kill")
	case ContainProcessGroup:
		b.WriteString("pgroup: process groups, plus a sweep for processes carrying the job's FORGE_* variables")
	case ContainProcess:
		b.WriteString("process: only the processes forge started itself")
	}
	switch {
	case p.tier == ContainProcessGroup || p.tier == ContainProcess:
	case p.v2Pids:
		fmt.Fprintf(&b, "; at most %d tasks per job (cgroup v2 pids.max)", p.maxProcs)
	case p.v1Pids:
		fmt.Fprintf(&b, "; at most %d tasks per job (cgroup v1 pids.max)", p.maxProcs)
	default:
		b.WriteString("; no task limit (no writable pids cgroup)")
	}
	for _, n := range p.notes {
		b.WriteString("; not " + n)
	}
	return b.String()
}

func (p *platform) pidsLimit() int {
	if (p.tier == ContainPIDNamespace || p.tier == ContainCgroup) && (p.v2Pids || p.v1Pids) {
		return p.maxProcs
	}
	return 0
}

// linuxBox holds one job's processes with the platform's tier.
type linuxBox struct {
	p      *platform
	marker []string

	// pidns tier
	holder     *exec.Cmd
	holderPipe *os.File // closing it ends the holder
	holderDone chan error
	nsfd       int
	nsDev      uint64
	nsIno      uint64

	// a cgroup v2 of the job: the cgroup tier, or the pids guard
	cgDir string
	cgfd  int
	// a cgroup v1 pids of the job: the pids guard
	v1Dir string

	mu      sync.Mutex
	procs   []*os.Process // what start started
	pgids   []int
	ended   bool
	killErr error // what the first kill reported, reported again after
	closed  bool
}

func (p *platform) newBox(spec boxSpec) (_ box, err error) {
	b := &linuxBox{p: p, marker: spec.marker, nsfd: -1, cgfd: -1}
	defer func() {
		if err != nil {
			_ = b.close()
		}
	}()
	guard := p.tier == ContainPIDNamespace || p.tier == ContainCgroup
	if p.tier == ContainCgroup || (guard && p.v2Pids) {
		if b.cgDir, err = makeCgroup(p.cg.v2); err != nil {
			return nil, err
		}
		if p.v2Pids {
			if err := setPidsMax(b.cgDir, p.maxProcs); err != nil {
				return nil, err
			}
		}
		if b.cgfd, err = unix.Open(b.cgDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			return nil, fmt.Errorf("open cgroup %s: %w", b.cgDir, err)
		}
	}
	if guard && !p.v2Pids && p.v1Pids {
		if b.v1Dir, err = makeCgroup(p.cg.pids); err != nil {
			return nil, err
		}
		if err := setPidsMax(b.v1Dir, p.maxProcs); err != nil {
			return nil, err
		}
	}
	if p.tier == ContainPIDNamespace {
		if err := b.startHolder(); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (b *linuxBox) attachCgroup(attr *syscall.SysProcAttr) {
	if b.cgfd >= 0 {
		attr.UseCgroupFD = true
		attr.CgroupFD = b.cgfd
	}
}

func (b *linuxBox) start(cmd *exec.Cmd) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return errBoxEnded
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Its own process group keeps the terminal's Ctrl-C away from the
	// candidate: forge decides how it ends.
	cmd.SysProcAttr.Setpgid = true
	b.attachCgroup(cmd.SysProcAttr)
	if err := spawn(cmd, b.nsfd, b.v1Dir, b.p.cg.pids); err != nil {
		return err
	}
	b.procs = append(b.procs, cmd.Process)
	b.pgids = append(b.pgids, cmd.Process.Pid)
	return nil
}

func (b *linuxBox) signal(sig os.Signal) {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	// Each process gets sig once: a second SIGTERM re-enters handlers that
	// are not written for it (Python's Popen.wait deadlocks).
	switch b.p.tier {
	case ContainPIDNamespace:
		holder := b.holder.Process.Pid
		forEachPid(func(pid int) {
			if pid != holder {
				signalIf(pid, s, b.inNamespace)
			}
		})
	case ContainCgroup:
		for _, pid := range cgroupPids(b.cgDir) {
			signalIf(pid, s, nil)
		}
	case ContainProcessGroup:
		for _, pg := range b.pgids {
			_ = syscall.Kill(-pg, s)
		}
		b.sweep(s, true)
	default:
		for _, p := range b.procs {
			_ = p.Signal(s)
		}
	}
}

// sweep sends sig to every process whose environment carries the job's
// marker, except, with outsideGroups, those still in one of the job's
// process groups (they got it already), and reports how many it found.
func (b *linuxBox) sweep(sig syscall.Signal, outsideGroups bool) int {
	if len(b.marker) == 0 {
		return 0
	}
	self := os.Getpid()
	match := b.marked
	if outsideGroups {
		match = func(pid int) bool {
			if pg, err := syscall.Getpgid(pid); err == nil && slices.Contains(b.pgids, pg) {
				return false
			}
			return b.marked(pid)
		}
	}
	n := 0
	forEachPid(func(pid int) {
		if pid != self && signalIf(pid, sig, match) {
			n++
		}
	})
	return n
}

func (b *linuxBox) marked(pid int) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	have := make(map[string]bool, len(b.marker))
	for _, kv := range strings.Split(string(env), "\x00") {
		have[kv] = true
	}
	for _, m := range b.marker {
		if !have[m] {
			return false
		}
	}
	return true
}

func (b *linuxBox) kill() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.killLocked()
}

func (b *linuxBox) killLocked() error {
	for _, p := range b.procs {
		_ = p.Kill()
	}
	if b.ended {
		return b.killErr
	}
	b.ended = true
	switch b.p.tier {
	case ContainPIDNamespace:
		b.killErr = b.endNamespace()
	case ContainCgroup:
		b.killErr = b.endCgroup()
	case ContainProcessGroup:
		b.killErr = b.endGroups()
	}
	return b.killErr
}

func (b *linuxBox) endCgroup() error {
	err := os.WriteFile(filepath.Join(b.cgDir, "cgroup.kill"), []byte("1"), 0)
	deadline := time.Now().Add(killWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		if err != nil { // no cgroup.kill: kill what is listed until nothing is
			for _, pid := range cgroupPids(b.cgDir) {
				signalIf(pid, syscall.SIGKILL, nil)
			}
		}
		empty, eerr := cgroupEmpty(b.cgDir)
		if eerr != nil {
			return fmt.Errorf("watch cgroup %s: %w", b.cgDir, eerr)
		}
		if empty {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s still has processes %s after SIGKILL", b.cgDir, killWait)
		}
		time.Sleep(pause)
	}
}

// endGroups kills the process groups and the marked processes until none is
// found, or gives up after killWait.
func (b *linuxBox) endGroups() error {
	deadline := time.Now().Add(killWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		alive := 0
		for _, pg := range b.pgids {
			if syscall.Kill(-pg, syscall.SIGKILL) == nil {
				alive++
			}
		}
		alive += b.sweep(syscall.SIGKILL, false)
		if alive == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes of the job survived SIGKILL for %s", alive, killWait)
		}
		time.Sleep(pause)
	}
}

func (b *linuxBox) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	err := b.killLocked()
	b.closed = true
	if b.nsfd >= 0 {
		unix.Close(b.nsfd)
		b.nsfd = -1
	}
	if b.cgfd >= 0 {
		unix.Close(b.cgfd)
		b.cgfd = -1
	}
	if b.cgDir != "" {
		err = errors.Join(err, removeCgroup(b.cgDir, time.Second))
	}
	if b.v1Dir != "" {
		rescueThreads(b.v1Dir, b.p.cg.pids)
		err = errors.Join(err, removeCgroup(b.v1Dir, time.Second))
	}
	return err
}
