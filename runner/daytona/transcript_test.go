package daytona

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// The transcript comes back from the sandbox as it does locally
// (runner/local's TestRunTranscript*): whole, its steps counted, its
// malformed lines noted; refused when a symlink; cut at a line's end over
// its cap, in forge.sh's report.
func TestTranscripts(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)

	written := e.run(e.shJob("written", `echo done > "$2"
printf '{"role": "user", "content": "hi"}\n' >> "$FORGE_TRANSCRIPT"
printf 'oops\n{"role": "assistant", "content": "hello", "usage": {"input_tokens": 3, "output_tokens": 1}}\n' >> "$FORGE_TRANSCRIPT"
`))
	want := `{"role": "user", "content": "hi"}` + "\n" + "oops\n" +
		`{"role": "assistant", "content": "hello", "usage": {"input_tokens": 3, "output_tokens": 1}}` + "\n"
	if !written.Success || string(written.Transcript) != want || written.TranscriptBytes != int64(len(want)) || written.TranscriptTruncated {
		t.Errorf("written: %s %q; transcript %q (%d bytes, truncated %v)", written.ErrorKind, written.ErrorMessage,
			written.Transcript, written.TranscriptBytes, written.TranscriptTruncated)
	}
	if written.TranscriptSteps != 2 || written.TranscriptNote != "1 line is not a JSON object (the first: line 2); not counted as steps" {
		t.Errorf("written: %d steps, note %q", written.TranscriptSteps, written.TranscriptNote)
	}
	if n := e.srv.Calls(daytonatest.OpDownloadFile); n != 0 {
		t.Errorf("%d downloads: the transcript comes in the report", n)
	}

	none := e.run(e.shJob("none", "echo done > \"$2\"\n"))
	if !none.Success || none.Transcript != nil || none.TranscriptNote != "" || none.TranscriptBytes != 0 {
		t.Errorf("none: %s; transcript %q, note %q", none.ErrorKind, none.Transcript, none.TranscriptNote)
	}

	target := filepath.Join(t.TempDir(), "target") // outside the sandbox, removed with the test
	link := e.run(e.shJob("link", fmt.Sprintf(`echo done > "$2"
printf '{"content": "root:x:0:0"}\n' > '%[1]s'; ln -s '%[1]s' "$FORGE_TRANSCRIPT"
`, target)))
	if !link.Success || link.Transcript != nil || link.TranscriptSteps != 0 || link.TranscriptNote != "FORGE_TRANSCRIPT file is a symlink; ignored" {
		t.Errorf("symlink: %s; transcript %q, %d steps, note %q", link.ErrorKind, link.Transcript, link.TranscriptSteps, link.TranscriptNote)
	}

	// Lines of 12 bytes ('{"n":    7}' and a newline); over the cap,
	// reported capped, small or big.
	for _, c := range []struct {
		name      string
		lines     int
		cap       int64
		downloads int
	}{
		{"small", 100, 100, 0},
		{"big", 6000, 64<<10 + 5, 0}, // 72,000 bytes
	} {
		before := e.srv.Calls(daytonatest.OpDownloadFile)
		job := e.shJob("big-"+c.name, fmt.Sprintf(`echo done > "$2"
i=0; while [ $i -lt %d ]; do printf '{"n": %%4d}\n' $i; i=$((i + 1)); done > "$FORGE_TRANSCRIPT"
`, c.lines))
		job.Limits = runner.Limits{MaxTranscriptBytes: c.cap}
		res := e.run(job)
		kept := c.cap / 12 * 12
		if !res.Success || !res.TranscriptTruncated || res.TranscriptBytes != int64(12*c.lines) || int64(len(res.Transcript)) != kept ||
			res.TranscriptSteps != int(kept/12) || res.TranscriptNote != "" {
			t.Errorf("%s: %s %q; truncated %v, %d bytes, %d kept (want %d), %d steps, note %q", c.name, res.ErrorKind, res.ErrorMessage,
				res.TranscriptTruncated, res.TranscriptBytes, len(res.Transcript), kept, res.TranscriptSteps, res.TranscriptNote)
		}
		if n := e.srv.Calls(daytonatest.OpDownloadFile) - before; n != c.downloads {
			t.Errorf("%s: %d downloads, want %d", c.name, n, c.downloads)
		}
	}
}
