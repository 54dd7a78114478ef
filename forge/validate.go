package forge

// The manifest's validation: what decoding cannot check, each problem
// placed at its key in the YAML tree.

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/internal/yamlcheck"
	"github.com/forge-run/forge/runner"
	"gopkg.in/yaml.v3"
)

// validator collects semantic errors located by path in the YAML tree.
type validator struct {
	file string
	doc  *yaml.Node
	// path is doc's key path ("tasks[3]"), which every problem's starts
	// with.
	path string
	errs []error
	// quiet are the key paths of the values that did not decode, each
	// reported already: what is wrong with the zero value left in their
	// place (or below it) is not. Nothing is said at quietAt's paths.
	quiet, quietAt []string
}

// meant reads the key an unknown key's message suggests.
var meant = regexp.MustCompile(`\(did you mean "(.*)"\?\)$`)

// place is msg as an *Error of v's file, at the node path (mapping keys
// and list indexes) leads to from doc.
func (v *validator) place(msg string, path ...any) *Error {
	e := yamlcheck.Under(v.doc, v.path, msg, path...)
	e.File = v.file
	return e
}

// at records msg against the node at path (mapping keys and list indexes).
func (v *validator) at(msg string, path ...any) {
	e := v.place(msg, path...)
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

// below is at for the keys below path.
func (v *validator) below(path ...any) func(msg string, sub ...any) {
	return func(msg string, sub ...any) { v.at(msg, append(slices.Clone(path), sub...)...) }
}

// decoded records the problems of strictly decoding doc, its unknown keys
// and the values that did not decode, and quiets what would be said again
// at their keys: what is wrong with the zero value left in a value's
// place, and what the mapping with an unknown key lacks, or lacks of the
// key it was meant to be (the same mistake).
func (v *validator) decoded(unknown, undecoded []error) {
	v.errs = append(v.errs, yamlcheck.InFile(errors.Join(append(slices.Clone(unknown), undecoded...)...), v.file, nil)...)
	for _, e := range undecoded {
		if e, ok := e.(*Error); ok && e.Field != "" {
			v.quiet = append(v.quiet, e.Field)
		}
	}
	for _, e := range unknown {
		e := e.(*Error)
		parent := e.Field[:max(strings.LastIndexAny(e.Field, ".["), 0)]
		v.quietAt = append(v.quietAt, parent)
		if m := meant.FindStringSubmatch(e.Msg); m != nil {
			v.quietAt = append(v.quietAt, yamlcheck.Join(parent, m[1]))
		}
	}
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
	m.decodeTasks(v)
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
	m.checkDefaults(v)
	if m.Network != "" && m.Network != "none" {
		v.at(fmt.Sprintf("%q: want none (no network but the job's own loopback), or leave the key out", m.Network), "network")
	}
	if len(m.Candidates) == 0 {
		v.at("at least one candidate is required", "candidates")
	}
	seen := map[string]int{}
	for i := range m.Candidates {
		m.checkCandidate(v, i, seen)
	}
	m.validateEnvironments(v)
	m.checkAgents(v)
	v.errs = append(v.errs, blockErrs...)
	validateScoring(m.Scoring, v, suite)
	m.Gates.validate(v)
}

// decodeTasks decodes the manifest's inline tasks (decode).
func (m *Manifest) decodeTasks(v *validator) {
	if len(m.Tasks) == 0 && valueOf(v.doc, "tasks") != nil {
		v.at("is empty: list the tasks, or remove the key", "tasks")
	}
	for i := range m.Tasks {
		t, err := yamlTask(v.file, fmt.Sprintf("tasks[%d]", i), m.Tasks[i].where.node)
		if err != nil {
			v.errs = append(v.errs, err)
			continue
		}
		v.errs = append(v.errs, t.decode(m)...)
		m.Tasks[i] = t
	}
	v.errs = append(v.errs, checkTaskIDs(m.Tasks)...)
}

// checkDefaults checks defaults:, and cleans its output_file.
func (m *Manifest) checkDefaults(v *validator) {
	d := m.Defaults
	v.inRange(d.Trials, 1, maxTrials, "must be at least 1 (the runs of each candidate on each task)", "defaults", "trials")
	v.inRange(d.Concurrency, 1, maxConcurrency, "must be at least 1 (the jobs run at once)", "defaults", "concurrency")
	checkRetries(v, d.Retries, "defaults")
	m.Defaults.OutputFile = checkRelPath(v, d.OutputFile, "defaults", "output_file")
	d.Passing.check(v, d.Env, Passing{}, "defaults")
	checkStrings(v.at, d.Setup, "defaults", "setup")
	m.checkVerify(d.Verify, nil, v.below("defaults", "verify"))
}

// checkCandidate checks candidate i, whose id must not be one of seen's
// (the earlier candidates', by index), and gives an agent without one an
// id; it cleans its output_file.
func (m *Manifest) checkCandidate(v *validator, i int, seen map[string]int) {
	c := &m.Candidates[i]
	if c.ID == "" && c.Agent != "" {
		c.ID = agentID(c.Agent, c.Model) // a readable one
	}
	if checkID(v, c.ID, "candidates", i, "id") {
		if j, dup := seen[c.ID]; dup {
			v.at(fmt.Sprintf("duplicate id %q (also candidates[%d])", c.ID, j), "candidates", i, "id")
		}
		seen[c.ID] = i
	}
	switch {
	case c.Agent != "":
		// checkAgents
	case c.Script == "" && len(c.Command) == 0:
		v.at("needs script:, command: or agent:", "candidates", i)
	case c.Script != "" && len(c.Command) > 0:
		v.at("give script: or command:, not both", "candidates", i, "command")
	case len(c.Command) > 0 && strings.TrimSpace(c.Command[0]) == "":
		v.at("the program (first element) is empty", "candidates", i, "command")
	}
	c.OutputFile = checkRelPath(v, c.OutputFile, "candidates", i, "output_file")
	checkRetries(v, c.Retries, "candidates", i)
	c.Passing.check(v, c.Env, m.Defaults.Passing, "candidates", i)
	checkStrings(v.at, c.Setup, "candidates", i, "setup")
}

// checkID reports id, at path, when it is missing or not a valid id, and
// says whether it is sound.
func checkID(v *validator, id string, path ...any) bool {
	switch {
	case id == "":
		v.at("is required", path...)
	case !ValidID(id):
		v.at(fmt.Sprintf("%q is not a valid id: use letters, digits, '_', '.' and '-' only (not . or ..)", id), path...)
	default:
		return true
	}
	return false
}

// checkRetries reports the retries: below path when it is out of range.
func checkRetries(v *validator, retries *int, path ...any) {
	if retries != nil {
		v.inRange(*retries, 0, maxRetries, "must not be negative (0 plays no trial again)", append(path, "retries")...)
	}
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
						msg += " (the tasks have: " + text.FirstOf(fields, 5) + ")"
					}
					v.at(msg, "scoring", i, "checks", j, f.key)
				case len(lack) > 0:
					m.Notes = append(m.Notes, fmt.Sprintf("scoring[%d].checks[%d].%s: %d of %d tasks have no field %q (%s): their trials fail this check",
						i, j, f.key, len(lack), len(m.Tasks), f.field, text.FirstOf(lack, 5)))
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

// checkEnv tells bad, at path, each of env's names a job's variable may
// not have.
func checkEnv(bad func(msg string, path ...any), env map[string]string, path ...any) {
	for k := range env {
		if err := runner.CheckEnvName(k); err != nil {
			bad(err.Error(), path...)
		}
	}
}

// checkStrings tells bad each of ss that is blank, at its index below
// path.
func checkStrings(bad func(msg string, path ...any), ss []string, path ...any) {
	for i, s := range ss {
		if strings.TrimSpace(s) == "" {
			bad("is empty", append(path, i)...)
		}
	}
}

// checkRelPath checks p, a path inside a job's working directory, when
// given, by the one rule for it (runner.RelPath) and returns it cleaned
// ("out/../x.md" is "x.md"), or p unchanged after reporting why it is
// refused.
func checkRelPath(v *validator, p string, path ...any) string {
	if p == "" {
		return p
	}
	c, err := runner.RelPath(p)
	if err != nil {
		v.at(err.Error(), path...)
		return p
	}
	return c
}
