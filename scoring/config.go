package scoring

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/forge-run/forge/internal/yamlcheck"
	"gopkg.in/yaml.v3"
)

// Type names what a scorer measures.
type Type string

// The scorer types.
const (
	TypeSuccess   Type = "success"
	TypeRuntime   Type = "runtime"
	TypeSubmitted Type = "submitted"
	TypeArtifact  Type = "artifact"
	TypeJudge     Type = "judge"
)

// Normalization says how a scorer's raw trial values become scores in [0, 1].
type Normalization string

// The normalisations; see the package documentation.
const (
	NormRaw    Normalization = "raw"
	NormMinMax Normalization = "minmax"
	NormRank   Normalization = "rank"
)

// Goal says whether more or less of a submitted metric is better.
type Goal string

// The goals.
const (
	GoalMaximize Goal = "maximize"
	GoalMinimize Goal = "minimize"
)

// DefaultJudgeTimeout bounds a judge that sets no timeout.
const DefaultJudgeTimeout = 60 * time.Second

// Config is the manifest's scoring: list. The zero Config means
// DefaultConfig() wherever a Config is used.
//
// It decodes from a YAML sequence whose entries are scorer mappings or, as a
// shorthand, bare type names ("- success"). Its decoder rejects unknown keys
// itself, since yaml.v3's KnownFields does not reach into a custom
// unmarshaler; KnownKeys tells forge's manifest checker which keys exist.
type Config struct {
	Scorers []Scorer
}

// Scorer is one entry of the scoring: list.
type Scorer struct {
	Type Type `yaml:"type"`
	// Name identifies the scorer in breakdowns and judge results; it
	// defaults to the type, or "submitted:<field>".
	Name string `yaml:"name"`
	// Weight in the composite's weighted mean; nil means 1. Zero keeps the
	// scorer in the breakdown without counting it.
	Weight *float64 `yaml:"weight"`
	// Normalize defaults to minmax for runtime and submitted, raw otherwise.
	Normalize Normalization `yaml:"normalize"`
	// OnFailure is the score a failed trial gets from this scorer; nil
	// means 0.
	OnFailure *float64 `yaml:"on_failure"`

	// Field and Goal (default maximize) configure a submitted scorer: a
	// top-level key of the candidate's FORGE_RESULT object.
	Field string `yaml:"field"`
	Goal  Goal   `yaml:"goal"`

	// Checks configure an artifact scorer; it scores the fraction passed.
	Checks []Check `yaml:"checks"`

	// Command and Timeout (default 60s) configure a judge; see Judges.
	Command []string      `yaml:"command"`
	Timeout time.Duration `yaml:"timeout"`
}

// Check is one artifact check. Exactly one of Contains, Regex, the byte
// bounds (MinBytes and/or MaxBytes) or JSON is set:
//
//	checks:
//	  - contains: "## Events"   # the artifact contains the text
//	  - regex: '(?m)^# '        # the artifact matches (Go RE2 syntax)
//	  - min_bytes: 100          # the artifact's full size is at least 100
//	    max_bytes: 10000        #   ... and at most 10000 bytes
//	  - json: /events/0/title   # the artifact is JSON and the pointer exists
//	  - json: /count            # ... and the value there equals 10
//	    equals: 10
//	  - json: /score            # ... and is a number in [0.5, 1]
//	    min: 0.5
//	    max: 1
//
// JSON is an RFC 6901 pointer; "" is the whole document (it parses).
type Check struct {
	Contains string  `yaml:"contains"`
	Regex    string  `yaml:"regex"`
	MinBytes *int64  `yaml:"min_bytes"`
	MaxBytes *int64  `yaml:"max_bytes"`
	JSON     *string `yaml:"json"`
	// Equals is compared with the JSON value at the pointer as JSON values
	// (numbers by value, objects and arrays deeply). nil means no
	// comparison; JSON null cannot be compared.
	Equals any      `yaml:"equals"`
	Min    *float64 `yaml:"min"`
	Max    *float64 `yaml:"max"`
}

// DefaultConfig is what a manifest without scoring: gets: success (weight 1,
// raw) plus runtime (weight 0.2, minmax). Success dominates: any successful
// trial outscores any failed one (≥ 1/1.2 ≈ 0.83 against 0), and among
// successful trials the faster ones lead, by at most 0.17.
func DefaultConfig() Config {
	return Config{Scorers: []Scorer{
		{Type: TypeSuccess, Weight: ptr(1.0)},
		{Type: TypeRuntime, Weight: ptr(0.2), Normalize: NormMinMax},
	}}
}

func ptr[T any](v T) *T { return &v }

// effective returns c, or the default config when c has no scorers.
func (c Config) effective() Config {
	if len(c.Scorers) == 0 {
		return DefaultConfig()
	}
	return c
}

// EffectiveName is the scorer's name, or its default.
func (s Scorer) EffectiveName() string {
	switch {
	case s.Name != "":
		return s.Name
	case s.Type == TypeSubmitted && s.Field != "":
		return string(TypeSubmitted) + ":" + s.Field
	}
	return string(s.Type)
}

// EffectiveWeight is the scorer's weight, or 1.
func (s Scorer) EffectiveWeight() float64 {
	if s.Weight != nil {
		return *s.Weight
	}
	return 1
}

// EffectiveNormalize is the scorer's normalisation, or its type's default.
func (s Scorer) EffectiveNormalize() Normalization {
	if s.Normalize != "" {
		return s.Normalize
	}
	switch s.Type {
	case TypeRuntime, TypeSubmitted:
		return NormMinMax
	}
	return NormRaw
}

// EffectiveOnFailure is the score a failed trial gets, or 0.
func (s Scorer) EffectiveOnFailure() float64 {
	if s.OnFailure != nil {
		return *s.OnFailure
	}
	return 0
}

// EffectiveGoal is the submitted scorer's goal, or maximize. Runtime is
// always minimised.
func (s Scorer) EffectiveGoal() Goal {
	switch {
	case s.Type == TypeRuntime:
		return GoalMinimize
	case s.Goal != "":
		return s.Goal
	}
	return GoalMaximize
}

// EffectiveTimeout is the judge's timeout, or DefaultJudgeTimeout.
func (s Scorer) EffectiveTimeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultJudgeTimeout
}

// FieldError is one problem with the scoring configuration. Path locates it
// below the scoring: list, as mapping keys (string) and list indexes (int),
// e.g. [1 "checks" 0 "regex"], so the manifest loader can find its line and
// column; Msg says what is wrong.
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

// Validate checks one scorer. It returns nil or an errors.Join of
// *FieldError whose paths are relative to the scorer ("weight must be ≥ 0"
// has path ["weight"]).
func (s Scorer) Validate() error {
	var ps problems
	s.validate(&ps)
	return errors.Join(ps...)
}

func (s Scorer) validate(ps *problems) {
	switch s.Type {
	case TypeSuccess, TypeRuntime, TypeSubmitted, TypeArtifact, TypeJudge:
	case "":
		ps.add("type is required (success, runtime, submitted, artifact or judge)", "type")
		return
	default:
		ps.add(fmt.Sprintf("unknown type %q (want success, runtime, submitted, artifact or judge)", s.Type), "type")
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
			c.validate(ps, i)
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

func (c Check) validate(ps *problems, i int) {
	kinds := 0
	if c.Contains != "" {
		kinds++
	}
	if c.Regex != "" {
		kinds++
		if _, err := regexp.Compile(c.Regex); err != nil {
			ps.add("invalid regular expression: "+strings.TrimPrefix(err.Error(), "error parsing regexp: "),
				"checks", i, "regex")
		}
	}
	if c.MinBytes != nil || c.MaxBytes != nil {
		kinds++
		if c.MinBytes != nil && *c.MinBytes < 0 {
			ps.add("min_bytes must be ≥ 0", "checks", i, "min_bytes")
		}
		if c.MaxBytes != nil && *c.MaxBytes < 0 {
			ps.add("max_bytes must be ≥ 0", "checks", i, "max_bytes")
		}
		if c.MinBytes != nil && c.MaxBytes != nil && *c.MinBytes > *c.MaxBytes {
			ps.add("min_bytes must not exceed max_bytes", "checks", i)
		}
	}
	if c.JSON != nil {
		kinds++
		if p := *c.JSON; p != "" && !strings.HasPrefix(p, "/") {
			ps.add(`json must be a JSON pointer: "" or starting with "/"`, "checks", i, "json")
		}
		if c.Equals != nil && (c.Min != nil || c.Max != nil) {
			ps.add("use either equals or min/max, not both", "checks", i)
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
	} else {
		for _, k := range []struct {
			set bool
			key string
		}{{c.Equals != nil, "equals"}, {c.Min != nil, "min"}, {c.Max != nil, "max"}} {
			if k.set {
				ps.add(k.key+" needs json: the pointer to compare", "checks", i, k.key)
			}
		}
	}
	switch {
	case kinds == 0:
		ps.add("a check needs one of contains, regex, min_bytes/max_bytes or json", "checks", i)
	case kinds > 1:
		ps.add("a check has exactly one of contains, regex, min_bytes/max_bytes or json; split it into several checks", "checks", i)
	}
}

// Validate checks every scorer and the list as a whole: names are unique and
// at least one weight is positive. It returns nil or an errors.Join of
// *FieldError whose paths start with the scorer's index. The zero Config
// (meaning the default) is valid.
func (c Config) Validate() error {
	if len(c.Scorers) == 0 {
		return nil
	}
	var ps problems
	seen := map[string]int{}
	positive := false
	for i, s := range c.Scorers {
		var own problems
		s.validate(&own)
		for _, e := range own {
			fe := e.(*FieldError)
			ps = append(ps, &FieldError{Path: append([]any{i}, fe.Path...), Msg: fe.Msg})
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

// KnownKeys tells forge's strict manifest checker what the scoring: node
// decodes into, since Config has its own UnmarshalYAML.
func (Config) KnownKeys() reflect.Type { return reflect.TypeFor[[]Scorer]() }

// UnmarshalYAML decodes the scoring: list strictly: unknown keys and
// equals: null are *yamlcheck.Error values (joined with yaml.v3's own type
// errors), and a bare type name is a scorer with that type.
func (c *Config) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.ShortTag() == "!!null" {
		c.Scorers = nil
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return yamlcheck.At(n, "scoring", "must be a list of scorers, e.g. [{type: success}, {type: runtime, weight: 0.2}]")
	}
	var errs []error
	scorers := make([]Scorer, 0, len(n.Content))
	for i, item := range n.Content {
		if item.Kind == yaml.AliasNode && item.Alias != nil {
			item = item.Alias
		}
		if item.Kind == yaml.ScalarNode && item.ShortTag() == "!!str" {
			scorers = append(scorers, Scorer{Type: Type(item.Value)})
			continue
		}
		path := fmt.Sprintf("scoring[%d]", i)
		errs = append(errs, yamlcheck.UnknownKeys(item, reflect.TypeFor[Scorer](), path)...)
		errs = append(errs, nullEquals(item, path)...)
		var s Scorer
		if err := item.Decode(&s); err != nil {
			errs = append(errs, err)
			continue
		}
		scorers = append(scorers, s)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.Scorers = scorers
	return nil
}

// nullEquals reports the checks of a scorer node that say equals: null,
// which Check cannot represent.
func nullEquals(scorer *yaml.Node, path string) []error {
	var errs []error
	for i := 0; scorer.Kind == yaml.MappingNode && i+1 < len(scorer.Content); i += 2 {
		if k, v := scorer.Content[i], scorer.Content[i+1]; k.Value == "checks" && v.Kind == yaml.SequenceNode {
			for j, check := range v.Content {
				for l := 0; check.Kind == yaml.MappingNode && l+1 < len(check.Content); l += 2 {
					if ck, cv := check.Content[l], check.Content[l+1]; ck.Value == "equals" && cv.ShortTag() == "!!null" {
						errs = append(errs, yamlcheck.At(ck, fmt.Sprintf("%s.checks[%d].equals", path, j), "null is not supported"))
					}
				}
			}
		}
	}
	return errs
}

// jsonValue converts a YAML-decoded value into the form encoding/json
// decodes into (float64 numbers, map[string]any objects).
func jsonValue(v any) (any, error) {
	switch v := v.(type) {
	case nil, bool, string:
		return v, nil
	case int:
		return float64(v), nil
	case int64:
		return float64(v), nil
	case uint64:
		return float64(v), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%v is not a JSON number", v)
		}
		return v, nil
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%s is not a finite number", v)
		}
		return f, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			j, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = j
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			j, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = j
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("object key %v is not a string", k)
			}
			j, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[ks] = j
		}
		return out, nil
	}
	return nil, fmt.Errorf("%T is not a JSON value", v)
}
