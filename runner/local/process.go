package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/forge-run/forge/internal/linux"
	"github.com/forge-run/forge/runner"
)

// process is one command to run in a job's box.
type process struct {
	path string // resolved executable
	argv []string
	dir  string
	env  []string
	// user runs it; nil: forge's user.
	user *jobUser
	// timeout bounds the process; then SIGTERM, and SIGKILL after KillGrace.
	timeout time.Duration
	// endAll ends every process of the box once this one exits.
	endAll bool
	// maxBytes caps stdout and stderr, each, and what echo gets of them:
	// 0 keeps none and echoes all (a build's).
	maxBytes int64
	// echo gets the output line by line.
	echo func(stream, line string)
	// steps, when set, get the time its steps take.
	steps *jobSteps
}

// finished is what was observed of a process.
type finished struct {
	stdout, stderr *runner.CappedBuffer
	// exitCode is nil when a signal ended the process.
	exitCode  *int
	timedOut  bool
	cancelled bool
	// runtime is from just before the start to the exit (or the timeout).
	runtime time.Duration
}

// startError is a process that could not be started.
type startError struct {
	name string
	err  error
}

func (e *startError) Error() string { return "start " + e.name + ": " + e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// startErrorKind tells a command that cannot run (the candidate's fault) from
// a machine that cannot start processes.
func startErrorKind(err error) runner.ErrorKind {
	var se *startError
	if !errors.As(err, &se) || errors.Is(err, errBoxEnded) {
		return runner.ErrInfra
	}
	for _, cause := range []error{fs.ErrNotExist, fs.ErrPermission, exec.ErrNotFound, syscall.ENOEXEC, syscall.EINVAL, syscall.ENOTDIR} {
		if errors.Is(err, cause) {
			return runner.ErrCandidateFailed
		}
	}
	return runner.ErrInfra
}

// runProcess runs p in b, draining its output into capped buffers. On timeout
// or cancel the whole box gets SIGTERM, then SIGKILL after KillGrace. The
// error is only about starting the process.
func (r *Runner) runProcess(ctx context.Context, b *box, p process) (finished, error) {
	f := finished{
		stdout: &runner.CappedBuffer{Max: p.maxBytes},
		stderr: &runner.CappedBuffer{Max: p.maxBytes},
	}
	st, err := startIn(b, p)
	if err != nil {
		return f, err
	}

	var drains sync.WaitGroup
	drains.Add(2)
	var outTo, errTo io.Writer = f.stdout, f.stderr
	if p.echo != nil {
		outEcho := &runner.EchoWriter{Stream: "stdout", Echo: p.echo, Max: p.maxBytes}
		errEcho := &runner.EchoWriter{Stream: "stderr", Echo: p.echo, Max: p.maxBytes}
		defer outEcho.Close()
		defer errEcho.Close()
		outTo, errTo = io.MultiWriter(f.stdout, outEcho), io.MultiWriter(f.stderr, errEcho)
	}
	go drain(&drains, outTo, st.outR)
	go drain(&drains, errTo, st.errR)
	r.wait(ctx, b, st, p, &f)
	// Everything that held the pipes is normally gone now; whatever forge
	// could not end gets KillGrace to let go before the pipes are cut.
	t := p.steps.now()
	waitGroupWithin(&drains, r.opts.KillGrace)
	p.steps.add(stepOutput, t)
	st.outR.Close()
	st.errR.Close()
	drains.Wait()
	if ps := st.cmd.ProcessState; ps != nil && ps.Exited() {
		code := ps.ExitCode()
		f.exitCode = &code
	}
	return f, nil
}

// started is a process started, and the reading ends of its stdout and
// stderr.
type started struct {
	cmd        *exec.Cmd
	outR, errR *os.File
	began      time.Time // just before the start
}

// startIn starts p in b, its stdout and stderr on pipes.
func startIn(b *box, p process) (started, error) {
	null, err := devNull()
	if err != nil {
		return started{}, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return started{}, fmt.Errorf("pipe for stdout: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return started{}, fmt.Errorf("pipe for stderr: %w", err)
	}
	// With *os.File outputs, Wait returns when the process exits, not when
	// the last holder of its pipes (a daemon it left) lets go of them.
	cmd := &exec.Cmd{Path: p.path, Args: p.argv, Dir: p.dir, Env: p.env, Stdin: null, Stdout: outW, Stderr: errW}
	if p.user != nil {
		runAs(cmd, p.user)
	}
	began := time.Now()
	err = b.start(cmd)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return started{}, &startError{name: p.argv[0], err: err}
	}
	return started{cmd: cmd, outR: outR, errR: errR, began: began}, nil
}

// wait waits for st to exit, for p's timeout or for ctx, and ends what is
// left in b as p asks; into f go the timeout, the cancel and the runtime.
func (r *Runner) wait(ctx context.Context, b *box, st started, p process, f *finished) {
	exited := make(chan struct{})
	var ended time.Time // written before exited is closed
	go func() {
		linux.AwaitExit(st.cmd.Process.Pid)
		_ = st.cmd.Wait()
		ended = time.Now()
		close(exited)
	}()

	t := p.steps.now()
	timer := time.NewTimer(p.timeout)
	select {
	case <-exited:
	case <-timer.C:
		f.timedOut = true
		r.terminate(b, exited)
	case <-ctx.Done():
		f.cancelled = true
		r.terminate(b, exited)
	}
	timer.Stop()
	if f.timedOut {
		f.runtime = p.timeout
	} else {
		<-exited // closed already (terminate waits for it): ended is set
		f.runtime = ended.Sub(st.began)
	}
	p.steps.add(stepRun, t)
	if p.endAll || f.timedOut || f.cancelled {
		t = p.steps.now()
		// A failure is kept by the box and reported by its close.
		_ = b.kill()
		p.steps.add(stepEnd, t)
	}
}

// devNull is /dev/null, open for the process's life.
var devNull = sync.OnceValues(func() (*os.File, error) {
	return os.OpenFile(os.DevNull, os.O_RDWR, 0)
})

// terminate sends SIGTERM to b, then SIGKILL after KillGrace unless exited.
func (r *Runner) terminate(b *box, exited <-chan struct{}) {
	b.signal(syscall.SIGTERM)
	grace := time.NewTimer(r.opts.KillGrace)
	defer grace.Stop()
	select {
	case <-exited:
	case <-grace.C:
		_ = b.kill()
		<-exited
	}
}

func drain(wg *sync.WaitGroup, w io.Writer, r io.Reader) {
	defer wg.Done()
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	// Only a plain Reader: io.CopyBuffer would hand an *os.File's WriteTo
	// the copy, which makes a buffer of its own for every pipe.
	_, _ = io.CopyBuffer(w, struct{ io.Reader }{r}, *buf)
}

// copyBuffers are drain's buffers, reused: two fresh 64 KiB buffers per job
// made most of the garbage a run of short jobs left.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// waitGroupWithin waits for wg, for at most d.
func waitGroupWithin(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// lookPath resolves argv[0] as a shell would but with the candidate's PATH,
// for user (nil: forge's): a name with a slash is relative to dir; relative
// PATH entries are skipped.
func (r *Runner) lookPath(file, pathList, dir string, user *jobUser) (string, error) {
	if strings.ContainsRune(file, '/') || strings.ContainsRune(file, filepath.Separator) {
		p := file
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := executable(p, user); err != nil {
			return "", fmt.Errorf("%s: %w", file, err)
		}
		return p, nil
	}
	// Job users reach the same outside their working directories, whose
	// paths are in pathList when on it: one answer serves them all.
	key := file + "\x00" + pathList
	if user != nil {
		key += "\x00job"
	}
	if p, ok := r.found.Load(key); ok {
		return p.(string), nil
	}
	for _, d := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(d) {
			continue
		}
		if p := filepath.Join(d, file); executable(p, user) == nil {
			r.found.Store(key, p)
			return p, nil
		}
	}
	if user != nil {
		// Forge's own PATH may have it where the job's user cannot reach it
		// (root's pyenv under a private /root): say where, and why.
		for _, d := range filepath.SplitList(cmp.Or(r.opts.Getenv("PATH"), defaultPath)) {
			p := filepath.Join(d, file)
			if !filepath.IsAbs(d) || executable(p, nil) != nil {
				continue
			}
			if err := executable(p, user); err != nil {
				return "", fmt.Errorf("%s: %w: forge's PATH has %s, but %v; install it where every user may run it, or run jobs as root with local: {user: root}", file, exec.ErrNotFound, p, err)
			}
		}
	}
	return "", fmt.Errorf("%s: %w", file, exec.ErrNotFound)
}

// executable says why user (nil: forge's) cannot execute p.
func executable(p string, user *jobUser) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if runtime.GOOS != "windows" && fi.Mode()&0o111 == 0 {
		return errors.New("is not executable")
	}
	if user != nil {
		if err := searchable(filepath.Dir(p), user); err != nil {
			return err
		}
		return may(p, user, 0o1)
	}
	return nil
}
