package daytona

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// wrapperReport is forge.sh's account of what a job left: the sizes and kinds of
// its outputs and the content of those it inlined.
type wrapperReport struct {
	meta collected
	// inline holds the capped content of the outputs forge.sh inlined.
	inline map[string][]byte
}

// size is the measured size of an output; -1 when it is not a readable
// regular file.
func (m collected) size(key string) int64 {
	switch key {
	case "stdout":
		return m.Stdout
	case "stderr":
		return m.Stderr
	case "setup":
		return m.Setup
	case "artifact":
		if m.ArtifactKind == "file" {
			return m.Artifact
		}
	case "result":
		if m.ResultKind == "file" {
			return m.Result
		}
	case "transcript":
		if m.TranscriptKind == "file" {
			return m.Transcript
		}
	}
	return -1
}

// parseWrapperReport reads what forge.sh printed: the JSON line, then optionally
// an inlineLine and base64 lines, then optionally the done line (and
// whatever follows it). capOf gives each output's cap. Lines before the JSON line
// are ignored (the output of "collect" may carry stray stderr there). The
// error is about the JSON line; inline content that deviates from the
// format, does not decode or does not add up to the announced sizes (a
// file that changed while it was read) is left out, and the outputs are
// downloaded instead.
func parseWrapperReport(text []byte, capOf func(key string) int64) (wrapperReport, error) {
	var rep wrapperReport
	at, err := rep.parseMeta(text)
	if err != nil {
		return wrapperReport{}, err
	}
	if inline, err := parseInline(at, rep.meta, capOf); err == nil {
		rep.inline = inline
	}
	return rep, nil
}

// parseMeta reads the JSON line and returns the lines after it.
func (rep *wrapperReport) parseMeta(text []byte) ([]string, error) {
	if i, _, ok := findDone(text); ok {
		text = text[:i]
	}
	lines := strings.Split(strings.TrimRight(string(text), "\n"), "\n")
	at := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "{") {
			at = i
			break
		}
	}
	if at < 0 {
		return nil, errors.New("no report line")
	}
	rep.meta.RuntimeNS = -1 // unless the line says
	if err := json.Unmarshal([]byte(lines[at]), &rep.meta); err != nil {
		return nil, fmt.Errorf("report line: %v", err)
	}
	return lines[at+1:], nil
}

// parseInline reads the inline section that follows the JSON line: the
// capped contents of the outputs it names, in order.
func parseInline(lines []string, meta collected, capOf func(key string) int64) (map[string][]byte, error) {
	if len(lines) == 0 {
		return nil, nil
	}
	keys, ok := strings.CutPrefix(lines[0], inlineLine+" ")
	if !ok {
		return nil, fmt.Errorf("unexpected line %q after the report", lines[0])
	}
	content, err := base64.StdEncoding.DecodeString(strings.Join(lines[1:], ""))
	if err != nil {
		return nil, fmt.Errorf("inline content: %v", err)
	}
	inline := map[string][]byte{}
	off := int64(0)
	for _, key := range strings.Fields(keys) {
		if _, dup := inline[key]; dup || capOf(key) <= 0 {
			return nil, fmt.Errorf("inline content of %q", key)
		}
		n := min(meta.size(key), capOf(key))
		if n <= 0 || off+n > int64(len(content)) {
			return nil, fmt.Errorf("inline content of %s: %d bytes announced, %d left", key, n, int64(len(content))-off)
		}
		inline[key] = content[off : off+n]
		off += n
	}
	if off != int64(len(content)) {
		return nil, fmt.Errorf("inline content: %d bytes more than announced", int64(len(content))-off)
	}
	return inline, nil
}

// findDone finds forge.sh's done line in text: where it starts and the exit
// status it gives (nil when it gives none that reads as one).
func findDone(text []byte) (at int, exit *int, ok bool) {
	for off := 0; off < len(text); {
		i := bytes.Index(text[off:], []byte(doneLine))
		if i < 0 {
			return -1, nil, false
		}
		at := off + i
		off = at + 1
		if at > 0 && text[at-1] != '\n' {
			continue
		}
		rest := text[at+len(doneLine):]
		end := bytes.IndexByte(rest, '\n')
		if end < 0 {
			return -1, nil, false // not whole yet
		}
		switch arg := string(rest[:end]); {
		case arg == "":
		case arg[0] == ' ':
			if n, err := strconv.Atoi(arg[1:]); err == nil && n >= 0 && n <= 255 {
				exit = &n
			}
		default:
			continue // another word that starts the same way
		}
		return at, exit, true
	}
	return -1, nil, false
}
