package forge

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/forge-run/forge/internal/yamlcheck"
	"github.com/forge-run/forge/runner"
)

// Task is one problem of a suite (docs/manifest.md, "Suites"): every
// candidate runs every task. A manifest without tasks plays its objective
// alone, as a suite of one unnamed task.
type Task struct {
	ID string
	// Objective is the task's own, or empty for the manifest's.
	Objective  string
	Files      []string
	Env        map[string]string
	Timeout    time.Duration
	OutputFile string
	// Weight is the task's weight in its candidates' suite scores (> 0,
	// default 1).
	Weight float64
	// Passing: the task's own secrets and env_from_host variables.
	Passing
	// Verify is the task's verifier, over the defaults'.
	Verify *VerifySpec
	// PassMark is the score (a verifier's reward) at which a trial solves
	// the task; nil for 1.
	PassMark *float64

	// A Harbor task's instruction.md; the task's own environment (a
	// Harbor task's image).
	instruction []byte
	environment *runner.Environment
	// envRef is the task's environment: field (a name, or inline),
	// resolved by Load into environment.
	envRef *EnvironmentRef
	// solution are its solution/ files, which only the oracle gets, from
	// solutionDir, and the variables it runs with.
	solution    []runner.File
	solutionDir string
	solutionEnv map[string]string
	// Fields is the task as written, every key (the known ones too), each
	// value as JSON carries it (numbers as json.Number, in their written
	// form): what FORGE_TASK holds and what task-aware checks read.
	Fields map[string]any

	files []runner.File
	where taskPos // where the task was written, for errors
}

// UnmarshalYAML keeps an inline task's node: the manifest's validation
// decodes it, as a tasks file's, reporting every problem at its key.
func (t *Task) UnmarshalYAML(n *yaml.Node) error {
	t.where.node = n
	return nil
}

// image says the task runs in an image of its own (a Dockerfile): its jobs
// start in the image's working directory, and only Daytona plays them.
func (t Task) image() bool { return t.environment != nil && t.environment.Dockerfile != "" }

// taskPos places a task's problems: the file it was written in, its node
// (a JSONL or CSV task's made from its line; nil for a Harbor task) and
// its key path there ("tasks[3]" in the manifest, "[3]" in a YAML tasks
// file, empty in JSONL and CSV, whose errors name the line).
type taskPos struct {
	file string
	node *yaml.Node
	path string
}

// validator is where the task's problems are told, each at its key.
func (p taskPos) validator() *validator {
	return &validator{file: p.file, doc: p.node, path: p.path}
}

// taskFields are the fields forge reads of a task, as every form of tasks
// writes them; the others are the task's own, in Fields.
type taskFields struct {
	ID          string            `yaml:"id"`
	Objective   string            `yaml:"objective"`
	Files       []string          `yaml:"files"`
	Env         map[string]string `yaml:"env"`
	Secrets     []string          `yaml:"secrets"`
	EnvFromHost []string          `yaml:"env_from_host"`
	Timeout     Duration          `yaml:"timeout"`
	OutputFile  string            `yaml:"output_file"`
	Verify      *VerifySpec       `yaml:"verify"`
	Environment *EnvironmentRef   `yaml:"environment"`
}

// decode reads t's fields from its node as the manifest reads its own
// (yamlcheck: strictly, every problem at its key) and checks them by the
// manifest's rules; a task without an objective gets the manifest's.
func (t *Task) decode(m *Manifest) []error {
	v := t.where.validator()
	var f taskFields
	v.decoded(yamlcheck.UnknownKeysBelow(v.doc, reflect.TypeFor[taskFields](), v.path), yamlcheck.Decode(v.doc, &f, v.path))
	if checkID(v, f.ID, "id") {
		t.ID = f.ID
	}
	t.Objective, t.Timeout, t.Verify = f.Objective, time.Duration(f.Timeout), f.Verify
	if strings.TrimSpace(t.Objective) == "" && strings.TrimSpace(m.Objective) == "" {
		v.at("is required: the manifest has no default objective:", "objective")
	}
	checkStrings(v.at, f.Files, "files")
	t.Files = slices.DeleteFunc(f.Files, func(s string) bool { return strings.TrimSpace(s) == "" })
	t.Env, t.Secrets, t.EnvFromHost = f.Env, f.Secrets, f.EnvFromHost
	t.Passing.check(v, t.Env, m.Defaults.Passing)
	bad := func(k string) bool { return checkName(k) != nil } // told just now
	t.Secrets, t.EnvFromHost = slices.DeleteFunc(t.Secrets, bad), slices.DeleteFunc(t.EnvFromHost, bad)
	t.OutputFile = checkRelPath(v, f.OutputFile, "output_file")
	if m.checkEnvironmentRef(v, f.Environment) {
		t.envRef = f.Environment
	}
	t.Weight = 1
	if w, ok := t.Fields["weight"]; ok {
		n, isNum := fieldNumber(w)
		if !isNum || !(n > 0) {
			v.at(fmt.Sprintf("must be a positive number, not %v", w), "weight")
		}
		t.Weight = n
	}
	if pm, ok := t.Fields["pass_mark"]; ok {
		n, isNum := fieldNumber(pm)
		if !isNum || !(n > 0 && n <= 1) {
			v.at(fmt.Sprintf("must be a number above 0 and at most 1 (the score that solves the task, e.g. 0.8), not %v", pm), "pass_mark")
		} else if n < 1 {
			t.PassMark = &n
		}
	}
	return v.errs
}

// fieldNumber reads a task's numeric field: a number, or a string holding
// one, as every value of a CSV tasks file is; false for anything else, and
// for infinities and NaN.
func fieldNumber(v any) (float64, bool) {
	var f float64
	var err error
	switch x := v.(type) {
	case json.Number:
		f, err = x.Float64()
	case string:
		f, err = strconv.ParseFloat(strings.TrimSpace(x), 64)
	default:
		return 0, false
	}
	return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// checkTaskIDs reports tasks that repeat an id, naming where it was first
// given.
func checkTaskIDs(tasks []Task) []error {
	var errs []error
	first := map[string]taskPos{}
	for _, t := range tasks {
		if t.ID == "" {
			continue
		}
		if p, dup := first[t.ID]; dup {
			at := p.validator().place("", "id")
			errs = append(errs, t.where.validator().place(fmt.Sprintf("duplicate task id %q (also at %s:%d)", t.ID, at.File, at.Line), "id"))
			continue
		}
		first[t.ID] = t.where
	}
	return errs
}

// JSON is the task as its candidates and judges see it in FORGE_TASK: its
// fields as written, with its objective (the manifest's when it has none)
// and id.
func (t Task) JSON(objective string) []byte {
	fields := map[string]any{}
	maps.Copy(fields, t.Fields)
	delete(fields, "verify") // the candidate never learns where its judge is
	delete(fields, "environment")
	fields["id"] = t.ID
	fields["objective"] = objective
	b, err := json.Marshal(fields)
	if err != nil { // every value came from JSON or YAML scalars
		panic(err)
	}
	return b
}

// taskIDs lists the tasks' ids in order.
func taskIDs(tasks []Task) []string {
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	return ids
}
