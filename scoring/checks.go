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

	"github.com/forge-run/forge/runner"
)

// artifactOf returns r's kept artifact bytes (else its recorded content) and full size.
func artifactOf(r runner.Result) (b []byte, size int64, present bool) {
	switch {
	case r.Artifact != nil:
		b = r.Artifact
	case r.ArtifactEncoding == "base64":
		d, err := base64.StdEncoding.DecodeString(r.ArtifactContent)
		if err == nil {
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

// passed reports whether the trial passes the check, or why it could not be
// made. Text checks see the kept (capped) bytes; byte bounds the full size.
func (c compiledCheck) passed(b []byte, size int64, r runner.Result, task *Task) (bool, string) {
	switch {
	case c.Contains != "":
		return bytes.Contains(b, []byte(c.Contains)), ""
	case c.Regex != "":
		return c.re != nil && c.re.Match(b), ""
	case c.MinBytes != nil || c.MaxBytes != nil:
		return (c.MinBytes == nil || size >= *c.MinBytes) && (c.MaxBytes == nil || size <= *c.MaxBytes), ""
	}
	// The subject: a JSON value of the artifact or of FORGE_RESULT, or the
	// artifact's text.
	var v any = string(b)
	switch {
	case c.JSON != nil:
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			return false, ""
		}
		var ok bool
		if v, ok = lookupPointer(doc, *c.JSON); !ok {
			return false, ""
		}
	case c.Result != nil:
		doc := make(map[string]any, len(r.Submitted))
		maps.Copy(doc, r.Submitted)
		var ok bool
		if v, ok = lookupPointer(doc, *c.Result); !ok {
			return false, ""
		}
	}
	switch {
	case c.Equals != nil:
		return c.want != nil && reflect.DeepEqual(v, c.want), ""
	case c.Min != nil || c.Max != nil:
		f, isNum := v.(float64)
		return isNum && (c.Min == nil || f >= *c.Min) && (c.Max == nil || f <= *c.Max), ""
	}
	field := cmp.Or(c.EqualsTask, c.ContainsTask, c.RegexTask)
	if field == "" {
		return true, "" // json: or result: alone: the value exists
	}
	var want any
	ok := false
	if task != nil {
		want, ok = task.Fields[field]
	}
	if !ok {
		id := "the run"
		if task != nil {
			id = "task " + task.ID
		}
		return false, fmt.Sprintf("%s has no field %q to compare with", id, field)
	}
	got, wantText := valueText(v), valueText(want)
	switch {
	case c.EqualsTask != "":
		gf, gerr := strconv.ParseFloat(got, 64)
		wf, werr := strconv.ParseFloat(wantText, 64)
		if gerr == nil && werr == nil {
			return gf == wf, ""
		}
		return got == wantText, ""
	case c.ContainsTask != "":
		return strings.Contains(got, wantText), ""
	}
	re, err := regexp.Compile(wantText)
	if err != nil {
		return false, fmt.Sprintf("task %s: field %q is not a regular expression: %v", task.ID, field, err)
	}
	return re.MatchString(got), ""
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
// the checks' outcome (runner.Result.Checks), which scoring reads.
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
func (c *Checker) Check(r runner.Result, task *Task) []runner.CheckResult {
	if !r.Success || len(c.scorers) == 0 {
		return nil
	}
	out := make([]runner.CheckResult, len(c.scorers))
	for i, s := range c.scorers {
		n, note := passedChecks(s.checks, r, task)
		out[i] = runner.CheckResult{Name: s.name, Passed: n, Of: len(s.checks), Note: note}
	}
	return out
}

// checkFraction is the fraction of checks the trial passes and the first
// reason one could not be made: from Result.Checks, or made now for records
// without them (schemas 1 and 2 hold the whole artifact).
func checkFraction(name string, checks []compiledCheck, r runner.Result, task *Task) (float64, string) {
	if len(checks) == 0 {
		return 0, ""
	}
	for _, c := range r.Checks {
		if c.Name == name && c.Of > 0 {
			return float64(c.Passed) / float64(c.Of), c.Note
		}
	}
	n, note := passedChecks(checks, r, task)
	return float64(n) / float64(len(checks)), note
}

// passedChecks counts the checks the trial passes, with the first reason one
// could not be made.
func passedChecks(checks []compiledCheck, r runner.Result, task *Task) (int, string) {
	b, size, present := artifactOf(r)
	n, note := 0, ""
	for _, c := range checks {
		if !present && c.Result == nil {
			continue // no artifact: only FORGE_RESULT can be checked
		}
		ok, why := c.passed(b, size, r, task)
		if ok {
			n++
		}
		note = cmp.Or(note, why)
	}
	return n, note
}

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
