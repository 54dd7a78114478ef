package forge

// A job of the plan: candidate × task × trial laid out as the runner takes
// it, and what the jobs of a plan share.

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/forge-run/forge/agent"
	"github.com/forge-run/forge/runner"
)

// jobMemo is what the jobs of a plan share instead of each making its
// own: a candidate's passed variables (when the task adds none) and each
// task's JSON. At 100,000 jobs that is most of the plan's memory.
type jobMemo struct {
	given  map[string]passed
	task   map[string][]byte
	verify map[string]*runner.Verify // shared, read-only
	hidden map[string][]string       // shared, read-only
	// layers are the agents' environments by (the environment under it,
	// the agent's name@version): one per image, whatever its jobs.
	layers map[[2]string]*runner.Environment
}

// agentLayers makes, once each, the environment every agent candidate's
// jobs run in: its agent installed over the environment the job would
// have had (the task's image, the candidate's, the defaults').
func (m *Manifest) agentLayers(cands []Candidate, tasks []Task, memo *jobMemo) error {
	for _, c := range cands {
		if c.agent == nil {
			continue
		}
		bases := []*runner.Environment{m.environmentOf(c)}
		for i := range tasks {
			bases = append(bases, cmp.Or(tasks[i].environment, bases[0]))
		}
		for _, base := range bases {
			key := layerKey(base, c.agent)
			if memo.layers[key] != nil {
				continue
			}
			env, err := agentLayer(c.agent, base)
			if err != nil {
				return err
			}
			memo.layers[key] = env
		}
	}
	return nil
}

func layerKey(base *runner.Environment, a *agent.Spec) [2]string {
	k := [2]string{"", a.Name + "@" + a.Version}
	if base != nil {
		k[0] = base.Hash
	}
	return k
}

// job lays out candidate c's trial on task t (the zero Task without
// tasks): the command line's timeout, then the task's, candidate's,
// defaults' settings.
func (m *Manifest) job(c Candidate, t Task, trial int, o Overrides, memo *jobMemo) runner.Job {
	d := m.Defaults
	given := m.given(c, t, o, memo)
	objective := cmp.Or(t.Objective, m.Objective)
	optional := *cmp.Or(c.ArtifactOptional, d.ArtifactOptional, new(false)) || t.image() // Harbor's verifier judges
	environment := cmp.Or(t.environment, m.environmentOf(c))
	var agentLog string // the format of an agent's log in FORGE_TRANSCRIPT, "" for none
	if c.agent != nil {
		environment = memo.layers[layerKey(environment, c.agent)]
		agentLog = string(c.agent.Log)
	}
	verify, hidden := m.verifyOf(t, o, memo)
	outputFile := cmp.Or(t.OutputFile, c.OutputFile, d.OutputFile, runner.DefaultOutputFile)
	if c.agent != nil && !optional {
		// The agent is told where its answer goes: the instruction alone
		// does not say (a Harbor task's, judged by its verifier, does).
		given.env = maps.Clone(given.env)
		given.env["FORGE_AGENT_OUTPUT"] = outputFile
	}
	return runner.Job{
		CandidateID:      c.ID,
		TaskID:           t.ID,
		Trial:            trial,
		Objective:        objective,
		Command:          slices.Clip(c.argv), // shared; appending copies
		Files:            jobFiles(c, t, objective, memo),
		Env:              given.env,
		Secrets:          given.secrets,
		SetupSecrets:     *cmp.Or(c.SetupSecrets, d.SetupSecrets, new(false)),
		Setup:            slices.Concat(d.Setup, c.Setup),
		SetupTimeout:     cmp.Or(time.Duration(d.SetupTimeout), runner.DefaultSetupTimeout),
		Environment:      environment,
		InImageWorkdir:   environment != nil && environment.Dockerfile != "", // docs/manifest.md: the image's WORKDIR
		AgentLog:         agentLog,
		OutputFile:       outputFile,
		ArtifactOptional: optional,
		Timeout:          cmp.Or(o.Timeout, t.Timeout, time.Duration(c.Timeout), time.Duration(d.Timeout), runner.DefaultTimeout),
		Limits:           runner.Limits{MaxOutputBytes: int64(d.MaxOutput), MaxArtifactBytes: int64(d.MaxArtifact)},
		Verify:           verify,
		NoNetwork:        m.Network == "none",
		Hidden:           hidden,
	}
}

// given is what candidate c's job on task t is given of the variables
// (the oracle's the solution's too).
func (m *Manifest) given(c Candidate, t Task, o Overrides, memo *jobMemo) passed {
	// What a job is given depends on its task only when the task has its
	// own env or passes its own variables: otherwise the candidate's jobs
	// share one (read-only) set of maps.
	given, shared := memo.given[c.ID]
	taskOwn := len(t.Env) > 0 || len(t.Secrets) > 0 || len(t.EnvFromHost) > 0
	if !shared || taskOwn {
		env := map[string]string{}
		maps.Copy(env, m.Defaults.Env)
		maps.Copy(env, c.Env)
		maps.Copy(env, t.Env)
		given = pass(o.Lookup, env, m.Defaults.Passing, c.Passing, t.Passing)
		if c.agent != nil { // forge's own variables, after the manifest's
			maps.Copy(given.env, c.agentEnv(o.Lookup))
		}
		if !taskOwn {
			memo.given[c.ID] = given
		}
	}
	if c.oracle && len(t.solutionEnv) > 0 { // given's maps may be shared: a copy
		solution, _, _ := fromHost(o.Lookup, t.solutionEnv)
		given.env = maps.Clone(given.env)
		maps.Copy(given.env, solution)
	}
	return given
}

// jobFiles are the files candidate c's job on task t (the zero Task
// without tasks) takes: its own (the oracle's, the solution), the task's,
// the task file (FORGE_TASK) and a Harbor task's instruction.
func jobFiles(c Candidate, t Task, objective string, memo *jobMemo) []runner.File {
	own := c.files
	if c.oracle {
		own = t.solution
	}
	files := make([]runner.File, 0, len(own)+len(t.files)+2)
	files = append(append(files, own...), t.files...)
	if t.ID != "" { // a suite's task: every one has an id
		data, ok := memo.task[t.ID]
		if !ok {
			data = t.JSON(objective) // once per task, whatever its jobs
			memo.task[t.ID] = data
		}
		files = append(files, runner.File{Dst: runner.TaskFile, Data: data})
	}
	if t.instruction != nil {
		files = append(files, runner.File{Dst: "instruction.md", Data: t.instruction})
	}
	return files
}

// verifyOf is task t's verifier, once per task, and what its jobs hide
// from the candidate: where the verifier's files and the solution come
// from.
func (m *Manifest) verifyOf(t Task, o Overrides, memo *jobMemo) (*runner.Verify, []string) {
	if verify, ok := memo.verify[t.ID]; ok {
		return verify, memo.hidden[t.ID]
	}
	spec := t.Verify.over(m.Defaults.Verify)
	verify := spec.job() // nil without a spec or its command
	if verify != nil && t.harbor() && len(verify.Env) > 0 {
		verify.Env, _, _ = fromHost(o.Lookup, verify.Env)
	}
	var hidden []string
	if verify != nil && spec.Dir != "" {
		hidden = append(hidden, m.abs(spec.Dir))
	}
	if t.solutionDir != "" {
		hidden = append(hidden, t.solutionDir)
	}
	memo.verify[t.ID], memo.hidden[t.ID] = verify, hidden
	return verify, hidden
}
