package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

func TestCappedBufferKeepsTheFirstMaxBytes(t *testing.T) {
	c := &CappedBuffer{Max: 10}
	for _, s := range []string{"hello", " wor", "ld and more", "!"} {
		n, err := c.Write([]byte(s))
		if n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil so the pipe keeps draining", s, n, err, len(s))
		}
	}
	if got := c.String(); got != "hello worl" {
		t.Errorf("kept %q, want %q", got, "hello worl")
	}
	if c.Total() != 21 || !c.Truncated() {
		t.Errorf("total %d truncated %v, want 21 true", c.Total(), c.Truncated())
	}
	b := c.Bytes()
	b[0] = 'X'
	if c.String()[0] != 'h' {
		t.Error("Bytes returned the internal buffer, not a copy")
	}
}

func TestCappedBufferExactlyFullIsNotTruncated(t *testing.T) {
	c := &CappedBuffer{Max: 4}
	c.Write([]byte("abcd"))
	if c.Truncated() || c.String() != "abcd" {
		t.Errorf("kept %q truncated %v", c.String(), c.Truncated())
	}
	c.Write(nil)
	if c.Truncated() {
		t.Error("an empty write truncated the buffer")
	}
	c.Write([]byte("e"))
	if !c.Truncated() || c.String() != "abcd" {
		t.Errorf("after one more byte: kept %q truncated %v", c.String(), c.Truncated())
	}
}

func TestCappedBufferConcurrentWriters(t *testing.T) {
	c := &CappedBuffer{Max: 1000}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			chunk := bytes.Repeat([]byte{byte('a' + i)}, 100)
			for range 50 {
				c.Write(chunk)
			}
		}()
	}
	wg.Wait()
	if c.Total() != 8*50*100 || len(c.Bytes()) != 1000 || !c.Truncated() {
		t.Errorf("total %d kept %d truncated %v", c.Total(), len(c.Bytes()), c.Truncated())
	}
}

func TestCappedBufferMemoryStaysFlat(t *testing.T) {
	c := &CappedBuffer{Max: 1 << 10}
	chunk := make([]byte, 64<<10)
	for range 1 << 10 { // 64 MiB through it
		c.Write(chunk)
	}
	if cap(c.buf) > 4<<10 {
		t.Errorf("buffer grew to %d bytes for a %d-byte cap", cap(c.buf), c.Max)
	}
	if c.Total() != 64<<20 {
		t.Errorf("total %d", c.Total())
	}
}

func TestLastErrorLine(t *testing.T) {
	traceback := "Traceback (most recent call last):\n  File \"alpha.py\", line 3, in <module>\n    x = 1 / 0\n" +
		"        ~~^~~\nZeroDivisionError: division by zero\n"
	long := strings.Repeat("é", 400)
	for _, tc := range []struct{ name, in, want string }{
		{"traceback", traceback, "ZeroDivisionError: division by zero"},
		{"trailing blank lines", "first\nlast one  \n\n \r\n\t\n", "last one"},
		{"no newline", "only line", "only line"},
		{"empty", "", ""},
		{"blank", " \n\n", ""},
		{"crlf", "a\r\nb\r\n", "b"},
		{"invalid utf-8", "x\nbad \xff\xfe byte\n", "bad \uFFFD byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LastErrorLine(tc.in); got != tc.want {
				t.Errorf("LastErrorLine(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	t.Run("capped on a rune boundary", func(t *testing.T) {
		got := LastErrorLine("ok\n" + long)
		if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || len(got) > maxErrorLine+len("…") {
			t.Errorf("LastErrorLine of a %d-byte line = %d bytes %q", len(long), len(got), got)
		}
		if strings.TrimSuffix(got, "…") != long[:len(strings.TrimSuffix(got, "…"))] {
			t.Error("the capped line is not a prefix of the original")
		}
	})
}

func TestParseSubmitted(t *testing.T) {
	m, err := ParseSubmitted([]byte(` {"accuracy": 0.93, "items": 10, "name": "x", "nested": {"a": [1]}, "huge": 1e400, "ok": true}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"accuracy": 0.93, "items": 10.0, "name": "x", "huge": "1e400", "ok": true}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
	if _, ok := m["nested"].(map[string]any); !ok {
		t.Errorf("nested = %#v", m["nested"])
	}
	if _, err := json.Marshal(m); err != nil {
		t.Errorf("submitted metrics do not marshal: %v", err)
	}

	for _, bad := range []struct{ in, want string }{
		{"", "empty"},
		{"  \n", "empty"},
		{"[1, 2]", "not a JSON object"},
		{"42", "not a JSON object"},
		{`{"a": 1`, "not a JSON object"},
		{`{"a": NaN}`, "not a JSON object"},
		{`{"a": 1} {"b": 2}`, "data after"},
		{`{"a": 1} trailing`, "data after"},
	} {
		if m, err := ParseSubmitted([]byte(bad.in)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseSubmitted(%q) = %v, %v; want an error saying %q", bad.in, m, err, bad.want)
		}
	}
}

func intp(i int) *int { return &i }

func TestSettle(t *testing.T) {
	job := Job{CandidateID: "a", Timeout: 90 * time.Second}
	for _, tc := range []struct {
		name           string
		job            Job
		o              Outcome
		stdout, stderr string
		success        bool
		kind           ErrorKind
		msg            string
	}{
		{"success", job, Outcome{ExitCode: intp(0), ArtifactFound: true}, "", "", true, ErrNone, ""},
		{"cancelled wins", job, Outcome{ExitCode: intp(0), ArtifactFound: true, Cancelled: true, TimedOut: true}, "", "", false, ErrCancelled, "cancelled before it finished"},
		{"timeout", job, Outcome{TimedOut: true}, "", "Traceback\nKeyboardInterrupt\n", false, ErrTimeout, "timed out after 1m30s"},
		{"default timeout", Job{}, Outcome{TimedOut: true}, "", "", false, ErrTimeout, "timed out after 1m0s"},
		{"signal", job, Outcome{}, "", "", false, ErrCandidateFailed, "killed by a signal"},
		{"signal with stderr", job, Outcome{}, "", "MemoryError\n", false, ErrCandidateFailed, "MemoryError"},
		{"traceback", job, Outcome{ExitCode: intp(1), ArtifactFound: true}, "out\n", "Traceback:\nValueError: bad\n", false, ErrCandidateFailed, "ValueError: bad"},
		{"stdout when stderr is empty", job, Outcome{ExitCode: intp(2)}, "error: no key\n", "", false, ErrCandidateFailed, "error: no key"},
		{"bare exit status", job, Outcome{ExitCode: intp(3)}, "", "", false, ErrCandidateFailed, "exit status 3"},
		{"artifact refused", job, Outcome{ExitCode: intp(0), ArtifactProblem: "artifact output.md is a symlink; refused"}, "", "", false, ErrArtifactMissing, "artifact output.md is a symlink; refused"},
		{"artifact missing", Job{OutputFile: "post.md"}, Outcome{ExitCode: intp(0)}, "", "", false, ErrArtifactMissing, "exited 0 but wrote no artifact at post.md"},
		{"artifact optional", Job{ArtifactOptional: true}, Outcome{ExitCode: intp(0)}, "", "", true, ErrNone, ""},
		{"optional but refused", Job{ArtifactOptional: true}, Outcome{ExitCode: intp(0), ArtifactProblem: "artifact x is a symlink; refused"}, "", "", false, ErrArtifactMissing, "artifact x is a symlink; refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Result{Output: tc.stdout, Stderr: tc.stderr, ErrorKind: ErrInfra, ErrorMessage: "stale"}
			r.Settle(tc.job, tc.o)
			if r.Success != tc.success || r.ErrorKind != tc.kind || r.ErrorMessage != tc.msg {
				t.Errorf("Settle: success %v kind %q message %q; want %v %q %q", r.Success, r.ErrorKind, r.ErrorMessage, tc.success, tc.kind, tc.msg)
			}
			if r.ExitCode != tc.o.ExitCode {
				t.Errorf("exit code %v, want %v", r.ExitCode, tc.o.ExitCode)
			}
		})
	}
}

func TestSetArtifact(t *testing.T) {
	var r Result
	r.SetArtifact([]byte("# héllo"), 100)
	if r.ArtifactContent != "# héllo" || r.ArtifactEncoding != "" || r.ArtifactBytes != 100 || !r.ArtifactTruncated {
		t.Errorf("text artifact: %+v", r)
	}
	bin := []byte{0, 1, 0xff, 0xfe}
	r.SetArtifact(bin, 4)
	if r.ArtifactContent != "AAH//g==" || r.ArtifactEncoding != "base64" || r.ArtifactTruncated || !bytes.Equal(r.Artifact, bin) {
		t.Errorf("binary artifact: %+v", r)
	}
	r.SetArtifact([]byte("back to text"), 12)
	if r.ArtifactEncoding != "" {
		t.Errorf("encoding %q stayed after a text artifact", r.ArtifactEncoding)
	}
}

func TestResultJSON(t *testing.T) {
	r := Result{CandidateID: "alpha", Trial: 1, Backend: "local", Output: "bad \xff byte", ExitCode: intp(0)}
	r.Settle(Job{ArtifactOptional: true}, Outcome{ExitCode: intp(0)})
	b, err := json.Marshal(r)
	if err != nil || !json.Valid(b) {
		t.Fatalf("Marshal: %v %s", err, b)
	}
	for _, want := range []string{`"sandbox_id":null`, `"error_kind":null`, `"error_message":null`, `"exit_code":0`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	if bytes.Contains(b, []byte(`"Artifact"`)) {
		t.Errorf("raw artifact bytes leaked into the record: %s", b)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.SandboxID != "" || back.ErrorMessage != "" || back.CandidateID != "alpha" || back.Output != "bad \uFFFD byte" {
		t.Errorf("round trip: %+v", back)
	}

	r.SandboxID, r.ErrorKind, r.ErrorMessage = "sb-1", ErrTimeout, "timed out after 1s"
	b, _ = json.Marshal(r)
	if !bytes.Contains(b, []byte(`"sandbox_id":"sb-1"`)) || !bytes.Contains(b, []byte(`"error_kind":"timeout"`)) {
		t.Errorf("%s", b)
	}
	back = Result{}
	if err := json.Unmarshal(b, &back); err != nil || back.SandboxID != "sb-1" || back.ErrorKind != ErrTimeout || back.ErrorMessage != "timed out after 1s" {
		t.Errorf("round trip: %v %+v", err, back)
	}
}

func TestProtocolEnvAndArgv(t *testing.T) {
	j := Job{RunID: "r1", CandidateID: "alpha", Trial: 2, Objective: "o $(x)",
		Command: []string{"python3", "alpha.py"},
		Env:     map[string]string{"MODE": "fast", "FORGE_RUN_ID": "spoofed"}}
	if got, want := j.Argv("/w/out.md"), []string{"python3", "alpha.py", "o $(x)", "/w/out.md"}; !slices.Equal(got, want) {
		t.Errorf("Argv = %q, want %q", got, want)
	}
	if len(j.Command) != 2 {
		t.Error("Argv changed the job's Command")
	}
	at := func(rel string) string { return "/w/" + rel }
	env := j.ProtocolEnv(at)
	want := map[string]string{"MODE": "fast", "FORGE_OBJECTIVE": "o $(x)", "FORGE_OUTPUT": "/w/output.md",
		"FORGE_RESULT": "/w/.forge-result.json", "FORGE_TRANSCRIPT": "/w/.forge-transcript.jsonl", "FORGE_CANDIDATE_ID": "alpha", "FORGE_TRIAL": "2", "FORGE_RUN_ID": "r1"}
	if !maps.Equal(env, want) {
		t.Errorf("ProtocolEnv = %v, want %v", env, want)
	}
	// A suite's job also names its task and where the task's JSON is.
	j.TaskID, j.OutputFile = "q7", "answer.txt"
	want["FORGE_TASK_ID"], want["FORGE_TASK"], want["FORGE_OUTPUT"] = "q7", "/w/.forge-task.json", "/w/answer.txt"
	if env := j.ProtocolEnv(at); !maps.Equal(env, want) {
		t.Errorf("ProtocolEnv with a task = %v, want %v", env, want)
	}
	if j.Name() != "alpha/q7#2" {
		t.Errorf("Name with a task: %q", j.Name())
	}
	j.TaskID = ""
	if got := EnvList(map[string]string{"B": "2", "A": "1"}); !slices.Equal(got, []string{"A=1", "B=2"}) {
		t.Errorf("EnvList = %q", got)
	}
	if j.Name() != "alpha#2" || (Job{CandidateID: "beta", Trial: 1}).Name() != "beta" {
		t.Errorf("Name: %q", j.Name())
	}
}

func TestCheckEnvName(t *testing.T) {
	for k, want := range map[string]string{
		"MODE": "", "_x1": "", "FORGEX": "",
		"":             `"" is not a valid variable name`,
		"1BAD":         `"1BAD" is not a valid variable name`,
		"A-B":          `"A-B" is not a valid variable name`,
		"FORGE_OUTPUT": `"FORGE_OUTPUT": FORGE_* variables are set by forge itself`,
	} {
		err := CheckEnvName(k)
		if got := fmt.Sprint(err); (want == "" && err != nil) || (want != "" && got != want) {
			t.Errorf("CheckEnvName(%q) = %v, want %q", k, err, want)
		}
	}
}

func TestFaultOfEveryKind(t *testing.T) {
	cases := []struct {
		kind   ErrorKind
		fault  Fault
		scored bool
	}{
		{ErrNone, FaultNone, true},
		{ErrTimeout, FaultCandidate, true},
		{ErrCandidateFailed, FaultCandidate, true},
		{ErrArtifactMissing, FaultCandidate, true},
		{ErrInfra, FaultInfra, false},
		{ErrAuth, FaultInfra, false},
		{ErrCancelled, FaultInterrupted, false},
		{ErrorKind("from_a_newer_forge"), FaultCandidate, true},
	}
	for _, c := range cases {
		if got := c.kind.Fault(); got != c.fault {
			t.Errorf("%q.Fault() = %d, want %d", c.kind, got, c.fault)
		}
		if got := c.kind.Scored(); got != c.scored {
			t.Errorf("%q.Scored() = %v, want %v", c.kind, got, c.scored)
		}
	}
}

// TestSetupFailed is the one record of a failed setup, every backend's.
func TestSetupFailed(t *testing.T) {
	code := func(n int) *int { return &n }
	for _, tc := range []struct {
		name           string
		o              Outcome
		stdout, stderr string
		want           string
	}{
		{"stderr", Outcome{ExitCode: code(1)}, "Collecting x\n", "Traceback\nERROR: No matching distribution found for x\n\n",
			"setup failed: ERROR: No matching distribution found for x"},
		{"stdout only", Outcome{ExitCode: code(2)}, "step one\nstep two failed\n", "", "setup failed: step two failed"},
		{"silent", Outcome{ExitCode: code(4)}, "", " \n", "setup failed: exit status 4"},
		{"signal", Outcome{}, "out\n", "", "setup failed: killed by a signal"},
		{"signal with stderr", Outcome{}, "", "Killed\n", "setup failed: Killed"},
		{"timed out", Outcome{TimedOut: true}, "out\n", "", "setup failed: timed out after 1m30s"},
		{"timed out with stderr", Outcome{TimedOut: true, ExitCode: code(143)}, "", "Downloading\nwaiting for lock\n",
			"setup failed: timed out after 1m30s: waiting for lock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Result{Success: true, ErrorKind: ErrNone}
			r.SetupFailed(tc.o, 90*time.Second, tc.stdout, tc.stderr)
			if r.Success || r.ErrorKind != ErrCandidateFailed || r.ErrorMessage != tc.want || r.ExitCode != nil {
				t.Errorf("got %v %q %q exit %v; want candidate_failed %q", r.Success, r.ErrorKind, r.ErrorMessage, r.ExitCode, tc.want)
			}
		})
	}
}

// TestExcerptKeepsEndsAtCharacterBoundaries: a record keeps the end of
// each log and the start of the artifact, cut where a character starts,
// flagged, with the whole sizes; short output is kept whole, unflagged.
func TestExcerptKeepsEndsAtCharacterBoundaries(t *testing.T) {
	r := Result{Output: "é" + strings.Repeat("ü", OutputExcerpt), Stderr: "short\n"}
	art := []byte(strings.Repeat("€", ArtifactExcerpt))
	r.SetArtifact(art, int64(len(art)))
	r.Excerpt()
	if !utf8.ValidString(r.Output) || len(r.Output) > OutputExcerpt || len(r.Output) < OutputExcerpt-1 || !r.OutputCut || r.OutputBytes != int64(2+2*OutputExcerpt) {
		t.Errorf("output: %d bytes, valid %v, cut %v, size %d", len(r.Output), utf8.ValidString(r.Output), r.OutputCut, r.OutputBytes)
	}
	if r.Stderr != "short\n" || r.StderrCut || r.StderrBytes != 6 {
		t.Errorf("stderr: %q, cut %v, size %d", r.Stderr, r.StderrCut, r.StderrBytes)
	}
	if !utf8.ValidString(r.ArtifactContent) || len(r.ArtifactContent) > ArtifactExcerpt || len(r.ArtifactContent) < ArtifactExcerpt-2 ||
		!r.ArtifactCut || r.ArtifactBytes != int64(len(art)) || r.ArtifactTruncated || r.Artifact != nil {
		t.Errorf("artifact: %d bytes, cut %v, size %d, truncated %v", len(r.ArtifactContent), r.ArtifactCut, r.ArtifactBytes, r.ArtifactTruncated)
	}
	bin := Result{}
	bin.SetArtifact([]byte("\xff\xfe"), 2)
	bin.Excerpt()
	if bin.ArtifactEncoding != "base64" || bin.ArtifactContent != "//4=" || bin.ArtifactCut {
		t.Errorf("binary artifact: %q %q cut %v", bin.ArtifactEncoding, bin.ArtifactContent, bin.ArtifactCut)
	}
}
