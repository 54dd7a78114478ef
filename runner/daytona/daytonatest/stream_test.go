package daytonatest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"

	"github.com/forge-run/forge/internal/testkit/wait"
)

// ExitCodeLooks is how many times a log stream of the session command
// cmdID looked for its exit code (after each second of quiet) and found
// none, so followed on: what tells a stream that stays open from one not
// yet closed.
func (s *Server) ExitCodeLooks(cmdID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unfinished[cmdID]
}

// streamed is what GetSessionCommandLogsStream delivered.
type streamed struct {
	stdout, stderr string
	err            error
}

// follow runs the SDK's log stream for a command, draining both channels;
// each stdout chunk is also sent to chunks, if not nil.
func follow(ctx context.Context, sb *daytona.Sandbox, sid, cid string, chunks chan<- string) <-chan streamed {
	res := make(chan streamed, 1)
	go func() {
		out, errc := make(chan string, 16), make(chan string, 16)
		done := make(chan error, 1)
		go func() { done <- sb.Process.GetSessionCommandLogsStream(ctx, sid, cid, out, errc) }()
		var r streamed
		for out != nil || errc != nil {
			select {
			case s, ok := <-out:
				if !ok {
					out = nil
					continue
				}
				r.stdout += s
				if chunks != nil {
					chunks <- s
				}
			case s, ok := <-errc:
				if !ok {
					errc = nil
					continue
				}
				r.stderr += s
			}
		}
		r.err = <-done
		res <- r
	}()
	return res
}

// streamCallsOf waits until the call log holds n log streams (a stream is
// logged when the server is done with it, which may be after the client
// saw its end) and returns them.
func streamCallsOf(t *testing.T, s *Server, n int) []Call {
	t.Helper()
	var calls []Call
	wait.For(t, fmt.Sprintf("%d log streams logged", n), 20*time.Second, func() bool {
		calls = nil
		for _, c := range s.CallLog() {
			if c.Op == OpSessionLogsStream {
				calls = append(calls, c)
			}
		}
		return len(calls) >= n
	})
	return calls
}

func startCommand(t *testing.T, sb *daytona.Sandbox, sid, command string) string {
	t.Helper()
	if err := sb.Process.CreateSession(ctx(t), sid); err != nil && statusOf(err) != 409 {
		t.Fatal(err)
	}
	r, err := sb.Process.ExecuteSessionCommand(ctx(t), sid, command, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return r["id"].(string)
}

func TestLogStreamFollowsTheCommandUntilItsExitCode(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	sb := create(t, client(t, s), "stream")
	home, _ := sb.GetUserHomeDir(ctx(t))
	gate := path.Join(home, "gate")
	// The command waits for the test, which waits for its first line: the
	// stream must deliver while the command runs. (The SDK holds a chunk's
	// last two bytes back until more come: "second" pushes "first" out.
	// Stdout and stderr are not ordered with each other.)
	cid := startCommand(t, sb, "s", fmt.Sprintf("echo oops >&2; echo first; echo second; while [ ! -e %s ]; do sleep 0.01; done; printf 'last without newline'; exit 3", gate))
	chunks := make(chan string, 64)
	res := follow(ctx(t), sb, "s", cid, chunks)
	var got string
	for !strings.Contains(got, "first\n") {
		select {
		case c := <-chunks:
			got += c
		case <-time.After(20 * time.Second):
			t.Fatalf("no first line while the command runs (got %q)", got)
		}
	}
	if st, err := sb.Process.GetSessionCommand(ctx(t), "s", cid); err != nil || st["exitCode"] != nil {
		t.Fatalf("the command ended before the gate opened: %v %v", st, err)
	}
	if err := os.WriteFile(filepath.Join(s.Sandboxes()[0].Home, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range chunks {
		}
	}()
	var r streamed
	select {
	case r = <-res:
	case <-time.After(20 * time.Second):
		t.Fatal("the stream never ended after the command did")
	}
	close(chunks)
	if r.err != nil {
		t.Fatalf("stream ended with %v, want a normal close", r.err)
	}
	if r.stdout != "first\nsecond\nlast without newline\n" || r.stderr != "oops\n" {
		t.Fatalf("streamed %q / %q", r.stdout, r.stderr)
	}
	// It closed only once the exit code existed.
	st, err := sb.Process.GetSessionCommand(ctx(t), "s", cid)
	if err != nil || st["exitCode"] != int32(3) {
		t.Fatalf("after the stream: %v %v", st, err)
	}
	if calls := streamCallsOf(t, s, 1); calls[0].Status != http.StatusSwitchingProtocols {
		t.Fatalf("stream call %+v", calls[0])
	}
	// The JSON logs keep the markers in output, like the daemon's.
	logs, err := sb.Process.GetSessionCommandLogs(ctx(t), "s", cid)
	if err != nil || !strings.Contains(logs.Output, "\x02\x02\x02oops\n") ||
		strings.Replace(logs.Output, "\x02\x02\x02oops\n", "", 1) != "\x01\x01\x01first\n\x01\x01\x01second\n\x01\x01\x01last without newline\n" {
		t.Fatalf("logs %+v, %v", logs, err)
	}
}

func TestLogStreamOfAFinishedCommandReplaysAndCloses(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	sb := create(t, client(t, s), "replay")
	cid := startCommand(t, sb, "s", "for i in 1 2 3; do echo line-$i-$(head -c 600 /dev/zero | tr '\\000' x); done")
	wait.For(t, "the command to end", 20*time.Second, func() bool {
		st, err := sb.Process.GetSessionCommand(ctx(t), "s", cid)
		if err != nil {
			t.Fatal(err)
		}
		return st["exitCode"] != nil
	})
	r := <-follow(ctx(t), sb, "s", cid, nil)
	x := strings.Repeat("x", 600)
	if r.err != nil || r.stdout != "line-1-"+x+"\nline-2-"+x+"\nline-3-"+x+"\n" {
		t.Fatalf("replay: %v %q", r.err, r.stdout)
	}
}

func TestLogStreamFaults(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	sb := create(t, client(t, s), "faults")
	cid := startCommand(t, sb, "s", "echo hello; sleep 30")

	s.Inject(OpSessionLogsStream, Fault{Status: 404})
	r := <-follow(ctx(t), sb, "s", cid, nil)
	if r.err == nil || !strings.Contains(r.err.Error(), "Failed to connect to log stream") || statusOf(r.err) != 0 {
		t.Fatalf("refused upgrade: %v", r.err)
	}

	s.Inject(OpSessionLogsStream, Fault{Drop: true})
	r = <-follow(ctx(t), sb, "s", cid, nil)
	if r.err == nil || !strings.Contains(r.err.Error(), "WebSocket read error") {
		t.Fatalf("dropped stream: %v", r.err)
	}

	s.Inject(OpSessionLogsStream, Fault{Stall: true})
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res := follow(short, sb, "s", cid, nil)
	// A stalled stream sends nothing and never closes; only the sandbox's
	// deletion (or the server's end) cuts it.
	select {
	case r = <-res:
		t.Fatalf("a stalled stream ended: %+v", r)
	case <-short.Done():
	}
	if err := sb.Delete(ctx(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case r = <-res:
	case <-time.After(20 * time.Second):
		t.Fatal("deleting the sandbox did not cut its stream")
	}
	if r.stdout != "" {
		t.Fatalf("a stalled stream sent %q", r.stdout)
	}
	var faults []string
	for _, c := range streamCallsOf(t, s, 3) {
		faults = append(faults, fmt.Sprintf("%s:%d", c.Fault, c.Status))
	}
	if strings.Join(faults, " ") != "404:404 drop:101 stall:101" {
		t.Fatalf("stream calls %v", faults)
	}
}

func TestLogStreamOfAKilledCommandFollowsUntilTheSandboxGoes(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	sb := create(t, client(t, s), "killed")
	cid := startCommand(t, sb, "s", "echo started; sleep 30")
	chunks := make(chan string, 64)
	res := follow(ctx(t), sb, "s", cid, chunks)
	// The SDK holds back a chunk's last two bytes (they could start a
	// marker) until more arrive or the stream ends.
	if c := <-chunks; c != "starte" {
		t.Fatalf("first chunk %q", c)
	}
	// Killing the session leaves no exit code, so the stream goes on:
	// twice after the kill it looks for one, finds none and follows on.
	looked := s.ExitCodeLooks(cid)
	if err := sb.Process.DeleteSession(ctx(t), "s"); err != nil {
		t.Fatal(err)
	}
	mustNotHaveEnded := func() {
		select {
		case r := <-res:
			t.Fatalf("the stream of a killed command ended: %+v", r)
		default:
		}
	}
	wait.For(t, "the stream to look for the exit code twice after the kill", 30*time.Second, func() bool {
		mustNotHaveEnded()
		return s.ExitCodeLooks(cid) >= looked+2
	})
	mustNotHaveEnded()
	if err := sb.Delete(ctx(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-res:
		if r.err == nil || !strings.Contains(r.err.Error(), "WebSocket read error") {
			t.Fatalf("cut stream: %v", r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("deleting the sandbox did not cut its stream")
	}
}
