package junit

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// Testsuites is the document root: one run.
type Testsuites struct {
	XMLName xml.Name `xml:"testsuites"`
	Name    string   `xml:"name,attr,omitempty"`
	Counts
	Suites []Testsuite `xml:"testsuite"`
}

// Counts are the testcases of a document or a suite, by outcome, and their
// time.
type Counts struct {
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr"`
}

// Testsuite is the run's candidates: one testcase per candidate × trial.
type Testsuite struct {
	Name string `xml:"name,attr"`
	Counts
	Timestamp  string     `xml:"timestamp,attr,omitempty"`
	ID         string     `xml:"id,attr,omitempty"`
	Properties []Property `xml:"properties>property,omitempty"`
	Testcases  []Testcase `xml:"testcase"`
	SystemOut  *Output    `xml:"system-out,omitempty"`
	SystemErr  *Output    `xml:"system-err,omitempty"`
}

// Property is one name=value fact about the run.
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// Testcase is one trial of one candidate.
type Testcase struct {
	Classname string   `xml:"classname,attr"`
	Name      string   `xml:"name,attr"`
	Time      string   `xml:"time,attr"`
	Skipped   *Skipped `xml:"skipped,omitempty"`
	Error     *Problem `xml:"error,omitempty"`
	Failure   *Problem `xml:"failure,omitempty"`
	SystemOut *Output  `xml:"system-out,omitempty"`
	SystemErr *Output  `xml:"system-err,omitempty"`
}

// Problem is a <failure> (the candidate failed) or an <error> (the
// infrastructure did): Type is the error_kind, Message the error_message.
type Problem struct {
	Message  string `xml:"message,attr,omitempty"`
	Type     string `xml:"type,attr"`
	Contents string `xml:",cdata"`
}

// Skipped marks a trial the run cancelled before it finished.
type Skipped struct {
	Message string `xml:"message,attr,omitempty"`
}

// Output is a <system-out> or <system-err>, as CDATA to stay readable.
type Output struct {
	Contents string `xml:",cdata"`
}

// DefaultMaxOutputBytes caps each system-out and system-err by default.
const DefaultMaxOutputBytes = 64 << 10

// maxMessageBytes caps a message attribute, which CI shows on one line.
const maxMessageBytes = 1024

// Config says how to build the report.
type Config struct {
	// Now stamps a record without a start time; nil means time.Now.
	Now func() time.Time
	// MaxOutputBytes caps each system-out and system-err (0: the default).
	MaxOutputBytes int
	// Summary, when set, becomes the suite's system-out.
	Summary string
	// Notes gives a line to put before a testcase's system-out and -err.
	Notes func(r *record.Trial) (stdout, stderr string)
}

// New builds the JUnit document of a run: one testcase per candidate × trial
// (× task in a suite). A failed trial carries a <failure>, an <error> for
// infra and auth, <skipped> when cancelled; a suite's trial that did not pass
// its task is a <failure> of type not_passed.
func New(rec *record.Record, cfg Config) *Testsuites {
	cases := make([]Testcase, 0, len(rec.Results))
	doc := build(rec, cfg, func(tc Testcase) { cases = append(cases, tc) })
	doc.Suites[0].Testcases = cases
	return doc
}

// build makes the document without testcases, handing each to each.
func build(rec *record.Record, cfg Config, each func(Testcase)) *Testsuites {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = DefaultMaxOutputBytes
	}
	results, numbered := ordered(rec)
	suite := Testsuite{Name: "forge", ID: text.XML(rec.RunID)}
	started := rec.StartedAt
	if started.IsZero() {
		started = cfg.Now()
	}
	suite.Timestamp = started.UTC().Format(time.RFC3339)
	var total float64
	for _, r := range results {
		total += r.RuntimeSeconds
		suite.Tests++
		each(suite.testcase(r, numbered[r.CandidateID], cfg))
	}
	wall := total
	if !rec.StartedAt.IsZero() && rec.FinishedAt.After(rec.StartedAt) {
		wall = rec.FinishedAt.Sub(rec.StartedAt).Seconds()
	}
	suite.Time = secs(wall)
	suite.Properties = properties(rec)
	if cfg.Summary != "" {
		suite.SystemOut = &Output{Contents: capText(cfg.Summary, cfg.MaxOutputBytes)}
	}
	return &Testsuites{Name: text.XML("forge run " + rec.RunID), Counts: suite.Counts, Suites: []Testsuite{suite}}
}

// ordered lists the record's trials, pointers not copies, candidates as
// they first appear, then tasks and trials; numbered says which
// candidates have several trials.
func ordered(rec *record.Record) (results []*record.Trial, numbered map[string]bool) {
	task := map[string]int{}
	for i, t := range rec.Tasks {
		task[t.ID] = i
	}
	order, byID := record.ByCandidate(rec.Results)
	results = make([]*record.Trial, 0, len(rec.Results))
	numbered = map[string]bool{}
	for _, id := range order {
		rs := byID[id]
		slices.SortStableFunc(rs, func(a, b *record.Trial) int {
			return cmp.Or(cmp.Compare(task[a.TaskID], task[b.TaskID]), cmp.Compare(a.Trial, b.Trial))
		})
		results = append(results, rs...)
		numbered[id] = slices.ContainsFunc(rs, func(r *record.Trial) bool { return r.Trial > 1 })
	}
	return results, numbered
}

// testcase is trial r's testcase, counted in the suite's failures, errors
// or skips.
func (suite *Testsuite) testcase(r *record.Trial, numbered bool, cfg Config) Testcase {
	candidate := r.CandidateID // in a suite the classname says it
	if r.TaskID != "" {
		candidate = ""
	}
	name := runner.TrialName(candidate, r.TaskID, r.Trial, numbered)
	tc := Testcase{Classname: text.XML(r.CandidateID), Name: text.XML(name), Time: secs(r.RuntimeSeconds)}
	switch {
	case r.Success && r.TaskID != "" && !scoring.Passed(*r):
		// A suite's task is passed with a full score, not merely run.
		suite.Failures++
		score := "no score"
		if r.Score != nil {
			score = "scored " + strconv.FormatFloat(*r.Score, 'f', 2, 64)
		}
		tc.Failure = &Problem{Message: text.XML(score + " of 1 on task " + r.TaskID), Type: "not_passed",
			Contents: text.XML(fmt.Sprintf("the candidate ran and %s of 1\nruntime: %ss\n", score, secs(r.RuntimeSeconds)))}
	case !r.Success:
		switch r.ErrorKind.Fault() {
		case runner.FaultInterrupted:
			suite.Skipped++
			tc.Skipped = &Skipped{Message: message(*r)}
		case runner.FaultInfra, runner.FaultTask: // not the candidate's failure
			suite.Errors++
			tc.Error = problem(*r)
		default:
			suite.Failures++
			tc.Failure = problem(*r)
		}
	}
	var outNote, errNote string
	if cfg.Notes != nil {
		outNote, errNote = cfg.Notes(r)
	}
	if r.Output != "" || outNote != "" {
		tc.SystemOut = &Output{Contents: noted(outNote, capText(r.Output, cfg.MaxOutputBytes))}
	}
	if r.Stderr != "" || errNote != "" {
		tc.SystemErr = &Output{Contents: noted(errNote, capText(r.Stderr, cfg.MaxOutputBytes))}
	}
	return tc
}

// noted puts note, in brackets on a line of its own, before s.
func noted(note, s string) string {
	if note == "" {
		return s
	}
	return "[forge: " + text.XML(note) + "]\n" + s
}

// Write encodes New(rec, cfg) to w, making each testcase as it writes it: a
// 100,000-trial document is tens of MB, never held whole.
func Write(w io.Writer, rec *record.Record, cfg Config) error {
	if len(rec.Results) == 0 {
		return Encode(w, New(rec, cfg))
	}
	// The document around the testcases, with one placeholder testcase
	// where they go: everything before it is elements and attributes (no
	// '<' of a value is left raw), so its line is the first such.
	doc := build(rec, cfg, func(Testcase) {})
	doc.Suites[0].Testcases = []Testcase{{Name: placeholder}}
	var frame bytes.Buffer
	if err := Encode(&frame, doc); err != nil {
		return err
	}
	at := bytes.Index(frame.Bytes(), placeholderLine)
	if at < 0 {
		return errors.New("write JUnit report: no place for the testcases")
	}
	// The testcases at the placeholder's depth: one encoder indents them
	// as Encode does, each on a new line.
	_, err := w.Write(frame.Bytes()[:at])
	if err == nil {
		_, err = io.WriteString(w, "\n")
	}
	enc := xml.NewEncoder(w)
	enc.Indent(caseIndent, "  ")
	build(rec, cfg, func(tc Testcase) {
		if err == nil {
			err = enc.EncodeElement(tc, xml.StartElement{Name: xml.Name{Local: "testcase"}})
		}
	})
	if err == nil {
		err = enc.Close()
	}
	if err == nil {
		_, err = w.Write(frame.Bytes()[at+len(placeholderLine):])
	}
	if err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	return nil
}

// Testcases are at depth 2; placeholder marks in Write where they go, and
// placeholderLine is how Encode writes it.
const (
	caseIndent  = "    "
	placeholder = "forge:testcases"
)

var placeholderLine = []byte("\n" + caseIndent + `<testcase classname="" name="` + placeholder + `" time=""></testcase>`)

// Encode writes doc as indented XML with its declaration and a newline.
func Encode(w io.Writer, doc *Testsuites) error {
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	_, err := io.WriteString(w, xml.Header)
	if err == nil {
		err = enc.Encode(doc)
	}
	if err == nil {
		err = enc.Close()
	}
	if err == nil {
		_, err = io.WriteString(w, "\n")
	}
	if err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	return nil
}

func properties(rec *record.Record) []Property {
	ps := []Property{
		{"run_id", rec.RunID},
		{"objective", rec.Objective},
		{"backend", rec.Backend},
	}
	ifSet := func(name, value string) {
		if value != "" {
			ps = append(ps, Property{name, value})
		}
	}
	ifSet("manifest_path", rec.ManifestPath)
	ifSet("manifest_hash", rec.ManifestHash)
	winner := ""
	if rec.Winner != nil {
		winner = *rec.Winner
	}
	ps = append(ps, Property{"winner", winner})
	ifSet("winner_line", rec.WinnerLine)
	if rec.Interrupted {
		ps = append(ps, Property{"interrupted", "true"})
	}
	if len(rec.UndeletedSandboxes) > 0 {
		ps = append(ps, Property{"undeleted_sandboxes", strings.Join(rec.UndeletedSandboxes, ",")})
	}
	if b := rec.BudgetReached; b != nil {
		ps = append(ps, Property{"budget_reached", b.String()})
	}
	// What each candidate cost, when something did: dollars as numbers.
	usd := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	for _, st := range rec.Standings {
		c := st.Cost
		if c == nil {
			continue
		}
		id := st.CandidateID
		ps = append(ps, Property{"tokens." + id, strconv.FormatInt(c.Tokens, 10)})
		if c.Unpriced() {
			ps = append(ps, Property{"unpriced_trials." + id, strconv.Itoa(c.UnpricedTrials)})
			continue // nothing of it has a price: no dollar figure
		}
		ps = append(ps, Property{"cost_usd." + id, usd(c.USD)})
		if c.PerSuccessUSD != nil {
			ps = append(ps, Property{"cost_per_success_usd." + id, usd(*c.PerSuccessUSD)})
		}
		if c.PerSolvedUSD != nil {
			ps = append(ps, Property{"cost_per_solved_usd." + id, usd(*c.PerSolvedUSD)})
		}
		if c.UnpricedTrials > 0 {
			ps = append(ps, Property{"unpriced_trials." + id, strconv.Itoa(c.UnpricedTrials)})
		}
	}
	for i := range ps {
		ps[i].Value = text.XML(ps[i].Value)
	}
	return ps
}

// problem describes a failed trial: one-line message, facts in the body.
func problem(r record.Trial) *Problem {
	var b strings.Builder
	b.WriteString(kindOrFailed(r.ErrorKind))
	if r.ErrorMessage != "" {
		b.WriteString(": " + r.ErrorMessage)
	}
	fmt.Fprintf(&b, "\nexit code: %s\n", r.ExitText())
	if r.SandboxID != "" {
		fmt.Fprintf(&b, "sandbox: %s\n", r.SandboxID)
	}
	fmt.Fprintf(&b, "runtime: %ss\n", secs(r.RuntimeSeconds))
	return &Problem{Message: message(r), Type: kindOrFailed(r.ErrorKind), Contents: capText(b.String(), 4*maxMessageBytes)}
}

func message(r record.Trial) string {
	m, _ := text.Cap(text.XML(cmp.Or(r.ErrorMessage, kindOrFailed(r.ErrorKind))), maxMessageBytes)
	return m
}

func kindOrFailed(k runner.ErrorKind) string {
	return string(cmp.Or(k, runner.ErrCandidateFailed))
}

// secs formats seconds the way JUnit readers expect: a plain decimal.
func secs(s float64) string {
	if s < 0 || s != s {
		s = 0
	}
	return strconv.FormatFloat(s, 'f', 3, 64)
}

// capText caps captured output, escapes stripped and XML-safe, noting the cut.
func capText(s string, max int) string { return text.XML(text.Output(s, max)) }
