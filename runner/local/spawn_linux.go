package local

// Starting processes inside a job's PID namespace and v1 pids cgroup.

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/forge-run/forge/internal/linux"
	"golang.org/x/sys/unix"
)

// spawn starts cmd, from a locked thread moved into the PID namespace (nsfd),
// v1 pids cgroup (v1Tasks) or mount namespace of its own (v) when given
// (they apply to the calling thread's children), and back. Threads, one of
// threads' when it has one, else one the runtime ends after (spawnThreads).
func spawn(cmd *exec.Cmd, nsfd, v1Tasks int, v view, steps *jobSteps, threads *spawnThreads) error {
	defer steps.addRest(stepStart, steps.now(), steps.total())
	if nsfd < 0 && v1Tasks < 0 && v.plain() {
		return cmd.Start()
	}
	h, err := home()
	if err != nil {
		return err
	}
	return threads.run(func(kept bool) (bool, error) { return spawnLocked(cmd, nsfd, v1Tasks, v, h, steps, kept) })
}

// spawnLocked is spawn on the locked thread; clean: the thread is back home.
// A kept thread (its file system context its own) goes back to forge's mount
// and network namespaces too; another is ended once it left them.
func spawnLocked(cmd *exec.Cmd, nsfd, v1Tasks int, v view, h homes, steps *jobSteps, kept bool) (clean bool, err error) {
	clean = true
	if !v.plain() {
		t := steps.now()
		changed, err := enterSlotView(v, kept, nsfd)
		steps.add(stepMounts, t)
		if err != nil {
			return !changed, err
		}
		defer func() {
			clean = clean && kept && setnsKeepsRoot() && h.mnt >= 0 && unix.Setns(h.mnt, unix.CLONE_NEWNS) == nil &&
				(!v.noNetwork || h.net >= 0 && unix.Setns(h.net, unix.CLONE_NEWNET) == nil)
		}()
	}
	if v1Tasks >= 0 {
		if h.tasks < 0 {
			return clean, errors.New("join a pids cgroup: forge's own v1 pids cgroup is unknown")
		}
		// "0" is the writing thread: the kernel then moves it alone, without
		// the write lock on every thread group (its own tid takes that lock,
		// and waits an RCU grace period: about 10 ms a job).
		t := steps.now()
		_, err := unix.Write(v1Tasks, []byte("0"))
		steps.add(stepJoin, t)
		if err != nil {
			return clean, fmt.Errorf("join the job's pids cgroup: %w", err)
		}
		defer func() {
			t := steps.now()
			if _, err := unix.Write(h.tasks, []byte("0")); err != nil {
				clean = false
			}
			steps.add(stepJoin, t)
		}()
	}
	if nsfd >= 0 {
		if err := unix.Setns(nsfd, unix.CLONE_NEWPID); err != nil {
			return clean, fmt.Errorf("enter the job's PID namespace: %w", err)
		}
		defer func() {
			if err := unix.Setns(h.ns, unix.CLONE_NEWPID); err != nil {
				clean = false
			}
		}()
	}
	return clean, cmd.Start()
}

// homes are forge's own PID, mount and network namespaces and v1 pids tasks
// file (-1 if none), open for the process's life: a spawning thread goes
// back to them.
type homes struct{ ns, mnt, net, tasks int }

// home opens forge's homes once, from a locked thread (/proc/thread-self):
// /proc/self names the main thread, which may be in a job's pids cgroup.
var home = sync.OnceValues(func() (homes, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := homes{ns: -1, mnt: -1, net: -1, tasks: -1}
	fd, err := unix.Open("/proc/thread-self/ns/pid", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return h, fmt.Errorf("open forge's PID namespace: %w", err)
	}
	h.ns = fd
	if fd, err := unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		h.mnt = fd
	}
	if fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		h.net = fd
	}
	if dir := linux.FindCgroups().Pids; dir != "" {
		if fd, err := unix.Open(filepath.Join(dir, "tasks"), unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
			h.tasks = fd
		}
	}
	return h, nil
})

// rescueThreads moves forge's threads in the v1 cgroup dir back home, a safety
// net (only the spawning thread is moved in, and out again): one left there
// would keep the cgroup from being removed and spawn later children in it.
func rescueThreads(dir string) {
	h, err := home()
	if err != nil || h.tasks < 0 {
		return
	}
	own, _ := linux.OwnThreads(dir)
	for _, tid := range own {
		_, _ = unix.Write(h.tasks, []byte(tid))
	}
}

// spawnThreads keeps the locked OS threads spawn starts processes from: a
// thread that entered a mount namespace can never run other Go code, and
// one made and ended for each process cost every job one. A kept thread has
// a file system context of its own (it may then setns back to forge's
// mount namespace) and serves one start at a time.
type spawnThreads struct {
	idle chan *spawnThread
}

// maxSpawnThreads bounds the threads kept idle.
const maxSpawnThreads = 4

func newSpawnThreads() *spawnThreads {
	return &spawnThreads{idle: make(chan *spawnThread, maxSpawnThreads)}
}

type spawnThread struct {
	calls chan func() (home bool)
}

// run runs f on a kept thread (f's kept true), or, without one, on a
// thread of its own (onLockedThread; f's kept false). f returns whether
// the thread is back home: if not, the thread ends.
func (p *spawnThreads) run(f func(kept bool) (home bool, err error)) error {
	var t *spawnThread
	if p != nil {
		select {
		case t = <-p.idle:
		default:
			t = startSpawnThread()
		}
	}
	if t == nil {
		return linux.OnLockedThread(func() (bool, error) { return f(false) })
	}
	var err error
	done := make(chan bool, 1)
	t.calls <- func() bool {
		home, ferr := f(true)
		err = ferr
		done <- home
		return home
	}
	if !<-done {
		return err // the thread ends
	}
	select {
	case p.idle <- t:
	default:
		close(t.calls)
	}
	return err
}

// close ends the idle threads.
func (p *spawnThreads) close() {
	for {
		select {
		case t := <-p.idle:
			close(t.calls)
		default:
			return
		}
	}
}

// startSpawnThread starts a kept thread; nil when it cannot have a file
// system context of its own.
func startSpawnThread() *spawnThread {
	t := &spawnThread{calls: make(chan func() bool)}
	ready := make(chan bool, 1)
	go t.serve(ready, nil)
	if !<-ready {
		return nil
	}
	return t
}

// serve runs t's calls, locked to a thread of its own until a call leaves
// it away from home or the calls are closed: never the main thread, which
// the runtime cannot end (a goroutine holds it until another has a thread,
// whose lock is closed then).
func (t *spawnThread) serve(ready chan<- bool, locked chan<- struct{}) {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	if unix.Gettid() == unix.Getpid() {
		mine := make(chan struct{})
		go t.serve(ready, mine)
		<-mine
		runtime.UnlockOSThread()
		return
	}
	if locked != nil {
		close(locked)
	}
	if unix.Unshare(unix.CLONE_FS) != nil {
		ready <- false
		return
	}
	ready <- true
	for call := range t.calls {
		if !call() {
			return
		}
	}
}
