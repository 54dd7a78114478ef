//go:build linux

package local

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local/localtest"
)

func TestRunArtifactSymlinkIsRefused(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "sneaky", `
import os, sys
os.symlink("/etc/passwd", sys.argv[2])
os.symlink("/etc/passwd", os.environ["FORGE_RESULT"])
`)
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrArtifactMissing)
	if res.ErrorMessage != "artifact output.md is a symlink; refused" {
		t.Errorf("message %q", res.ErrorMessage)
	}
	if !strings.Contains(res.SubmitError, "symlink") || res.Submitted != nil {
		t.Errorf("submit error %q, submitted %v: want the FORGE_RESULT symlink refused", res.SubmitError, res.Submitted)
	}
	b, _ := json.Marshal(res)
	if res.ArtifactContent != "" || len(res.Artifact) != 0 || bytes.Contains(b, []byte("root:")) {
		t.Errorf("content of /etc/passwd was read: %s", b)
	}
}

func TestRunArtifactEscapingThroughSymlinkedDirIsRefused(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	outside := localtest.SharedDir(t)
	job := pyJob(t, "escape", `
import os, sys
os.symlink(os.environ["OUTSIDE"], "out")
with open(sys.argv[2], "w") as f:   # out/result.md, which is really outside
    f.write("SECRET-OUTSIDE")
`)
	job.OutputFile = "out/result.md"
	job.Env = map[string]string{"OUTSIDE": outside}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrArtifactMissing)
	if !strings.HasPrefix(res.ErrorMessage, "artifact out/result.md ") || !strings.HasSuffix(res.ErrorMessage, "; refused") {
		t.Errorf("message %q", res.ErrorMessage)
	}
	if res.ArtifactContent != "" || len(res.Artifact) != 0 {
		t.Errorf("read %q from outside the working directory", res.ArtifactContent)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "result.md")); err != nil || string(b) != "SECRET-OUTSIDE" {
		t.Errorf("the candidate did not write outside as planned (%q, %v): the test proves nothing", b, err)
	}
}

func TestRunArtifactInsideSymlinkedDirIsRead(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "insidelink", `
import os, sys
os.mkdir("real")
os.symlink("real", "out")
with open(sys.argv[2], "w") as f:
    f.write("inside")
`)
	job.OutputFile = "out/result.md"
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	if res.ArtifactContent != "inside" {
		t.Errorf("artifact %q", res.ArtifactContent)
	}
}

func TestRunArtifactFifoIsRefusedWithoutHanging(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	res := mustRun(t, r, pyJob(t, "fifo", "import os, sys\nos.mkfifo(sys.argv[2])\n"))
	assertKind(t, res, runner.ErrArtifactMissing)
	if res.ErrorMessage != "artifact output.md is not a regular file but a named pipe; refused" {
		t.Errorf("message %q", res.ErrorMessage)
	}
}

func TestRunBinaryOutputStaysValidJSON(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	res := mustRun(t, r, pyJob(t, "binary", `
import sys
sys.stdout.buffer.write(b"ok \xff\xfe\x80 bad utf-8\n")
sys.stderr.buffer.write(b"\xc3\x28 also bad\n")
with open(sys.argv[2], "wb") as f:
    f.write(bytes(range(256)))
`))
	assertKind(t, res, runner.ErrNone)
	b, err := json.Marshal(res)
	if err != nil || !json.Valid(b) {
		t.Fatalf("json.Marshal: %v; valid %v: %s", err, json.Valid(b), b)
	}
	want := make([]byte, 256)
	for i := range want {
		want[i] = byte(i)
	}
	if res.ArtifactEncoding != "base64" || res.ArtifactBytes != 256 {
		t.Errorf("encoding %q bytes %d", res.ArtifactEncoding, res.ArtifactBytes)
	}
	var back runner.Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got, err := base64.StdEncoding.DecodeString(back.ArtifactContent)
	if err != nil || !bytes.Equal(got, want) || !bytes.Equal(res.Artifact, want) {
		t.Errorf("artifact did not round-trip: %v %x", err, got)
	}
	if !strings.HasPrefix(back.Output, "ok ") || !strings.HasSuffix(back.Output, " bad utf-8\n") {
		t.Errorf("output after JSON %q", back.Output)
	}
}

func TestRunHugeOutputIsCapped(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "firehose", `
import sys
chunk = b"x" * (1 << 20)
w = sys.stdout.buffer
for _ in range(1024):          # 1 GiB
    w.write(chunk)
w.flush()
sys.stderr.write("e" * (3 << 20))
sys.stderr.flush()
with open(sys.argv[2], "w") as f:
    f.write("survived")
`)
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	if !res.OutputTruncated || len(res.Output) != runner.DefaultMaxOutput || len(res.Stderr) != runner.DefaultMaxOutput {
		t.Errorf("truncated %v, kept %d bytes of stdout and %d of stderr; want both capped at %d",
			res.OutputTruncated, len(res.Output), len(res.Stderr), runner.DefaultMaxOutput)
	}
	if strings.Trim(res.Output, "x") != "" || res.ArtifactContent != "survived" {
		t.Errorf("unexpected output content or artifact %q", res.ArtifactContent)
	}
}

func TestRunOutputCapIsConfigurable(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "small", "import sys\nprint('a' * 100)\nopen(sys.argv[2], 'w').write('b' * 100)\n")
	job.Limits = runner.Limits{MaxOutputBytes: 10, MaxArtifactBytes: 7}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	if res.Output != strings.Repeat("a", 10) || !res.OutputTruncated {
		t.Errorf("output %q truncated %v", res.Output, res.OutputTruncated)
	}
	if res.ArtifactContent != "bbbbbbb" || !res.ArtifactTruncated || res.ArtifactBytes != 100 {
		t.Errorf("artifact %q truncated %v bytes %d", res.ArtifactContent, res.ArtifactTruncated, res.ArtifactBytes)
	}
}

func TestRunBadSubmissionIsNotAFailure(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	res := mustRun(t, r, pyJob(t, "badsubmit", `
import os, sys
open(os.environ["FORGE_RESULT"], "w").write("[1, 2]")
open(sys.argv[2], "w").write("ok")
`))
	assertKind(t, res, runner.ErrNone)
	if !strings.Contains(res.SubmitError, "not a JSON object") || res.Submitted != nil {
		t.Errorf("submit error %q submitted %v", res.SubmitError, res.Submitted)
	}
}

// TestRunOutputFileIsCleaned: out/../x.md names x.md inside the working
// directory (runner.RelPath), so the candidate writes there and forge reads
// it back.
func TestRunOutputFileIsCleaned(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "dotdotout", `
import os, sys
assert sys.argv[2] == os.environ["FORGE_OUTPUT"], (sys.argv[2], os.environ["FORGE_OUTPUT"])
assert os.path.basename(sys.argv[2]) == "x.md" and "/out/" not in sys.argv[2], sys.argv[2]
with open(sys.argv[2], "w") as f:
    f.write("cleaned")
`)
	job.OutputFile = "out/../x.md"
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	if res.ArtifactContent != "cleaned" {
		t.Errorf("artifact %q", res.ArtifactContent)
	}
}

func TestRunRefusesEscapingOutputFile(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "outfile", "print('never')\n")
	job.OutputFile = "../../etc/passwd"
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrInfra)
}

func TestRunUploadRefusesEscapingDestinations(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	for _, dst := range []string{"../evil.py", "/tmp/evil.py", "a/../../evil.py", "a/..", ""} {
		job := pyJob(t, "upload", "print('never')\n")
		job.Files = append(job.Files, runner.File{Src: job.Files[0].Src, Dst: dst})
		res, err := run(t, context.Background(), r, job)
		if err != nil {
			t.Errorf("Dst %q: Run returned error %v; want an infra result only", dst, err)
		}
		if res.ErrorKind != runner.ErrInfra || !strings.Contains(res.ErrorMessage, "destination") {
			t.Errorf("Dst %q: kind %q message %q", dst, res.ErrorKind, res.ErrorMessage)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(r.opts.TempDir), "evil.py")); err == nil {
		t.Error("a file was written outside the temp dir")
	}
	r.Close()
	if left := leftovers(t, r.opts.TempDir); len(left) != 0 {
		t.Errorf("Run left %v behind", left)
	}
}

func TestRunKeepsExecutableBit(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	dir := t.TempDir()
	script := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s' \"$1\" > \"$2\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data.txt")
	if err := os.WriteFile(data, []byte("d"), 0o644); err != nil {
		t.Fatal(err)
	}
	job := runner.Job{
		RunID: newRunID(t), CandidateID: "exe", Trial: 1, Objective: "hello",
		Command: []string{"bin/run.sh"},
		Files:   []runner.File{{Src: script, Dst: "bin/run.sh"}, {Src: data, Dst: "data.txt"}},
	}
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	if res.ArtifactContent != "hello" {
		t.Errorf("artifact %q", res.ArtifactContent)
	}

	job.Command = []string{"./data.txt"} // copied without the executable bit
	res = mustRun(t, r, job)
	assertKind(t, res, runner.ErrCandidateFailed)
	if !strings.Contains(res.ErrorMessage, "not executable") {
		t.Errorf("message %q", res.ErrorMessage)
	}
}
