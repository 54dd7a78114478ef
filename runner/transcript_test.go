package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

const sampleTranscript = `{"role": "system", "type": "message", "content": "Be brief.", "time": "2026-11-21T15:30:00Z"}
{"role": "user", "type": "message", "content": "Why trials?", "time": 1795275000.5}

{"role": "assistant", "type": "tool_call", "tool": {"name": "search", "arguments": {"q": "trials"}}, "tool_call_id": "c1"}
not JSON at all
{"role": "tool", "type": "tool_result", "tool_call_id": "c1", "content": [{"type": "text", "text": "found"}], "span_id": "s9"}
[1, 2]
{"role": "assistant", "type": "message", "content": "Noise.", "usage": {"input_tokens": 120, "output_tokens": 30}, "model": "gpt-4o-mini"}
{"role": 7, "tool": {"name": "x", "id": "t1"}, "time": "yesterday"}
null
{"type": "event", "content": "done"}`

func TestReadTranscript(t *testing.T) {
	tr, err := ReadTranscript(strings.NewReader(sampleTranscript), 0)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, st := range tr.Steps {
		lines = append(lines, st.Line)
	}
	// Line 3 is blank (skipped), 5, 7 and 10 are not JSON objects; line 11
	// has no newline and is a step all the same.
	if want := []int{1, 2, 4, 6, 8, 9, 11}; !equalInts(lines, want) {
		t.Fatalf("steps on lines %v, want %v", lines, want)
	}
	if tr.Malformed != 3 || tr.FirstMalformed == nil || tr.FirstMalformed.Line != 5 || tr.Truncated {
		t.Errorf("malformed %d, first %v, truncated %v", tr.Malformed, tr.FirstMalformed, tr.Truncated)
	}
	s := tr.Steps
	if s[0].Role != "system" || s[0].Type != "message" || s[0].Text() != "Be brief." ||
		!s[0].Time.Equal(time.Date(2026, 11, 21, 15, 30, 0, 0, time.UTC)) || s[0].Extra != nil {
		t.Errorf("step 1: %+v", s[0])
	}
	if got := s[1].Time; !got.Equal(time.Unix(1795275000, 5e8)) {
		t.Errorf("step 2: time %v from seconds", got)
	}
	if s[2].Tool == nil || s[2].Tool.Name != "search" || string(s[2].Tool.Arguments) != `{"q": "trials"}` || s[2].ToolCallID != "c1" {
		t.Errorf("step 3: tool %+v, id %q", s[2].Tool, s[2].ToolCallID)
	}
	// Content that is not a string is kept as written; unknown fields too.
	if s[3].Text() != `[{"type": "text", "text": "found"}]` || string(s[3].Extra["span_id"]) != `"s9"` {
		t.Errorf("step 4: text %q, extra %v", s[3].Text(), s[3].Extra)
	}
	u, note := s[4].TokenUsage()
	if note != "" || u == nil || len(u.Models) != 1 || u.Models[0].Model != "gpt-4o-mini" || u.Models[0].InputTokens != 120 || u.Models[0].OutputTokens != 30 {
		t.Errorf("step 5: usage %+v %q", u, note)
	}
	// Known fields of another type than expected are kept in Extra, never
	// lost; a tool with fields of its own is read and kept whole.
	if s[5].Role != "" || string(s[5].Extra["role"]) != "7" || !s[5].Time.IsZero() || string(s[5].Extra["time"]) != `"yesterday"` {
		t.Errorf("step 6: %+v", s[5])
	}
	if s[5].Tool == nil || s[5].Tool.Name != "x" || string(s[5].Extra["tool"]) != `{"name": "x", "id": "t1"}` {
		t.Errorf("step 6: tool %+v, extra %s", s[5].Tool, s[5].Extra["tool"])
	}
	if u, note := s[6].TokenUsage(); u != nil || note != "" || s[6].Text() != "done" {
		t.Errorf("step 7: usage %+v %q, text %q", u, note, s[6].Text())
	}

	// Written back, a step is one object holding what was read: the
	// fields as written where Extra keeps them, the time in RFC 3339.
	for i, want := range map[int]string{
		1: `{"content":"Why trials?","role":"user","time":"2026-11-21T15:30:00.5Z","type":"message"}`,
		5: `{"role":7,"time":"yesterday","tool":{"name":"x","id":"t1"}}`,
	} {
		if b, err := json.Marshal(s[i]); err != nil || string(b) != want {
			t.Errorf("step on line %d written as %s, %v; want %s", s[i].Line, b, err, want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A line cut by the limit is neither a step nor malformed: the transcript
// is truncated there.
func TestReadTranscriptLimit(t *testing.T) {
	in := `{"n": 1}` + "\n" + `{"n": 2}` + "\n" + `{"n": 3}` + "\n"
	for _, c := range []struct {
		limit     int64
		steps     int
		truncated bool
	}{
		{int64(len(in)), 3, false},
		{int64(len(in)) - 1, 2, true}, // the last newline is over the limit
		{18, 2, true},
		{17, 1, true},
		{1, 0, true},
	} {
		tr, err := ReadTranscript(strings.NewReader(in), c.limit)
		if err != nil || len(tr.Steps) != c.steps || tr.Truncated != c.truncated || tr.Malformed != 0 {
			t.Errorf("limit %d: %d steps, truncated %v, %d malformed, %v; want %d, %v", c.limit, len(tr.Steps), tr.Truncated, tr.Malformed, err, c.steps, c.truncated)
		}
	}
}

// A step longer than the reader's buffer is read whole.
func TestReadTranscriptLongLine(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	in := `{"content": "` + long + `"}` + "\n" + `{"content": "short"}`
	tr, err := ReadTranscript(strings.NewReader(in), 1<<20)
	if err != nil || len(tr.Steps) != 2 || tr.Steps[0].Text() != long || tr.Steps[1].Line != 2 {
		t.Fatalf("%d steps, %v", len(tr.Steps), err)
	}
}

type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n > 0 {
		r.n = 0
		return copy(p, `{"a": 1}`+"\n"+`{"b": `), nil
	}
	return 0, errors.New("disk on fire")
}

func TestReadTranscriptReadError(t *testing.T) {
	tr, err := ReadTranscript(&failingReader{n: 1}, 0)
	if err == nil || !strings.Contains(err.Error(), "disk on fire") || len(tr.Steps) != 1 || tr.Malformed != 0 {
		t.Errorf("%d steps, %d malformed, %v", len(tr.Steps), tr.Malformed, err)
	}
}

func TestSetTranscript(t *testing.T) {
	var r Result
	r.SetTranscript([]byte(sampleTranscript), int64(len(sampleTranscript)))
	if r.TranscriptSteps != 7 || r.TranscriptTruncated || r.TranscriptBytes != int64(len(sampleTranscript)) ||
		r.TranscriptNote != "3 lines are not a JSON object (the first: line 5); not counted as steps" ||
		string(r.Transcript) != sampleTranscript {
		t.Errorf("%d steps, truncated %v, %d bytes, note %q", r.TranscriptSteps, r.TranscriptTruncated, r.TranscriptBytes, r.TranscriptNote)
	}

	// Over the cap: kept to the end of the last whole line, flagged, and
	// the cut line is no malformed one.
	full := `{"n": 1}` + "\n" + `{"n": 2}` + "\n" + `{"n": 3}` + "\n"
	r = Result{}
	r.SetTranscript([]byte(full[:20]), int64(len(full)))
	if string(r.Transcript) != full[:18] || !r.TranscriptTruncated || r.TranscriptSteps != 2 || r.TranscriptNote != "" || r.TranscriptBytes != int64(len(full)) {
		t.Errorf("cut: %q, truncated %v, %d steps, note %q", r.Transcript, r.TranscriptTruncated, r.TranscriptSteps, r.TranscriptNote)
	}

	r = Result{}
	r.SetTranscript([]byte(full[:5]), int64(len(full)))
	if string(r.Transcript) != "" || r.Transcript == nil || !r.TranscriptTruncated || r.TranscriptSteps != 0 || r.TranscriptNote != "" {
		t.Errorf("first line over the cap: %q, truncated %v, %d steps, note %q", r.Transcript, r.TranscriptTruncated, r.TranscriptSteps, r.TranscriptNote)
	}

	// An empty transcript is still one: stored, with no steps.
	r = Result{}
	r.SetTranscript(nil, 0)
	if r.Transcript == nil || r.TranscriptSteps != 0 || r.TranscriptNote != "" {
		t.Errorf("empty: %v %d %q", r.Transcript == nil, r.TranscriptSteps, r.TranscriptNote)
	}
	r = Result{}
	r.SetTranscript([]byte("{\n"), 2)
	if r.TranscriptNote != "1 line is not a JSON object (the first: line 1); not counted as steps" {
		t.Errorf("one bad line: %q", r.TranscriptNote)
	}

	// The record holds the counts, never the transcript.
	r.Excerpt()
	b, _ := json.Marshal(r)
	if r.Transcript != nil || bytes.Contains(b, []byte(`"{`)) || !bytes.Contains(b, []byte(`"transcript_bytes":2`)) {
		t.Errorf("record %s", b)
	}
}

// FuzzReadTranscript: any bytes read without panic; steps come in line
// order, each a JSON object; steps and malformed lines never outnumber
// the lines; and SetTranscript counts what ReadTranscript reads.
func FuzzReadTranscript(f *testing.F) {
	f.Add([]byte(sampleTranscript), int64(0))
	f.Add([]byte("{}\n{\n\n[]\n{\"time\": 1e300}"), int64(5))
	f.Add([]byte(`{"tool": {"name": 1}, "usage": {"input_tokens": -1}}`), int64(0))
	f.Fuzz(func(t *testing.T, b []byte, limit int64) {
		tr, err := ReadTranscript(bytes.NewReader(b), limit)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Count(b, []byte("\n")) + 1
		if len(tr.Steps)+tr.Malformed > lines {
			t.Fatalf("%d steps and %d malformed of %d lines", len(tr.Steps), tr.Malformed, lines)
		}
		last := 0
		for _, st := range tr.Steps {
			if st.Line <= last {
				t.Fatalf("step on line %d after line %d", st.Line, last)
			}
			last = st.Line
			st.TokenUsage()
			_ = st.Text()
			// Written back and read again, a step is written the same.
			once, err := json.Marshal(st)
			if err != nil {
				t.Fatalf("line %d: %v", st.Line, err)
			}
			again, err := parseStep(once, st.Line)
			if err != nil {
				t.Fatalf("line %d written as %s, which reads as %v", st.Line, once, err)
			}
			if twice, _ := json.Marshal(again); !bytes.Equal(once, twice) {
				t.Fatalf("line %d written as %s, then as %s", st.Line, once, twice)
			}
		}
		if (tr.Malformed == 0) != (tr.FirstMalformed == nil) {
			t.Fatalf("%d malformed, first %v", tr.Malformed, tr.FirstMalformed)
		}
		if limit <= 0 || limit >= int64(len(b)) {
			var r Result
			r.SetTranscript(b, int64(len(b)))
			if r.TranscriptSteps != len(tr.Steps) || (r.TranscriptNote == "") != (tr.Malformed == 0) {
				t.Fatalf("SetTranscript counts %d steps (note %q), ReadTranscript %d (%d malformed)", r.TranscriptSteps, r.TranscriptNote, len(tr.Steps), tr.Malformed)
			}
		}
	})
}
