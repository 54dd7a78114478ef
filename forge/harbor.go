package forge

// Harbor task directories: the format Terminal-Bench 2, SWE-bench Verified
// (through an adapter) and other agent benchmarks ship in. A task is
// task.toml, instruction.md, environment/ (its image's build context),
// tests/ (the verifier, run after the agent) and solution/ (the oracle).

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/internal/yamlcheck"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// HarborTask is one Harbor task directory as forge reads it.
type HarborTask struct {
	// Dir is the task's directory; ID its name there.
	Dir, ID string
	// Name is [task].name (schema 1.1), else ID.
	Name string
	// Instruction is instruction.md, whole: what the agent is asked.
	Instruction string
	// AgentTimeout, VerifierTimeout and BuildTimeout are the task's own
	// ([agent], [verifier], [environment] timeout_sec); 0 when not given.
	AgentTimeout, VerifierTimeout, BuildTimeout time.Duration
	// VerifierEnv and VerifierUser are how tests/test.sh runs.
	VerifierEnv  map[string]string
	VerifierUser string
	// SolutionEnv is how solution/solve.sh runs ([solution] env).
	SolutionEnv map[string]string
	// Dockerfile is environment/Dockerfile, relative to Dir; "" when the
	// task has none. DockerImage is [environment] docker_image, an image
	// built already, which Harbor starts instead of building one.
	Dockerfile  string
	DockerImage string
	// Workdir is [environment] workdir: where the agent starts, over the
	// image's WORKDIR (absolute); "" when not said.
	Workdir string
	// CPUs, MemoryMB and StorageMB are what the environment asks for (0:
	// not said); AllowInternet is nil when not said.
	CPUs                float64
	MemoryMB, StorageMB int64
	AllowInternet       *bool
	// Metadata are the task's descriptive fields (difficulty, category,
	// tags, name, author...), as the task's fields for selecting tasks.
	Metadata map[string]any
	// Oracle says the task has solution/solve.sh.
	Oracle bool
}

// harborConfig is task.toml, both layouts in use: version = "1.0" with
// [metadata], and schema_version = "1.1" with [task].
type harborConfig struct {
	Version       string         `toml:"version"`
	SchemaVersion string         `toml:"schema_version"`
	Task          map[string]any `toml:"task"`
	Metadata      map[string]any `toml:"metadata"`
	Agent         struct {
		TimeoutSec *float64 `toml:"timeout_sec"`
	} `toml:"agent"`
	Verifier struct {
		TimeoutSec *float64          `toml:"timeout_sec"`
		Env        map[string]string `toml:"env"`
		User       string            `toml:"user"`
	} `toml:"verifier"`
	Solution struct {
		Env map[string]string `toml:"env"`
	} `toml:"solution"`
	Environment struct {
		DockerImage     string   `toml:"docker_image"`
		Workdir         string   `toml:"workdir"`
		BuildTimeoutSec *float64 `toml:"build_timeout_sec"`
		CPUs            *float64 `toml:"cpus"`
		MemoryMB        *int64   `toml:"memory_mb"`
		StorageMB       *int64   `toml:"storage_mb"`
		Memory          string   `toml:"memory"`
		Storage         string   `toml:"storage"`
		AllowInternet   *bool    `toml:"allow_internet"`
	} `toml:"environment"`
}

// ReadHarborTasks reads dir as Harbor tasks: one task directory (it holds
// task.toml), or a directory of them, sorted by name. Notes say what
// forge read but does not use (each unknown key once, with how many
// tasks have it). A broken task.toml is an error naming its file and
// line; so is a task forge cannot play yet (several containers).
func ReadHarborTasks(dir string) (tasks []HarborTask, notes []string, err error) {
	dirs := []string{dir}
	if _, err := os.Stat(filepath.Join(dir, "task.toml")); errors.Is(err, fs.ErrNotExist) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, nil, err
		}
		dirs = nil
		for _, e := range entries {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), "task.toml")); e.IsDir() && err == nil {
				dirs = append(dirs, filepath.Join(dir, e.Name()))
			}
		}
		if len(dirs) == 0 {
			return nil, nil, fmt.Errorf("%s: no Harbor task (a directory with task.toml) in it", dir)
		}
	}
	unknown := map[string]int{}
	var errs []error
	for _, d := range dirs {
		t, extra, err := readHarborTask(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, k := range extra {
			unknown[k]++
		}
		tasks = append(tasks, t)
	}
	for _, k := range slices.Sorted(maps.Keys(unknown)) {
		notes = append(notes, fmt.Sprintf("task.toml: %s is not a key forge knows%s; ignored (%d of %d tasks)", k, tomlNearest(strings.Split(k, ".")), unknown[k], len(dirs)))
	}
	return tasks, notes, errors.Join(errs...)
}

// readHarborTask reads one task directory, and the keys of its task.toml
// forge does not know.
func readHarborTask(dir string) (HarborTask, []string, error) {
	file := filepath.Join(dir, "task.toml")
	b, err := os.ReadFile(file)
	if err != nil {
		return HarborTask{}, nil, err
	}
	var c harborConfig
	md, err := toml.Decode(string(b), &c)
	if err != nil {
		return HarborTask{}, nil, tomlError(file, b, err)
	}
	t := HarborTask{Dir: dir, ID: filepath.Base(dir), VerifierEnv: c.Verifier.Env, VerifierUser: c.Verifier.User,
		SolutionEnv: c.Solution.Env, DockerImage: strings.TrimSpace(c.Environment.DockerImage),
		AllowInternet: c.Environment.AllowInternet, Metadata: map[string]any{}}
	if md.IsDefined("environment", "docker_image") && (t.DockerImage == "" || strings.ContainsAny(t.DockerImage, " \t\n")) {
		return HarborTask{}, nil, fmt.Errorf("%s: environment.docker_image = %q: want an image such as \"python:3.12-slim\"", file, c.Environment.DockerImage)
	}
	if w := c.Environment.Workdir; md.IsDefined("environment", "workdir") {
		// An image's directory: without . or .. components, nothing a
		// Dockerfile line cannot hold.
		t.Workdir = path.Clean(w)
		if !path.IsAbs(w) || (t.Workdir != w && t.Workdir+"/" != w) || strings.ContainsAny(w, "\n\r\"") {
			return HarborTask{}, nil, fmt.Errorf("%s: environment.workdir = %q: want an absolute path such as \"/app\", without . or ..", file, w)
		}
	}
	if err := t.readDir(); err != nil {
		return HarborTask{}, nil, err
	}
	if err := c.limits(&t, file); err != nil {
		return HarborTask{}, nil, err
	}
	maps.Copy(t.Metadata, c.Metadata)
	maps.Copy(t.Metadata, c.Task)
	name, _ := c.Task["name"].(string)
	t.Name = cmp.Or(name, t.ID)
	var unknown []string
	for _, k := range md.Undecoded() {
		if md.Type(k...) != "Hash" { // a table's keys are listed themselves
			unknown = append(unknown, k.String())
		}
	}
	return t, unknown, nil
}

// tomlNearest is " (did you mean verifier.timeout_sec?)" for a misspelt
// key of task.toml, "" for one forge knows nothing like.
func tomlNearest(k toml.Key) string {
	if len(k[len(k)-1]) < 6 {
		return "" // a short key is often another real one: gpus is not cpus
	}
	fields := tomlFields(reflect.TypeFor[harborConfig]())
	for _, name := range k[:len(k)-1] {
		f, ok := fields[name]
		if !ok || f.Kind() != reflect.Struct {
			return ""
		}
		fields = tomlFields(f)
	}
	near := yamlcheck.Nearest(k[len(k)-1], slices.Collect(maps.Keys(fields)))
	if near == "" {
		return ""
	}
	return " (did you mean " + append(slices.Clone(k[:len(k)-1]), near).String() + "?)"
}

// tomlFields are the types of t's fields by their TOML names.
func tomlFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for f := range t.Fields() {
		fields[strings.Split(f.Tag.Get("toml"), ",")[0]] = f.Type
	}
	return fields
}

// readDir reads what the task's directory holds beside task.toml: its
// instruction, its verifier, its image and its solution.
func (t *HarborTask) readDir() error {
	dir := t.Dir
	instruction, err := os.ReadFile(filepath.Join(dir, "instruction.md"))
	if err != nil {
		return fmt.Errorf("%s: a Harbor task needs instruction.md: %w", dir, err)
	}
	t.Instruction = string(instruction)
	if _, err := os.Stat(filepath.Join(dir, "tests", "test.sh")); err != nil {
		return fmt.Errorf("%s: a Harbor task needs tests/test.sh, its verifier", dir)
	}
	for _, compose := range []string{"docker-compose.yaml", "docker-compose.yml", "compose.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, "environment", compose)); err == nil {
			return fmt.Errorf("%s: its environment is environment/%s (several containers): not supported yet", dir, compose)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "environment", "Dockerfile")); err == nil {
		t.Dockerfile = filepath.Join("environment", "Dockerfile")
	} else if t.DockerImage == "" {
		return fmt.Errorf("%s: a Harbor task needs environment/Dockerfile (or [environment] docker_image), the image its agent and verifier run in: %s",
			dir, lookedFor(filepath.Join(dir, "environment")))
	}
	if _, err := os.Stat(filepath.Join(dir, "solution", "solve.sh")); err == nil {
		t.Oracle = true
	}
	return nil
}

// limits reads c's timeouts and sizes into t; file is c's task.toml.
func (c harborConfig) limits(t *HarborTask, file string) error {
	for _, v := range []struct {
		into *time.Duration
		sec  *float64
		key  string
	}{{&t.AgentTimeout, c.Agent.TimeoutSec, "agent.timeout_sec"}, {&t.VerifierTimeout, c.Verifier.TimeoutSec, "verifier.timeout_sec"},
		{&t.BuildTimeout, c.Environment.BuildTimeoutSec, "environment.build_timeout_sec"}} {
		if v.sec == nil {
			continue
		}
		if *v.sec <= 0 {
			return fmt.Errorf("%s: %s = %v: want a number of seconds above 0", file, v.key, *v.sec)
		}
		*v.into = time.Duration(*v.sec * float64(time.Second))
	}
	if c.Environment.CPUs != nil {
		t.CPUs = *c.Environment.CPUs
	}
	var err error
	if t.MemoryMB, err = megabytes(c.Environment.MemoryMB, c.Environment.Memory); err != nil {
		return fmt.Errorf("%s: environment.memory: %w", file, err)
	}
	if t.StorageMB, err = megabytes(c.Environment.StorageMB, c.Environment.Storage); err != nil {
		return fmt.Errorf("%s: environment.storage: %w", file, err)
	}
	return nil
}

// lookedFor says what a task's environment directory holds that is not
// its Dockerfile: a misspelt one ("environment/dockerfile: did you mean
// Dockerfile?"), the files it holds, or that there is none.
func lookedFor(envDir string) string {
	entries, err := os.ReadDir(envDir)
	if err != nil {
		return "it has no environment/ directory"
	}
	var names []string
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(strings.ToLower(name), "dockerfile") || strings.EqualFold(name, "Containerfile") {
			return "environment/" + name + ": did you mean Dockerfile?"
		}
		names = append(names, e.Name())
	}
	if len(names) == 0 {
		return "environment/ is empty"
	}
	return "environment/ holds " + text.FirstOf(names, 5) + " and no Dockerfile"
}

// tomlTypeError is how the TOML decoder says a value has the wrong type.
var tomlTypeError = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): incompatible types: TOML value has type (\w+); destination has type (\w+)`)

// tomlError says what is wrong with the task.toml at path, at its line,
// in the user's words.
func tomlError(path string, b []byte, err error) error {
	if perr := (toml.ParseError{}); errors.As(err, &perr) {
		if strings.Contains(perr.Message, "to end table name") {
			// Noticed at the next line: name the one that opened it.
			lines := strings.Split(string(b), "\n")
			for i := min(perr.Position.Line, len(lines)) - 1; i >= 0; i-- {
				if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "[") && !strings.Contains(l, "]") {
					return fmt.Errorf("%s:%d: %s: the table name needs its closing ']'", path, i+1, l)
				}
			}
		}
		return fmt.Errorf("%s:%d: %s", path, perr.Position.Line, perr.Message)
	}
	if m := tomlTypeError.FindStringSubmatch(err.Error()); m != nil {
		kind := map[string]string{"float": "a number", "integer": "a whole number", "string": "a string", "bool": "true or false"}
		return fmt.Errorf("%s:%s: %s: want %s, not a %s", path, m[1], m[2], cmp.Or(kind[m[4]], m[4]), strings.TrimSuffix(m[3], "64"))
	}
	return fmt.Errorf("%s: %w", path, err)
}

// megabytes is a size in MB as task.toml writes it: a number of MB, or a
// string such as "2G" or "512M".
func megabytes(mb *int64, s string) (int64, error) {
	if mb != nil {
		return *mb, nil
	}
	if s == "" {
		return 0, nil
	}
	unit := map[string]float64{"K": 1.0 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
	text := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	mult := 1.0 / (1024 * 1024) // bytes, unless its last letter is a unit
	if u, ok := unit[text[max(len(text)-1, 0):]]; ok {
		text, mult = text[:len(text)-1], u
	}
	n, err := strconv.ParseFloat(text, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q: want a size such as \"2G\" or \"512M\"", s)
	}
	return int64(n*mult + 0.5), nil
}

// The verifier of every Harbor task, as Harbor runs it.
const harborVerifyCommand = "bash " + runner.TestsDir + "/test.sh"

// task is the suite task a Harbor task plays as: its instruction the
// objective (and instruction.md beside the candidate), its metadata the
// task's fields, tests/ the verifier at Harbor's paths, its Dockerfile
// the environment the candidate starts in (in the image's WORKDIR).
func (ht HarborTask) task() (Task, error) {
	fields := map[string]any{}
	maps.Copy(fields, ht.Metadata)
	fields["name"] = ht.Name
	t := Task{ID: ht.ID, Objective: ht.Instruction, Timeout: ht.AgentTimeout, Weight: 1, Fields: fields,
		where:       taskPos{file: filepath.Join(ht.Dir, "task.toml")},
		instruction: []byte(ht.Instruction),
		Verify: &VerifySpec{Dir: filepath.Join(ht.Dir, "tests"), Command: harborVerifyCommand,
			Timeout: Duration(ht.VerifierTimeout), Env: ht.VerifierEnv, atRoot: true, user: ht.VerifierUser},
	}
	if ht.Oracle { // its solution/ files, under solution/
		t.solutionDir, t.solutionEnv = filepath.Join(ht.Dir, "solution"), ht.SolutionEnv
		refs, err := dirFiles(t.solutionDir, false)
		if err != nil {
			return Task{}, err
		}
		for _, r := range refs {
			t.solution = append(t.solution, runner.File{Src: r.Src, Dst: "solution/" + r.Dst})
		}
	}
	if !ValidID(t.ID) {
		return Task{}, fmt.Errorf("%s: the task's directory name %q is not a valid task id: use letters, digits, '_', '.' and '-' only", ht.Dir, t.ID)
	}
	var env *runner.Environment
	var err error
	switch {
	case ht.DockerImage != "": // built already: the snapshot only starts from it
		env = &runner.Environment{Name: ht.ID, Dockerfile: "FROM " + ht.DockerImage + "\n", BuildTimeout: ht.BuildTimeout,
			Source: filepath.Join(ht.Dir, "task.toml")}
	case ht.Dockerfile != "":
		env, err = dockerImage(ht.ID, filepath.Join(ht.Dir, ht.Dockerfile), filepath.Join(ht.Dir, "environment"), ht.BuildTimeout)
	default:
		return t, nil
	}
	if err != nil {
		return Task{}, err
	}
	if ht.Workdir != "" { // the image's own WORKDIR is then where the agent starts
		env.Dockerfile = strings.TrimRight(env.Dockerfile, "\n") + "\nWORKDIR " + ht.Workdir + "\n"
	}
	gb := func(mb int64) int { return int((mb + 1023) / 1024) }
	env.CPU, env.MemoryGB, env.DiskGB = int(math.Ceil(ht.CPUs)), gb(ht.MemoryMB), gb(ht.StorageMB)
	env.NoInternet = ht.AllowInternet != nil && !*ht.AllowInternet
	if env.Hash, err = runner.EnvironmentHash(env); err != nil { // with its resources
		return Task{}, err
	}
	t.environment = env
	return t, nil
}

// readHarbor reads the manifest's harbor: directory into suite tasks,
// after the others, and gives the suite its scoring (harborScoring).
func (m *Manifest) readHarbor(h io.Writer, v *validator) {
	m.harborScoring()
	hts, notes, err := ReadHarborTasks(m.abs(m.Harbor))
	m.Notes = append(m.Notes, notes...)
	if err != nil {
		v.at(err.Error(), "harbor")
		return
	}
	var tasks []Task
	var errs []error
	for _, ht := range hts {
		t, err := ht.task()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// The task's files are the manifest's: its identity, and what
		// compare names when one changed (tests/ is the verifier's).
		files := []runner.File{{Src: filepath.Join(ht.Dir, "task.toml"), Dst: "task.toml"},
			{Src: filepath.Join(ht.Dir, "instruction.md"), Dst: "instruction.md"}}
		for _, f := range append(files, t.solution...) {
			if b, err := os.ReadFile(f.Src); err == nil {
				m.hashFile(h, "harbor\x00"+ht.ID+"\x00"+f.Dst, f.Src, b)
			}
		}
		if t.environment != nil {
			m.noteEnvironment(h, t.environment)
		}
		tasks = append(tasks, t)
	}
	if err := errors.Join(errs...); err != nil {
		v.at(err.Error(), "harbor")
	}
	if len(tasks) > 0 {
		v.errs = append(v.errs, checkTaskIDs(append(slices.Clip(m.Tasks), tasks...))...)
		m.Tasks = append(m.Tasks, tasks...)
	}
}

// harborScoring makes a Harbor suite's scoring its verifiers' reward when
// scoring: says nothing: the default, success and runtime, would rank a
// fast wrong answer (reward 0) first. A scoring: that weighs more than the
// reward, or leaves it out, is the manifest's to say, and noted.
func (m *Manifest) harborScoring() {
	if len(m.Scoring.Scorers) == 0 {
		m.Scoring.Scorers = []scoring.Scorer{{Type: scoring.TypeVerifier}}
		return
	}
	var others []string
	reward := false
	for _, s := range m.Scoring.Scorers {
		if s.Type == scoring.TypeVerifier {
			reward = true
		} else {
			others = append(others, s.EffectiveName())
		}
	}
	const why = "a Harbor suite's verifiers judge its trials"
	switch {
	case !reward:
		m.Notes = append(m.Notes, fmt.Sprintf("scoring: %s, and this one (%s) leaves their reward out: a trial rewarded 0 ranks as one rewarded 1; add {type: verifier}",
			why, strings.Join(others, ", ")))
	case len(others) > 0:
		m.Notes = append(m.Notes, fmt.Sprintf("scoring: %s, and this one weighs %s besides their reward: a trial rewarded 0 may outrank one rewarded 1; [{type: verifier}] ranks by the reward alone",
			why, strings.Join(others, ", ")))
	}
}

// ImageTasks are the plan's tasks that run in their own image (a
// Dockerfile): only a backend that runs images can play them.
func (p *Plan) ImageTasks() []string {
	var ids []string
	for _, t := range p.Tasks {
		if t.image() {
			ids = append(ids, t.ID)
		}
	}
	return ids
}

// hostTemplate is a Harbor env value that names a variable of the host
// (the whole value): "${NAME}", or "${NAME:-default}".
var hostTemplate = regexp.MustCompile(`^\$\{([^}:]+)(?::-(.*))?\}$`)

// fromHost is a Harbor env (a [verifier] or [solution] env) with each value
// that names a host variable replaced, as Harbor does, by that variable as
// look finds it (forge's environment, then the .env beside the manifest),
// else by its default (also for an empty one); missing are the names found
// nowhere and without a default, secret the values taken from the host.
func fromHost(look Lookup, env map[string]string) (out map[string]string, missing, secret []string) {
	out = maps.Clone(env)
	for k, v := range env {
		m := hostTemplate.FindStringSubmatch(v)
		if m == nil {
			continue
		}
		val, ok := look(m[1])
		switch {
		case ok && (val != "" || !strings.Contains(v, ":-")):
			out[k] = val
			if val != "" {
				secret = append(secret, val)
			}
		case strings.Contains(v, ":-"):
			out[k] = m[2]
		default:
			missing = append(missing, m[1])
		}
	}
	slices.Sort(missing)
	return out, slices.Compact(missing), secret
}

// harbor reports whether t is a Harbor task's (its verifier at Harbor's
// paths): its verifier's and solution's env values may name host
// variables ("${NAME}": fromHost).
func (t Task) harbor() bool { return t.Verify != nil && t.Verify.atRoot }

// OracleID is the candidate --oracle plays: each task's own solution.
const OracleID = "oracle"

// oracleScript starts a Harbor task's solution as Harbor does: solution/
// at /solution, "bash /solution/solve.sh" in the image's working
// directory. The job brought solution/ into its own directory, beside
// FORGE_RESULT.
const oracleScript = `d=$(dirname "$FORGE_RESULT") && mkdir -p /solution && cp -R "$d/solution/." /solution/ && DEBIAN_FRONTEND=noninteractive exec bash /solution/solve.sh`

// oracle is the candidate that plays every task's solution (Plan with
// Overrides.Oracle); tasks says which of them cannot be played so.
func oracle(tasks []Task) (Candidate, error) {
	var none []string
	for _, t := range tasks {
		if t.solution == nil || !t.image() {
			none = append(none, t.ID)
		}
	}
	if len(none) > 0 {
		return Candidate{}, fmt.Errorf("--oracle plays each Harbor task's solution/solve.sh in its image; %s %s none",
			text.FirstOf(none, 5), text.Plural(len(none), "has", "have"))
	}
	return Candidate{ID: OracleID, argv: []string{"sh", "-c", oracleScript, OracleID}, oracle: true}, nil
}
