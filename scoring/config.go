package scoring

import (
	"time"
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
	// TypeVerifier scores the reward the task's verifier gave.
	TypeVerifier Type = "verifier"
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

// Config is the manifest's scoring: list; the zero Config means
// DefaultConfig(). Its decoder rejects unknown keys itself, since yaml.v3's
// KnownFields does not reach into a custom unmarshaler.
type Config struct {
	Scorers []Scorer
}

// Scorer is one entry of the scoring: list.
type Scorer struct {
	Type Type `yaml:"type"`
	// Name defaults to the type, or "submitted:<field>".
	Name string `yaml:"name"`
	// Weight nil means 1; zero keeps the scorer in the breakdown only.
	Weight *float64 `yaml:"weight"`
	// Normalize defaults to minmax for runtime and submitted, raw otherwise.
	Normalize Normalization `yaml:"normalize"`
	// OnFailure is a failed trial's score from this scorer; nil means 0.
	OnFailure *float64 `yaml:"on_failure"`

	// Field (a top-level FORGE_RESULT key) and Goal configure submitted.
	Field string `yaml:"field"`
	Goal  Goal   `yaml:"goal"`

	// Checks configure an artifact scorer; it scores the fraction passed.
	Checks []Check `yaml:"checks"`

	// Command, Timeout (default 60s) and Secrets (variables it gets, as a
	// candidate's secrets:) configure a judge.
	Command []string      `yaml:"command"`
	Timeout time.Duration `yaml:"timeout"`
	Secrets []string      `yaml:"secrets"`
}

// Check is one artifact check (docs/manifest.md, "scoring"): one test
// (Contains, Regex, MinBytes/MaxBytes, Equals, Min/Max, or a *Task field) of
// one subject: the artifact's text, the value at the JSON pointer, or the
// value at Result in FORGE_RESULT.
type Check struct {
	Contains string  `yaml:"contains"`
	Regex    string  `yaml:"regex"`
	MinBytes *int64  `yaml:"min_bytes"`
	MaxBytes *int64  `yaml:"max_bytes"`
	JSON     *string `yaml:"json"`
	Result   *string `yaml:"result"`

	EqualsTask   string `yaml:"equals_task"`
	ContainsTask string `yaml:"contains_task"`
	RegexTask    string `yaml:"regex_task"`
	// Equals compares as JSON values (numbers by value); nil means none.
	Equals any      `yaml:"equals"`
	Min    *float64 `yaml:"min"`
	Max    *float64 `yaml:"max"`
}

// DefaultConfig is success (weight 1, raw) plus runtime (weight 0.2, minmax):
// any successful trial outscores any failed one; among them the faster lead.
func DefaultConfig() Config {
	return Config{Scorers: []Scorer{
		{Type: TypeSuccess, Weight: new(1.0)},
		{Type: TypeRuntime, Weight: new(0.2), Normalize: NormMinMax},
	}}
}

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

// EffectiveGoal is the submitted scorer's goal, or maximize.
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
