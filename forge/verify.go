package forge

// Verifiers: a task's own judge, run in the trial's sandbox after the
// candidate (docs/manifest.md, "Verifiers").

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/forge-run/forge/runner"
)

// VerifySpec is a verify: as the manifest gives it, in defaults: or in a
// task (whose keys win over the defaults').
type VerifySpec struct {
	// Dir is a directory, relative to the manifest, whose files the
	// verifier gets in FORGE_TESTS_DIR.
	Dir string `yaml:"dir"`
	// Command is a shell line run where the candidate ran.
	Command string            `yaml:"command"`
	Timeout Duration          `yaml:"timeout"`
	Env     map[string]string `yaml:"env"`

	files []runner.File
	// atRoot: Harbor's paths (runner.Verify.AtRoot); user: who runs it
	// (a Harbor task's [verifier] user).
	atRoot bool
	user   string
}

// over is spec with base's keys where spec has none.
func (spec *VerifySpec) over(base *VerifySpec) *VerifySpec {
	switch {
	case spec == nil:
		return base
	case base == nil:
		return spec
	}
	v := *spec
	v.Dir = cmp.Or(v.Dir, base.Dir)
	v.Command = cmp.Or(v.Command, base.Command)
	v.Timeout = cmp.Or(v.Timeout, base.Timeout)
	if v.Env == nil {
		v.Env = base.Env
	}
	if spec.Dir == "" {
		v.files = base.files
	}
	return &v
}

// job is the runner's verifier; nil without a command.
func (spec *VerifySpec) job() *runner.Verify {
	if spec == nil || spec.Command == "" {
		return nil
	}
	return &runner.Verify{Files: spec.files, Command: spec.Command, Timeout: time.Duration(spec.Timeout), Env: spec.Env, AtRoot: spec.atRoot, User: spec.user}
}

// checkVerify reports what is wrong with a verify: (the defaults' or a
// task's), completed by its defaults (base, nil for the defaults' own),
// each problem at its key: its env's ${NAME}s too that taskMayNotTake
// refuses, as the verifier takes them from the host (fromHost) and its
// log reaches the record (a Harbor task's are checkTaskTakes's).
func (m *Manifest) checkVerify(spec, base *VerifySpec, bad func(msg string, path ...any)) {
	if spec == nil {
		return
	}
	if spec.over(base).Command == "" {
		bad(`is required: the shell line that judges the trial, e.g. "bash $FORGE_TESTS_DIR/test.sh"`, "command")
	}
	checkEnv(bad, spec.Env, "env")
	if spec.atRoot {
		return
	}
	eachRef(spec.Env, hostTemplate, func(k, name string) {
		if why := m.taskMayNotTake(name); why != "" {
			bad(fmt.Sprintf("%s = %q: the verifier may not take %s: %s", k, spec.Env[k], name, why), "env")
		}
	})
}

// addTests finds the files under spec's dir: (relative to the manifest's
// directory), adds them to the hash h in order and gives them to spec by
// their paths relative to it; bad reports why it cannot, at dir.
func (m *Manifest) addTests(h io.Writer, spec *VerifySpec, bad func(msg string, path ...any)) {
	if spec == nil || spec.Dir == "" {
		return
	}
	refs, err := dirFiles(m.abs(spec.Dir), true)
	if err != nil {
		bad(fmt.Sprintf("%s: %s", spec.Dir, unwrapPathErr(err)), "dir")
		return
	}
	slices.SortFunc(refs, func(a, b runner.File) int { return strings.Compare(a.Dst, b.Dst) })
	for _, r := range refs {
		content, err := os.ReadFile(r.Src)
		if err != nil {
			bad(fmt.Sprintf("%s: %s", r.Src, unwrapPathErr(err)), "dir")
			return
		}
		m.hashFile(h, "verify\x00"+r.Dst, r.Src, content)
	}
	spec.files = refs
}

// testsFile finds the files a verify command names in its directory
// ("$FORGE_TESTS_DIR/check.sh", quoted or not).
var testsFile = regexp.MustCompile(`\$\{?` + runner.TestsDirVar + `\}?/([^\s"';|&)]+)`)

// missingFile says which file of its directory the command names but the
// directory does not hold: the run would fail every trial's verifier.
func (spec *VerifySpec) missingFile() string {
	have := map[string]bool{}
	for _, f := range spec.files {
		have[f.Dst] = true
	}
	for _, m := range testsFile.FindAllStringSubmatch(spec.Command, -1) {
		if !have[m[1]] && !have[strings.TrimPrefix(m[1], "./")] {
			where := "its dir: is empty"
			if spec.Dir != "" {
				where = spec.Dir + " does not hold it"
			}
			return fmt.Sprintf("names $%s/%s, but %s", runner.TestsDirVar, m[1], where)
		}
	}
	return ""
}
