package scoring

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// FieldError is one problem with the scoring configuration; Path locates it
// below scoring: as keys and indexes (e.g. [1 "checks" 0 "regex"]).
type FieldError struct {
	Path []any
	Msg  string
}

func (e *FieldError) Error() string {
	p := fieldPath(e.Path)
	if p == "" {
		return e.Msg
	}
	return p + ": " + e.Msg
}

func fieldPath(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, p)
		}
	}
	return b.String()
}

type problems []error

func (ps *problems) add(msg string, path ...any) {
	*ps = append(*ps, &FieldError{Path: path, Msg: msg})
}

// Validate checks one scorer: nil or an errors.Join of *FieldError.
func (s Scorer) Validate() error {
	var ps problems
	s.validate(&ps)
	return errors.Join(ps...)
}

func (s Scorer) validate(ps *problems) {
	switch s.Type {
	case TypeSuccess, TypeRuntime, TypeSubmitted, TypeArtifact, TypeJudge, TypeVerifier:
	case "":
		ps.add("type is required (success, runtime, submitted, artifact, judge or verifier)", "type")
		return
	default:
		ps.add(fmt.Sprintf("unknown type %q (want success, runtime, submitted, artifact, judge or verifier)", s.Type), "type")
		return
	}
	if w := s.EffectiveWeight(); math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
		ps.add("weight must be ≥ 0 and finite", "weight")
	}
	if f := s.EffectiveOnFailure(); math.IsNaN(f) || f < 0 || f > 1 {
		ps.add("on_failure must be between 0 and 1", "on_failure")
	}
	switch s.Normalize {
	case "", NormMinMax, NormRank:
	case NormRaw:
		if s.Type == TypeRuntime {
			ps.add("normalize: raw makes no sense for runtime (seconds are not a score); use minmax or rank", "normalize")
		}
	default:
		ps.add(fmt.Sprintf("unknown normalize %q (want raw, minmax or rank)", s.Normalize), "normalize")
	}
	if s.Name != "" && strings.TrimSpace(s.Name) != s.Name {
		ps.add("name must not start or end with spaces", "name")
	}

	only := func(ok bool, key string) {
		if !ok {
			ps.add(fmt.Sprintf("%s is not used by a %s scorer", key, s.Type), key)
		}
	}
	only(s.Type == TypeSubmitted || s.Field == "", "field")
	only(s.Type == TypeSubmitted || s.Goal == "", "goal")
	only(s.Type == TypeArtifact || s.Checks == nil, "checks")
	only(s.Type == TypeJudge || s.Command == nil, "command")
	only(s.Type == TypeJudge || s.Timeout == 0, "timeout")
	only(s.Type == TypeJudge || s.Secrets == nil, "secrets")

	switch s.Type {
	case TypeSubmitted:
		if s.Field == "" {
			ps.add("field is required: the key of the candidate's FORGE_RESULT object to score", "field")
		}
		switch s.Goal {
		case "", GoalMaximize, GoalMinimize:
		default:
			ps.add(fmt.Sprintf("unknown goal %q (want maximize or minimize)", s.Goal), "goal")
		}
	case TypeArtifact:
		if len(s.Checks) == 0 {
			ps.add("checks is required: at least one artifact check", "checks")
		}
		for i, c := range s.Checks {
			c.validateValues(ps, i)
			c.validateShape(ps, i)
		}
	case TypeJudge:
		if len(s.Command) == 0 || s.Command[0] == "" {
			ps.add("command is required: the judge's argv, e.g. [python3, judges/llm.py]", "command")
		}
		if s.Timeout < 0 {
			ps.add("timeout must be positive", "timeout")
		}
	}
}

// tests names the tests the check makes.
func (c Check) tests() []string {
	var tests []string
	add := func(set bool, key string) {
		if set {
			tests = append(tests, key)
		}
	}
	add(c.Contains != "", "contains")
	add(c.Regex != "", "regex")
	add(c.MinBytes != nil || c.MaxBytes != nil, "min_bytes/max_bytes")
	add(c.Equals != nil, "equals")
	add(c.Min != nil || c.Max != nil, "min/max")
	add(c.EqualsTask != "", "equals_task")
	add(c.ContainsTask != "", "contains_task")
	add(c.RegexTask != "", "regex_task")
	return tests
}

// validateValues checks each of the i-th check's values on its own.
func (c Check) validateValues(ps *problems, i int) {
	if c.Regex != "" {
		if _, err := regexp.Compile(c.Regex); err != nil {
			ps.add("invalid regular expression: "+strings.TrimPrefix(err.Error(), "error parsing regexp: "),
				"checks", i, "regex")
		}
	}
	if c.MinBytes != nil && *c.MinBytes < 0 {
		ps.add("min_bytes must be ≥ 0", "checks", i, "min_bytes")
	}
	if c.MaxBytes != nil && *c.MaxBytes < 0 {
		ps.add("max_bytes must be ≥ 0", "checks", i, "max_bytes")
	}
	if c.MinBytes != nil && c.MaxBytes != nil && *c.MinBytes > *c.MaxBytes {
		ps.add("min_bytes must not exceed max_bytes", "checks", i)
	}
	if c.Equals != nil {
		if _, err := jsonValue(c.Equals); err != nil {
			ps.add("equals: "+err.Error(), "checks", i, "equals")
		}
	}
	for _, b := range []struct {
		v   *float64
		key string
	}{{c.Min, "min"}, {c.Max, "max"}} {
		if b.v != nil && (math.IsNaN(*b.v) || math.IsInf(*b.v, 0)) {
			ps.add(b.key+" must be a finite number", "checks", i, b.key)
		}
	}
	if c.Min != nil && c.Max != nil && *c.Min > *c.Max {
		ps.add("min must not exceed max", "checks", i)
	}
	for _, p := range []struct {
		v   *string
		key string
	}{{c.JSON, "json"}, {c.Result, "result"}} {
		if p.v != nil && *p.v != "" && !strings.HasPrefix(*p.v, "/") {
			ps.add(p.key+` must be a JSON pointer: "" or starting with "/"`, "checks", i, p.key)
		}
	}
}

// validateShape checks that the i-th check has one subject (the artifact's
// text, or the JSON value at json: or result:) and one test that tests it.
func (c Check) validateShape(ps *problems, i int) {
	tests := c.tests()
	const all = "contains, regex, min_bytes/max_bytes, json, result, equals_task, contains_task or regex_task"
	switch {
	case c.JSON != nil && c.Result != nil:
		ps.add("a check reads json: or result:, not both; split it into several checks", "checks", i)
	case c.JSON != nil || c.Result != nil:
		subject := "json"
		if c.Result != nil {
			subject = "result"
		}
		for _, t := range tests {
			if t == "contains" || t == "regex" || t == "min_bytes/max_bytes" {
				ps.add(t+" tests the artifact's text, not a value at "+subject+":", "checks", i)
			}
		}
		if len(tests) > 1 {
			ps.add("use one of equals, min/max, equals_task, contains_task or regex_task with "+subject+":, not "+
				strings.Join(tests, " and "), "checks", i)
		}
	case len(tests) == 0:
		ps.add("a check needs one of "+all, "checks", i)
	default:
		for _, t := range tests {
			if t == "equals" || t == "min/max" {
				key := strings.TrimSuffix(t, "/max")
				ps.add(key+" needs json: or result: (the pointer to compare)", "checks", i, key)
			}
		}
		if len(tests) > 1 {
			ps.add("a check has exactly one of "+all+"; split it into several checks", "checks", i)
		}
	}
}

// TaskFields lists the task fields cfg's checks compare with.
func (c Config) TaskFields() []string {
	var fields []string
	for _, s := range c.Scorers {
		for _, ch := range s.Checks {
			for _, f := range []string{ch.EqualsTask, ch.ContainsTask, ch.RegexTask} {
				if f != "" && !slices.Contains(fields, f) {
					fields = append(fields, f)
				}
			}
		}
	}
	return fields
}

// Validate checks every scorer, that names are unique and that a weight is
// positive: nil or an errors.Join of *FieldError. The zero Config is valid.
func (c Config) Validate() error {
	if len(c.Scorers) == 0 {
		return nil
	}
	var ps problems
	seen := map[string]int{}
	positive := false
	for i, s := range c.Scorers {
		own := len(ps)
		s.validate(&ps)
		for _, e := range ps[own:] {
			fe := e.(*FieldError)
			fe.Path = append([]any{i}, fe.Path...)
		}
		name := s.EffectiveName()
		if j, dup := seen[name]; dup {
			ps.add(fmt.Sprintf("duplicate scorer name %q (also scorer %d); give each a distinct name:", name, j), i, "name")
		} else {
			seen[name] = i
		}
		if w := s.EffectiveWeight(); w > 0 && !math.IsInf(w, 0) {
			positive = true
		}
	}
	if !positive {
		ps.add("at least one scorer needs a positive weight")
	}
	return errors.Join(ps...)
}
