package local

// Where a job's wall time goes, step by step, for bench/local.sh.

import (
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// StepsFileEnv names the variable (read through Options.Getenv) that turns
// the step timings on: each job appends one JSON line of seconds per step
// to the file it names. bench/local.sh reads it; nothing else should.
const StepsFileEnv = "FORGE_LOCAL_STEPS"

// jobStep is one step of a local job's life.
type jobStep uint8

const (
	stepWorkdir  jobStep = iota // working directory made, files copied in
	stepUID                     // a uid and its lock taken
	stepChown                   // the working directory given to the uid
	stepPasswd                  // its /etc/passwd and /etc/group written
	stepCgroup                  // the job's cgroups made
	stepInit                    // its PID namespace and init started
	stepLookup                  // the program found on PATH
	stepMounts                  // a mount namespace: read-only cache, hidden paths, passwd bound
	stepJoin                    // the spawning thread into the v1 pids cgroup and back
	stepStart                   // the rest of a start: thread, namespace, clone, exec
	stepRun                     // from the start to the exit
	stepOutput                  // its pipes drained after the exit
	stepEnd                     // waiting for nothing left of the box
	stepDownload                // artifact, FORGE_RESULT and transcript read back
	stepRelease                 // the box's cgroups removed
	stepSweep                   // what the uid left in /tmp etc. removed
	stepRemove                  // the working directory removed, in Run
	stepRemoveBG                // the working directory removed, after Run
	numSteps
)

var stepNames = [numSteps]string{
	"workdir", "uid", "chown", "passwd", "cgroup", "init", "lookup", "mounts", "join",
	"start", "run", "output", "end", "download", "release", "sweep", "remove", "remove_bg",
}

// jobSteps are one job's step timings; nil (timings off) records nothing,
// at the cost of a nil check.
type jobSteps struct {
	d   [numSteps]time.Duration
	job time.Duration // Run's whole time
	// left counts who still records: Run, and a background removal.
	left atomic.Int32
}

// now is time.Now when timings are on.
func (s *jobSteps) now() time.Time {
	if s == nil {
		return time.Time{}
	}
	return time.Now()
}

// add adds the time since start to step st.
func (s *jobSteps) add(st jobStep, start time.Time) {
	if s != nil {
		s.d[st] += time.Since(start)
	}
}

// total is the time recorded so far, for addRest.
func (s *jobSteps) total() time.Duration {
	if s == nil {
		return 0
	}
	var t time.Duration
	for _, d := range s.d {
		t += d
	}
	return t
}

// addRest adds to st the time since start that no other step recorded
// since total was mark.
func (s *jobSteps) addRest(st jobStep, start time.Time, mark time.Duration) {
	if s != nil {
		s.d[st] += time.Since(start) - (s.total() - mark)
	}
}

// stepLog appends jobs' step timings to a file.
type stepLog struct {
	mu   sync.Mutex
	path string
}

// newStepLog is the log StepsFileEnv names, nil when it names none.
func newStepLog(getenv func(string) string) *stepLog {
	if p := getenv(StepsFileEnv); p != "" {
		return &stepLog{path: p}
	}
	return nil
}

// job returns a job's timings, nil when the log is off.
func (l *stepLog) job() *jobSteps {
	if l == nil {
		return nil
	}
	s := &jobSteps{}
	s.left.Store(1)
	return s
}

// later says one more will record into s after Run: finished must follow.
func (s *jobSteps) later() {
	if s != nil {
		s.left.Add(1)
	}
}

// finished is called by each who recorded into s (Run with its whole
// time, else 0); the last appends the job's line. Errors are ignored: the
// timings are the bench's, never the job's business.
func (l *stepLog) finished(s *jobSteps, job time.Duration) {
	if l == nil || s == nil {
		return
	}
	if job > 0 {
		s.job = job
	}
	if s.left.Add(-1) > 0 {
		return
	}
	// In the steps' order, which a map would lose.
	b := append(make([]byte, 0, 512), `{"job":`...)
	b = strconv.AppendFloat(b, s.job.Seconds(), 'f', -1, 64)
	for i, d := range s.d {
		b = append(b, `,"`+stepNames[i]+`":`...)
		b = strconv.AppendFloat(b, d.Seconds(), 'f', -1, 64)
	}
	b = append(b, '}')
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	_, _ = f.Write(append(b, '\n'))
	_ = f.Close()
}
