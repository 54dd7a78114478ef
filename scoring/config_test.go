package scoring

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

type manifest struct {
	Scoring Config `yaml:"scoring"`
}

func decode(t *testing.T, src string) (Config, error) {
	t.Helper()
	var m manifest
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	err := dec.Decode(&m)
	return m.Scoring, err
}

func TestDecodeFullConfig(t *testing.T) {
	cfg, err := decode(t, `
scoring:
  - success
  - type: runtime
    weight: 0.2
    normalize: rank
  - type: submitted
    field: accuracy
    goal: maximize
    normalize: raw
    on_failure: 0.1
  - type: artifact
    name: format
    checks:
      - contains: "## Events"
      - regex: '(?m)^# '
      - {min_bytes: 10, max_bytes: 1000}
      - json: /count
        equals: 10
      - json: /items/0
        equals: {title: x, tags: [a, 1]}
      - {json: /score, min: 0.5, max: 1}
  - type: judge
    name: llm
    command: [python3, judges/llm.py]
    timeout: 90s
`)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if len(cfg.Scorers) != 5 {
		t.Fatalf("got %d scorers", len(cfg.Scorers))
	}
	s := cfg.Scorers
	if s[0].Type != TypeSuccess || s[0].EffectiveWeight() != 1 || s[0].EffectiveNormalize() != NormRaw {
		t.Errorf("shorthand success = %+v", s[0])
	}
	if s[1].EffectiveWeight() != 0.2 || s[1].EffectiveNormalize() != NormRank || s[1].EffectiveGoal() != GoalMinimize {
		t.Errorf("runtime = %+v", s[1])
	}
	if s[2].EffectiveName() != "submitted:accuracy" || s[2].EffectiveOnFailure() != 0.1 {
		t.Errorf("submitted = %+v, name %q", s[2], s[2].EffectiveName())
	}
	if len(s[3].Checks) != 6 || *s[3].Checks[2].MinBytes != 10 || *s[3].Checks[3].JSON != "/count" {
		t.Errorf("artifact checks = %+v", s[3].Checks)
	}
	want, _ := jsonValue(map[string]any{"title": "x", "tags": []any{"a", 1}})
	if got, _ := jsonValue(s[3].Checks[4].Equals); !reflect.DeepEqual(got, want) {
		t.Errorf("equals = %#v, want %#v", got, want)
	}
	if s[4].EffectiveTimeout() != 90*time.Second || !reflect.DeepEqual(s[4].Command, []string{"python3", "judges/llm.py"}) {
		t.Errorf("judge = %+v", s[4])
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"unknown scorer key", "scoring:\n  - type: success\n    wieght: 2\n", `3:5: scoring[0].wieght: unknown key "wieght" (did you mean "weight"?)`},
		{"unknown check key", "scoring:\n  - type: artifact\n    checks:\n      - contians: x\n", `4:9: scoring[0].checks[0].contians: unknown key "contians" (did you mean "contains"?)`},
		{"not a list", "scoring:\n  type: success\n", "scoring: must be a list"},
		{"equals null", "scoring:\n  - type: artifact\n    checks:\n      - {json: /a, equals: null}\n", "scoring[0].checks[0].equals: null is not supported"},
		{"bad duration", "scoring:\n  - type: judge\n    command: [x]\n    timeout: soon\n", "time.Duration"},
		{"weight not a number", "scoring:\n  - type: success\n    weight: heavy\n", "float64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := decode(t, c.src)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestDecodeNullAndEmpty(t *testing.T) {
	cfg, err := decode(t, "scoring:\n")
	if err != nil || len(cfg.Scorers) != 0 {
		t.Fatalf("cfg = %+v, err = %v", cfg, err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("empty config (= default) must be valid: %v", err)
	}
	if !reflect.DeepEqual(cfg.effective(), DefaultConfig()) {
		t.Error("empty config must mean DefaultConfig")
	}
}

func TestKnownKeys(t *testing.T) {
	if got := (Config{}).KnownKeys(); got != reflect.TypeFor[[]Scorer]() {
		t.Errorf("KnownKeys = %v", got)
	}
}

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }
func str(v string) *string   { return &v }

func TestScorerValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		s    Scorer
		path string
		want string
	}{
		{"no type", Scorer{}, "type", "type is required"},
		{"bad type", Scorer{Type: "speed"}, "type", `unknown type "speed"`},
		{"negative weight", Scorer{Type: TypeSuccess, Weight: f64(-1)}, "weight", "weight must be ≥ 0"},
		{"on_failure above 1", Scorer{Type: TypeSuccess, OnFailure: f64(2)}, "on_failure", "between 0 and 1"},
		{"bad normalize", Scorer{Type: TypeSuccess, Normalize: "zscore"}, "normalize", `unknown normalize "zscore"`},
		{"raw runtime", Scorer{Type: TypeRuntime, Normalize: NormRaw}, "normalize", "makes no sense for runtime"},
		{"submitted without field", Scorer{Type: TypeSubmitted}, "field", "field is required"},
		{"bad goal", Scorer{Type: TypeSubmitted, Field: "x", Goal: "up"}, "goal", `unknown goal "up"`},
		{"field on success", Scorer{Type: TypeSuccess, Field: "x"}, "field", "not used by a success scorer"},
		{"command on artifact", Scorer{Type: TypeArtifact, Checks: []Check{{Contains: "a"}}, Command: []string{"x"}}, "command", "not used"},
		{"artifact without checks", Scorer{Type: TypeArtifact}, "checks", "at least one artifact check"},
		{"empty check", Scorer{Type: TypeArtifact, Checks: []Check{{}}}, "checks[0]", "a check needs one of"},
		{"two kinds", Scorer{Type: TypeArtifact, Checks: []Check{{Contains: "a", Regex: "b"}}}, "checks[0]", "exactly one of"},
		{"bad regex", Scorer{Type: TypeArtifact, Checks: []Check{{Contains: "a"}, {Regex: "("}}}, "checks[1].regex", "invalid regular expression: missing closing )"},
		{"min > max bytes", Scorer{Type: TypeArtifact, Checks: []Check{{MinBytes: i64(10), MaxBytes: i64(5)}}}, "checks[0]", "min_bytes must not exceed max_bytes"},
		{"negative bytes", Scorer{Type: TypeArtifact, Checks: []Check{{MaxBytes: i64(-1)}}}, "checks[0].max_bytes", "must be ≥ 0"},
		{"bad pointer", Scorer{Type: TypeArtifact, Checks: []Check{{JSON: str("count")}}}, "checks[0].json", "JSON pointer"},
		{"equals and min", Scorer{Type: TypeArtifact, Checks: []Check{{JSON: str("/a"), Equals: 1, Min: f64(0)}}}, "checks[0]", "not equals and min/max"},
		{"task test and contains on json", Scorer{Type: TypeArtifact, Checks: []Check{{JSON: str("/a"), Contains: "x"}}}, "checks[0]", "contains tests the artifact's text, not a value at json:"},
		{"json and result", Scorer{Type: TypeArtifact, Checks: []Check{{JSON: str("/a"), Result: str("/b")}}}, "checks[0]", "json: or result:, not both"},
		{"bad result pointer", Scorer{Type: TypeArtifact, Checks: []Check{{Result: str("a")}}}, "checks[0].result", "must be a JSON pointer"},
		{"two task tests", Scorer{Type: TypeArtifact, Checks: []Check{{EqualsTask: "a", RegexTask: "b"}}}, "checks[0]", "exactly one of"},
		{"min without json", Scorer{Type: TypeArtifact, Checks: []Check{{Contains: "a", Min: f64(0)}}}, "checks[0].min", "needs json"},
		{"min > max", Scorer{Type: TypeArtifact, Checks: []Check{{JSON: str("/a"), Min: f64(2), Max: f64(1)}}}, "checks[0]", "min must not exceed max"},
		{"bad equals", Scorer{Type: TypeArtifact, Checks: []Check{{JSON: str("/a"), Equals: map[any]any{1: 2}}}}, "checks[0].equals", "not a string"},
		{"judge without command", Scorer{Type: TypeJudge}, "command", "command is required"},
		{"judge negative timeout", Scorer{Type: TypeJudge, Command: []string{"j"}, Timeout: -time.Second}, "timeout", "must be positive"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.s.Validate()
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			var fe *FieldError
			found := false
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				if errors.As(e, &fe) && fieldPath(fe.Path) == c.path && strings.Contains(fe.Msg, c.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("Validate() = %v\nwant a FieldError at %q containing %q", err, c.path, c.want)
			}
		})
	}
}

func TestScorerValidateAcceptsEveryType(t *testing.T) {
	for _, s := range []Scorer{
		{Type: TypeSuccess},
		{Type: TypeRuntime, Normalize: NormRank, Weight: f64(0)},
		{Type: TypeSubmitted, Field: "items", Goal: GoalMinimize, Normalize: NormRaw},
		{Type: TypeArtifact, Checks: []Check{{JSON: str("")}, {MinBytes: i64(0)}, {JSON: str("/a"), Equals: false}}},
		{Type: TypeJudge, Command: []string{"judge"}, Timeout: time.Second},
	} {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	err := Config{Scorers: []Scorer{
		{Type: TypeSuccess, Weight: f64(0)},
		{Type: TypeJudge, Command: []string{"a"}, Weight: f64(0)},
		{Type: TypeJudge, Command: []string{"b"}, Weight: f64(0)},
		{Type: TypeRuntime, Weight: f64(-1)},
	}}.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	msg := err.Error()
	for _, want := range []string{
		`[2].name: duplicate scorer name "judge" (also scorer 1)`,
		"[3].weight: weight must be ≥ 0",
		"at least one scorer needs a positive weight",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("Validate() = %v\nwant it to contain %q", msg, want)
		}
	}
}
