package local

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/forge-run/forge/internal/linux"
)

// platform is what this machine allows, found once by New.
type platform struct {
	tier        Containment
	maxProcs    int
	cg          linux.CgroupPlaces
	cgKill      bool       // job cgroups v2 can be made and have cgroup.kill
	v2Pids      bool       // job cgroups v2 have pids.max
	v1Pids      bool       // job cgroups can be made in the v1 pids hierarchy
	holder      linux.Init // how the PID namespace's init starts
	holderReaps bool       // the init reaps orphans at once (it ignores SIGCHLD, or bash handles it)
	notes       []string   // why stronger tiers were not used
	// roErr says why jobs cannot see the cache read-only (nil: they can).
	roErr error
	// cgPool keeps ended jobs' cgroups, empty, for later jobs: making and
	// removing cgroups cost each job more than taking them again (a v1
	// cgroup's mkdir is a third of a millisecond). Close removes them.
	cgPool kept[jobCgroups]
	// threads start the jobs' processes (spawn).
	threads *spawnThreads
}

func probe(want Containment, maxProcs int, tempDir string) (*platform, error) {
	p := &platform{maxProcs: maxProcs, cg: linux.FindCgroups(), threads: newSpawnThreads()}
	p.probeCgroups()
	tiers := []Containment{want}
	if want == ContainAuto {
		tiers = []Containment{ContainPIDNamespace, ContainCgroup, ContainProcessGroup}
	}
	for _, t := range tiers {
		err := p.try(t)
		if err == nil {
			p.tier = t
			p.roErr = errors.New("the process tier starts processes as they are")
			if t != ContainProcess {
				p.roErr = probeReadOnly(tempDir)
			}
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
	for _, dir := range []string{p.cg.V2, p.cg.Pids} {
		if dir != "" {
			removeStale(dir, linux.RemoveCgroupTree)
		}
	}
	if p.cg.V2 != "" {
		if dir, err := makeCgroup(p.cg.V2); err == nil {
			_, errKill := os.Stat(filepath.Join(dir, "cgroup.kill"))
			p.cgKill = errKill == nil
			p.v2Pids = linux.SetPidsMax(dir, p.maxProcs) == nil
			_ = linux.RemoveCgroup(dir)
		}
	}
	if !p.v2Pids && p.cg.Pids != "" {
		if dir, err := makeCgroup(p.cg.Pids); err == nil {
			p.v1Pids = linux.SetPidsMax(dir, p.maxProcs) == nil
			_ = linux.RemoveCgroup(dir)
		}
	}
}

// try checks that tier t works by containing a process that does nothing.
func (p *platform) try(t Containment) error {
	switch t {
	case ContainProcessGroup, ContainProcess:
		return nil
	case ContainCgroup:
		if !p.cgKill {
			return errors.New("no writable cgroup v2 with cgroup.kill")
		}
	case ContainPIDNamespace:
		inits := holders()
		if len(inits) == 0 {
			return errors.New("found neither bash nor cat for the PID namespace's init")
		}
		var errs []error
		for _, h := range inits {
			p.holder = h
			err := p.tryTier(t)
			if err == nil {
				return nil
			}
			errs = append(errs, fmt.Errorf("with %s as its init: %w", h.Name, err))
		}
		return errors.Join(errs...)
	default:
		return fmt.Errorf("unknown containment %q", t)
	}
	return p.tryTier(t)
}

func (p *platform) tryTier(t Containment) error {
	tr, err := p.newTier(t, boxSpec{})
	if err != nil {
		return err
	}
	if ns, ok := tr.(*pidnsTier); ok {
		p.holderReaps = linux.Reaps(ns.holder.Pid)
	}
	b := &box{t: tr}
	cmd := &exec.Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "exit 0"}, Dir: "/"}
	err = b.start(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	return errors.Join(err, b.close())
}

func (p *platform) newTier(t Containment, spec boxSpec) (tier, error) {
	switch t {
	case ContainPIDNamespace:
		return p.newPidns(spec.view, spec.steps)
	case ContainCgroup:
		cg, err := p.newJobCgroups(true, spec.steps)
		if err != nil {
			return nil, err
		}
		return &cgroupTier{cg: cg, view: spec.view}, nil
	case ContainProcessGroup:
		return pgroupTier{boxSpec: spec, threads: p.threads}, nil
	}
	return processTier{}, nil
}

func (p *platform) describe() string {
	var b strings.Builder
	b.WriteString(map[Containment]string{
		ContainPIDNamespace: "pidns: each job runs in its own PID namespace, ended as a whole",
		ContainCgroup:       "cgroup: each job runs in its own cgroup v2, ended with cgroup.kill",
		ContainProcessGroup: "pgroup: process groups, plus a sweep for processes carrying the job's FORGE_* variables",
		ContainProcess:      "process: only the processes forge started itself",
	}[p.tier])
	if p.tier == ContainPIDNamespace && !p.holderReaps {
		b.WriteString(" (orphans are reaped only when the job ends: the init is " + p.holder.Name + ")")
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
	if p.roErr == nil {
		b.WriteString("; environments read-only to jobs (a mount namespace each)")
		b.WriteString("; jobs see neither the manifest's directory nor the output root, and in /proc only their own processes")
	} else {
		fmt.Fprintf(&b, "; environments writable by jobs (no read-only mount: %v)", p.roErr)
		fmt.Fprintf(&b, "; jobs can read the manifest's directory (its .env too) and the output root, and see every process in /proc (no mount namespace: %v)", p.roErr)
	}
	for _, n := range p.notes {
		b.WriteString("; not " + n)
	}
	return b.String()
}

// closeThreads ends the threads kept to start processes from.
func (p *platform) closeThreads() { p.threads.close() }

// readOnly reports whether jobs can see a directory read-only.
func (p *platform) readOnly() bool { return p.roErr == nil }

func (p *platform) pidsLimit() int {
	if (p.tier == ContainPIDNamespace || p.tier == ContainCgroup) && (p.v2Pids || p.v1Pids) {
		return p.maxProcs
	}
	return 0
}
