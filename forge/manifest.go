package forge

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/forge-run/forge/agent"
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
	// Agents describe agents forge has no built-in for, by name.
	Agents map[string]*AgentSpec `yaml:"agents"`

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
	// read holds, while Load resolves them, the files it read by path:
	// candidates that name one script read it once.
	read map[string][]byte
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
	// Agent names an agent forge installs and runs (claude-code, codex, or
	// one of the manifest's agents:) instead of a script or command, with
	// Model; Version pins another than the agent's tested one, Args go
	// after its command line, MaxTurns bounds its loop and APIBase points
	// its model API elsewhere (a gateway, a local fake).
	Agent    string   `yaml:"agent"`
	Model    string   `yaml:"model"`
	Version  string   `yaml:"version"`
	Args     []string `yaml:"args"`
	MaxTurns int      `yaml:"max_turns"`
	APIBase  string   `yaml:"api_base"`

	// argv and files are resolved by Load.
	argv  []string
	files []runner.File
	// agent is Agent's spec, resolved by Load (Version over its own).
	agent *agent.Spec
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
	return load(path, harbor, blocks)
}

// LoadAgentsOnHarbor is the manifest forge run --harbor DIR --agent NAME
// --model M plays without one of its own: the Harbor tasks in harbor,
// scored by their verifiers, and the agents as its candidates; path names
// it (and its directory, where .env is looked for).
func LoadAgentsOnHarbor(path, harbor string, agents []AgentChoice, blocks ...Block) (*Manifest, error) {
	var b strings.Builder
	b.WriteString("scoring:\n  - type: verifier\ncandidates:\n")
	for _, a := range agents {
		fmt.Fprintf(&b, "  - {agent: %s, model: %s}\n", strconv.Quote(a.Agent), strconv.Quote(a.Model))
	}
	return loadData(path, []byte(b.String()), harbor, blocks)
}

func load(path, harbor string, blocks []Block) (*Manifest, error) {
	data, err := readCapped(path, maxManifestBytes)
	switch {
	case len(data) > maxManifestBytes:
		return nil, &Error{File: path, Msg: "manifest is larger than 4 MiB"}
	case err != nil:
		return nil, &Error{File: path, Msg: "cannot read manifest: " + unwrapPathErr(err)}
	}
	return loadData(path, data, harbor, blocks)
}

// loadData is load with the manifest's bytes given, and harbor ("" for
// none) relative to the working directory.
func loadData(path string, data []byte, harbor string, blocks []Block) (*Manifest, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	if harbor != "" {
		if harbor, err = filepath.Abs(harbor); err != nil {
			return nil, err
		}
	}
	m, errs := read(path, data, harbor, blocks)
	if m == nil {
		return nil, errors.Join(tidy(path, errs)...)
	}
	// The files are looked for even when the manifest has other
	// problems, so that one forge validate says them all.
	m.Path, m.Dir = abs, filepath.Dir(abs)
	errs = append(errs, m.resolveFiles(path, data)...)
	v := validator{file: path, doc: m.doc}
	m.checkTaskFields(&v)
	errs = append(errs, v.errs...)
	for i := range m.Tasks {
		m.Tasks[i].where.node = nil // it placed the task's problems; a run keeps none
	}
	if len(errs) > 0 {
		return nil, errors.Join(tidy(path, errs)...)
	}
	m.commandFileNotes()
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
	v := validator{file: name, doc: doc}
	v.decoded(yamlcheck.UnknownKeys(doc, reflect.TypeFor[Manifest](), "", names...), yamlcheck.Decode(doc, m, ""))
	m.Harbor = cmp.Or(harbor, m.Harbor)
	m.validate(&v, blockErrs)
	return m, v.errs
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
	count := map[string]int{} // each file's problems
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
			count[fe.File]++
			out = append(out, fe)
		}
	}
	slices.SortStableFunc(out, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(files[a.File], files[b.File]), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	var kept []error
	told := map[string]int{} // each file's problems so far, e included
	for _, e := range out {
		told[e.File]++
		switch {
		case e.File == manifest || told[e.File] <= maxFileErrors:
			kept = append(kept, e)
		case told[e.File] == maxFileErrors+1:
			kept = append(kept, &Error{File: e.File, Msg: fmt.Sprintf(moreProblems, count[e.File]-maxFileErrors)})
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
