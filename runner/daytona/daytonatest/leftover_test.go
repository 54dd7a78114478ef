//go:build linux

package daytonatest

import (
	"bytes"
	"fmt"
	"net"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/options"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"
	"github.com/forge-run/forge/internal/testkit/wait"
	"github.com/forge-run/forge/internal/text"
)

// hostProcs is this machine's pids of the processes whose argv holds
// marker (zombies have none).
func hostProcs(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline"); bytes.Contains(b, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// marker is an argv word no other process has.
func marker(t *testing.T, what string) string {
	return fmt.Sprintf("daytonatest-%d-%s-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"), what)
}

// daemon is a command that leaves a process running, detached as a daemon
// is (a session of its own, its output let go), with marker in its argv.
func daemon(marker string) string {
	return fmt.Sprintf(`python3 -c 'import subprocess; subprocess.Popen(["python3", "-c", "import time; time.sleep(1000)", "%s"], start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)'`, marker)
}

// inSession runs command in the session sid of sb (made if need be) and
// waits for it to end; it fails the test unless it exits 0.
func inSession(t *testing.T, sb *daytona.Sandbox, sid, command string) string {
	t.Helper()
	if err := sb.Process.CreateSession(ctx(t), sid); err != nil && statusOf(err) != 409 {
		t.Fatal(err)
	}
	r, err := sb.Process.ExecuteSessionCommand(ctx(t), sid, command, false, false)
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	if code, _ := r["exitCode"].(int32); code != 0 {
		t.Fatalf("%s: exit %v: %v", command, r["exitCode"], r["stderr"])
	}
	return r["id"].(string)
}

// A server an agent's command starts in the background keeps running once
// the command has ended, as on the real daemon, so that a later command
// (a verifier) reaches it; what it writes to the output it kept goes on
// into that command's log. Each sandbox has its own network: two serve
// on one port at once, while this machine holds it too, and each reaches
// its own.
func TestLeftoverServerAnswersLaterCommands(t *testing.T) {
	needRootFS(t)
	s := Start(t, Options{Specs: specs})
	c := client(t, s)
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	port := host.Addr().(*net.TCPAddr).Port
	// Bound before the command ends, then served from a daemon that
	// keeps the command's stderr, where it logs every request.
	serve := fmt.Sprintf(`python3 -c 'import http.server, os
s = http.server.HTTPServer(("127.0.0.1", %d), http.server.SimpleHTTPRequestHandler)
if os.fork() == 0:
    os.setsid()
    s.serve_forever()'`, port)
	fetch := fmt.Sprintf(`python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:%d/who").read().decode(), end="")'`, port)
	sbs := map[string]*daytona.Sandbox{}
	cids := map[string]string{}
	for _, name := range []string{"a", "b"} {
		sbs[name] = create(t, c, name)
		home, _ := sbs[name].GetUserHomeDir(ctx(t))
		cids[name] = inSession(t, sbs[name], "agent", "cd "+home+" && echo "+name+" > who && "+serve)
	}
	for name, sb := range sbs {
		if got := run(t, sb, fetch); got != name+"\n" {
			t.Errorf("sandbox %s reached the server of %q", name, got)
		}
		wait.For(t, "the request's log line in the command's log", 20*time.Second, func() bool {
			logs, err := sb.Process.GetSessionCommandLogs(ctx(t), "agent", cids[name])
			return err == nil && strings.Contains(logs.Stderr, `"GET /who HTTP/1.1" 200`)
		})
	}
}

// Deleting a session kills what its commands left running, daemons
// included, and only that; deleting the sandbox kills the rest. How a
// session finds its processes: its cgroup where this machine has cgroup
// v2, else a marker in their environment.
func TestDeleteSessionKillsWhatItLeft(t *testing.T) {
	needRootFS(t)
	for _, tracking := range []string{"cgroup", "environ"} {
		t.Run(tracking, func(t *testing.T) {
			s := Start(t, Options{Specs: specs})
			s.mu.Lock()
			if tracking == "cgroup" && s.cgroups == "" {
				_, err := cgroupParent()
				s.mu.Unlock()
				t.Skipf("no cgroups here (%v); the environ fallback is what sessions use", err)
			}
			if tracking == "environ" {
				// Close removes only the cgroup it still knows of.
				dir := s.cgroups
				s.cgroups = ""
				t.Cleanup(func() { removeServerCgroup(dir) })
			}
			s.mu.Unlock()
			sb := create(t, client(t, s), "d")
			a, b := marker(t, "a"), marker(t, "b")
			inSession(t, sb, "a", daemon(a))
			inSession(t, sb, "b", daemon(b))
			if len(hostProcs(a)) != 1 || len(hostProcs(b)) != 1 {
				t.Fatalf("the daemons did not outlive their commands: %v %v", hostProcs(a), hostProcs(b))
			}
			if err := sb.Process.DeleteSession(ctx(t), "a"); err != nil {
				t.Fatal(err)
			}
			wait.For(t, "session a's daemon to end", 20*time.Second, func() bool { return len(hostProcs(a)) == 0 })
			if len(hostProcs(b)) != 1 {
				t.Fatal("deleting session a killed session b's daemon")
			}
			if err := sb.Delete(ctx(t)); err != nil {
				t.Fatal(err)
			}
			wait.For(t, "session b's daemon to end with the sandbox", 20*time.Second, func() bool { return len(hostProcs(b)) == 0 })
		})
	}
}

// A command that timed out on the client's side is ended by deleting its
// session: all of it, what it started and detached included.
func TestDeleteSessionKillsARunningCommandsTree(t *testing.T) {
	needRootFS(t)
	s := Start(t, Options{Specs: specs})
	sb := create(t, client(t, s), "t")
	m := marker(t, "child")
	cid := startCommand(t, sb, "s", daemon(m)+"; echo started; exec sleep 1000")
	wait.For(t, "the command to start its daemon", 20*time.Second, func() bool {
		logs, err := sb.Process.GetSessionCommandLogs(ctx(t), "s", cid)
		return err == nil && logs.Stdout == "started\n"
	})
	if err := sb.Process.DeleteSession(ctx(t), "s"); err != nil {
		t.Fatal(err)
	}
	wait.For(t, "the command's daemon to end", 20*time.Second, func() bool { return len(hostProcs(m)) == 0 })
	wait.For(t, "the command to end", 20*time.Second, func() bool { return s.Running() == 0 })
}

// Once Close has returned, nothing any sandbox started is left on this
// machine: not what its session commands and its synchronous commands
// left running, daemons included.
func TestCloseLeavesNoDaemon(t *testing.T) {
	needRootFS(t)
	s := NewServer(Options{Specs: specs, Dir: t.TempDir()})
	defer s.Close()
	sb := create(t, client(t, s), "c")
	inSession(t, sb, "s", daemon(marker(t, "session")))
	// As the daemon's CombinedOutput, the call returns: the daemon let go
	// of its output.
	run(t, sb, daemon(marker(t, "execute")))
	if len(hostProcs(marker(t, ""))) != 2 {
		t.Fatalf("the daemons did not outlive their commands: %v", hostProcs(marker(t, "")))
	}
	s.Close()
	if pids := hostProcs(marker(t, "")); len(pids) != 0 {
		t.Fatalf("processes outlived Close: %v", pids)
	}
}

// A synchronous command whose background process keeps its output open
// holds the answer, as the daemon's CombinedOutput does, until the
// timeout kills the command's process group.
func TestExecuteWaitsForItsOutputToClose(t *testing.T) {
	needRootFS(t)
	s := Start(t, Options{Specs: specs})
	sb := create(t, client(t, s), "w")
	m := marker(t, "held")
	start := time.Now()
	_, err := sb.Process.ExecuteCommand(ctx(t), fmt.Sprintf(`python3 -c 'import time; time.sleep(1000)' %s & echo started`, m), options.WithExecuteTimeout(time.Second))
	if statusOf(err) != 408 || time.Since(start) < time.Second {
		t.Fatalf("after %v: %v, want 408 after the timeout", time.Since(start), err)
	}
	wait.For(t, "the timeout to kill the process group", 20*time.Second, func() bool { return len(hostProcs(m)) == 0 })
}

// With RootFS each sandbox has a network of its own, loopback only, unless
// the server shares this machine's (HostNetwork); a sandbox whose network
// is blocked never does.
func TestRootFSNetworks(t *testing.T) {
	needRootFS(t)
	for _, hostNet := range []bool{false, true} {
		s := Start(t, Options{Specs: specs, HostNetwork: hostNet})
		c := client(t, s)
		u, err := url.Parse(s.URL())
		if err != nil {
			t.Fatal(err)
		}
		dial := fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", u.Hostname(), u.Port())
		loopback := `python3 -c "import socket; s = socket.create_server(('127.0.0.1', 0)); socket.create_connection(s.getsockname()); print('loopback')"`
		for _, block := range []bool{false, true} {
			sb, err := c.Create(ctx(t), types.SnapshotParams{SandboxBaseParams: types.SandboxBaseParams{NetworkBlockAll: block}})
			if err != nil {
				t.Fatal(err)
			}
			want := hostNet && !block
			if reached := exitOf(t, sb, "bash -c "+text.ShellQuote(dial)) == 0; reached != want {
				t.Errorf("HostNetwork %v, networkBlockAll %v: reached this machine's network: %v", hostNet, block, reached)
			}
			if got := run(t, sb, loopback); got != "loopback\n" {
				t.Errorf("HostNetwork %v, networkBlockAll %v: %q", hostNet, block, got)
			}
		}
		deleteAll(t, s, c)
	}
}

// Shared directories of this machine are the sandboxes' too, at the same
// path, read-write.
func TestRootFSShared(t *testing.T) {
	needRootFS(t)
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/tool", []byte("#!/bin/sh\necho tool ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := Start(t, Options{Specs: specs, Shared: []string{dir}})
	sb := create(t, client(t, s), "shared")
	if got := run(t, sb, dir+"/tool && echo mark > "+dir+"/mark"); got != "tool ran\n" {
		t.Errorf("the shared tool: %q", got)
	}
	if b, err := os.ReadFile(dir + "/mark"); string(b) != "mark\n" {
		t.Errorf("the sandbox's write to the shared directory: %q, %v", b, err)
	}
	if got := exitOf(t, sb, "test -e "+t.TempDir()); got == 0 {
		t.Error("a directory not shared is the sandbox's")
	}
	if _, err := newServer(Options{Specs: specs, Shared: []string{"relative"}}); err == nil {
		t.Error("a relative shared directory was taken")
	}
}

// A session whose creation reaches the emulator just after its sandbox
// was deleted (the toolbox had let the call in) is refused, as the proxy
// refuses calls to a deleted sandbox: made, it would outlive the sandbox,
// and made while the emulator closes, keep Close waiting for ever.
func TestLateSessionIsRefused(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	sb := create(t, client(t, s), "late")
	s.mu.Lock()
	late := s.order[0]
	s.mu.Unlock()
	if err := sb.Delete(ctx(t)); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/process/session", strings.NewReader(`{"sessionId":"s"}`))
	s.createSession(&handlerCtx{w: w, r: r, op: OpCreateSession, sandboxID: late.id}, late)
	s.mu.Lock()
	n := len(late.sessions)
	s.mu.Unlock()
	if w.Code != 401 || n != 0 {
		t.Errorf("a session on a deleted sandbox: %d %s; %d sessions", w.Code, w.Body, n)
	}
}
