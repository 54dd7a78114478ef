package scoring

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
)

// artifactOf returns r's kept artifact bytes (else its recorded content) and full size.
func artifactOf(r record.Trial) (b []byte, size int64, present bool) {
	switch {
	case r.Artifact != nil:
		b = r.Artifact
	case r.ArtifactEncoding == "base64":
		if d, err := base64.StdEncoding.DecodeString(r.ArtifactContent); err == nil {
			b = d
		}
	default:
		b = []byte(r.ArtifactContent)
	}
	size = max(r.ArtifactBytes, int64(len(b)))
	present = r.Artifact != nil || r.ArtifactPath != "" || r.ArtifactContent != "" || r.ArtifactBytes > 0
	return b, size, present
}

// compiledCheck is a Check ready to run.
type compiledCheck struct {
	Check
	re   *regexp.Regexp
	want any
}

// compileChecks prepares checks; one that does not compile always fails.
func compileChecks(checks []Check) []compiledCheck {
	out := make([]compiledCheck, len(checks))
	for i, c := range checks {
		out[i].Check = c
		if c.Regex != "" {
			out[i].re, _ = regexp.Compile(c.Regex)
		}
		if c.Equals != nil {
			out[i].want, _ = jsonValue(c.Equals)
		}
	}
	return out
}

// verdict is how a trial fared on one check: passed, or what the check
// wanted and what it saw; note says why it could not be made at all.
type verdict struct {
	ok              bool
	want, got, note string
}

// judge makes the check on the trial. Text checks see the kept (capped)
// bytes; byte bounds the full size.
func (c compiledCheck) judge(b []byte, size int64, r record.Trial, task *Task) verdict {
	switch {
	case c.Contains != "":
		return verdict{ok: bytes.Contains(b, []byte(c.Contains)), want: "contains " + strconv.Quote(c.Contains), got: string(b)}
	case c.Regex != "":
		return verdict{ok: c.re != nil && c.re.Match(b), want: "matches " + c.Regex, got: string(b)}
	case c.MinBytes != nil || c.MaxBytes != nil:
		return verdict{ok: (c.MinBytes == nil || size >= *c.MinBytes) && (c.MaxBytes == nil || size <= *c.MaxBytes),
			want: bounds(c.MinBytes, c.MaxBytes, " bytes"), got: strconv.FormatInt(size, 10) + " bytes"}
	}
	// The subject: a JSON value of the artifact or of FORGE_RESULT, or the
	// artifact's text.
	var v any = string(b)
	switch {
	case c.JSON != nil:
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			return verdict{want: "JSON with a value at " + *c.JSON, got: "not JSON: " + string(b)}
		}
		var ok bool
		if v, ok = lookupPointer(doc, *c.JSON); !ok {
			return verdict{want: "a value at " + *c.JSON, got: "none"}
		}
	case c.Result != nil:
		doc := make(map[string]any, len(r.Submitted))
		maps.Copy(doc, r.Submitted)
		var ok bool
		if v, ok = lookupPointer(doc, *c.Result); !ok {
			return verdict{want: "a value at " + *c.Result + " in FORGE_RESULT", got: "none"}
		}
	}
	switch {
	case c.Equals != nil:
		return verdict{ok: c.want != nil && reflect.DeepEqual(v, c.want), want: valueText(c.want), got: valueText(v)}
	case c.Min != nil || c.Max != nil:
		f, isNum := v.(float64)
		return verdict{ok: isNum && (c.Min == nil || f >= *c.Min) && (c.Max == nil || f <= *c.Max),
			want: boundsFloat(c.Min, c.Max), got: valueText(v)}
	}
	field := cmp.Or(c.EqualsTask, c.ContainsTask, c.RegexTask)
	if field == "" {
		return verdict{ok: true} // json: or result: alone: the value exists
	}
	if task == nil {
		return verdict{note: fmt.Sprintf("the run has no field %q to compare with", field)}
	}
	want, ok := task.Fields[field]
	if !ok {
		return verdict{note: fmt.Sprintf("task %s has no field %q to compare with", task.ID, field)}
	}
	got, wantText := valueText(v), valueText(want)
	switch {
	case c.EqualsTask != "":
		gf, gerr := strconv.ParseFloat(got, 64)
		wf, werr := strconv.ParseFloat(wantText, 64)
		if gerr == nil && werr == nil {
			return verdict{ok: gf == wf, want: wantText, got: got}
		}
		return verdict{ok: got == wantText, want: wantText, got: got}
	case c.ContainsTask != "":
		return verdict{ok: strings.Contains(got, wantText), want: "contains " + strconv.Quote(wantText), got: got}
	}
	re, err := regexp.Compile(wantText)
	if err != nil {
		return verdict{note: fmt.Sprintf("task %s: field %q is not a regular expression: %v", task.ID, field, err)}
	}
	return verdict{ok: re.MatchString(got), want: "matches " + wantText, got: got}
}

// bounds says "at least 10 bytes", "at most 5 bytes" or "10 to 20 bytes".
func bounds(lo, hi *int64, unit string) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("%d to %d%s", *lo, *hi, unit)
	case lo != nil:
		return fmt.Sprintf("at least %d%s", *lo, unit)
	}
	return fmt.Sprintf("at most %d%s", *hi, unit)
}

// boundsFloat says "a number ≥ 0.5", "a number ≤ 2" or "a number in [0.5, 2]".
func boundsFloat(lo, hi *float64) string {
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch {
	case lo != nil && hi != nil:
		return "a number in [" + g(*lo) + ", " + g(*hi) + "]"
	case lo != nil:
		return "a number ≥ " + g(*lo)
	}
	return "a number ≤ " + g(*hi)
}

// valueText is a JSON value as trimmed text: strings as they are, else JSON.
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Checker makes the artifact checks on a trial as it finishes, while its
// whole artifact is at hand: the record keeps only the artifact's start and
// the checks' outcome (record.Trial.Checks), which scoring reads.
type Checker struct {
	scorers []prepared
}

// NewChecker prepares cfg's artifact scorers.
func NewChecker(cfg Config) *Checker {
	c := &Checker{}
	for _, s := range prepare(cfg.effective()) {
		if s.Type == TypeArtifact && len(s.checks) > 0 {
			c.scorers = append(c.scorers, s)
		}
	}
	return c
}

// Check returns how r fares on each artifact scorer's checks; nil when none or r failed.
func (c *Checker) Check(r record.Trial, task *Task) []record.CheckResult {
	if !r.Success || len(c.scorers) == 0 {
		return nil
	}
	out := make([]record.CheckResult, len(c.scorers))
	for i, s := range c.scorers {
		n, note, failed := passedChecks(s.checks, r, task)
		out[i] = record.CheckResult{Name: s.name, Passed: n, Of: len(s.checks), Note: note, Failed: failed}
	}
	return out
}

// The most of a scorer's failed checks a trial records, and of each value.
const (
	maxFailedChecks = 5
	maxCheckValue   = 200
)

// checkFraction is the fraction of checks the trial passes and the first
// reason one could not be made: from Trial.Checks, or made now for records
// without them (schemas 1 and 2 hold the whole artifact).
func checkFraction(name string, checks []compiledCheck, r record.Trial, task *Task) (float64, string) {
	if len(checks) == 0 {
		return 0, ""
	}
	for _, c := range r.Checks {
		if c.Name == name && c.Of > 0 {
			return float64(c.Passed) / float64(c.Of), c.Note
		}
	}
	n, note, _ := passedChecks(checks, r, task)
	return float64(n) / float64(len(checks)), note
}

// passedChecks counts the checks the trial passes, with the first reason one
// could not be made and what the first few that failed wanted and saw.
func passedChecks(checks []compiledCheck, r record.Trial, task *Task) (int, string, []record.CheckFailure) {
	b, size, present := artifactOf(r)
	n, note := 0, ""
	var failed []record.CheckFailure
	for _, c := range checks {
		if !present && c.Result == nil {
			if len(failed) < maxFailedChecks {
				failed = append(failed, record.CheckFailure{Check: c.Label(), Want: "an artifact", Got: "none"})
			}
			continue // no artifact: only FORGE_RESULT can be checked
		}
		v := c.judge(b, size, r, task)
		if v.ok {
			n++
			continue
		}
		note = cmp.Or(note, v.note)
		if len(failed) < maxFailedChecks && v.note == "" {
			failed = append(failed, record.CheckFailure{Check: c.Label(), Want: capValue(v.want), Got: capValue(v.got)})
		}
	}
	return n, note, failed
}

// capValue is v on one line, cut to maxCheckValue bytes.
func capValue(v string) string { return text.Shorten(text.OneLine(v), maxCheckValue) }

// lookupPointer resolves an RFC 6901 JSON pointer in a decoded document.
func lookupPointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			if tok == "" || (len(tok) > 1 && tok[0] == '0') {
				return nil, false
			}
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// Label is the check as the manifest writes it, for people:
// "equals_task: expected", "json: /score min: 0.5".
func (c Check) Label() string {
	var parts []string
	add := func(k, v string) { parts = append(parts, k+": "+v) }
	if c.JSON != nil {
		add("json", *c.JSON)
	}
	if c.Result != nil {
		add("result", *c.Result)
	}
	switch {
	case c.Contains != "":
		add("contains", strconv.Quote(c.Contains))
	case c.Regex != "":
		add("regex", c.Regex)
	case c.MinBytes != nil || c.MaxBytes != nil:
		add("bytes", bounds(c.MinBytes, c.MaxBytes, ""))
	case c.Equals != nil:
		w, _ := jsonValue(c.Equals)
		add("equals", valueText(w))
	case c.Min != nil || c.Max != nil:
		add("value", boundsFloat(c.Min, c.Max))
	case c.EqualsTask != "":
		add("equals_task", c.EqualsTask)
	case c.ContainsTask != "":
		add("contains_task", c.ContainsTask)
	case c.RegexTask != "":
		add("regex_task", c.RegexTask)
	}
	return strings.Join(parts, " ")
}
