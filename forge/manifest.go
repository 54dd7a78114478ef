package forge

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
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
	m, err := parse(path, data, harbor, blocks)
	if err != nil {
		return nil, err
	}
	m.Path, m.Dir = abs, filepath.Dir(abs)
	if err := m.resolveFiles(path, data); err != nil {
		return nil, err
	}
	return m, nil
}

// Parse decodes and validates manifest bytes, with the blocks given (as
// Load), without touching the file system; name is used in error
// messages. Scripts are not resolved.
func Parse(name string, data []byte, blocks ...Block) (*Manifest, error) {
	return parse(name, data, "", blocks)
}

// parse is Parse with harbor over the manifest's harbor:.
func parse(name string, data []byte, harbor string, blocks []Block) (*Manifest, error) {
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return nil, &Error{File: name, Msg: "not a YAML text file (binary or non-UTF-8 content)"}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, errors.Join(yamlcheck.InFile(err, name, func(s string) string { return "not valid YAML: " + s })...)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, &Error{File: name, Msg: "manifest is empty; it needs an objective and candidates"}
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, &Error{File: name, Line: doc.Line, Col: doc.Column,
			Msg: "manifest must be a mapping with objective: and candidates:, not a " + yamlcheck.KindName(doc)}
	}
	names := make([]string, len(blocks))
	for i, b := range blocks {
		names[i] = b.Name
	}
	m := &Manifest{doc: doc}
	// The blocks are decoded first, so that their problems are reported
	// with the manifest's unknown keys or type errors when it has some,
	// and after its candidates' problems when not.
	blockErrs := m.decodeBlocks(name, blocks)
	if errs := yamlcheck.UnknownKeys(doc, reflect.TypeFor[Manifest](), "", names...); len(errs) > 0 {
		return nil, errors.Join(append(yamlcheck.InFile(errors.Join(errs...), name, nil), blockErrs...)...)
	}
	if err := doc.Decode(m); err != nil {
		return nil, errors.Join(append(yamlcheck.InFile(err, name, yamlcheck.Friendly), blockErrs...)...)
	}
	m.Harbor = cmp.Or(harbor, m.Harbor)
	v := validator{file: name, doc: doc}
	m.validate(&v, blockErrs)
	if len(v.errs) > 0 {
		return nil, errors.Join(v.errs...)
	}
	return m, nil
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
			errs = append(errs, yamlcheck.InFile(errors.Join(berrs...), file, yamlcheck.Friendly)...)
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
}

// at records msg against the node at path (mapping keys and list indexes).
func (v *validator) at(msg string, path ...any) {
	e := yamlcheck.Under(v.doc, "", msg, path...)
	e.File = v.file
	v.errs = append(v.errs, e)
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
	if d.Trials < 0 {
		v.at("must be at least 1", "defaults", "trials")
	}
	if d.Concurrency < 0 {
		v.at("must be at least 1", "defaults", "concurrency")
	}
	if d.Retries != nil && *d.Retries < 0 {
		v.at("must not be negative (0 plays no trial again)", "defaults", "retries")
	}
	if d.OutputFile != "" {
		m.Defaults.OutputFile = checkRelPath(v, d.OutputFile, "defaults", "output_file")
	}
	checkEnv(v, d.Env, "defaults", "env")
	d.Passing.check(v, d.Env, nil, "defaults")
	checkStrings(v, d.Setup, "defaults", "setup")
	d.Verify.check(func(key, msg string) { v.at(msg, "defaults", "verify", key) }, nil)
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
		if c.Retries != nil && *c.Retries < 0 {
			v.at("must not be negative (0 plays no trial again)", "candidates", i, "retries")
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
