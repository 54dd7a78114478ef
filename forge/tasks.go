package forge

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
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
	solution    []fileRef
	solutionDir string
	solutionEnv map[string]string
	// Fields is the task as written, every key (the known ones too), each
	// value as JSON carries it (numbers as json.Number, in their written
	// form): what FORGE_TASK holds and what task-aware checks read.
	Fields map[string]any

	files []fileRef
	node  *yaml.Node // inline tasks: the task as written
	where taskPos    // where the task was written, for errors
}

// UnmarshalYAML keeps an inline task's node: Parse reads it, reporting
// every problem with its position, after decoding.
func (t *Task) UnmarshalYAML(n *yaml.Node) error {
	t.node = n
	return nil
}

// image says the task runs in an image of its own (a Dockerfile): its jobs
// start in the image's working directory, and only Daytona plays them.
func (t Task) image() bool { return t.environment != nil && t.environment.Dockerfile != "" }

// taskPos places a task's fields for error messages.
type taskPos struct {
	file string
	line int
	// path is the task's key path in a YAML file ("tasks[3]"); empty in
	// JSONL and CSV, whose errors name the line.
	path string
	// keys places each key of a YAML task (line, column).
	keys map[string][2]int
}

func (p taskPos) err(key, msg string) *Error {
	e := &Error{File: p.file, Line: p.line, Field: key, Msg: msg}
	if pos, ok := p.keys[key]; ok {
		e.Line, e.Col = pos[0], pos[1]
	}
	if p.path != "" {
		e.Field = yamlcheck.Join(p.path, key)
	}
	return e
}

// decode reads the known fields of t.Fields into t, reporting each problem
// at its field. A task without an objective gets def; its env may use the
// secrets and host variables of outer (the defaults) and its own.
func (t *Task) decode(def string, outer Passing) []error {
	var errs []error
	bad := func(key, msg string) { errs = append(errs, t.where.err(key, msg)) }
	str := func(key string) (string, bool) {
		v, ok := t.Fields[key]
		if !ok || v == nil {
			return "", false
		}
		switch s := v.(type) {
		case string:
			return s, true
		case json.Number:
			if key == "id" {
				return s.String(), true
			}
		}
		bad(key, "must be a string, not "+jsonKind(v))
		return "", false
	}
	if id, ok := str("id"); !ok {
		if _, has := t.Fields["id"]; !has {
			bad("id", "is required")
		}
	} else if !ValidID(id) {
		bad("id", fmt.Sprintf("%q is not a valid id: use letters, digits, '_', '.' and '-' only (not . or ..)", id))
	} else {
		t.ID = id
	}
	t.Objective, _ = str("objective")
	if strings.TrimSpace(t.Objective) == "" && strings.TrimSpace(def) == "" {
		bad("objective", "is required: the manifest has no default objective:")
	}
	if v, ok := t.Fields["files"]; ok {
		l, isList := v.([]any)
		if !isList {
			bad("files", "must be a list of paths, not "+jsonKind(v))
		}
		for _, f := range l {
			s, isStr := f.(string)
			if !isStr || strings.TrimSpace(s) == "" {
				bad("files", fmt.Sprintf("%v is not a path", f))
				continue
			}
			t.Files = append(t.Files, s)
		}
	}
	if v, ok := t.Fields["env"]; ok {
		m, isMap := v.(map[string]any)
		if !isMap {
			bad("env", "must be a mapping of strings, not "+jsonKind(v))
		}
		for k, val := range m {
			s, isStr := val.(string)
			if json, isNum := val.(json.Number); isNum {
				s, isStr = json.String(), true
			}
			switch {
			case !isStr:
				bad("env", fmt.Sprintf("%s: must be a string, not %s", k, jsonKind(val)))
			case runner.CheckEnvName(k) != nil:
				bad("env", runner.CheckEnvName(k).Error())
			default:
				if t.Env == nil {
					t.Env = map[string]string{}
				}
				t.Env[k] = s
			}
		}
	}
	names := func(key string) []string {
		v, ok := t.Fields[key]
		if !ok {
			return nil
		}
		l, isList := v.([]any)
		if !isList {
			bad(key, "must be a list of variable names, not "+jsonKind(v))
		}
		var out []string
		for _, x := range l {
			s, _ := x.(string)
			if err := checkName(s); err != nil {
				bad(key, err.Error())
				continue
			}
			out = append(out, s)
		}
		return out
	}
	t.Secrets, t.EnvFromHost = names("secrets"), names("env_from_host")
	undeclaredRefs(t.Env, append(t.names(), outer.names()...), func(k, name string) {
		bad("env", fmt.Sprintf("%s: ${%s} is neither a secret nor an env_from_host variable here", k, name))
	})
	if s, ok := str("timeout"); ok {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			bad("timeout", fmt.Sprintf("%q is not a positive duration (want e.g. 90s, 2m)", s))
		}
		t.Timeout = d
	}
	if s, ok := str("output_file"); ok {
		c, err := runner.RelPath(s)
		if err != nil {
			bad("output_file", err.Error())
		}
		t.OutputFile = c
	}
	if v, ok := t.Fields["verify"]; ok && v != nil {
		t.Verify = verifyFromJSON(v, func(k, msg string) {
			if k != "" {
				msg = k + ": " + msg
			}
			bad("verify", msg)
		})
	}
	if v, ok := t.Fields["environment"]; ok && v != nil {
		t.envRef = environmentFromJSON(v, func(msg string) { bad("environment", msg) })
	}
	t.Weight = 1
	if v, ok := t.Fields["weight"]; ok {
		w, ok := fieldNumber(v)
		if !ok || !(w > 0) {
			bad("weight", fmt.Sprintf("must be a positive number, not %v", v))
		}
		t.Weight = w
	}
	if v, ok := t.Fields["pass_mark"]; ok {
		f, ok := fieldNumber(v)
		if !ok || !(f > 0 && f <= 1) {
			bad("pass_mark", fmt.Sprintf("must be a number above 0 and at most 1 (the score that solves the task, e.g. 0.8), not %v", v))
		} else if f < 1 {
			t.PassMark = &f
		}
	}
	return errs
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

// jsonKind names the kind of a JSON value for a person.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "true/false"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
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
			where := p.file + ":" + strconv.Itoa(p.line)
			if pos, ok := p.keys["id"]; ok {
				where = p.file + ":" + strconv.Itoa(pos[0])
			}
			errs = append(errs, t.where.err("id", fmt.Sprintf("duplicate task id %q (also at %s)", t.ID, where)))
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
