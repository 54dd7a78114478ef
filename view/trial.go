package view

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/report"
	"github.com/forge-run/forge/runner"
)

// artifactMax is the most of an artifact the trial page shows; the whole
// file is a download.
const artifactMax = 1 << 20

// transcriptPage is how many of a transcript's steps a page shows.
const transcriptPage = 50

type trialPage struct {
	RunID, RunHref, Name, Status, Health string
	Facts                                [][2]string
	Phases                               *timeline
	ErrorKind, Error                     string
	Attempts                             [][2]string
	Judges                               []judgeView
	Checks                               [][2]string
	// Failed are the failed checks: the check, what it wanted, what it got.
	Failed         [][3]string
	Submitted      string
	Usage, Cost    [][2]string
	Stdout, Stderr logView
	// Verifier: the task's verifier, when it ran: its reward, metrics
	// and log.
	Verifier *verifierView
	// Task is the task the trial played, as its candidate saw it.
	Task       *taskView
	Artifact   *artifactView
	Transcript *transcriptView
	Siblings   []sibling
}

type judgeView struct{ Name, Score, Reason, Error string }

type verifierView struct {
	Reward  string
	Metrics [][2]string
	Log     logView
}

type taskView struct {
	Objective template.HTML
	Fields    [][2]string
}

type sibling struct {
	Name, Href, Health string
	Current            bool
}

// timeline is a job's phases as bars along its wall time.
type timeline struct {
	Width float64
	Bars  []phaseBar
}

type phaseBar struct {
	Name, Label string
	X, W        float64
}

type artifactView struct {
	Path, Note, Download string
	Kind                 string // markdown, json, text, binary
	Text                 string
	HTML                 template.HTML
}

type transcriptView struct {
	Path  string
	Steps []transcriptStep
	First int
	Pager pager
	Error string
	// Note says what of the file is not shown as steps.
	Note string
}

func (s *Server) trialPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	n, _ := strconv.Atoi(r.PathValue("n")) // not a number: no trial
	for again := true; ; again = false {
		x := s.index(w, r, id)
		if x == nil {
			return
		}
		res, siblings, err := x.trialAt(n - 1)
		switch {
		case errors.Is(err, errMoved) && again: // the index is not the file's: made again
			s.cache.forget(x.path)
			continue
		case errors.Is(err, errNoTrial):
			s.notFound(w, r, "no such trial")
		case err != nil:
			s.fail(w, r, err)
		default:
			p := s.newTrialPage(x, res, r.URL.Query())
			p.Siblings = siblings
			s.render(w, r, "trial.tmpl", p)
		}
		return
	}
}

// trialAt reads trial i (result) and lists its cell's trials when there
// are several.
func (x *runIndex) trialAt(i int) (*record.Trial, []sibling, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	res, err := x.result(i)
	if err != nil {
		return nil, nil, err
	}
	var siblings []sibling
	for _, j := range x.cell(res.CandidateID, res.TaskID) {
		o := &x.idx.Trials[j]
		h := "ok"
		if !o.Success() {
			h = "failed"
		}
		siblings = append(siblings, sibling{Name: "trial " + strconv.Itoa(int(o.Trial)), Href: trialURL(x.id, int(j)), Health: h, Current: int(j) == i})
	}
	if len(siblings) < 2 {
		siblings = nil
	}
	return res, siblings, nil
}

func (s *Server) newTrialPage(x *runIndex, r *record.Trial, q url.Values) trialPage {
	p := trialPage{RunID: x.id, RunHref: runURL(x.id),
		Name: runner.TrialName(r.CandidateID, r.TaskID, r.Trial, true)}
	p.Status, p.Health = report.TrialStatus(r)
	switch {
	case !r.Success:
		p.ErrorKind, p.Error = string(r.ErrorKind), s.mask.String(r.ErrorMessage)
	case r.Wrong():
		p.ErrorKind, p.Error = "wrong", s.mask.String(report.WrongText(r))
	}
	p.Facts = s.trialFacts(r)
	for _, a := range r.AttemptErrors {
		p.Attempts = append(p.Attempts, [2]string{a.SandboxID, string(a.Kind) + ": " + s.mask.String(a.Message)})
	}
	p.Phases = newTimeline(r.Phases)
	for _, j := range r.Judges {
		jv := judgeView{Name: j.Name, Score: "—", Reason: s.mask.String(j.Reason), Error: s.mask.String(j.Error)}
		if j.Score != nil {
			jv.Score = text.Num(*j.Score)
		}
		p.Judges = append(p.Judges, jv)
	}
	for _, c := range r.Checks {
		v := fmt.Sprintf("%d of %d", c.Passed, c.Of)
		if c.Note != "" {
			v += " · " + c.Note
		}
		p.Checks = append(p.Checks, [2]string{c.Name, v})
		for _, f := range c.Failed {
			p.Failed = append(p.Failed, [3]string{f.Check, s.mask.String(f.Want), s.mask.String(f.Got)})
		}
	}
	if len(r.Submitted) > 0 {
		b, _ := json.MarshalIndent(r.Submitted, "", "  ")
		p.Submitted = s.mask.String(string(b))
	}
	p.Usage, p.Cost = usageFacts(r)
	p.Stdout = s.readLog(x.dir, "stdout", r.OutputPath, r.Output, q, "out")
	p.Stderr = s.readLog(x.dir, "stderr", r.StderrPath, r.Stderr, q, "err")
	if r.VerifierLogPath != "" || r.VerifierOutput != "" || r.Reward != nil {
		v := &verifierView{Reward: "none", Log: s.readLog(x.dir, "verifier", r.VerifierLogPath, r.VerifierOutput, q, "ver")}
		if r.Reward != nil {
			v.Reward = strconv.FormatFloat(*r.Reward, 'g', -1, 64)
		}
		for _, k := range slices.Sorted(maps.Keys(r.Metrics)) {
			v.Metrics = append(v.Metrics, [2]string{k, strconv.FormatFloat(r.Metrics[k], 'g', -1, 64)})
		}
		p.Verifier = v
		p.Facts = append(p.Facts, [2]string{"reward", v.Reward})
	}
	p.Task = s.task(x, r)
	p.Artifact = s.artifact(x, r)
	p.Transcript = s.transcript(x, r, q)
	return p
}

// trialFacts are the facts the trial page lists first: who, where, when
// and how it ended; an empty value is not shown.
func (s *Server) trialFacts(r *record.Trial) [][2]string {
	var facts [][2]string
	fact := func(k, v string) {
		if v != "" {
			facts = append(facts, [2]string{k, v})
		}
	}
	fact("candidate", r.CandidateID)
	fact("task", r.TaskID)
	fact("trial", strconv.Itoa(r.Trial))
	fact("exit code", r.ExitText())
	fact("runtime", text.Seconds(r.RuntimeSeconds))
	fact("job", text.Seconds(r.JobSeconds))
	if r.Score != nil {
		fact("score", text.Score(*r.Score))
	}
	fact("backend", r.Backend)
	fact("sandbox", r.SandboxID)
	fact("environment", r.Environment)
	if !r.StartedAt.IsZero() {
		fact("started", r.StartedAt.UTC().Format(time.RFC3339Nano))
		fact("finished", r.FinishedAt.UTC().Format(time.RFC3339Nano))
	}
	if r.Attempts > 1 {
		fact("attempts", strconv.Itoa(r.Attempts))
	}
	if r.SubmitError != "" {
		fact("result file", "ignored: "+s.mask.String(r.SubmitError))
	}
	fact("tampered", s.mask.String(strings.Join(r.Tampered, ", "))) // the verifier's tools it changed
	fact("usage note", r.UsageNote)
	if r.AgentTurns > 0 {
		fact("agent turns", strconv.Itoa(r.AgentTurns))
	}
	fact("agent error", s.mask.String(r.AgentError))
	return facts
}

// newTimeline lays the non-zero phases out along the job's wall time.
func newTimeline(ph runner.Phases) *timeline {
	all := ph.List()
	total := 0.0
	for _, p := range all {
		total += p.Seconds
	}
	if total <= 0 {
		return nil
	}
	t := &timeline{Width: 1000}
	x := 0.0
	for _, p := range all {
		if p.Seconds <= 0 {
			continue
		}
		w := p.Seconds / total * t.Width
		name := string(p.Phase)
		t.Bars = append(t.Bars, phaseBar{Name: name, Label: name + " " + text.Seconds(p.Seconds), X: x, W: w})
		x += w
	}
	return t
}

// usageFacts are a trial's model usage and cost as name and value.
func usageFacts(r *record.Trial) (usage, cost [][2]string) {
	if u := r.Usage; u != nil {
		for _, m := range u.Models {
			usage = append(usage, [2]string{text.OneLine(cmp.Or(m.Model, "(unnamed model)")),
				fmt.Sprintf("%d %s · %d input tokens (%d cached) · %d output · %d total", m.Calls, text.Plural(m.Calls, "call", "calls"), m.InputTokens, m.CachedInputTokens, m.OutputTokens, m.TotalTokens)})
		}
		if u.CostUSD != nil {
			usage = append(usage, [2]string{"own cost", text.USD(*u.CostUSD)})
		}
	}
	if c := r.Cost; c != nil {
		cost = append(cost, [2]string{"total", text.USD(c.USD)}, [2]string{"model", text.USD(c.ModelUSD)},
			[2]string{"sandbox", text.USD(c.SandboxUSD)}, [2]string{"tokens", strconv.FormatInt(c.Tokens, 10)})
		if c.Unpriced != "" {
			cost = append(cost, [2]string{"unpriced", c.Unpriced})
		}
	}
	return usage, cost
}

// artifact reads the trial's artifact: Markdown rendered safely (no raw
// HTML, no javascript: links), JSON indented, other text as it is, and
// anything else offered as a download.
func (s *Server) artifact(x *runIndex, r *record.Trial) *artifactView {
	if r.ArtifactPath == "" && r.ArtifactContent == "" {
		return nil
	}
	a := &artifactView{Path: r.ArtifactPath, Kind: "text"}
	var b []byte
	if r.SecretInArtifact {
		// The viewer may not know every secret the run passed: it shows
		// the record's excerpt, masked when the run wrote it, and offers
		// no download.
		a.Note = "holds a secret's value: this is results.json's excerpt, the secret masked; the file as written is " + r.ArtifactPath
	} else if f, err := openInRun(x.dir, r.ArtifactPath); err == nil {
		b, _ = io.ReadAll(io.LimitReader(f, artifactMax+1))
		f.Close()
		a.Download = runURL(x.id) + "/file/" + escapePath(r.ArtifactPath)
	} else { // a record before schema 3, or a file gone
		a.Note = "the file is not in the run's directory; this is the record's excerpt"
	}
	if a.Download == "" {
		b = []byte(r.ArtifactContent)
		if r.ArtifactEncoding == "base64" {
			a.Kind = "binary"
			return a
		}
	}
	if len(b) > artifactMax {
		b = b[:artifactMax]
		a.Note = "the first " + text.Bytes(artifactMax) + " of " + text.Bytes(float64(r.ArtifactBytes)) + "; download it whole"
	}
	if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(trimRunes(b, false, true)) {
		a.Kind = "binary"
		return a
	}
	content := s.mask.String(string(b))
	ext := strings.ToLower(path.Ext(r.ArtifactPath))
	switch {
	case ext == ".md" || ext == ".markdown":
		a.Kind, a.HTML, a.Text = "markdown", markdown(content), content
	case ext == ".json" || json.Valid(bytes.TrimSpace([]byte(content))) && strings.ContainsAny(content[:1], "{["):
		var out bytes.Buffer
		if json.Indent(&out, []byte(content), "", "  ") == nil {
			a.Kind, a.Text = "json", out.String()
		} else {
			a.Text = content
		}
	default:
		a.Text = text.StripANSI(content)
	}
	return a
}

// task reads the task the trial played (task.json beside its logs): its
// objective (a Harbor task's instruction) as Markdown, its other fields.
func (s *Server) task(x *runIndex, r *record.Trial) *taskView {
	if r.TaskID == "" || r.OutputPath == "" {
		return nil
	}
	f, err := openInRun(x.dir, path.Join(path.Dir(r.OutputPath), "task.json"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var fields map[string]any
	if json.NewDecoder(io.LimitReader(f, artifactMax)).Decode(&fields) != nil {
		return nil
	}
	t := &taskView{}
	if o, ok := fields["objective"].(string); ok {
		t.Objective = markdown(s.mask.String(o))
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if k == "objective" || k == "id" {
			continue
		}
		v, _ := json.Marshal(fields[k])
		if str, ok := fields[k].(string); ok {
			v = []byte(str)
		}
		t.Fields = append(t.Fields, [2]string{k, s.mask.String(text.Shorten(string(v), 300))})
	}
	return t
}

// escapePath escapes each element of a slash-separated path for a URL.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// md renders Markdown without raw HTML (goldmark drops it without
// WithUnsafe, and empties dangerous links such as javascript:).
var md = goldmark.New(goldmark.WithExtensions(extension.GFM))

func markdown(src string) template.HTML {
	var b bytes.Buffer
	if err := md.Convert([]byte(src), &b); err != nil {
		return template.HTML(template.HTMLEscapeString(src))
	}
	return template.HTML(b.String()) // goldmark's safe mode: no raw HTML, no dangerous URL
}

// transcript reads the trial's transcript.jsonl: the result's
// transcript_path, else the file beside its stdout.log.
func (s *Server) transcript(x *runIndex, r *record.Trial, q url.Values) *transcriptView {
	rel := r.TranscriptPath
	if rel == "" && r.OutputPath != "" {
		rel = path.Join(path.Dir(r.OutputPath), "transcript.jsonl")
	}
	if rel == "" {
		return nil
	}
	f, err := openInRun(x.dir, rel)
	if err != nil {
		if r.TranscriptPath != "" {
			return &transcriptView{Path: rel, Error: "the transcript is not in the run's directory"}
		}
		return nil
	}
	defer f.Close()
	steps, note, err := readTranscript(f)
	t := &transcriptView{Path: rel, Note: note}
	if err != nil {
		t.Error = err.Error()
	}
	var lo, hi int
	t.Pager, lo, hi = newPager(q, "step", len(steps), transcriptPage)
	t.First = lo
	t.Steps = slices.Clone(steps[lo:hi])
	for i := range t.Steps {
		st := &t.Steps[i]
		st.Content, st.Arguments = s.mask.String(text.StripANSI(st.Content)), s.mask.String(st.Arguments)
	}
	return t
}
