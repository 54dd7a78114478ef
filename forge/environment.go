package forge

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/internal/yamlcheck"
	"github.com/forge-run/forge/runner"
)

// EnvironmentSpec is an environment as the manifest gives it
// (docs/manifest.md, "Environments"): under the top-level environments:
// by name, or inline as a candidate's or the defaults' environment:.
type EnvironmentSpec struct {
	// Image is the base image of the Daytona snapshot (default
	// runner.DefaultImage); locally it is part of the identity only.
	Image string `yaml:"image"`
	// Files, relative to the manifest, are written into the environment's
	// directory by the same relative path before the build.
	Files []string `yaml:"files"`
	// Env are the build's variables (literal: secrets never go into an
	// environment, which outlives the run).
	Env map[string]string `yaml:"env"`
	// Pip is sugar for a Python virtualenv in the environment's directory
	// with these requirements installed: build steps run before Build.
	Pip []string `yaml:"pip"`
	// Build are shell lines run in order in the environment's directory.
	Build []string `yaml:"build"`
	// Timeout bounds the whole build (default runner.DefaultBuildTimeout).
	Timeout Duration `yaml:"timeout"`
	// Dockerfile, relative to the manifest, defines the environment
	// whole: an image, which only Daytona builds, with Context (default:
	// the Dockerfile's directory) as its build context.
	Dockerfile string `yaml:"dockerfile"`
	Context    string `yaml:"context"`
}

// EnvironmentRef is a candidate's or the defaults' environment: the name
// of one of the manifest's environments, or one given inline.
type EnvironmentRef struct {
	Name   string
	Inline *EnvironmentSpec

	// env is the environment it names, resolved by Load.
	env *runner.Environment
}

// UnmarshalYAML takes a name or a mapping.
func (r *EnvironmentRef) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag != "!!null" {
			r.Name = n.Value
		}
		return nil
	case yaml.MappingNode:
		r.Inline = &EnvironmentSpec{}
		return n.Decode(r.Inline)
	}
	return yamlcheck.At(n, "", "want the name of one of environments:, or an environment (image:, files:, env:, pip:, build:)")
}

// KnownKeys lets the manifest's unknown-key check walk an inline one.
func (EnvironmentRef) KnownKeys() reflect.Type { return reflect.TypeFor[EnvironmentSpec]() }

// pipSteps are the build steps Pip stands for: a virtualenv in the
// environment's directory (first on every job's PATH) and the
// requirements, each quoted for the shell.
func pipSteps(reqs []string) []string {
	if len(reqs) == 0 {
		return nil
	}
	return []string{
		`python3 -m venv "$` + runner.EnvDirVar + `"`,
		`"$` + runner.EnvDirVar + `/bin/python" -m pip install --disable-pip-version-check --no-input ` + text.ShellQuoted(reqs),
	}
}

// validateEnvironments checks the top-level environments and the
// defaults' and candidates' references to one (a task's are its own).
func (m *Manifest) validateEnvironments(v *validator) {
	for _, name := range slices.Sorted(maps.Keys(m.Environments)) {
		if !ValidID(name) {
			v.at(fmt.Sprintf("%q is not a valid environment name: use letters, digits, '_', '.' and '-' only", name), "environments", name)
		}
		if m.Environments[name] == nil {
			v.at("is empty: give image:, files:, env:, pip: or build:", "environments", name)
			continue
		}
		m.Environments[name].check(v.below("environments", name))
	}
	m.checkEnvironmentRef(v, m.Defaults.Environment, "defaults")
	for i := range m.Candidates {
		m.checkEnvironmentRef(v, m.Candidates[i].Environment, "candidates", i)
	}
}

// checkEnvironmentRef checks r, the environment: key below path, and says
// whether it is sound.
func (m *Manifest) checkEnvironmentRef(v *validator, r *EnvironmentRef, path ...any) bool {
	problems := len(v.errs)
	path = append(path, "environment")
	switch {
	case r == nil:
	case r.Inline != nil:
		r.Inline.check(v.below(path...))
	case r.Name == "":
		v.at("is empty: name one of environments:, or remove the key", path...)
	case m.Environments[r.Name] == nil:
		msg := fmt.Sprintf("unknown environment %q: the manifest has no environments:", r.Name)
		if known := slices.Sorted(maps.Keys(m.Environments)); len(known) > 0 {
			msg = fmt.Sprintf("unknown environment %q (environments: %s)", r.Name, strings.Join(known, ", "))
		}
		v.at(msg, path...)
	}
	return len(v.errs) == problems
}

// check reports what is wrong with e, each problem at its key path below
// the environment's.
func (e *EnvironmentSpec) check(bad func(msg string, sub ...any)) {
	if e.Dockerfile != "" {
		if e.Image != "" || len(e.Files) > 0 || len(e.Pip) > 0 || len(e.Build) > 0 || len(e.Env) > 0 {
			bad("a Dockerfile is the whole environment: give dockerfile:, context: and timeout: only")
		}
		return
	}
	if e.Context != "" {
		bad("context: is a Dockerfile's build context: give dockerfile: too", "context")
	}
	if e.Image == "" && len(e.Files) == 0 && len(e.Pip) == 0 && len(e.Build) == 0 {
		bad("builds nothing: give image:, files:, pip:, build: or dockerfile:")
	}
	if strings.ContainsAny(e.Image, " \t\n") {
		bad(fmt.Sprintf("%q is not an image name", e.Image), "image")
	}
	checkEnv(bad, e.Env, "env")
	for k, val := range e.Env {
		if strings.Contains(val, "${") {
			bad("values are literal here: an environment outlives the run, so no secret or ${NAME} goes into it", "env", k)
		}
	}
	checkStrings(bad, e.Pip, "pip")
	checkStrings(bad, e.Build, "build")
}

// resolveEnvironments finds every environment's files (into the
// manifest's hash h) and makes the runner's environments: m.envs by name
// for the top-level ones, and each inline one on its reference.
func (m *Manifest) resolveEnvironments(h io.Writer, v *validator) {
	m.envs = map[string]*runner.Environment{}
	for _, name := range slices.Sorted(maps.Keys(m.Environments)) {
		if spec := m.Environments[name]; spec != nil {
			m.envs[name] = m.resolveEnvironment(h, name, spec, v.below("environments", name))
		}
	}
	m.resolveRef(h, m.Defaults.Environment, "defaults", v.below("defaults", "environment"))
	for i := range m.Candidates {
		m.resolveRef(h, m.Candidates[i].Environment, m.Candidates[i].ID, v.below("candidates", i, "environment"))
	}
	for i := range m.Tasks {
		t := &m.Tasks[i]
		tv := t.where.validator()
		if m.resolveRef(h, t.envRef, "task-"+t.ID, tv.below("environment")); t.envRef != nil && t.envRef.env != nil {
			t.environment = t.envRef.env
		}
		v.errs = append(v.errs, tv.errs...)
	}
}

// resolveRef makes r's environment: its own, named name, or the top-level
// one it names; bad is told the problems, by their keys in r.
func (m *Manifest) resolveRef(h io.Writer, r *EnvironmentRef, name string, bad func(msg string, sub ...any)) {
	switch {
	case r == nil:
	case r.Inline != nil:
		r.env = m.resolveEnvironment(h, name, r.Inline, bad)
	default:
		r.env = m.envs[r.Name]
	}
}

// resolveEnvironment makes spec the environment named name, telling bad
// its problems by their keys in spec.
func (m *Manifest) resolveEnvironment(h io.Writer, name string, spec *EnvironmentSpec, bad func(msg string, sub ...any)) *runner.Environment {
	if spec.Dockerfile != "" {
		dockerfile, context := m.abs(spec.Dockerfile), m.abs(spec.Context)
		if spec.Context == "" {
			context = filepath.Dir(dockerfile)
		}
		env, err := dockerImage(name, dockerfile, context, time.Duration(spec.Timeout))
		if err != nil {
			bad(err.Error(), "dockerfile")
			return nil
		}
		m.noteEnvironment(h, env)
		return env
	}
	env := &runner.Environment{
		Name:         name,
		Image:        spec.Image,
		Build:        append(pipSteps(spec.Pip), spec.Build...),
		Env:          spec.Env,
		BuildTimeout: time.Duration(spec.Timeout),
		Files:        m.addFiles(h, spec.Files, bad, "files"),
	}
	hash, err := runner.EnvironmentHash(env)
	if err != nil {
		bad(err.Error())
		return nil
	}
	env.Hash = hash
	return env
}

// noteEnvironment adds an image's identity (its Dockerfile and build
// context's files, by content) to the manifest's hash h, and records its
// context files in m.Files, each by its digest.
func (m *Manifest) noteEnvironment(h io.Writer, env *runner.Environment) {
	fmt.Fprintf(h, "\x00environment\x00%s\x00", env.Hash)
	for _, rel := range env.ContextFiles {
		path := filepath.Join(env.Context, filepath.FromSlash(rel))
		if b, err := os.ReadFile(path); err == nil {
			m.noteFile(path, b)
		}
	}
}

// dockerImage is the environment the Dockerfile at path defines, with the
// directory context as its build context: both by content its identity.
func dockerImage(name, path, context string, timeout time.Duration) (*runner.Environment, error) {
	df, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	refs, err := dirFiles(context, false)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, r := range refs {
		files = append(files, r.Dst)
	}
	env := &runner.Environment{Name: name, Dockerfile: string(df), Context: context, ContextFiles: files, BuildTimeout: timeout, Source: path}
	if env.Hash, err = runner.EnvironmentHash(env); err != nil {
		return nil, err
	}
	return env, nil
}

// environmentOf is the environment candidate c's jobs run in: its own,
// else the defaults', else none.
func (m *Manifest) environmentOf(c Candidate) *runner.Environment {
	if r := cmp.Or(c.Environment, m.Defaults.Environment); r != nil {
		return r.env
	}
	return nil
}

// Environments are the environments the plan's jobs run in, each once, in
// the order of the first job that needs it.
func (p *Plan) Environments() []*runner.Environment {
	var out []*runner.Environment
	seen := map[string]bool{}
	for _, j := range p.Jobs {
		if e := j.Environment; e != nil && !seen[e.Hash] {
			seen[e.Hash] = true
			out = append(out, e)
		}
	}
	return out
}
