package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/runner"
)

// openInRun opens rel, a slash-separated path inside the run's directory
// dir (runner.RelPath), for reading; os.Root refuses a symbolic link that
// points outside the run.
func openInRun(dir, rel string) (*os.File, error) {
	clean, err := runner.RelPath(rel)
	if err != nil {
		return nil, fs.ErrNotExist
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(clean)
	if err != nil {
		return nil, fs.ErrNotExist
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fs.ErrNotExist
	}
	return f, nil
}

// file serves one of a run's files as a download: never rendered by the
// browser (Content-Disposition: attachment, application/octet-stream).
// An artifact that holds a secret's value is not served (see artifact).
func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	x := s.index(w, r, r.PathValue("id"))
	if x == nil {
		return
	}
	f, err := openInRun(x.dir, r.PathValue("path"))
	if err != nil {
		s.notFound(w, r, "no such file in the run")
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if trial, ok := x.secretArtifact(fi); ok {
		w.WriteHeader(http.StatusForbidden)
		s.render(w, r, "error.tmpl", errorPage{"Not served", fmt.Sprintf(
			"this file is the artifact of trial %d and holds a secret's value: its page shows results.json's excerpt, the secret masked", trial)})
		return
	}
	name := path.Base(r.PathValue("path"))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	w.Header().Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
	io.Copy(w, f)
}

// secretArtifact reports whether fi is the artifact of a trial flagged as
// holding a secret's value (record.Trial.SecretInArtifact), and which
// (1-based, as the trial's page): the same file, whatever path named it.
func (x *runIndex) secretArtifact(fi os.FileInfo) (int, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := range x.idx.Trials {
		if !x.idx.Trials[i].SecretInArtifact() {
			continue
		}
		r, err := x.result(i)
		if err != nil || r.ArtifactPath == "" {
			continue
		}
		f, err := openInRun(x.dir, r.ArtifactPath)
		if err != nil {
			continue
		}
		afi, err := f.Stat()
		f.Close()
		if err == nil && os.SameFile(fi, afi) {
			return i + 1, true
		}
	}
	return 0, false
}

// logPage is the size of a page of a log.
const logPage = 64 << 10

// logView is one page of a job's log.
type logView struct {
	Name, Path, Text, Note string
	Missing                bool
	Pager                  pager
}

// readLog reads page (1-based; 0 or out of range: the last, where the
// error line is) of the log at rel in the run's directory dir: ANSI
// escapes stripped, secrets masked, cut at character boundaries. Without
// the file, it shows the record's excerpt (a record before schema 3).
func (s *Server) readLog(dir, name, rel, excerpt string, q url.Values, key string) logView {
	v := logView{Name: name, Path: rel}
	f, err := openInRun(dir, rel)
	if err != nil {
		if v.Missing = excerpt == ""; !v.Missing {
			v.Text, v.Note = s.mask.String(text.StripANSI(excerpt)), "from results.json"
		}
		return v
	}
	defer f.Close()
	fi, _ := f.Stat()
	size := fi.Size()
	pages := max(1, int((size+logPage-1)/logPage))
	qq := maps.Clone(q)
	if qq.Get(key) == "" {
		qq.Set(key, strconv.Itoa(pages))
	}
	var lo, hi int
	v.Pager, lo, hi = newPager(qq, key, int(size), logPage)
	buf := make([]byte, hi-lo)
	n, _ := f.ReadAt(buf, int64(lo))
	b := trimRunes(buf[:n], lo > 0, int64(hi) < size)
	v.Text = s.mask.String(text.StripANSI(strings.ToValidUTF8(string(b), "\uFFFD")))
	v.Note = fmt.Sprintf("%s, bytes %d–%d of %d", text.Bytes(float64(size)), lo, hi, size)
	if size == 0 {
		v.Note = "empty"
	}
	return v
}

// trimRunes drops the partial characters a page cut at either end.
func trimRunes(b []byte, head, tail bool) []byte {
	if head {
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	if tail {
		for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
			r, size := utf8.DecodeLastRune(b)
			if r != utf8.RuneError || size > 1 {
				break
			}
			b = b[:len(b)-1]
		}
	}
	return b
}

// transcriptStep is one step of a candidate's transcript.
type transcriptStep struct {
	Role, Type, Content, Tool, Arguments, CallID, Time, Model, Usage string
	// Exit is a tool result's exit code, where the step gives one (an
	// agent's log read into the transcript: exit_code).
	Exit string
}

// readTranscript reads a transcript.jsonl (runner.ReadTranscript) into the
// steps the page shows, and a note on the lines that are not steps.
func readTranscript(r io.Reader) ([]transcriptStep, string, error) {
	t, err := runner.ReadTranscript(r, 0)
	steps := make([]transcriptStep, 0, len(t.Steps))
	for _, st := range t.Steps {
		step := transcriptStep{Role: st.Role, Type: st.Type, Content: st.Text(), CallID: st.ToolCallID, Model: st.Model}
		if !st.Time.IsZero() {
			step.Time = st.Time.UTC().Format(time.RFC3339Nano)
		}
		if st.Tool != nil {
			step.Tool, step.Arguments = st.Tool.Name, indentJSON(st.Tool.Arguments)
		}
		if st.Usage != nil {
			if b, err := json.Marshal(st.Usage); err == nil {
				step.Usage = string(b)
			}
		}
		var exit json.Number
		if json.Unmarshal(st.Extra["exit_code"], &exit) == nil {
			step.Exit = exit.String()
		}
		steps = append(steps, step)
	}
	var notes []string
	if n := t.Malformed; n > 0 {
		notes = append(notes, fmt.Sprintf("%d %s (the first: %v)", n, text.Plural(n, "line is not a JSON object", "lines are not JSON objects"), t.FirstMalformed))
	}
	if t.Truncated {
		notes = append(notes, "shown up to forge's transcript cap; the file goes on")
	}
	return steps, strings.Join(notes, "; "), err
}

// indentJSON is raw JSON indented, or as written when it is not JSON (a
// string is shown as the string).
func indentJSON(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") == nil {
		return b.String()
	}
	return string(raw)
}
