package daytonatest

import (
	"errors"
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
		if len(p) > room {
			c.b = append(c.b, p[:room]...)
		} else {
			c.b = append(c.b, p...)
		}
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
	done           chan struct{}
	stdout, stderr *capBuf
	output         *capBuf // both, in arrival order

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
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	if p.cmd.Process != nil {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

type teeWriter struct{ a, b *capBuf }

func (t teeWriter) Write(p []byte) (int, error) {
	t.a.Write(p)
	t.b.Write(p)
	return len(p), nil
}

// startProc runs command with "sh -c" in sb. The caller must not hold
// s.mu: starting a process is slow, and other sandboxes must not wait for
// it.
func (s *Server) startProc(sb *sandbox, command, cwd string, env map[string]string) (*proc, error) {
	p := &proc{
		done:   make(chan struct{}),
		stdout: &capBuf{max: s.opts.MaxLog}, stderr: &capBuf{max: s.opts.MaxLog},
		output: &capBuf{max: 2 * s.opts.MaxLog},
	}
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = cwd
	cmd.Env = envList(env)
	cmd.Stdout = teeWriter{p.stdout, p.output}
	cmd.Stderr = teeWriter{p.stderr, p.output}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A grandchild that escaped the group kill must not keep Wait waiting
	// for its pipes.
	cmd.WaitDelay = 2 * time.Second
	p.cmd = cmd
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	gone := !sb.deletedAt.IsZero()
	select {
	case <-s.closing:
		gone = true
	default:
	}
	if gone {
		// The sandbox (or the emulator) went away while it started.
		s.mu.Unlock()
		p.kill()
		cmd.Wait()
		close(p.done)
		return nil, errors.New("the sandbox is gone")
	}
	sb.procs[p] = struct{}{}
	sb.envs = append(sb.envs, copyMap(env))
	sb.commands = append(sb.commands, command)
	s.workers.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.workers.Done()
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
		// Kill what the command left behind in its group.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		s.mu.Lock()
		delete(sb.procs, p)
		s.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// baseEnv is what every process in the sandbox starts with, as the
// daemon's own environment: the create request's env over the image's.
func (s *Server) baseEnv(sb *sandbox) map[string]string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env := map[string]string{
		"PATH": path, "HOME": sb.home, "USER": sb.user, "LANG": "C.UTF-8",
		"TMPDIR":             sb.root + "/tmp",
		"DAYTONA_SANDBOX_ID": sb.id, "DAYTONA_SANDBOX_USER": sb.user,
	}
	for k, v := range sb.env {
		env[k] = v
	}
	return env
}

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

	cmds map[string]*sessCmd // guarded by Server.mu
}

func (ss *session) close() { ss.once.Do(func() { close(ss.stop) }) }

type sessCmd struct {
	id, command string
	done        chan struct{}
	p           *proc // nil until it starts; set under Server.mu
}

// runSession runs the session's commands in order until it is closed.
func (s *Server) runSession(sb *sandbox, ss *session) {
	defer s.workers.Done()
	for {
		select {
		case <-ss.stop:
			s.mu.Lock()
			for _, c := range ss.cmds {
				if c.p == nil {
					select {
					case <-c.done:
					default:
						close(c.done)
					}
				}
			}
			s.mu.Unlock()
			return
		case c := <-ss.queue:
			p, err := s.startProc(sb, c.command, sb.home, s.baseEnv(sb))
			if err == nil {
				s.mu.Lock()
				c.p = p
				s.mu.Unlock()
			}
			if err != nil {
				close(c.done)
				continue
			}
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
