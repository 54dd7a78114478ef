package daytonatest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/options"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"
	"github.com/forge-run/forge/internal/testkit/wait"
	"github.com/forge-run/forge/internal/text"
)

// needRootFS fails, not skips, a test of the sandboxes' own roots where the
// emulator cannot make them: the behaviour they check is what Harbor tasks
// need, and a machine without it must not pass quietly.
func needRootFS(t testing.TB) {
	t.Helper()
	if !RootFS() {
		t.Fatalf("the emulator gives sandboxes no root file system of their own here (%v): it needs Linux, root, mount namespaces and overlayfs", rootFSUnavailable())
	}
}

// run runs cmd in sb and fails the test unless it exits 0.
func run(t *testing.T, sb *daytona.Sandbox, cmd string, opts ...func(*options.ExecuteCommand)) string {
	t.Helper()
	res, err := sb.Process.ExecuteCommand(ctx(t), cmd, opts...)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%s: %+v, %v", cmd, res, err)
	}
	return res.Result
}

// exitOf is cmd's exit code in sb.
func exitOf(t *testing.T, sb *daytona.Sandbox, cmd string) int {
	t.Helper()
	res, err := sb.Process.ExecuteCommand(ctx(t), cmd)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return res.ExitCode
}

// noMountsUnder fails if this machine's mount table has anything under dir:
// the roots' mounts live in their holders' namespaces only.
func noMountsUnder(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && strings.HasPrefix(fields[4], dir) {
			t.Errorf("a mount on the host: %s", sc.Text())
		}
	}
}

// A Harbor task as it is played: its image (WORKDIR /app, files COPYed
// anywhere, a RUN writing to /etc), a sandbox of it where those paths are
// real, the harness's tests uploaded to /tests and run, the reward read
// back from /logs. Each sandbox's root is its own: neither another sandbox
// of the snapshot nor the host sees its writes, and it sees neither the
// host's /tmp nor the rest of the host's files.
func TestRootFSHarborTask(t *testing.T) {
	needRootFS(t)
	s := Start(t, Options{Specs: specs})
	c := client(t, s)
	t.Chdir(t.TempDir()) // the SDK names context entries by the local path as given
	if err := os.Mkdir("task", 0o755); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]struct {
		body string
		mode os.FileMode
	}{
		"task/x.py": {"print('x ran')\n", 0o644},
		"task/tool": {"#!/bin/sh\necho \"tool ran in $(pwd)\"\n", 0o755}, // runs without a chmod: COPY keeps modes
	} {
		if err := os.WriteFile(filepath.FromSlash(name), []byte(f.body), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	img := daytona.Base("python:3.12-slim").Workdir("/app").
		AddLocalFile("task/x.py", "/app/x.py").
		AddLocalFile("task/tool", "/usr/local/bin/tool").
		Run("echo marked > /etc/marker").
		// Deletions of the host's files (a whiteout; a directory made
		// anew, opaque) are the image's too.
		Run("rm -f /etc/debian_version && rm -rf /usr/share/doc && mkdir /usr/share/doc && echo d > /usr/share/doc/only")
	_, logs, err := c.Snapshot.Create(ctx(t), &types.CreateSnapshotParams{Name: "harbor-task", Image: img})
	if err != nil {
		t.Fatal(err)
	}
	drain(logs)
	info := s.Snapshots()[0]
	if info.State != "active" || info.Workdir != "/app" {
		t.Fatalf("snapshot %s (%s), workdir %q:\n%s", info.State, info.ErrorReason, info.Workdir, info.Log)
	}
	if b, _ := os.ReadFile("/etc/marker"); string(b) == "marked\n" {
		t.Fatal("the build's RUN wrote the host's /etc/marker")
	}
	for _, p := range []string{"app/x.py", "usr/local/bin/tool", "etc/marker"} {
		if fileMissing(filepath.Join(info.Root, p)) {
			t.Errorf("the snapshot's root lacks %s", p)
		}
	}

	a, err := c.Create(ctx(t), types.SnapshotParams{Snapshot: "harbor-task"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Create(ctx(t), types.SnapshotParams{Snapshot: "harbor-task"})
	if err != nil {
		t.Fatal(err)
	}
	aInfo := s.Sandboxes()[0]
	noMountsUnder(t, filepath.Dir(aInfo.Root))
	if wd, err := a.GetWorkingDir(ctx(t)); err != nil || wd != "/app" {
		t.Fatalf("work dir %q, %v", wd, err)
	}
	if home, err := a.GetUserHomeDir(ctx(t)); err != nil || home != "/home/daytona" {
		t.Fatalf("home %q, %v", home, err)
	}
	// Commands run in the work dir, the image's files and tools at their
	// paths, the host's python among them.
	if got := run(t, a, "python3 x.py && tool && cat /etc/marker && echo $HOME $TMPDIR"); got != "x ran\ntool ran in /app\nmarked\n/home/daytona /tmp\n" {
		t.Fatalf("in the sandbox: %q", got)
	}

	// The harness: tests uploaded, run, the reward downloaded.
	test := "#!/bin/bash\nmkdir -p /logs/verifier\nif [ \"$(python3 /app/x.py)\" = 'x ran' ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
	if err := a.FileSystem.UploadFile(ctx(t), []byte(test), "/tests/test.sh"); err != nil {
		t.Fatal(err)
	}
	run(t, a, "bash /tests/test.sh")
	if got, err := a.FileSystem.DownloadFile(ctx(t), "/logs/verifier/reward.txt", nil); err != nil || string(got) != "1\n" {
		t.Fatalf("reward %q, %v", got, err)
	}
	// What the image does not have is the host's, read through the
	// sandbox's root.
	host, err := os.ReadFile("/etc/os-release")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.FileSystem.DownloadFile(ctx(t), "/etc/os-release", nil); err != nil || string(got) != string(host) {
		t.Fatalf("/etc/os-release through the sandbox: %q, %v", got, err)
	}

	// Writes in one sandbox stay in it.
	run(t, a, "echo from-a > /app/only-a && echo from-a > /etc/only-a && echo from-a > /tmp/only-a && echo from-a > /usr/local/bin/only-a")
	if code := exitOf(t, b, "test -e /app/only-a || test -e /etc/only-a || test -e /tmp/only-a || test -e /usr/local/bin/only-a"); code == 0 {
		t.Fatal("a sandbox sees another's files")
	}
	if got := run(t, b, "cat /app/x.py /etc/marker && ls /usr/share/doc && test ! -e /etc/debian_version"); got != "print('x ran')\nmarked\nonly\n" {
		t.Fatalf("the other sandbox: %q", got)
	}
	for _, p := range []string{"/etc/only-a", "/tmp/only-a", "/usr/local/bin/only-a", filepath.Join(info.Root, "app", "only-a")} {
		if !fileMissing(p) {
			t.Errorf("a sandbox's write reached %s", p)
		}
	}
	// The host can read them in the sandbox's root.
	for _, p := range []string{"app/only-a", "etc/only-a", "tmp/only-a"} {
		if got, err := os.ReadFile(filepath.Join(aInfo.Root, p)); err != nil || string(got) != "from-a\n" {
			t.Errorf("%s in the root on the host: %q, %v", p, got, err)
		}
	}

	// The host's /tmp, /work and the emulator's own files are not there.
	f, err := os.CreateTemp("/tmp", "daytonatest-host-only-")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() { os.Remove(f.Name()) })
	for _, p := range []string{f.Name(), "/work", aInfo.Root, s.opts.Dir} {
		if code := exitOf(t, a, "test -e "+text.ShellQuote(p)); code == 0 {
			t.Errorf("the sandbox sees the host's %s", p)
		}
	}
	if got := run(t, a, "ls -A /tmp"); got != "only-a\n" {
		t.Errorf("the sandbox's /tmp holds %q", got)
	}

	// A link in the sandbox leads within it, even for the file API.
	run(t, a, "ln -s /etc /app/etc-link")
	if err := a.FileSystem.UploadFile(ctx(t), []byte("up\n"), "/app/etc-link/uploaded"); err != nil {
		t.Fatal(err)
	}
	if got := run(t, a, "cat /etc/uploaded"); got != "up\n" || !fileMissing("/etc/uploaded") {
		t.Fatalf("upload through a link: %q in the sandbox; on the host: %v", got, !fileMissing("/etc/uploaded"))
	}
	deleteAll(t, s, c)
	noMountsUnder(t, filepath.Dir(aInfo.Root))
}

// An image's ENTRYPOINT starts with each of its sandboxes, in the work
// dir, and ends with it; it is none of the sandbox's Commands.
func TestRootFSEntrypoint(t *testing.T) {
	needRootFS(t)
	s := Start(t, Options{Specs: specs})
	c := client(t, s)
	img := daytona.Base("python:3.12-slim").Workdir("/srv/app").
		Entrypoint([]string{"sh", "-c", `echo $$ > pid; pwd > started; exec sleep 300`})
	_, logs, err := c.Snapshot.Create(ctx(t), &types.CreateSnapshotParams{Name: "service", Image: img})
	if err != nil {
		t.Fatal(err)
	}
	drain(logs)
	if info := s.Snapshots()[0]; info.State != "active" {
		t.Fatalf("snapshot %s: %s\n%s", info.State, info.ErrorReason, info.Log)
	}
	sb, err := c.Create(ctx(t), types.SnapshotParams{Snapshot: "service"})
	if err != nil {
		t.Fatal(err)
	}
	root := s.Sandboxes()[0].Root
	started := filepath.Join(root, "srv", "app", "started")
	wait.For(t, "the entrypoint to start", 20*time.Second, func() bool {
		b, _ := os.ReadFile(started)
		return string(b) == "/srv/app\n"
	})
	if n := len(s.Sandboxes()[0].Commands); n != 0 {
		t.Errorf("the entrypoint is among the commands: %q", s.Sandboxes()[0].Commands)
	}
	if err := sb.Delete(ctx(t)); err != nil {
		t.Fatal(err)
	}
	assertGone(t, s, s.Sandboxes()[0].ID, filepath.Join(root, "srv", "app", "pid"))
}

// BenchmarkCommand is what a command costs to start and end: on the host
// as the mapped emulator runs it, and in a root (chrooted through the
// holder, in its PID namespace; with a network of its own, or this
// machine's).
func BenchmarkCommand(b *testing.B) {
	loop := func(b *testing.B, mk func() *exec.Cmd, start func(*exec.Cmd) error) {
		for b.Loop() {
			cmd := mk()
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := start(cmd)
			if err == nil {
				err = cmd.Wait()
			}
			if err != nil {
				b.Fatalf("%v: %s", err, out.Bytes())
			}
		}
	}
	b.Run("host", func(b *testing.B) {
		loop(b, func() *exec.Cmd {
			cmd := exec.Command("sh", "-c", "true")
			ownGroup(cmd)
			return cmd
		}, (*exec.Cmd).Start)
	})
	for _, ownNet := range []bool{false, true} {
		b.Run(fmt.Sprintf("root/ownNet=%v", ownNet), func(b *testing.B) {
			needRootFS(b)
			var wg sync.WaitGroup
			dir := b.TempDir()
			r, err := startRoot(filepath.Join(dir, "root"), filepath.Join(dir, "work"), "", nil, ownNet, &wg)
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				r.stop()
				wg.Wait()
			}()
			loop(b, func() *exec.Cmd { return r.command(nil, "true", "/", nil) }, r.start)
		})
	}
}

// A sandbox's root is a mount point, as a container's is: its root user
// makes a private mount namespace (unshare -m) and mounts a tmpfs there,
// which its other processes never see; a user who is not root may not.
func TestRootFSPrivateMount(t *testing.T) {
	needRootFS(t)
	s := Start(t, Options{Specs: specs})
	c := client(t, s)
	sb, err := c.Create(ctx(t), types.SnapshotParams{})
	if err != nil {
		t.Fatal(err)
	}
	run(t, sb, "mkdir -p /logs/verifier && echo outer > /logs/verifier/reward.txt")
	got := run(t, sb, `unshare -m --propagation private sh -c 'mount -t tmpfs forge /logs/verifier && echo inner > /logs/verifier/reward.txt && cat /logs/verifier/reward.txt'`)
	if got != "inner\n" {
		t.Errorf("in the namespace: %q", got)
	}
	if got := run(t, sb, "cat /logs/verifier/reward.txt"); got != "outer\n" {
		t.Errorf("outside the namespace: %q; the private mount leaked", got)
	}
	if code := exitOf(t, sb, `setpriv --reuid=65534 --regid=65534 --clear-groups unshare -m true`); code == 0 {
		t.Error("a user who is not root made a mount namespace")
	}
	noMountsUnder(t, s.Sandboxes()[0].Root)
}
