//go:build linux

package local

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/forge-run/forge/runner"
)

// The transcript a candidate writes at FORGE_TRANSCRIPT comes back whole,
// its steps counted and its malformed lines noted; one that is not there
// leaves nothing.
func TestRunTranscriptIsReadBack(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	res := mustRun(t, r, pyJob(t, "talker", `
import os, sys
open(sys.argv[2], "w").write("done")
with open(os.environ["FORGE_TRANSCRIPT"], "a") as f:
    f.write('{"role": "user", "type": "message", "content": "hi"}\n')
    f.write('{"role": "assistant", "content": "hello", "usage": {"input_tokens": 3, "output_tokens": 1}}\n')
    f.write('oops\n')
    f.write('{"type": "event", "content": "bye"}')
`))
	assertKind(t, res, runner.ErrNone)
	want := `{"role": "user", "type": "message", "content": "hi"}` + "\n" +
		`{"role": "assistant", "content": "hello", "usage": {"input_tokens": 3, "output_tokens": 1}}` + "\n" +
		"oops\n" + `{"type": "event", "content": "bye"}`
	if string(res.Transcript) != want || res.TranscriptBytes != int64(len(want)) || res.TranscriptTruncated {
		t.Errorf("transcript %q (%d bytes, truncated %v), want %q", res.Transcript, res.TranscriptBytes, res.TranscriptTruncated, want)
	}
	if res.TranscriptSteps != 3 || res.TranscriptNote != "1 line is not a JSON object (the first: line 3); not counted as steps" {
		t.Errorf("%d steps, note %q", res.TranscriptSteps, res.TranscriptNote)
	}

	none := mustRun(t, r, pyJob(t, "quiet", "import sys\nopen(sys.argv[2], 'w').write('x')\n"))
	if none.Transcript != nil || none.TranscriptBytes != 0 || none.TranscriptNote != "" {
		t.Errorf("no transcript written, yet %q %d %q", none.Transcript, none.TranscriptBytes, none.TranscriptNote)
	}
}

// A transcript that is a symlink is refused, never followed, and one that
// is not a regular file refused; the trial is not failed for either.
func TestRunTranscriptSymlinkIsRefused(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	res := mustRun(t, r, pyJob(t, "sneaky", `
import os, sys
open(sys.argv[2], "w").write("done")
open("real.jsonl", "w").write('{"role": "user", "content": "root:x:0:0"}\n')
os.symlink(os.path.abspath("real.jsonl"), os.environ["FORGE_TRANSCRIPT"])
`))
	assertKind(t, res, runner.ErrNone)
	if res.Transcript != nil || res.TranscriptSteps != 0 || res.TranscriptNote != "FORGE_TRANSCRIPT file is a symlink; ignored" {
		t.Errorf("transcript %q, %d steps, note %q", res.Transcript, res.TranscriptSteps, res.TranscriptNote)
	}
	if b, _ := json.Marshal(res); bytes.Contains(b, []byte("root:x")) {
		t.Errorf("the symlink's target was read: %s", b)
	}

	dir := mustRun(t, r, pyJob(t, "dir", `
import os, sys
open(sys.argv[2], "w").write("done")
os.mkdir(os.environ["FORGE_TRANSCRIPT"])
`))
	assertKind(t, dir, runner.ErrNone)
	if dir.Transcript != nil || dir.TranscriptNote != "FORGE_TRANSCRIPT file is not a regular file but a directory; ignored" {
		t.Errorf("a directory: transcript %q, note %q", dir.Transcript, dir.TranscriptNote)
	}
}

// A transcript over its cap is cut at the end of its last whole line
// within the cap, flagged, and its size as written kept.
func TestRunTranscriptOverTheCapIsCut(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := pyJob(t, "chatty", `
import os, sys
open(sys.argv[2], "w").write("done")
with open(os.environ["FORGE_TRANSCRIPT"], "w") as f:
    for i in range(100):
        f.write('{"n": %3d}\n' % i)
`)
	job.Limits = runner.Limits{MaxTranscriptBytes: 100} // lines of 11 bytes: 9 fit, the 10th is cut
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrNone)
	if !res.TranscriptTruncated || res.TranscriptBytes != 1100 || len(res.Transcript) != 99 || res.TranscriptSteps != 9 || res.TranscriptNote != "" {
		t.Errorf("truncated %v, %d bytes, %d kept, %d steps, note %q", res.TranscriptTruncated, res.TranscriptBytes, len(res.Transcript), res.TranscriptSteps, res.TranscriptNote)
	}
	if !strings.HasSuffix(string(res.Transcript), `{"n":   8}`+"\n") {
		t.Errorf("kept %q", res.Transcript)
	}
}
