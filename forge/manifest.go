package forge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/forge-run/forge/internal/yamlcheck"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// Manifest is a parsed and validated forge.yaml (docs/manifest.md).
type Manifest struct {
	Objective  string         `yaml:"objective"`
	Defaults   Defaults       `yaml:"defaults"`
	Candidates []Candidate    `yaml:"candidates"`
	Scoring    scoring.Config `yaml:"scoring"`
	Daytona    DaytonaSpec    `yaml:"daytona"`
	Gates      Gates          `yaml:"gates"`

	// Path is the manifest's absolute path, Dir its directory.
	Path string `yaml:"-"`
	Dir  string `yaml:"-"`
	// Hash identifies the manifest and every file it names (sha256).
	Hash string `yaml:"-"`

	// doc is the parsed document, which locates the problems found after
	// decoding.
	doc *yaml.Node
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

	// argv and files are resolved by Load.
	argv  []string
	files []fileRef
}

// DaytonaSpec is the manifest's daytona: block, used with --daytona.
type DaytonaSpec struct {
	Snapshot        string            `yaml:"snapshot"`
	Image           string            `yaml:"image"`
	Resources       Resources         `yaml:"resources"`
	NetworkBlockAll bool              `yaml:"network_block_all"`
	CreateRate      float64           `yaml:"create_rate"`
	AutoStop        int               `yaml:"auto_stop"`
	Volume          *VolumeSpec       `yaml:"volume"`
	Env             map[string]string `yaml:"env"`
	Labels          map[string]string `yaml:"labels"`
}

// Resources are a sandbox's size; memory and disk in GB.
type Resources struct {
	CPU    int `yaml:"cpu"`
	Memory int `yaml:"memory"`
	Disk   int `yaml:"disk"`
}

// VolumeSpec is a durable Daytona volume mounted into every sandbox.
type VolumeSpec struct {
	Name  string `yaml:"name"`
	Mount string `yaml:"mount"`
}

// Gates make a finished run fail (exit 1) when its results are not good
// enough.
type Gates struct {
	MinWinnerScore *float64 `yaml:"min_winner_score"`
	MinSuccessRate *float64 `yaml:"min_success_rate"`
	MaxInfraErrors *int     `yaml:"max_infra_errors"`
	RequireWinner  bool     `yaml:"require_winner"`
}

// Error is one problem with a manifest: file, line, column, key and what
// is wrong (yamlcheck's, the one strict reading of YAML).
type Error = yamlcheck.Error

var (
	idPattern  = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	envPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ValidID reports whether s may be a candidate or run id.
func ValidID(s string) bool { return idPattern.MatchString(s) && s != "." && s != ".." }

// maxManifestBytes bounds what Load reads.
const maxManifestBytes = 4 << 20

// Load reads, strictly decodes and validates the manifest at path. Every
// problem is reported, each naming the file, line, column and key; the
// returned error is then an errors.Join of *Error values.
func Load(path string) (*Manifest, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, &Error{File: path, Msg: "cannot read manifest: " + unwrapPathErr(err)}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, &Error{File: path, Msg: "cannot read manifest: " + unwrapPathErr(err)}
	}
	if len(data) > maxManifestBytes {
		return nil, &Error{File: path, Msg: "manifest is larger than 4 MiB"}
	}
	m, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	m.Path, m.Dir = abs, filepath.Dir(abs)
	if err := m.resolveFiles(path, data); err != nil {
		return nil, err
	}
	return m, nil
}

// Parse decodes and validates manifest bytes without touching the file
// system; name is used in error messages. Scripts are not resolved.
func Parse(name string, data []byte) (*Manifest, error) {
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
			Msg: "manifest must be a mapping with objective: and candidates:, not a " + kindName(doc)}
	}
	if errs := yamlcheck.UnknownKeys(doc, reflect.TypeFor[Manifest](), ""); len(errs) > 0 {
		return nil, errors.Join(yamlcheck.InFile(errors.Join(errs...), name, nil)...)
	}
	m := &Manifest{doc: doc}
	if err := doc.Decode(m); err != nil {
		return nil, errors.Join(yamlcheck.InFile(err, name, yamlcheck.Friendly)...)
	}
	v := validator{file: name, doc: doc}
	m.validate(&v)
	if len(v.errs) > 0 {
		return nil, errors.Join(v.errs...)
	}
	return m, nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "plain value"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}

// validator collects semantic errors located by path in the YAML tree.
type validator struct {
	file string
	doc  *yaml.Node
	errs []error
}

// at records msg against the node at path (mapping keys and list indexes).
func (v *validator) at(msg string, path ...any) {
	n, field := v.doc, ""
	for _, p := range path {
		switch p := p.(type) {
		case string:
			if field != "" {
				field += "."
			}
			field += p
			if n != nil && n.Kind == yaml.MappingNode {
				var next *yaml.Node
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == p {
						next = n.Content[i+1]
						break
					}
				}
				if next != nil {
					n = next
				}
			}
		case int:
			field += fmt.Sprintf("[%d]", p)
			if n != nil && n.Kind == yaml.SequenceNode && p < len(n.Content) {
				n = n.Content[p]
			}
		}
	}
	e := &Error{File: v.file, Field: field, Msg: msg}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	v.errs = append(v.errs, e)
}

func (m *Manifest) validate(v *validator) {
	if strings.TrimSpace(m.Objective) == "" {
		v.at("is required: say what the candidates must achieve", "objective")
	}
	d := m.Defaults
	if d.Trials < 0 {
		v.at("must be at least 1", "defaults", "trials")
	}
	if d.Concurrency < 0 {
		v.at("must be at least 1", "defaults", "concurrency")
	}
	if d.OutputFile != "" {
		m.Defaults.OutputFile = checkRelPath(v, d.OutputFile, "defaults", "output_file")
	}
	checkEnv(v, d.Env, "defaults", "env")
	checkStrings(v, d.Setup, "defaults", "setup")
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
		checkEnv(v, c.Env, "candidates", i, "env")
		checkStrings(v, c.Setup, "candidates", i, "setup")
	}
	m.Daytona.validate(v)
	validateScoring(m.Scoring, v)
	m.Gates.validate(v)
}

func (d DaytonaSpec) validate(v *validator) {
	if d.Snapshot != "" && d.Image != "" {
		v.at("give snapshot: or image:, not both", "daytona", "image")
	}
	for _, r := range []struct {
		n    int
		name string
	}{{d.Resources.CPU, "cpu"}, {d.Resources.Memory, "memory"}, {d.Resources.Disk, "disk"}} {
		if r.n < 0 {
			v.at("must not be negative", "daytona", "resources", r.name)
		}
	}
	if d.CreateRate < 0 {
		v.at("must be positive (sandbox creations per second)", "daytona", "create_rate")
	}
	if d.AutoStop < 0 {
		v.at("must not be negative (minutes)", "daytona", "auto_stop")
	}
	if d.Volume != nil && !ValidID(d.Volume.Name) {
		v.at(fmt.Sprintf("%q is not a valid volume name", d.Volume.Name), "daytona", "volume", "name")
	}
	checkEnv(v, d.Env, "daytona", "env")
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
		switch {
		case !envPattern.MatchString(k):
			v.at(fmt.Sprintf("%q is not a valid variable name", k), path...)
		case strings.HasPrefix(k, "FORGE_"):
			v.at(fmt.Sprintf("%q: FORGE_* variables are set by forge itself", k), path...)
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
