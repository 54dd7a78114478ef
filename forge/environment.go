package forge

import (
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

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

	files []fileRef
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
		if n.Tag == "!!null" {
			return nil
		}
		r.Name = n.Value
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
	q := make([]string, len(reqs))
	for i, r := range reqs {
		q[i] = "'" + strings.ReplaceAll(r, "'", `'\''`) + "'"
	}
	return []string{
		`python3 -m venv "$` + runner.EnvDirVar + `"`,
		`"$` + runner.EnvDirVar + `/bin/python" -m pip install --disable-pip-version-check --no-input ` + strings.Join(q, " "),
	}
}

// validateEnvironments checks the top-level environments and every
// reference to one.
func (m *Manifest) validateEnvironments(v *validator) {
	for _, name := range slices.Sorted(maps.Keys(m.Environments)) {
		if !ValidID(name) {
			v.at(fmt.Sprintf("%q is not a valid environment name: use letters, digits, '_', '.' and '-' only", name), "environments", name)
		}
		if m.Environments[name] == nil {
			v.at("is empty: give image:, files:, env:, pip: or build:", "environments", name)
			continue
		}
		m.Environments[name].validate(v, "environments", name)
	}
	check := func(r *EnvironmentRef, path ...any) {
		switch {
		case r == nil:
		case r.Inline != nil:
			r.Inline.validate(v, append(path, "environment")...)
		case r.Name == "":
			v.at("is empty: name one of environments:, or remove the key", append(path, "environment")...)
		case m.Environments[r.Name] == nil:
			known := slices.Sorted(maps.Keys(m.Environments))
			msg := fmt.Sprintf("unknown environment %q", r.Name)
			if len(known) > 0 {
				msg += " (environments: " + strings.Join(known, ", ") + ")"
			} else {
				msg += ": the manifest has no environments:"
			}
			v.at(msg, append(path, "environment")...)
		}
	}
	check(m.Defaults.Environment, "defaults")
	for i := range m.Candidates {
		check(m.Candidates[i].Environment, "candidates", i)
	}
}

func (e *EnvironmentSpec) validate(v *validator, path ...any) {
	if e.Image == "" && len(e.Files) == 0 && len(e.Pip) == 0 && len(e.Build) == 0 {
		v.at("builds nothing: give image:, files:, pip: or build:", path...)
	}
	if strings.ContainsAny(e.Image, " \t\n") {
		v.at(fmt.Sprintf("%q is not an image name", e.Image), append(path, "image")...)
	}
	checkEnv(v, e.Env, append(path, "env")...)
	for k, val := range e.Env {
		if strings.Contains(val, "${") {
			v.at("values are literal here: an environment outlives the run, so no secret or ${NAME} goes into it", append(path, "env", k)...)
		}
	}
	checkStrings(v, e.Pip, append(path, "pip")...)
	checkStrings(v, e.Build, append(path, "build")...)
}

// resolveEnvironments finds every environment's files (into the
// manifest's hash h) and makes the runner's environments: m.envs by name
// for the top-level ones, and each inline one on its reference.
func (m *Manifest) resolveEnvironments(h io.Writer, v *validator) {
	m.envs = map[string]*runner.Environment{}
	resolve := func(name string, spec *EnvironmentSpec, path ...any) *runner.Environment {
		spec.files = nil
		for j, f := range spec.Files {
			p := append(slices.Clone(path), "files", j)
			if ref, ok := m.addFile(h, f, func(msg string) { v.at(msg, p...) }); ok {
				spec.files = append(spec.files, ref)
			}
		}
		env := &runner.Environment{
			Name:         name,
			Image:        spec.Image,
			Build:        append(pipSteps(spec.Pip), spec.Build...),
			Env:          spec.Env,
			BuildTimeout: time.Duration(spec.Timeout),
		}
		for _, f := range spec.files {
			env.Files = append(env.Files, runner.File{Src: f.src, Dst: f.dst})
		}
		hash, err := runner.EnvironmentHash(env)
		if err != nil {
			v.at(err.Error(), path...)
			return nil
		}
		env.Hash = hash
		return env
	}
	for _, name := range slices.Sorted(maps.Keys(m.Environments)) {
		if spec := m.Environments[name]; spec != nil {
			m.envs[name] = resolve(name, spec, "environments", name)
		}
	}
	ref := func(r *EnvironmentRef, name string, path ...any) {
		switch {
		case r == nil:
		case r.Inline != nil:
			r.env = resolve(name, r.Inline, append(path, "environment")...)
		default:
			r.env = m.envs[r.Name]
		}
	}
	ref(m.Defaults.Environment, "defaults", "defaults")
	for i := range m.Candidates {
		ref(m.Candidates[i].Environment, m.Candidates[i].ID, "candidates", i)
	}
}

// environmentOf is the environment candidate c's jobs run in: its own,
// else the defaults', else none.
func (m *Manifest) environmentOf(c Candidate) *runner.Environment {
	if c.Environment != nil {
		return c.Environment.env
	}
	if m.Defaults.Environment != nil {
		return m.Defaults.Environment.env
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
