package scoring

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/forge-run/forge/runner"
)

// artifactOf returns the artifact bytes forge kept for r and its full size on
// disk. It prefers the raw bytes and falls back to the recorded content
// (results.json read back).
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
	size = r.ArtifactBytes
	if size < int64(len(b)) {
		size = int64(len(b))
	}
	present = r.Artifact != nil || r.ArtifactPath != "" || r.ArtifactContent != "" || r.ArtifactBytes > 0
	return b, size, present
}

// compiledCheck is a Check ready to run: its regex compiled and its equals
// value in encoding/json's form.
type compiledCheck struct {
	Check
	re   *regexp.Regexp
	want any
}

// compileChecks prepares checks; a check that does not compile (Validate
// was not called) always fails.
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

// passed reports whether the artifact passes the check. Text checks see the
// bytes forge kept (capped); the byte bounds use the full size.
func (c compiledCheck) passed(b []byte, size int64) bool {
	switch {
	case c.Contains != "":
		return bytes.Contains(b, []byte(c.Contains))
	case c.Regex != "":
		return c.re != nil && c.re.Match(b)
	case c.MinBytes != nil || c.MaxBytes != nil:
		return (c.MinBytes == nil || size >= *c.MinBytes) && (c.MaxBytes == nil || size <= *c.MaxBytes)
	case c.JSON != nil:
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			return false
		}
		v, ok := lookupPointer(doc, *c.JSON)
		if !ok {
			return false
		}
		if c.Equals != nil {
			return c.want != nil && reflect.DeepEqual(v, c.want)
		}
		if c.Min != nil || c.Max != nil {
			f, isNum := v.(float64)
			return isNum && (c.Min == nil || f >= *c.Min) && (c.Max == nil || f <= *c.Max)
		}
		return true
	}
	return false
}

// checkFraction is the fraction of checks the artifact passes; an absent
// artifact passes none.
func checkFraction(checks []compiledCheck, r runner.Result) float64 {
	if len(checks) == 0 {
		return 0
	}
	b, size, present := artifactOf(r)
	if !present {
		return 0
	}
	n := 0
	for _, c := range checks {
		if c.passed(b, size) {
			n++
		}
	}
	return float64(n) / float64(len(checks))
}

// lookupPointer resolves an RFC 6901 JSON pointer in a document decoded by
// encoding/json.
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
