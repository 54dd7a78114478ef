package local

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Containment names how a job's processes are held so all can be ended.
type Containment string

// The containment tiers, strongest first. doc.go says what each guarantees.
const (
	// ContainAuto picks the strongest tier this machine allows.
	ContainAuto Containment = ""
	// ContainPIDNamespace runs each job in its own Linux PID namespace.
	ContainPIDNamespace Containment = "pidns"
	// ContainCgroup runs each job in its own cgroup v2, ended by cgroup.kill.
	ContainCgroup Containment = "cgroup"
	// ContainProcessGroup: a process group per process, plus a marker sweep.
	ContainProcessGroup Containment = "pgroup"
	// ContainProcess holds only the processes forge started itself.
	ContainProcess Containment = "process"
)

func (c Containment) valid() bool {
	return slices.Contains([]Containment{ContainAuto, ContainPIDNamespace, ContainCgroup, ContainProcessGroup, ContainProcess}, c)
}

// boxSpec is what a platform needs to know about a job to contain it.
type boxSpec struct {
	// marker are the FORGE_* entries that identify the job's processes.
	marker []string
	// user is the job's own, when it has one: every process running as it
	// is the job's.
	user *jobUser
	// view is how the job's processes see the file system.
	view view
	// steps, when set, get the time its steps take.
	steps *jobSteps
}

// view is how a job's processes see the file system, in a mount namespace
// of their own: readOnly (when set) read-only, each of hidden as an empty
// directory (a verifier's files, which the candidate must not read).
type view struct {
	readOnly string
	hidden   []string
	// noNetwork: a network namespace of their own, loopback only.
	noNetwork bool
	// etc are files bound over the system's: an /etc/passwd and /etc/group
	// that name the job's user.
	etc []etcFile
	// hide, when set, covers what the job must not see (hide.go), and proc
	// gives it a /proc of its own: of its PID namespace where it has one,
	// else showing only its user's processes.
	hide *hiding
	proc bool
	// slot, when set, is a kept mount namespace where etc are bound: the
	// processes start in it (nsslot.go).
	slot *nsSlot
}

// etcFile is forge's file src, bound over path.
type etcFile struct{ path, src string }

// plain says the processes see the file system and network as forge does.
func (v view) plain() bool {
	return v.readOnly == "" && len(v.hidden) == 0 && !v.noNetwork && len(v.etc) == 0 && v.hide == nil && !v.proc
}

// endsWhole reports whether the Runner's boxes end everything their jobs
// started (pidns, cgroup): only then may what a job had serve a later one.
func (r *Runner) endsWhole() bool {
	return r.platform.tier == ContainPIDNamespace || r.platform.tier == ContainCgroup
}

// errBoxEnded is returned by start once a box has been killed.
var errBoxEnded = errors.New("the job's processes were already ended")

// How long a tier waits for a job's processes to be gone before giving up.
const killWait = 10 * time.Second

// tier is how a containment tier starts, finds and ends a job's processes,
// called with the box locked.
type tier interface {
	start(cmd *exec.Cmd) error
	// signal sends sig once to every process of the job the tier can find.
	signal(sig syscall.Signal, started []*os.Process)
	// end kills every process of the job and returns once they are gone;
	// started were killed already.
	end(started []*os.Process) error
	// release lets go of what the tier holds, after end.
	release() error
}

// box holds one job's processes and all they start, one job at a time, by
// its tier: the processes it started, and whether ended.
type box struct {
	t       tier
	mu      sync.Mutex
	started []*os.Process
	ended   bool
	killErr error // what the first kill reported, reported again after
	closed  bool
}

func (p *platform) newBox(spec boxSpec) (*box, error) {
	t, err := p.newTier(p.tier, spec)
	if err != nil {
		return nil, err
	}
	return &box{t: t}, nil
}

// start starts cmd inside the box. cmd.Stdout and cmd.Stderr must be
// *os.File (or nil) so that Wait returns as soon as the process exits.
func (b *box) start(cmd *exec.Cmd) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return errBoxEnded
	}
	ownGroup(cmd)
	if err := b.t.start(cmd); err != nil {
		return err
	}
	b.started = append(b.started, cmd.Process)
	return nil
}

// signal sends sig to every process in the box the tier can find.
func (b *box) signal(sig syscall.Signal) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Each process gets sig once: a second SIGTERM re-enters handlers that
	// are not written for it (Python's Popen.wait deadlocks).
	if !b.ended {
		b.t.signal(sig, b.started)
	}
}

// kill ends every process in the box and returns once they are gone; they
// must be waited for concurrently. The box cannot start more.
func (b *box) kill() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.killLocked()
}

func (b *box) killLocked() error {
	for _, p := range b.started {
		_ = p.Kill()
	}
	if !b.ended {
		b.ended = true
		b.killErr = b.t.end(b.started)
	}
	return b.killErr
}

// close kills what is left and releases what the box holds.
func (b *box) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	return errors.Join(b.killLocked(), b.t.release())
}

// processTier is the process tier: only the processes forge started.
type processTier struct{}

func (processTier) start(cmd *exec.Cmd) error { return cmd.Start() }

func (processTier) signal(sig syscall.Signal, started []*os.Process) {
	for _, p := range started {
		if p.Signal(sig) != nil {
			_ = p.Kill() // sig cannot be sent (Windows): end it now
		}
	}
}

func (processTier) end([]*os.Process) error { return nil }

func (processTier) release() error { return nil }
