package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/forge-run/forge/internal/text"
)

// TranscriptFile is where a candidate may write its transcript
// (FORGE_TRANSCRIPT; docs/protocol.md), relative to its working directory.
const TranscriptFile = ".forge-transcript.jsonl"

// Step is one line of a transcript. Known fields are read into their own;
// every other field, and a known one of another type, is kept in Extra.
type Step struct {
	// Line is the step's line number in the file, from 1; the other fields
	// are docs/protocol.md's. Time is zero when none reads as a time.
	Line       int
	Role       string
	Type       string
	Content    json.RawMessage // as written; Text renders it
	Tool       *ToolCall
	ToolCallID string
	Usage      map[string]any // as the API answered; TokenUsage reads it
	Model      string
	Time       time.Time
	Extra      map[string]json.RawMessage
}

// ToolCall is a step's tool: its name and arguments as written.
type ToolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// MarshalJSON writes the step as one object: Extra, then the known fields
// Extra does not hold; not its Line.
func (s Step) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(s.Extra)+8)
	put := func(k string, v any, set bool) {
		if _, written := s.Extra[k]; set && !written {
			m[k] = v
		}
	}
	put("role", s.Role, s.Role != "")
	put("type", s.Type, s.Type != "")
	put("content", s.Content, s.Content != nil)
	put("tool", s.Tool, s.Tool != nil)
	put("tool_call_id", s.ToolCallID, s.ToolCallID != "")
	put("usage", s.Usage, s.Usage != nil)
	put("model", s.Model, s.Model != "")
	put("time", s.Time.Format(time.RFC3339Nano), !s.Time.IsZero())
	for k, v := range s.Extra {
		m[k] = v
	}
	return json.Marshal(m)
}

// Text is the step's content: the string, else its JSON as written.
func (s Step) Text() string {
	var str string
	if json.Unmarshal(s.Content, &str) == nil {
		return str
	}
	return string(s.Content)
}

// TokenUsage reads the step's usage as ParseUsage does: (nil, "") when it has
// none, (nil, note) when it cannot be read.
func (s Step) TokenUsage() (*Usage, string) {
	if s.Usage == nil {
		return nil, ""
	}
	m := map[string]any{"usage": s.Usage}
	if s.Model != "" {
		m["model"] = s.Model
	}
	return ParseUsage(m)
}

// parseStep reads one line, which must be a JSON object.
func parseStep(line []byte, n int) (Step, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return Step{}, err
	}
	if raw == nil {
		return Step{}, errors.New("null, not an object")
	}
	st := Step{Line: n}
	for k, v := range raw {
		var err error
		switch k {
		case "role":
			err = json.Unmarshal(v, &st.Role)
		case "type":
			err = json.Unmarshal(v, &st.Type)
		case "content":
			st.Content = v
		case "tool":
			var own bool
			if st.Tool, own, err = decodeTool(v); err == nil && !own {
				err = errors.New("fields of its own") // kept whole in Extra too
			}
		case "tool_call_id":
			err = json.Unmarshal(v, &st.ToolCallID)
		case "usage":
			err = json.Unmarshal(v, &st.Usage)
		case "model":
			err = json.Unmarshal(v, &st.Model)
		case "time":
			st.Time, err = stepTime(v)
		default:
			err = errors.New("unknown")
		}
		if err != nil {
			if st.Extra == nil {
				st.Extra = map[string]json.RawMessage{}
			}
			st.Extra[k] = v
		}
	}
	return st, nil
}

// decodeTool reads a step's tool; own: it holds no other field.
func decodeTool(v json.RawMessage) (tc *ToolCall, own bool, err error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil || raw == nil {
		return nil, false, errors.New("not an object")
	}
	tc = &ToolCall{}
	if err := json.Unmarshal(v, tc); err != nil {
		return nil, false, err
	}
	delete(raw, "name")
	delete(raw, "arguments")
	return tc, len(raw) == 0, nil
}

// stepTime reads an RFC 3339 string or seconds since the Unix epoch.
func stepTime(v json.RawMessage) (time.Time, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return time.Parse(time.RFC3339Nano, s)
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		return time.Time{}, err
	}
	if f < 0 || f > 1e11 { // past the year 5000: not seconds
		return time.Time{}, errors.New("not seconds since the epoch")
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC(), nil
}

// LineError is a line of a transcript that is not a JSON object.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("line %d is not a JSON object: %v", e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// TranscriptScanner reads a transcript step by step, as bufio.Scanner reads
// lines, skipping blank lines and counting those that are not JSON objects.
// It reads at most limit bytes (≤ 0: DefaultMaxTranscript); Truncated says
// a line was cut there.
type TranscriptScanner struct {
	rd        *bufio.Reader
	left      int64
	line      int
	step      Step
	bad       int
	firstBad  *LineError
	truncated bool
	err       error
	done      bool
}

// NewTranscriptScanner reads r's transcript, at most limit bytes.
func NewTranscriptScanner(r io.Reader, limit int64) *TranscriptScanner {
	limit = positiveOr(limit, DefaultMaxTranscript)
	return &TranscriptScanner{rd: bufio.NewReaderSize(io.LimitReader(r, limit+1), 64<<10), left: limit}
}

// Scan advances to the next step; false at the end or on a read error.
func (sc *TranscriptScanner) Scan() bool {
	for !sc.done {
		line, err := sc.next()
		if err != nil {
			sc.done = true
			if !errors.Is(err, io.EOF) {
				sc.err = err
			}
		}
		if line == nil {
			continue
		}
		sc.line++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		st, perr := parseStep(line, sc.line)
		if perr != nil {
			if sc.bad++; sc.firstBad == nil {
				sc.firstBad = &LineError{Line: sc.line, Err: perr}
			}
			continue
		}
		sc.step = st
		return true
	}
	return false
}

// next returns the next line with its newline, or nil when cut or none.
func (sc *TranscriptScanner) next() ([]byte, error) {
	line, err := sc.rd.ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if int64(len(line)) > sc.left {
		// Past the limit: the line is cut, and so is the transcript.
		sc.truncated = true
		return nil, io.EOF
	}
	sc.left -= int64(len(line))
	if len(line) == 0 {
		return nil, err
	}
	return line, err
}

// Step is the step Scan found.
func (sc *TranscriptScanner) Step() Step { return sc.step }

// Malformed counts the lines so far that were not JSON objects, with the first.
func (sc *TranscriptScanner) Malformed() (int, *LineError) { return sc.bad, sc.firstBad }

// Truncated reports whether the transcript goes on past the limit.
func (sc *TranscriptScanner) Truncated() bool { return sc.truncated }

// Err is the read error that ended the scan, if any.
func (sc *TranscriptScanner) Err() error { return sc.err }

// Transcript is a transcript read whole (ReadTranscript).
type Transcript struct {
	Steps []Step
	// Malformed counts the lines that are not JSON objects.
	Malformed      int
	FirstMalformed *LineError
	// Truncated: the transcript went on past the limit.
	Truncated bool
}

// ReadTranscript reads r's transcript whole, at most limit bytes. The error is
// a read error; malformed lines are counted.
func ReadTranscript(r io.Reader, limit int64) (Transcript, error) {
	sc := NewTranscriptScanner(r, limit)
	var t Transcript
	for sc.Scan() {
		t.Steps = append(t.Steps, sc.Step())
	}
	t.Malformed, t.FirstMalformed = sc.Malformed()
	t.Truncated = sc.Truncated()
	return t, sc.Err()
}

// RefuseTranscript records why the transcript was not read, completing
// "FORGE_TRANSCRIPT file ..."; the trial is not failed for it.
func (r *Result) RefuseTranscript(why string) {
	r.TranscriptNote = "FORGE_TRANSCRIPT file " + why + "; ignored"
}

// SetTranscript takes the transcript's first bytes b, of size bytes on disk,
// cut at its last whole line when over the cap. It never fails the trial.
func (r *Result) SetTranscript(b []byte, size int64) {
	size = max(size, int64(len(b)))
	cut := size > int64(len(b))
	if cut {
		// A line cut by the cap is no step: kept are the whole lines
		// before it (none, when the first line is longer than the cap).
		b = b[:bytes.LastIndexByte(b, '\n')+1]
	}
	if b == nil {
		b = []byte{}
	}
	r.Transcript = b
	r.TranscriptBytes = size
	r.TranscriptTruncated = cut
	sc := NewTranscriptScanner(bytes.NewReader(b), int64(len(b))+1)
	r.TranscriptSteps = 0
	for sc.Scan() {
		r.TranscriptSteps++
	}
	r.TranscriptNote = ""
	if n, first := sc.Malformed(); n > 0 {
		r.TranscriptNote = fmt.Sprintf("%d %s not a JSON object (the first: line %d); not counted as steps",
			n, text.Plural(n, "line is", "lines are"), first.Line)
	}
}
