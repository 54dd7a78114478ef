package daytonatest

import (
	"strings"
	"testing"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/options"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"
)

// buildSnapshot builds img as the snapshot name and fails the test unless
// it ends active.
func buildSnapshot(t *testing.T, s *Server, c *daytona.Client, name string, img *daytona.DockerImage) {
	t.Helper()
	_, logs, err := c.Snapshot.Create(ctx(t), &types.CreateSnapshotParams{Name: name, Image: img})
	if err != nil {
		t.Fatal(err)
	}
	drain(logs)
	for _, info := range s.Snapshots() {
		if info.Name == name && info.State != "active" {
			t.Fatalf("snapshot %s: %s: %s\n%s", name, info.State, info.ErrorReason, info.Log)
		}
	}
}

// An image's USER is who its later build steps run as, and who its
// sandboxes' commands and files are: the service starts a sandbox's
// daemon as its image's user, at home where that user's passwd entry says.
func TestRootFSImageUser(t *testing.T) {
	needRootFS(t)
	s := Start(t, Options{Specs: specs})
	c := client(t, s)
	buildSnapshot(t, s, c, "as-nobody", daytona.Base("debian:bookworm").User("nobody").Run("id -u > /tmp/who"))
	buildSnapshot(t, s, c, "as-runner", daytona.Base("debian:bookworm").
		Run("useradd -m -u 4321 runner && echo mine > /home/runner/made-by-image").User("runner").Run("id -un > /tmp/who"))

	sb, err := c.Create(ctx(t), types.SnapshotParams{Snapshot: "as-nobody"})
	if err != nil {
		t.Fatal(err)
	}
	// Its home does not exist: a command must name where it runs.
	inRoot := options.WithCwd("/")
	if got := run(t, sb, "cat /tmp/who; id -u", inRoot); got != "65534\n65534\n" {
		t.Errorf("USER nobody: the build step and the sandbox ran as %q, want nobody's uid twice", got)
	}
	// nobody's home is /nonexistent: the daemon's home, which nothing makes.
	if home, err := sb.GetUserHomeDir(ctx(t)); err != nil || home != "/nonexistent" {
		t.Errorf("nobody's home: %q, %v", home, err)
	}
	if out := run(t, sb, "mkdir -p /nonexistent/forge 2>&1 || echo refused", inRoot); !strings.HasSuffix(out, "refused\n") {
		t.Errorf("nobody made a directory under / (it runs as root): %q", out)
	}
	if err := sb.FileSystem.UploadFile(ctx(t), []byte("x"), "/etc/forge-upload"); err == nil {
		t.Error("an upload as nobody wrote to /etc")
	}

	sb2, err := c.Create(ctx(t), types.SnapshotParams{Snapshot: "as-runner"})
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, sb2, "cat /tmp/who; id -u; echo $HOME; pwd; cat made-by-image"); got != "runner\n4321\n/home/runner\n/home/runner\nmine\n" {
		t.Errorf("USER runner: %q", got)
	}
	if err := sb2.FileSystem.UploadFile(ctx(t), []byte("x"), "/home/runner/sub/up.txt"); err != nil {
		t.Fatal(err)
	}
	if got := run(t, sb2, "stat -c %U:%G /home/runner/sub /home/runner/sub/up.txt"); got != "runner:runner\nrunner:runner\n" {
		t.Errorf("uploaded as runner, owned by %q", got)
	}
	deleteAll(t, s, c)
}

// What a sandbox's home holds when it starts, by kind of image: nothing of
// forge's, only what its image put there (the service's daemon makes no
// directory in it).
func TestRootFSHomeAtStart(t *testing.T) {
	needRootFS(t)
	s := Start(t, Options{Specs: specs})
	c := client(t, s)
	buildSnapshot(t, s, c, "plain", daytona.Base("python:3.12-slim").Workdir("/app"))
	buildSnapshot(t, s, c, "homed", daytona.Base("python:3.12-slim").Run("mkdir -p /home/daytona/.config && echo x > /home/daytona/.config/a"))
	for _, tc := range []struct {
		params any
		want   string
	}{
		{types.SnapshotParams{}, ""},                                      // the default snapshot
		{types.ImageParams{Image: "python:3.12-slim"}, ""},                // an image by name
		{types.SnapshotParams{Snapshot: "plain"}, ""},                     // a built image
		{types.SnapshotParams{Snapshot: "homed"}, ".config\n.config/a\n"}, // one that wrote there
	} {
		var sb *daytona.Sandbox
		var err error
		switch p := tc.params.(type) {
		case types.SnapshotParams:
			sb, err = c.Create(ctx(t), p)
		case types.ImageParams:
			sb, err = c.Create(ctx(t), p)
		}
		if err != nil {
			t.Fatal(err)
		}
		home, err := sb.GetUserHomeDir(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		got := run(t, sb, "cd "+home+" && find . -mindepth 1 | sed 's|^./||' | sort")
		if got != tc.want {
			t.Errorf("%+v: home %s holds %q, want %q", tc.params, home, got, tc.want)
		}
	}
	deleteAll(t, s, c)
}

// A USER naming nobody the image knows fails the build as Docker does.
func TestRootFSUnknownUser(t *testing.T) {
	needRootFS(t)
	s := Start(t, Options{Specs: specs})
	c := client(t, s)
	_, logs, err := c.Snapshot.Create(ctx(t), &types.CreateSnapshotParams{Name: "ghost", Image: daytona.Base("debian:bookworm").User("ghost")})
	if err != nil {
		t.Fatal(err)
	}
	lines := drain(logs)
	if last := lines[len(lines)-1]; !strings.Contains(last, "unable to find user ghost: no matching entries in passwd file") {
		t.Errorf("last log line %q", last)
	}
}
