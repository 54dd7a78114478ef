package local

import (
	"fmt"
	"os"
	"os/exec"
)

// Containment names how a job's processes are held together so that every
// one of them, however it was started, can be ended with the job.
type Containment string

// The containment tiers, strongest first. doc.go says what each guarantees.
const (
	// ContainAuto picks the strongest tier this machine allows.
	ContainAuto Containment = ""
	// ContainPIDNamespace runs each job in its own Linux PID namespace.
	ContainPIDNamespace Containment = "pidns"
	// ContainCgroup runs each job in its own cgroup v2 and ends it with
	// cgroup.kill.
	ContainCgroup Containment = "cgroup"
	// ContainProcessGroup runs each process in its own process group and, on
	// Linux, also hunts down processes that carry the job's FORGE_* variables.
	ContainProcessGroup Containment = "pgroup"
	// ContainProcess holds only the processes forge started itself (platforms
	// without process groups).
	ContainProcess Containment = "process"
)

func (c Containment) valid() bool {
	switch c {
	case ContainAuto, ContainPIDNamespace, ContainCgroup, ContainProcessGroup, ContainProcess:
		return true
	}
	return false
}

// box holds the processes of one job: the setup commands, the candidate and
// everything they start. A box is used by one job at a time.
type box interface {
	// start starts cmd inside the box. cmd.Stdout and cmd.Stderr must be
	// *os.File (or nil) so that Wait returns as soon as the process exits.
	start(cmd *exec.Cmd) error
	// signal sends sig to every process in the box, as far as the tier can
	// find them.
	signal(sig os.Signal)
	// kill ends every process in the box and returns once they are gone (or
	// as gone as the tier can make them). Processes started by start must be
	// waited for concurrently. The box cannot start anything afterwards.
	kill() error
	// close kills what is left and releases what the box holds.
	close() error
}

// boxSpec is what a platform needs to know about a job to contain it.
type boxSpec struct {
	// marker are KEY=VALUE entries of the job's environment that together
	// identify its processes (the FORGE_* run, candidate and trial).
	marker []string
}

// errBoxEnded is returned by start once a box has been killed.
var errBoxEnded = fmt.Errorf("the job's processes were already ended")
