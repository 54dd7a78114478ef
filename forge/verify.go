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

// check reports what is wrong with a verify: at path, completed by its
// defaults (base, nil for the defaults' own).
func (spec *VerifySpec) check(bad func(msg string, path ...any), base *VerifySpec) {
	if spec == nil {
		return
	}
	if spec.over(base).Command == "" {
		bad(`is required: the shell line that judges the trial, e.g. "bash $FORGE_TESTS_DIR/test.sh"`, "command")
	}
	checkEnv(bad, spec.Env, "env")
}

// addDir finds the files under dir (relative to the manifest's directory),
// adds them to the hash h in order and returns them by their paths
// relative to dir; bad reports why it cannot, at path.
func (m *Manifest) addDir(h io.Writer, dir string, bad func(msg string, path ...any), path ...any) []runner.File {
	refs, err := dirFiles(m.abs(dir), true)
	if err != nil {
		bad(fmt.Sprintf("%s: %s", dir, unwrapPathErr(err)), path...)
		return nil
	}
	slices.SortFunc(refs, func(a, b runner.File) int { return strings.Compare(a.Dst, b.Dst) })
	for _, r := range refs {
		content, err := os.ReadFile(r.Src)
		if err != nil {
			bad(fmt.Sprintf("%s: %s", r.Src, unwrapPathErr(err)), path...)
			return nil
		}
		m.hashFile(h, "verify\x00"+r.Dst, r.Src, content)
	}
	return refs
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
