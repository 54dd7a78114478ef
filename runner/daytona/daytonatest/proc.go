package daytonatest

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// capBuf keeps the first max bytes written to it.
type capBuf struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (c *capBuf) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

func (c *capBuf) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.b)
}

// proc is one command running in a sandbox, in its own process group.
type proc struct {
	cmd            *exec.Cmd
	done           chan struct{} // closed when the command has ended
	drained        chan struct{} // closed when its output has ended: nothing left running writes to it
	stdout, stderr *capBuf
	output         *capBuf // both, in arrival order
	// log is the command's log file as the daemon writes it for session
	// commands: every line marked with its stream.
	log *markedLog

	mu     sync.Mutex
	killed bool
	exit   *int
}

// exitCode is the process's exit code once done; nil while running or when
// the emulator killed it (the daemon never records one then).
func (p *proc) exitCode() *int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit
}

// kill ends the whole process group.
func (p *proc) kill() {
	p.markKilled()
	killGroup(p.cmd)
}

// markKilled says the process is being killed: it gets no exit code, unless
// it has one already.
func (p *proc) markKilled() {
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
}

// markers are what the daemon puts before every line of a session
// command's log from stdout (0) and stderr (1) (DMN/pkg/session:
// STDOUT_PREFIX, STDERR_PREFIX).
var markers = [2][]byte{{1, 1, 1}, {2, 2, 2}}

// markedLog is a session command's log file as the daemon writes it: its
// wrapper pipes stdout and stderr through one "while read" loop each, which
// appends every line, marker first and newline last (a last line without
// one gets it too), to the shared log. It keeps the first max bytes.
type markedLog struct {
	mu      sync.Mutex
	max     int
	b       []byte
	partial [2][]byte
}

// logWriter writes stdout (i 0) or stderr (i 1) into l.
type logWriter struct {
	l *markedLog
	i int
}

func (w logWriter) Write(p []byte) (int, error) {
	l := w.l
	l.mu.Lock()
	defer l.mu.Unlock()
	rest := p
	for len(rest) > 0 {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			l.partial[w.i] = append(l.partial[w.i], rest...)
			break
		}
		l.appendLine(w.i, append(l.partial[w.i], rest[:nl]...))
		l.partial[w.i] = l.partial[w.i][:0]
		rest = rest[nl+1:]
	}
	return len(p), nil
}

// appendLine adds one marked line. The caller holds l.mu.
func (l *markedLog) appendLine(i int, line []byte) {
	marker := markers[i]
	if len(l.b)+len(marker)+len(line)+1 > l.max {
		return
	}
	l.b = append(l.b, marker...)
	l.b = append(l.b, line...)
	l.b = append(l.b, '\n')
}

// flush writes the lines left without a newline, as the daemon's read
// loops do when their pipe closes.
func (l *markedLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.partial {
		if len(l.partial[i]) > 0 {
			l.appendLine(i, l.partial[i])
			l.partial[i] = nil
		}
	}
}

// String is the whole log, markers included.
func (l *markedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// from copies up to n bytes of the log from offset off.
func (l *markedLog) from(off, n int) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	if off >= len(l.b) {
		return nil
	}
	end := min(len(l.b), off+n)
	return append([]byte(nil), l.b[off:end]...)
}

// spawn runs command with "sh -c" in sb, in cwd (a path as the sandbox
// sees it); record says whether it is one of the sandbox's Commands (an
// image's entrypoint is not: no call asked for it); ss is the session it
// runs in, nil for none. The caller must not hold s.mu: starting a process
// is slow, and other sandboxes must not wait for it.
//
// In a root (RootFS), as in the real sandbox, what the command leaves
// running lives on after it, in the sandbox's PID namespace: until its
// session is deleted, or the sandbox. It keeps the command's output open
// and what it writes there goes on into the command's log, as the
// daemon's log loops keep reading until every writer is gone; the command
// itself has ended when its shell has. Without a root, everything runs on
// this machine, and the command's process group is killed when it ends.
func (s *Server) spawn(sb *sandbox, command, cwd string, env map[string]string, record bool, ss *session) (*proc, error) {
	cmd, start := newCommand(sb.fs, sb.account, command, []string{"sh", "-c", command}, cwd, env)
	p := &proc{
		cmd: cmd, done: make(chan struct{}), drained: make(chan struct{}),
		stdout: &capBuf{max: s.opts.MaxLog}, stderr: &capBuf{max: s.opts.MaxLog},
		output: &capBuf{max: 2 * s.opts.MaxLog},
		log:    &markedLog{max: 2*s.opts.MaxLog + 1<<16},
	}
	outs := [2]io.Writer{
		io.MultiWriter(p.stdout, p.output, logWriter{p.log, 0}),
		io.MultiWriter(p.stderr, p.output, logWriter{p.log, 1}),
	}
	var pipes []*outPipe // stdout's and stderr's; nil without a root
	var err error
	if sb.fs != nil {
		if ss != nil && ss.procs != nil {
			ss.procs.track(cmd)
		}
		pipes, err = startPiped(cmd, start, outs)
	} else {
		cmd.Stdout, cmd.Stderr = outs[0], outs[1]
		err = start()
	}
	if err != nil {
		return nil, err
	}
	if !s.register(sb, p, pipes, record, command, env) {
		return nil, errors.New("the sandbox is gone")
	}
	if pipes != nil {
		s.copyOutput(p, pipes)
	}
	go s.waitProc(sb, p, pipes)
	return p, nil
}

// newCommand is a command of a sandbox or a build, which start starts:
// with a root r, line run by "/bin/sh -c" in it, as a; else argv, on this
// machine. Either leads a process group of its own.
func newCommand(r *fsRoot, a *account, line string, argv []string, cwd string, env map[string]string) (cmd *exec.Cmd, start func() error) {
	if r != nil {
		cmd = r.command(a, line, cwd, envList(env))
		start = func() error { return r.start(cmd) }
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = cwd, envList(env)
		ownGroup(cmd)
		start = cmd.Start
	}
	// A grandchild that escaped the group kill must not keep Wait
	// waiting for its pipes.
	cmd.WaitDelay = 2 * time.Second
	return cmd, start
}

// startPiped starts cmd with start, its output going through pipes of
// its own to outs: what it leaves running may keep them open.
func startPiped(cmd *exec.Cmd, start func() error, outs [2]io.Writer) ([]*outPipe, error) {
	var pipes [2]*outPipe
	var w [2]*os.File
	for i := range pipes {
		var err error
		if pipes[i], w[i], err = newOutPipe(outs[i]); err != nil {
			for j := range i {
				pipes[j].r.Close()
				w[j].Close()
			}
			return nil, err
		}
	}
	cmd.Stdout, cmd.Stderr = w[0], w[1]
	err := start()
	w[0].Close()
	w[1].Close()
	if err != nil {
		pipes[0].r.Close()
		pipes[1].r.Close()
		return nil, err
	}
	return pipes[:], nil
}

// register records p, started, among sb's processes (and its command
// among sb's commands if record), and counts its workers; false, p killed
// and ended, if sb or the emulator went away while it started.
func (s *Server) register(sb *sandbox, p *proc, pipes []*outPipe, record bool, command string, env map[string]string) bool {
	s.mu.Lock()
	if s.gone(sb) {
		s.mu.Unlock()
		p.kill()
		p.cmd.Wait()
		for _, o := range pipes {
			o.r.Close()
		}
		close(p.done)
		return false
	}
	sb.procs[p] = struct{}{}
	if record {
		sb.envs = append(sb.envs, copyMap(env))
		sb.commands = append(sb.commands, command)
	}
	s.workers.Add(1 + len(pipes)) // waitProc, and a copyOutput per pipe
	s.mu.Unlock()
	return true
}

// copyOutput copies a root's command's output pipes into p until every
// writer has closed them; then p's output has drained.
func (s *Server) copyOutput(p *proc, pipes []*outPipe) {
	var left sync.WaitGroup
	left.Add(len(pipes))
	for _, o := range pipes {
		go func() {
			defer s.workers.Done()
			o.copy()
			if left.Done(); o == pipes[0] {
				left.Wait()
				p.log.flush()
				close(p.drained)
			}
		}()
	}
}

// waitProc waits for p's command to end, records its exit code (unless
// it was killed) and takes it off sb's processes.
func (s *Server) waitProc(sb *sandbox, p *proc, pipes []*outPipe) {
	defer s.workers.Done()
	cmd := p.cmd
	err := cmd.Wait()
	p.mu.Lock()
	if !p.killed {
		code := cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		if code >= 0 || err == nil {
			p.exit = &code
		}
	}
	p.mu.Unlock()
	if pipes != nil {
		// What the command wrote before it ended is its log's
		// before it is seen to have ended; when nothing it left
		// holds its output, that is all, unfinished lines included.
		if pipes[0].catchUp() && pipes[1].catchUp() {
			p.log.flush()
		}
	} else {
		// Kill what the command left behind in its group.
		killGroup(cmd)
		p.log.flush()
		close(p.drained)
	}
	s.mu.Lock()
	delete(sb.procs, p)
	s.mu.Unlock()
	close(p.done)
}

// gone says whether sb was deleted or the emulator is closing, so nothing
// new may start in it. The caller holds s.mu.
func (s *Server) gone(sb *sandbox) bool {
	select {
	case <-s.closing:
		return true
	default:
		return !sb.deletedAt.IsZero()
	}
}

// baseEnv is what every process in the sandbox starts with, as the
// daemon's own environment: the create request's env over the image's.
func (s *Server) baseEnv(sb *sandbox) map[string]string {
	tmp := sb.root + "/tmp"
	if RootFS() {
		tmp = "/tmp"
	}
	env := map[string]string{
		"PATH": hostPath(), "HOME": sb.homePath(), "USER": sb.processUser(), "LANG": "C.UTF-8",
		"TMPDIR":             tmp,
		"DAYTONA_SANDBOX_ID": sb.id, "DAYTONA_SANDBOX_USER": sb.user,
	}
	maps.Copy(env, sb.imageEnv)
	maps.Copy(env, sb.env)
	return env
}

// hostPath is the host's PATH, which the emulated images stand on.
func hostPath() string { return cmp.Or(os.Getenv("PATH"), "/usr/local/bin:/usr/bin:/bin") }

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// session is a toolbox session: its commands run one after another.
type session struct {
	id    string
	queue chan *sessCmd
	stop  chan struct{}
	once  sync.Once
	// procs finds what the session started (in a root; nil without).
	procs *sessionProcs

	cmds  map[string]*sessCmd // guarded by Server.mu
	order []*sessCmd          // the commands in the order they were sent; guarded by Server.mu
}

// close ends the session: its command, and what its commands left
// running, are killed. The caller holds Server.mu.
func (ss *session) close() {
	ss.once.Do(func() {
		// Killed, not ended: the daemon records no exit code for what
		// runs now, whichever kill reaches it first.
		for _, c := range ss.cmds {
			if c.p != nil {
				c.p.markKilled()
			}
		}
		close(ss.stop)
		if ss.procs != nil {
			ss.procs.kill()
		}
	})
}

type sessCmd struct {
	id, command string
	done        chan struct{}
	p           *proc // nil until it starts; set under Server.mu
}

// exitCode is the command's once it has ended, nil before and when it was
// killed or never started: the daemon's exit-code file.
func (c *sessCmd) exitCode() *int {
	select {
	case <-c.done:
	default:
		return nil
	}
	if c.p == nil {
		return nil
	}
	return c.p.exitCode()
}

// runSession runs the session's commands in order until it is closed.
func (s *Server) runSession(sb *sandbox, ss *session) {
	defer s.workers.Done()
	for {
		select {
		case <-ss.stop:
			// End the commands never started (those that did have ended).
			s.mu.Lock()
			for _, c := range ss.cmds {
				select {
				case <-c.done:
				default:
					close(c.done)
				}
			}
			s.mu.Unlock()
			if ss.procs != nil {
				ss.procs.end()
			}
			return
		case c := <-ss.queue:
			p, err := s.spawn(sb, c.command, sb.defaultCwd(), s.baseEnv(sb), true, ss)
			if err != nil {
				close(c.done)
				continue
			}
			s.mu.Lock()
			c.p = p
			s.mu.Unlock()
			select {
			case <-p.done:
			case <-ss.stop:
				p.kill()
				<-p.done
			}
			close(c.done)
		}
	}
}
