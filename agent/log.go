package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/runner"
)

// Log is what an agent's own log says about its trial.
type Log struct {
	Steps []runner.Step // forge transcript steps (runner/transcript.go, docs/protocol.md "Transcript")
	// Usage is the tokens per model; CostUSD is the agent's own figure when
	// it reports one (claude-code's total_cost_usd), else nil. Nil when the
	// log says nothing of usage.
	Usage *runner.Usage
	Turns int // the agent's own count: claude-code's num_turns, codex's turns
	// Error is the agent's own words when it ended in error ("" on
	// success): a turn limit, a refused key, an unknown model, ...
	Error string
	// Skipped counts the lines that are not JSON objects (a CLI's warnings).
	Skipped int
}

// ReadLog reads an agent's log in format f. Lines that are not JSON are skipped and
// counted; a log with nothing readable is an error (the trial is then judged as usual, with a note).
func ReadLog(f Format, r io.Reader) (Log, error) {
	var rd lineReader
	switch f {
	case FormatClaudeCode:
		rd = &claudeLog{}
	case FormatCodex:
		rd = &codexLog{started: map[string]bool{}}
	default:
		return Log{}, fmt.Errorf("no reader for agent log format %q", f)
	}
	var log Log
	known := 0
	err := eachLine(r, func(line []byte) {
		var ev map[string]json.RawMessage
		if json.Unmarshal(line, &ev) != nil || ev == nil {
			log.Skipped++
			return
		}
		if rd.event(&log, ev) {
			known++
		}
	})
	if err != nil {
		return log, fmt.Errorf("read the %s log: %w", f, err)
	}
	if known == 0 {
		return log, fmt.Errorf("nothing in the log reads as %s (%d %s not JSON)", f, log.Skipped, text.Plural(log.Skipped, "line is", "lines are"))
	}
	rd.end(&log)
	return log, nil
}

// lineReader reads one agent's events.
type lineReader interface {
	// event reads one JSON object; false when it is none of the format's.
	event(log *Log, ev map[string]json.RawMessage) bool
	// end completes the log after the last line.
	end(log *Log)
}

// maxLine bounds one line of a log; a longer one is skipped.
const maxLine = 64 << 20

// eachLine calls fn with every non-blank line of r, without its newline;
// a line longer than maxLine is passed on as "" (not JSON).
func eachLine(r io.Reader, fn func([]byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			line = append(line, chunk...)
			if len(line) > maxLine {
				long, line = true, line[:0]
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if long {
			fn(nil)
		} else if l := bytes.TrimSpace(line); len(l) > 0 {
			fn(l)
		}
		line, long = line[:0], false
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// field decodes ev[key] into v; false when it is missing or of another type.
func field(ev map[string]json.RawMessage, key string, v any) bool {
	raw, ok := ev[key]
	return ok && json.Unmarshal(raw, v) == nil
}

func str(ev map[string]json.RawMessage, key string) string {
	var s string
	field(ev, key, &s)
	return s
}

// maxExcerpt bounds a tool result's content in a step.
const maxExcerpt = 2 << 10

// excerpt is s cut to maxExcerpt bytes (at a character), saying how long
// it was.
func excerpt(s string) string {
	if len(s) <= maxExcerpt {
		return s
	}
	cut := maxExcerpt
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes in all)", s[:cut], len(s))
}

// content is s as a step's content.
func content(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// extra is one Extra field.
func extra(key string, v any) map[string]json.RawMessage {
	b, _ := json.Marshal(v)
	return map[string]json.RawMessage{key: b}
}
