package forge

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// Built-in defaults, the bottom of defaults < manifest < flags.
const (
	DefaultConcurrency = 8
	DefaultTrials      = 1
	// DefaultRetries is how often a trial that ended infra is played again
	// in a fresh sandbox.
	DefaultRetries = 2
)

// Overrides are the command line's say over the manifest. Zero values leave
// the manifest's (or the default) in force.
type Overrides struct {
	Concurrency int
	Trials      int
	Timeout     time.Duration
	// Retries, when set, is every candidate's retries (--retries), over
	// the manifest's.
	Retries *int
	// Only restricts the run to these candidate ids, Tasks to these task
	// ids.
	Only, Tasks []string
	// Sample, when positive, plays that many of the tasks, drawn at random
	// with Seed (the same seed draws the same tasks).
	Sample int
	Seed   int64
	// Lookup finds the secrets and env_from_host variables the manifest
	// names (nil: none is found). A candidate whose variable is missing
	// fails the plan (*MissingSecretsError), or with AllowMissingSecrets is
	// left out (Plan.NotRun); a task's missing variable always fails it.
	Lookup              Lookup
	AllowMissingSecrets bool
	// Shard, when set, keeps only that shard's jobs (--shard K/N).
	Shard *record.Shard
	// Oracle plays each task's own solution instead of the candidates
	// (OracleID), once unless Trials says otherwise: how a Harbor
	// dataset's author checks it.
	Oracle bool
	// Agents play instead of the manifest's candidates, each agent and
	// model a candidate (forge run --agent NAME --model M).
	Agents []AgentChoice
}

// Plan is what a run will play: every job, in a stable order (candidates in
// manifest order, trials ascending).
type Plan struct {
	Objective   string
	Concurrency int
	Trials      int
	// Candidates are the ids taking part, in manifest order.
	Candidates []string
	// Tasks are the suite's tasks taking part, in manifest order; empty
	// for a manifest without tasks. Sample is the --sample that drew them.
	Tasks  []Task
	Sample *record.Sample
	// NotRun are the candidates left out for a missing secret.
	NotRun []record.NotRun
	Jobs   []runner.Job
	// hostValues are what Harbor tasks' env took from the host
	// (fromHost): as secret as secrets.
	hostValues []string
	// JudgeSecrets are each judge's secrets (scoring's secrets:), by the
	// judge's name.
	JudgeSecrets map[string]map[string]string
	// Retries is, per candidate id, how often a trial of it that ended
	// infra is played again in a fresh sandbox.
	Retries map[string]int
	// Shard is the share of the jobs the plan keeps (Overrides.Shard), with
	// how many jobs it has of the whole plan's; nil for all of them.
	Shard *record.Shard
}

// RetriesOf is how often a trial of candidate id that ended infra is
// played again.
func (p *Plan) RetriesOf(id string) int {
	if n, ok := p.Retries[id]; ok {
		return n
	}
	return DefaultRetries
}

// SecretValues are the values of every secret the plan passes (and of the
// env: entries that use one): what forge masks in what it writes.
func (p *Plan) SecretValues() []string {
	seen := map[string]bool{}
	add := func(secrets iter.Seq[string]) {
		for v := range secrets {
			seen[v] = true
		}
	}
	add(slices.Values(p.hostValues))
	for _, s := range p.JudgeSecrets {
		add(maps.Values(s))
	}
	for _, j := range p.Jobs {
		add(maps.Values(j.Secrets))
	}
	return slices.Sorted(maps.Keys(seen))
}

// Plan applies the overrides to the manifest and lays out the jobs. RunID is
// filled in by the run.
func (m *Manifest) Plan(o Overrides) (*Plan, error) {
	if o.Concurrency < 0 || o.Trials < 0 || o.Timeout < 0 {
		return nil, errors.New("concurrency, trials and timeout must be positive")
	}
	if o.Retries != nil && *o.Retries < 0 {
		return nil, errors.New("retries must not be negative")
	}
	if o.Lookup == nil { // finds nothing (Overrides.Lookup): what follows calls it unchecked
		o.Lookup = func(string) (string, bool) { return "", false }
	}
	p := &Plan{
		Objective:    m.Objective,
		Concurrency:  cmp.Or(o.Concurrency, m.Defaults.Concurrency, DefaultConcurrency),
		Trials:       cmp.Or(o.Trials, m.Defaults.Trials, DefaultTrials),
		Retries:      map[string]int{},
		JudgeSecrets: map[string]map[string]string{},
	}
	have := make([]string, len(m.Candidates))
	for i, c := range m.Candidates {
		have[i] = c.ID
	}
	for _, id := range o.Only {
		if !slices.Contains(have, id) {
			return nil, &UnknownCandidateError{ID: id, Manifest: m.Path, Have: have}
		}
	}
	tasks, err := m.pickTasks(o)
	if err != nil {
		return nil, err
	}
	p.Tasks = tasks
	if o.Sample > 0 {
		p.Sample = &record.Sample{N: len(tasks), Of: len(m.Tasks), Seed: o.Seed}
	}
	candidates, err := m.candidatesOf(o, tasks)
	if err != nil {
		return nil, err
	}
	if o.Oracle {
		p.Trials = cmp.Or(o.Trials, 1)
	}
	missing := map[string][]string{}
	cands := p.passCandidates(m, o, candidates, missing)
	if err := p.passTasksAndJudges(m, o, missing); err != nil {
		return nil, err
	}
	memo := &jobMemo{given: map[string]passed{}, task: map[string][]byte{}, verify: map[string]*runner.Verify{}, hidden: map[string][]string{},
		layers: map[[2]string]*runner.Environment{}}
	if err := m.agentLayers(cands, tasks, memo); err != nil {
		return nil, err
	}
	// Sized once: grown by appending, 100,000 jobs would be built again
	// and again (hundreds of MB allocated, the last two sizes at once).
	if n := len(cands) * p.Trials * max(len(tasks), 1); n > 0 {
		p.Jobs = make([]runner.Job, 0, n)
	}
	if len(tasks) == 0 {
		// Candidates in manifest order, trials ascending.
		for _, c := range cands {
			for t := 1; t <= p.Trials; t++ {
				p.Jobs = append(p.Jobs, m.job(c, Task{}, t, o, memo))
			}
		}
	}
	// Task by task, so that every candidate gets tasks early and a run cut
	// short has whole tasks to compare; the candidates' order rotates from
	// task to task, so none is always first to start.
	for k := range tasks {
		for t := 1; t <= p.Trials; t++ {
			for i := range cands {
				p.Jobs = append(p.Jobs, m.job(cands[(i+k)%len(cands)], tasks[k], t, o, memo))
			}
		}
	}
	return p.shard(o.Shard)
}

// candidatesOf are the candidates the plan plays: the oracle's, or the
// agents the command line names, or the manifest's.
func (m *Manifest) candidatesOf(o Overrides, tasks []Task) ([]Candidate, error) {
	switch {
	case o.Oracle:
		c, err := oracle(tasks)
		if err != nil {
			return nil, err
		}
		return []Candidate{c}, nil
	case len(o.Agents) == 0:
		return m.Candidates, nil
	}
	var candidates []Candidate
	for _, ch := range o.Agents {
		c, err := m.agentCandidate(ch)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(candidates, func(d Candidate) bool { return d.ID == c.ID }) {
			return nil, fmt.Errorf("--agent %s --model %s is given twice", ch.Agent, ch.Model)
		}
		candidates = append(candidates, c)
	}
	return candidates, nil
}

// passCandidates returns the candidates (of --only) that have every variable they
// name, each with its retries; the others it leaves out (NotRun), adding
// what they lack to missing.
func (p *Plan) passCandidates(m *Manifest, o Overrides, candidates []Candidate, missing map[string][]string) []Candidate {
	var cands []Candidate
	for _, c := range candidates {
		if len(o.Only) > 0 && !slices.Contains(o.Only, c.ID) {
			continue
		}
		env := map[string]string{}
		maps.Copy(env, m.Defaults.Env)
		maps.Copy(env, c.Env)
		if lack := pass(o.Lookup, env, m.Defaults.Passing, c.Passing).missing; len(lack) > 0 {
			for _, k := range lack {
				missing[k] = append(missing[k], c.ID)
			}
			p.NotRun = append(p.NotRun, record.NotRun{CandidateID: c.ID, Reason: "not set: " + strings.Join(lack, ", ")})
			continue
		}
		cands = append(cands, c)
		p.Candidates = append(p.Candidates, c.ID)
		p.Retries[c.ID] = *cmp.Or(o.Retries, c.Retries, m.Defaults.Retries, new(DefaultRetries))
	}
	return cands
}

// passTasksAndJudges finds the variables of the plan's tasks and judges, adding
// what they lack to missing, and refuses the plan when anything is: only
// candidates can be left out, not a task (the suite would change) nor a
// judge (scoring needs every one); nor are they with AllowMissingSecrets.
func (p *Plan) passTasksAndJudges(m *Manifest, o Overrides, missing map[string][]string) error {
	mustRefuse := false
	ofDefaults := pass(o.Lookup, nil, m.Defaults.Passing).missing // the candidates' concern
	for _, t := range p.Tasks {
		lack := pass(o.Lookup, t.Env, m.Defaults.Passing, t.Passing).missing
		if t.harbor() { // what its verifier (and the oracle) take from the host
			envs := []map[string]string{t.Verify.over(m.Defaults.Verify).Env}
			if o.Oracle {
				envs = append(envs, t.solutionEnv)
			}
			for _, env := range envs {
				_, miss, secret := fromHost(o.Lookup, env)
				lack, p.hostValues = append(lack, miss...), append(p.hostValues, secret...)
			}
		}
		for _, k := range lack {
			if slices.Contains(ofDefaults, k) {
				continue
			}
			missing[k] = append(missing[k], "task "+t.ID)
			mustRefuse = true
		}
	}
	for _, s := range m.Scoring.Judges() {
		given := pass(o.Lookup, nil, Passing{Secrets: s.Secrets})
		for _, k := range given.missing {
			missing[k] = append(missing[k], "judge "+s.EffectiveName())
			mustRefuse = true
		}
		if len(given.secrets) > 0 {
			p.JudgeSecrets[s.EffectiveName()] = given.secrets
		}
	}
	if len(missing) > 0 && (mustRefuse || !o.AllowMissingSecrets) {
		return &MissingSecretsError{Missing: missing, Dir: m.Dir}
	}
	return nil
}

// fieldHas reports whether a task's field is value (as written: a number
// by its written form) or a list holding it.
func fieldHas(field any, value string) bool {
	switch v := field.(type) {
	case []any:
		return slices.ContainsFunc(v, func(x any) bool { return fieldHas(x, value) })
	case string:
		return v == value
	case json.Number:
		return v.String() == value
	case nil, map[string]any:
		return false
	}
	return fmt.Sprint(field) == value
}

// pickTasks applies --tasks and --sample to the manifest's tasks, keeping
// their order.
func (m *Manifest) pickTasks(o Overrides) ([]Task, error) {
	if len(m.Tasks) == 0 {
		if len(o.Tasks) > 0 || o.Sample > 0 {
			return nil, &NoTasksError{Manifest: m.Path}
		}
		return nil, nil
	}
	tasks := m.Tasks
	if len(o.Tasks) > 0 {
		byID := map[string]int{}
		for i, t := range m.Tasks {
			byID[t.ID] = i
		}
		var keep []int
		for _, id := range o.Tasks {
			if key, value, ok := strings.Cut(id, "="); ok {
				// A selector: every task whose field key is (or lists) value.
				n := len(keep)
				for i, t := range m.Tasks {
					if fieldHas(t.Fields[key], value) {
						keep = append(keep, i)
					}
				}
				if len(keep) == n {
					return nil, fmt.Errorf("--tasks %s: no task of %s has %s %q", id, m.Path, key, value)
				}
				continue
			}
			i, ok := byID[id]
			if !ok {
				return nil, &UnknownTaskError{ID: id, Manifest: m.Path, Have: taskIDs(m.Tasks)}
			}
			keep = append(keep, i)
		}
		tasks = pick(m.Tasks, keep)
	}
	if o.Sample > 0 && o.Sample < len(tasks) {
		rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x666f726765)) // "forge"
		tasks = pick(tasks, rng.Perm(len(tasks))[:o.Sample])
	}
	return tasks, nil
}

// pick is tasks[i] for each of indexes, in the tasks' order, each once.
func pick(tasks []Task, indexes []int) []Task {
	slices.Sort(indexes)
	out := make([]Task, 0, len(indexes))
	for _, i := range slices.Compact(indexes) {
		out = append(out, tasks[i])
	}
	return out
}

// UnknownTaskError is an override naming a task the manifest does not
// have.
type UnknownTaskError struct {
	ID, Manifest string
	Have         []string
}

func (e *UnknownTaskError) Error() string {
	have := e.Have
	if len(have) > 10 {
		have = append(have[:10:10], fmt.Sprintf("… %d in all", len(e.Have)))
	}
	return fmt.Sprintf("no task %q in %s (have: %s)", e.ID, e.Manifest, strings.Join(have, ", "))
}

// NoTasksError is a task override for a manifest without tasks.
type NoTasksError struct{ Manifest string }

func (e *NoTasksError) Error() string { return e.Manifest + " has no tasks to choose from" }

// UnknownCandidateError is an override naming a candidate the manifest does
// not have.
type UnknownCandidateError struct {
	ID, Manifest string
	Have         []string
}

func (e *UnknownCandidateError) Error() string {
	return fmt.Sprintf("no candidate %q in %s (have: %s)", e.ID, e.Manifest, strings.Join(e.Have, ", "))
}
