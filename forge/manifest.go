package forge

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/forge-run/forge/internal/yamlcheck"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// Manifest is a parsed and validated forge.yaml (docs/manifest.md).
type Manifest struct {
	Objective  string      `yaml:"objective"`
	Defaults   Defaults    `yaml:"defaults"`
	Candidates []Candidate `yaml:"candidates"`
	// Tasks make the manifest a suite: the inline tasks, then, after Load,
	// the tasks_file's (TasksFile, relative to the manifest's directory).
	Tasks     []Task `yaml:"tasks"`
	TasksFile string `yaml:"tasks_file"`
	// Network "none" gives every job no network but its own loopback, on
	// both backends; "" leaves it as the backend has it.
	Network string `yaml:"network"`
	// Harbor is a directory of Harbor tasks (or one task), relative to the
	// manifest's directory: more of the suite's tasks, after Load.
	Harbor string `yaml:"harbor"`
	// Notes are what Load read but does not use (a Harbor task.toml's
	// unknown keys), each once, for the user.
	Notes   []string       `yaml:"-"`
	Scoring scoring.Config `yaml:"scoring"`
	Gates   Gates          `yaml:"gates"`
	// Pricing prices model tokens and sandbox time (what a win costs).
	Pricing *scoring.Pricing `yaml:"pricing"`
	// Budget bounds what a run spends.
	Budget Budget `yaml:"budget"`
	// Environments are built once and reused by every job that runs in
	// one (a candidate's or the defaults' environment:).
	Environments map[string]*EnvironmentSpec `yaml:"environments"`

	// Blocks holds what each Block's Decode made of the manifest's block
	// of that name, when it has one.
	Blocks map[string]any `yaml:"-"`

	// Path is the manifest's absolute path, Dir its directory.
	Path string `yaml:"-"`
	Dir  string `yaml:"-"`
	// Hash identifies the manifest and every file it names (sha256);
	// Files has each of them by its path (relative to the manifest's
	// directory) with its own digest, to say which changed.
	Hash  string            `yaml:"-"`
	Files map[string]string `yaml:"-"`

	// doc is the parsed document, which locates the problems found after
	// decoding.
	doc *yaml.Node
	// envs are the top-level environments, resolved by Load.
	envs map[string]*runner.Environment
}

// Defaults apply to every candidate that does not say otherwise.
type Defaults struct {
	Timeout          Duration          `yaml:"timeout"`
	Trials           int               `yaml:"trials"`
	Concurrency      int               `yaml:"concurrency"`
	OutputFile       string            `yaml:"output_file"`
	ArtifactOptional *bool             `yaml:"artifact_optional"`
	MaxOutput        Size              `yaml:"max_output"`
	MaxArtifact      Size              `yaml:"max_artifact"`
	SetupTimeout     Duration          `yaml:"setup_timeout"`
	Setup            []string          `yaml:"setup"`
	Files            []string          `yaml:"files"`
	Env              map[string]string `yaml:"env"`
	// Environment is what every candidate's jobs run in, unless it names
	// its own.
	Environment *EnvironmentRef `yaml:"environment"`
	// Retries is how often a trial that ended infra is played again in a
	// fresh sandbox (nil: DefaultRetries; 0: never).
	Retries *int `yaml:"retries"`
	// Verify judges every task's trials that has none of its own.
	Verify  *VerifySpec `yaml:"verify"`
	Passing `yaml:",inline"`
}

// Passing names what a candidate gets of forge's environment (or the .env
// beside the manifest), on purpose (docs/manifest.md, "Secrets"): Secrets,
// masked wherever forge writes, and EnvFromHost, plain variables.
type Passing struct {
	Secrets      []string `yaml:"secrets"`
	EnvFromHost  []string `yaml:"env_from_host"`
	SetupSecrets *bool    `yaml:"setup_secrets"`
}

// Candidate is one competitor: a script, or an explicit command.
type Candidate struct {
	ID               string            `yaml:"id"`
	Script           string            `yaml:"script"`
	Command          []string          `yaml:"command"`
	Files            []string          `yaml:"files"`
	Env              map[string]string `yaml:"env"`
	Timeout          Duration          `yaml:"timeout"`
	OutputFile       string            `yaml:"output_file"`
	ArtifactOptional *bool             `yaml:"artifact_optional"`
	Setup            []string          `yaml:"setup"`
	// Environment is what the candidate's jobs run in (over the
	// defaults').
	Environment *EnvironmentRef `yaml:"environment"`
	// Retries overrides defaults.retries for this candidate.
	Retries *int `yaml:"retries"`
	Passing `yaml:",inline"`

	// argv and files are resolved by Load.
	argv  []string
	files []fileRef
	// oracle: the candidate plays each task's solution (OracleID).
	oracle bool
}

// A Block is a top-level block of the manifest that belongs to a backend
// (daytona:), which forge knows nothing of. Parse hands it to Decode,
// reports its problems with the manifest's own (even when the backend is
// not used) and keeps what Decode made of it in Manifest.Blocks.
type Block struct {
	// Name is the block's key, which must not be one of the manifest's own.
	Name string
	// Decode strictly decodes n, the block's value (perhaps null, or an
	// alias), and validates it. Every problem is an *Error placed at its
	// node, its key path below path (the block's key); Parse fills in the
	// file. What Decode returns is kept only when it reports no problem.
	Decode func(n *yaml.Node, path string) (any, []error)
}

// Gates make a finished run fail (exit 1) when its results are not good
// enough.
type Gates struct {
	MinWinnerScore *float64 `yaml:"min_winner_score"`
	MinSuccessRate *float64 `yaml:"min_success_rate"`
	MaxInfraErrors *int     `yaml:"max_infra_errors"`
	RequireWinner  bool     `yaml:"require_winner"`
	// MaxCostUSD fails a run whose trials cost more, all together.
	MaxCostUSD *float64 `yaml:"max_cost_usd"`
}

// Error is one problem with a manifest: file, line, column, key and what
// is wrong (yamlcheck's, the one strict reading of YAML).
type Error = yamlcheck.Error

// ValidID reports whether s may be a candidate or run id (runner.ValidID).
func ValidID(s string) bool { return runner.ValidID(s) }

// The bounds of the manifest's counts: more is a typo, not a plan.
const (
	maxTrials      = 10000
	maxConcurrency = 10000
	maxRetries     = 100
)

// maxManifestBytes bounds what Load reads.
const maxManifestBytes = 4 << 20

// Load reads, strictly decodes and validates the manifest at path, with
// the backends' blocks given. Every problem is reported, each an *Error
// naming the file, line, column and key, joined.
func Load(path string, blocks ...Block) (*Manifest, error) { return load(path, "", blocks) }

// LoadHarbor is Load with harbor (a directory of Harbor tasks, relative to
// the working directory: forge run --harbor) over the manifest's harbor:.
func LoadHarbor(path, harbor string, blocks ...Block) (*Manifest, error) {
	abs, err := filepath.Abs(harbor)
	if err != nil {
		return nil, err
	}
	return load(path, abs, blocks)
}

func load(path, harbor string, blocks []Block) (*Manifest, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	data, err := readCapped(abs, maxManifestBytes)
	switch {
	case len(data) > maxManifestBytes:
		return nil, &Error{File: path, Msg: "manifest is larger than 4 MiB"}
	case err != nil:
		return nil, &Error{File: path, Msg: "cannot read manifest: " + unwrapPathErr(err)}
	}
	m, errs := read(path, data, harbor, blocks)
	if m == nil {
		return nil, errors.Join(tidy(path, errs)...)
	}
	// The files are looked for even when the manifest has other
	// problems, so that one forge validate says them all.
	m.Path, m.Dir = abs, filepath.Dir(abs)
	if err := m.resolveFiles(path, data); err != nil {
		errs = append(errs, unjoin(err)...)
	}
	v := validator{file: path, doc: m.doc}
	m.checkTaskFields(&v)
	errs = append(errs, v.errs...)
	if len(errs) > 0 {
		return nil, errors.Join(tidy(path, errs)...)
	}
	return m, nil
}

// Parse decodes and validates manifest bytes, with the blocks given (as
// Load), without touching the file system; name is used in error
// messages. Scripts are not resolved.
func Parse(name string, data []byte, blocks ...Block) (*Manifest, error) {
	m, errs := read(name, data, "", blocks)
	if len(errs) > 0 {
		return nil, errors.Join(tidy(name, errs)...)
	}
	return m, nil
}

// read decodes and validates manifest bytes, with harbor over the
// manifest's harbor:. It returns every problem, and the manifest as far as
// it decoded (nil when data is no YAML mapping): a value that does not
// decode leaves its key unset and is reported, and the rest is decoded and
// validated all the same.
func read(name string, data []byte, harbor string, blocks []Block) (*Manifest, []error) {
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return nil, []error{&Error{File: name, Msg: "not a YAML text file (binary or non-UTF-8 content)"}}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlcheck.Syntax(name, data, err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, []error{&Error{File: name, Msg: "manifest is empty; it needs an objective and candidates"}}
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, []error{&Error{File: name, Line: doc.Line, Col: doc.Column,
			Msg: "manifest must be a mapping with objective: and candidates:, not a " + yamlcheck.KindName(doc)}}
	}
	names := make([]string, len(blocks))
	for i, b := range blocks {
		names[i] = b.Name
	}
	m := &Manifest{doc: doc}
	blockErrs := m.decodeBlocks(name, blocks)
	unknown := yamlcheck.UnknownKeys(doc, reflect.TypeFor[Manifest](), "", names...)
	decodeErrs := yamlcheck.Decode(doc, m, "")
	errs := yamlcheck.InFile(errors.Join(append(slices.Clone(unknown), decodeErrs...)...), name, nil)
	m.Harbor = cmp.Or(harbor, m.Harbor)
	v := validator{file: name, doc: doc}
	for _, e := range decodeErrs {
		if e, ok := e.(*Error); ok && e.Field != "" {
			v.quiet = append(v.quiet, e.Field)
		}
	}
	for _, e := range unknown {
		// What the mapping with an unknown key lacks, or lacks of the
		// key it was meant to be, is the same mistake.
		e := e.(*Error)
		parent := e.Field[:max(strings.LastIndexAny(e.Field, ".["), 0)]
		v.quietAt = append(v.quietAt, parent)
		if m := meant.FindStringSubmatch(e.Msg); m != nil {
			v.quietAt = append(v.quietAt, yamlcheck.Join(parent, m[1]))
		}
	}
	m.validate(&v, blockErrs)
	return m, append(errs, v.errs...)
}

// unjoin is the errors err joins, or err.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// maxFileErrors is how many problems of one tasks file are told; a file
// of 10,000 bad lines says the first ones and how many more.
const maxFileErrors = 20

// moreProblems is what stands for the problems of a file past
// maxFileErrors.
const moreProblems = "and %d more problems in this file"

// Problems counts the problems err (Load's) holds, those past a file's
// first ones included.
func Problems(err error) int {
	if err == nil {
		return 0
	}
	n := 0
	for _, e := range unjoin(err) {
		var more int
		if fe, ok := e.(*Error); ok && fe.Line == 0 {
			if _, scanErr := fmt.Sscanf(fe.Msg, moreProblems, &more); scanErr == nil {
				n += more
				continue
			}
		}
		n++
	}
	return n
}

// tidy orders problems as the user reads them: the manifest's (named
// manifest) first, then each other file's in the order they are first
// named, each by line and column; says each once, and at most
// maxFileErrors of a file other than the manifest, then how many more.
func tidy(manifest string, errs []error) []error {
	files := map[string]int{manifest: 0}
	seen := map[string]bool{}
	var out []*Error
	var other []error
	for _, err := range errs {
		for _, e := range yamlcheck.InFile(err, "", nil) {
			if seen[e.Error()] {
				continue
			}
			seen[e.Error()] = true
			fe, ok := e.(*Error)
			if !ok {
				other = append(other, e)
				continue
			}
			if _, ok := files[fe.File]; !ok {
				files[fe.File] = len(files)
			}
			out = append(out, fe)
		}
	}
	slices.SortStableFunc(out, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(files[a.File], files[b.File]), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	var kept []error
	count := 0 // of e's file's problems, e included
	for i, e := range out {
		if i == 0 || out[i-1].File != e.File {
			count = 0
		}
		count++
		switch {
		case e.File == manifest || count <= maxFileErrors:
			kept = append(kept, e)
		case count == maxFileErrors+1:
			rest := 0
			for j := i; j < len(out) && out[j].File == e.File; j++ {
				rest++
			}
			kept = append(kept, &Error{File: e.File, Msg: fmt.Sprintf(moreProblems, rest)})
		}
	}
	return append(kept, other...)
}

// decodeBlocks decodes the blocks the manifest has into m.Blocks and
// returns their problems, each an *Error of file.
func (m *Manifest) decodeBlocks(file string, blocks []Block) []error {
	var errs []error
	for _, b := range blocks {
		n := valueOf(m.doc, b.Name)
		if n == nil {
			continue
		}
		val, berrs := b.Decode(n, b.Name)
		if len(berrs) > 0 {
			errs = append(errs, yamlcheck.InFile(errors.Join(yamlcheck.Place(errors.Join(berrs...), n, b.Name)...), file, nil)...)
			continue
		}
		if m.Blocks == nil {
			m.Blocks = map[string]any{}
		}
		m.Blocks[b.Name] = val
	}
	return errs
}

// validator collects semantic errors located by path in the YAML tree.
type validator struct {
	file string
	doc  *yaml.Node
	errs []error
	// quiet are the key paths of the values that did not decode, each
	// reported already: what is wrong with the zero value left in their
	// place (or below it) is not. Nothing is said at quietAt's paths.
	quiet, quietAt []string
}

// meant reads the key an unknown key's message suggests.
var meant = regexp.MustCompile(`\(did you mean "(.*)"\?\)$`)

// at records msg against the node at path (mapping keys and list indexes).
func (v *validator) at(msg string, path ...any) {
	e := yamlcheck.Under(v.doc, "", msg, path...)
	e.File = v.file
	for _, p := range v.quiet {
		if e.Field == p || strings.HasPrefix(e.Field, p+".") || strings.HasPrefix(e.Field, p+"[") {
			return
		}
	}
	if slices.Contains(v.quietAt, e.Field) {
		return
	}
	v.errs = append(v.errs, e)
}

// given reports whether the manifest gives the key at path (a value the
// zero value of its field cannot tell from none).
func (v *validator) given(path ...any) bool {
	n := v.doc
	for _, k := range path {
		var next *yaml.Node
		switch k := k.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				next = valueOf(n, k)
			}
		case int:
			if n.Kind == yaml.SequenceNode && k >= 0 && k < len(n.Content) {
				next = n.Content[k]
			}
		}
		if next == nil {
			return false
		}
		n = next
	}
	return true
}

// inRange reports val, the integer at path, when it is given and not
// within [lo, hi]; below is what to say when it is below lo.
func (v *validator) inRange(val, lo, hi int, below string, path ...any) {
	switch {
	case !v.given(path...):
	case val < lo:
		v.at(fmt.Sprintf("%s, not %d", below, val), path...)
	case val > hi:
		v.at(fmt.Sprintf("must be at most %d, not %d", hi, val), path...)
	}
}

// validate checks what decoding could not; blockErrs, the problems of the
// backends' blocks, come after the candidates'.
func (m *Manifest) validate(v *validator, blockErrs []error) {
	suite := len(m.Tasks) > 0 || m.TasksFile != "" || m.Harbor != ""
	if !suite && strings.TrimSpace(m.Objective) == "" {
		v.at("is required: say what the candidates must achieve", "objective")
	}
	if len(m.Tasks) == 0 && valueOf(v.doc, "tasks") != nil {
		v.at("is empty: list the tasks, or remove the key", "tasks")
	}
	for i := range m.Tasks {
		t, err := yamlTask(v.file, fmt.Sprintf("tasks[%d]", i), m.Tasks[i].node)
		if err != nil {
			v.errs = append(v.errs, err)
			continue
		}
		v.errs = append(v.errs, t.decode(m.Objective, m.Defaults.Passing)...)
		m.Tasks[i] = t
	}
	v.errs = append(v.errs, checkTaskIDs(m.Tasks)...)
	for _, c := range []struct {
		usd   *float64
		block string
	}{{m.Budget.MaxCostUSD, "budget"}, {m.Gates.MaxCostUSD, "gates"}} {
		if c.usd != nil && !(*c.usd > 0 && *c.usd < 1e9) {
			v.at(fmt.Sprintf("%v: want a number of dollars above 0", *c.usd), c.block, "max_cost_usd")
		}
	}
	for _, p := range m.Pricing.Check() {
		path := []any{"pricing"}
		for _, k := range p.Path {
			path = append(path, k)
		}
		v.at(p.Msg, path...)
	}
	d := m.Defaults
	v.inRange(d.Trials, 1, maxTrials, "must be at least 1 (the runs of each candidate on each task)", "defaults", "trials")
	v.inRange(d.Concurrency, 1, maxConcurrency, "must be at least 1 (the jobs run at once)", "defaults", "concurrency")
	if d.Retries != nil {
		v.inRange(*d.Retries, 0, maxRetries, "must not be negative (0 plays no trial again)", "defaults", "retries")
	}
	if d.OutputFile != "" {
		m.Defaults.OutputFile = checkRelPath(v, d.OutputFile, "defaults", "output_file")
	}
	checkEnv(v, d.Env, "defaults", "env")
	d.Passing.check(v, d.Env, nil, "defaults")
	checkStrings(v, d.Setup, "defaults", "setup")
	d.Verify.check(func(key, msg string) { v.at(msg, "defaults", "verify", key) }, nil)
	if m.Network != "" && m.Network != "none" {
		v.at(fmt.Sprintf("%q: want none (no network but the job's own loopback), or leave the key out", m.Network), "network")
	}
	if len(m.Candidates) == 0 {
		v.at("at least one candidate is required", "candidates")
	}
	seen := map[string]int{}
	for i, c := range m.Candidates {
		switch {
		case c.ID == "":
			v.at("is required", "candidates", i, "id")
		case !ValidID(c.ID):
			v.at(fmt.Sprintf("%q is not a valid id: use letters, digits, '_', '.' and '-' only (not . or ..)", c.ID),
				"candidates", i, "id")
		default:
			if j, dup := seen[c.ID]; dup {
				v.at(fmt.Sprintf("duplicate id %q (also candidates[%d])", c.ID, j), "candidates", i, "id")
			}
			seen[c.ID] = i
		}
		switch {
		case c.Script == "" && len(c.Command) == 0:
			v.at("needs script: or command:", "candidates", i)
		case c.Script != "" && len(c.Command) > 0:
			v.at("give script: or command:, not both", "candidates", i, "command")
		case len(c.Command) > 0 && strings.TrimSpace(c.Command[0]) == "":
			v.at("the program (first element) is empty", "candidates", i, "command")
		}
		if c.OutputFile != "" {
			m.Candidates[i].OutputFile = checkRelPath(v, c.OutputFile, "candidates", i, "output_file")
		}
		if c.Retries != nil {
			v.inRange(*c.Retries, 0, maxRetries, "must not be negative (0 plays no trial again)", "candidates", i, "retries")
		}
		checkEnv(v, c.Env, "candidates", i, "env")
		c.Passing.check(v, c.Env, &d.Passing, "candidates", i)
		checkStrings(v, c.Setup, "candidates", i, "setup")
	}
	m.validateEnvironments(v)
	v.errs = append(v.errs, blockErrs...)
	validateScoring(m.Scoring, v, suite)
	m.Gates.validate(v)
}

// checkTaskFields refuses a check that compares with a task field no task
// has, and notes one that only some tasks have: their trials fail it.
func (m *Manifest) checkTaskFields(v *validator) {
	if len(m.Tasks) == 0 {
		return
	}
	have := map[string]bool{}
	for _, t := range m.Tasks {
		for k := range t.Fields {
			have[k] = true
		}
	}
	for i, s := range m.Scoring.Scorers {
		for j, c := range s.Checks {
			for _, f := range []struct{ key, field string }{
				{"equals_task", c.EqualsTask}, {"contains_task", c.ContainsTask}, {"regex_task", c.RegexTask},
			} {
				if f.field == "" {
					continue
				}
				var lack []string
				for _, t := range m.Tasks {
					if _, ok := t.Fields[f.field]; !ok {
						lack = append(lack, t.ID)
					}
				}
				switch {
				case len(lack) == len(m.Tasks):
					fields := slices.Sorted(maps.Keys(have))
					msg := fmt.Sprintf("no task has a field %q", f.field)
					if near := yamlcheck.Nearest(f.field, fields); near != "" {
						msg += fmt.Sprintf(" (did you mean %q?)", near)
					} else {
						msg += " (the tasks have: " + joinShort(fields) + ")"
					}
					v.at(msg, "scoring", i, "checks", j, f.key)
				case len(lack) > 0:
					m.Notes = append(m.Notes, fmt.Sprintf("scoring[%d].checks[%d].%s: %d of %d tasks have no field %q (%s): their trials fail this check",
						i, j, f.key, len(lack), len(m.Tasks), f.field, joinShort(lack)))
				}
			}
		}
	}
}

// valueOf is the value of key in the mapping n (its last, as YAML
// decodes it), nil when n has no such key.
func valueOf(n *yaml.Node, key string) (v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			v = n.Content[i+1]
		}
	}
	return v
}

func (g Gates) validate(v *validator) {
	if g.MinWinnerScore != nil && (*g.MinWinnerScore < 0 || *g.MinWinnerScore > 1) {
		v.at("must be between 0 and 1", "gates", "min_winner_score")
	}
	if g.MinSuccessRate != nil && (*g.MinSuccessRate < 0 || *g.MinSuccessRate > 1) {
		v.at("must be between 0 and 1", "gates", "min_success_rate")
	}
	if g.MaxInfraErrors != nil && *g.MaxInfraErrors < 0 {
		v.at("must not be negative", "gates", "max_infra_errors")
	}
}

func checkEnv(v *validator, env map[string]string, path ...any) {
	for k := range env {
		if err := runner.CheckEnvName(k); err != nil {
			v.at(err.Error(), path...)
		}
	}
}

func checkStrings(v *validator, ss []string, path ...any) {
	for i, s := range ss {
		if strings.TrimSpace(s) == "" {
			v.at("is empty", append(path, i)...)
		}
	}
}

// checkRelPath checks p, a path inside a job's working directory, by the
// one rule for it (runner.RelPath) and returns it cleaned ("out/../x.md"
// is "x.md"), or p unchanged after reporting why it is refused.
func checkRelPath(v *validator, p string, path ...any) string {
	c, err := runner.RelPath(p)
	if err != nil {
		v.at(err.Error(), path...)
		return p
	}
	return c
}
