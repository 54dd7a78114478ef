package forge

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/forge-run/forge/agent"
	"github.com/forge-run/forge/runner"
)

// AgentSpec is an agent the manifest describes (agents:), for a command
// line tool forge has no built-in for: how to install it once per image,
// the shell script that runs it unattended, and the log it writes.
type AgentSpec struct {
	Package string            `yaml:"package"` // npm package, documentation only
	Version string            `yaml:"version"` // FORGE_AGENT_VERSION in install
	Install []string          `yaml:"install"`
	Run     string            `yaml:"run"`
	Key     string            `yaml:"key"`      // the variable its API key is read from
	BaseEnv string            `yaml:"base_env"` // the host variable that points its API elsewhere
	Env     map[string]string `yaml:"env"`
	Log     string            `yaml:"log"` // claude-stream-json, codex-json or none
}

// AgentChoice is an agent and model to play as a candidate (forge run
// --agent NAME --model M).
type AgentChoice struct{ Agent, Model string }

// agentPrefix is where an agent is installed in an image.
const agentPrefix = "/opt/forge-agents"

// agentWrapper runs the agent's script with the trial's instruction (the
// objective: a Harbor task's instruction.md) and the candidate's args (the
// protocol's last two arguments, the objective and the output's path, left
// out), its log on stdout and into FORGE_TRANSCRIPT, which forge reads as
// the agent's own log (readAgentLog); it exits with the agent's status.
const agentWrapper = `FORGE_INSTRUCTION=$FORGE_OBJECTIVE
if [ -n "${FORGE_AGENT_OUTPUT:-}" ]; then
  FORGE_INSTRUCTION="$FORGE_INSTRUCTION

Write your answer, and nothing else, into the file $FORGE_AGENT_OUTPUT in the current directory."
fi
export FORGE_INSTRUCTION
unset FORGE_AGENT_OUTPUT
forge_n=$#; forge_i=0
for forge_a do
  forge_i=$((forge_i + 1)); [ $forge_i -eq 1 ] && set --
  [ $forge_i -le $((forge_n - 2)) ] && set -- "$@" "$forge_a"
done
unset forge_n forge_i forge_a
forge_rc="$FORGE_TRANSCRIPT.rc"
{ ( %s
); echo $? >"$forge_rc"; } | tee "$FORGE_TRANSCRIPT"
read forge_status <"$forge_rc" 2>/dev/null; rm -f "$forge_rc"
exit "${forge_status:-1}"
`

// specOf is the agent named name: the manifest's agents: first, then
// forge's own.
func (m *Manifest) specOf(name string) (agent.Spec, bool) {
	if s, ok := m.Agents[name]; ok && s != nil {
		return agent.Spec{Name: name, Package: s.Package, Version: s.Version, Install: s.Install, Run: s.Run,
			KeyEnv: s.Key, BaseEnv: s.BaseEnv, Env: s.Env, Log: agent.Format(strings.TrimPrefix(s.Log, "none"))}, true
	}
	return agent.Builtin(name)
}

// agentNames are the agents a candidate may name.
func (m *Manifest) agentNames() []string {
	names := append(agent.BuiltinNames(), slices.Collect(maps.Keys(m.Agents))...)
	slices.Sort(names)
	return slices.Compact(names)
}

// agentID is the readable id of an agent candidate that gives none:
// agent-model, in the characters an id may hold.
func agentID(name, model string) string {
	id := name
	if model != "" {
		id += "-" + model
	}
	return badIDChars.ReplaceAllString(id, "-")
}

var badIDChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// checkAgents validates the manifest's agents: and every agent candidate.
func (m *Manifest) checkAgents(v *validator) {
	for _, name := range slices.Sorted(maps.Keys(m.Agents)) {
		s := m.Agents[name]
		if s == nil {
			v.at("describe the agent: install, run, key and log", "agents", name)
			continue
		}
		if !ValidID(name) {
			v.at(fmt.Sprintf("%q is not a valid agent name: use letters, digits, '_', '.' and '-' only", name), "agents", name)
		}
		if strings.TrimSpace(s.Run) == "" {
			v.at("is required: the shell script that runs the agent unattended (it reads $FORGE_INSTRUCTION and $FORGE_MODEL)", "agents", name, "run")
		}
		for i, line := range s.Install {
			if strings.ContainsRune(line, '\n') {
				v.at("one shell line each (an image builds each as a RUN step)", "agents", name, "install", i)
			}
		}
		switch s.Log {
		case "", "none", string(agent.FormatClaudeCode), string(agent.FormatCodex):
		default:
			v.at(fmt.Sprintf("%q: want %s, %s or none", s.Log, agent.FormatClaudeCode, agent.FormatCodex), "agents", name, "log")
		}
		if err := checkName(s.Key); s.Key != "" && err != nil {
			v.at(err.Error(), "agents", name, "key")
		}
		checkEnv(v.at, s.Env, "agents", name, "env")
	}
	for i := range m.Candidates {
		c := &m.Candidates[i]
		if c.Agent == "" {
			for _, k := range []struct {
				set bool
				key string
			}{{c.Model != "", "model"}, {c.Version != "", "version"}, {len(c.Args) > 0, "args"}, {c.MaxTurns != 0, "max_turns"}, {c.APIBase != "", "api_base"}} {
				if k.set {
					v.at("belongs to an agent candidate: give agent: too", "candidates", i, k.key)
				}
			}
			continue
		}
		spec, ok := m.specOf(c.Agent)
		switch {
		case !ok:
			v.at(fmt.Sprintf("%q is no agent forge knows: %s, or describe it under agents:", c.Agent, strings.Join(m.agentNames(), ", ")), "candidates", i, "agent")
		case c.Script != "" || len(c.Command) > 0:
			v.at("an agent candidate runs its agent: give agent: or script:/command:, not both", "candidates", i, "agent")
		case c.Model == "" && spec.Log != agent.FormatNone:
			v.at("is required: the model the agent runs ("+c.Agent+" with which model?)", "candidates", i, "model")
		}
		if c.MaxTurns < 0 {
			v.at("must not be negative", "candidates", i, "max_turns")
		}
	}
}

// resolveAgent makes candidate c, which names an agent, a command: the
// wrapper around the agent's script, its arguments after it. Validation
// has passed.
func (m *Manifest) resolveAgent(c *Candidate) {
	spec, _ := m.specOf(c.Agent)
	spec.Version = cmp.Or(c.Version, spec.Version)
	c.agent = &spec
	c.argv = append([]string{"sh", "-c", fmt.Sprintf(agentWrapper, spec.Run), c.Agent}, c.Args...)
	if spec.KeyEnv != "" && !slices.Contains(c.Secrets, spec.KeyEnv) {
		c.Secrets = append(slices.Clip(c.Secrets), spec.KeyEnv)
	}
}

// agentCandidate is the candidate forge run --agent NAME --model M plays.
func (m *Manifest) agentCandidate(ch AgentChoice) (Candidate, error) {
	spec, ok := m.specOf(ch.Agent)
	if !ok {
		return Candidate{}, fmt.Errorf("--agent %s: no agent forge knows: %s, or describe it under agents: in the manifest", ch.Agent, strings.Join(m.agentNames(), ", "))
	}
	if ch.Model == "" && spec.Log != agent.FormatNone {
		return Candidate{}, fmt.Errorf("--agent %s: give its --model", ch.Agent)
	}
	c := Candidate{ID: agentID(ch.Agent, ch.Model), Agent: ch.Agent, Model: ch.Model}
	m.resolveAgent(&c)
	return c, nil
}

// agentEnv is what agent candidate c's script reads: the model, the turn
// limit, where its API is (the manifest's api_base, else the host's
// variable), and the agent's own settings.
func (c Candidate) agentEnv(lookup Lookup) map[string]string {
	env := map[string]string{}
	maps.Copy(env, c.agent.Env)
	env["FORGE_AGENT"] = c.agent.Name
	env["FORGE_MODEL"] = c.Model
	if c.MaxTurns > 0 {
		env["FORGE_MAX_TURNS"] = strconv.Itoa(c.MaxTurns)
	}
	base := c.APIBase
	if base == "" && c.agent.BaseEnv != "" {
		base, _ = lookup(c.agent.BaseEnv)
	}
	if base != "" {
		env["FORGE_API_BASE"] = base
	}
	return env
}

// agentLayer is base with agent s installed on top, built once per image:
// base's Dockerfile then the install as root, into agentPrefix; base's
// build steps then the install into the environment's own directory; or,
// without base, an environment of the install alone.
func agentLayer(s *agent.Spec, base *runner.Environment) (*runner.Environment, error) {
	name := s.Name + "@" + s.Version
	env := runner.Environment{Name: name}
	if base != nil {
		env = *base
		env.Name = base.Name + "+" + name
	}
	if env.Dockerfile != "" {
		env.Dockerfile = installOnImage(env.Dockerfile, *s)
	} else {
		env.Build, env.Env = slices.Clone(env.Build), maps.Clone(env.Env)
		if env.Env == nil {
			env.Env = map[string]string{}
		}
		env.Env["FORGE_AGENT_VERSION"] = s.Version
		for _, line := range s.Install { // each a step of its own, as a RUN is
			env.Build = append(env.Build, `FORGE_AGENT_PREFIX="$`+runner.EnvDirVar+`"; export FORGE_AGENT_PREFIX`+"\n"+line)
		}
	}
	var err error
	if env.Hash, err = runner.EnvironmentHash(&env); err != nil {
		return nil, fmt.Errorf("agent %s on environment %s: %w", name, env.Name, err)
	}
	return &env, nil
}

// installOnImage is the Dockerfile df with the agent installed as root
// into agentPrefix, on PATH, and the image's own user back after it.
func installOnImage(df string, s agent.Spec) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(df, "\n") + "\n")
	user := lastUser(df)
	if user != "" {
		b.WriteString("USER root\n")
	}
	prefix := path.Join(agentPrefix, s.Name)
	fmt.Fprintf(&b, "ENV FORGE_AGENT_VERSION=%s FORGE_AGENT_PREFIX=%s FORGE_AGENT_IMAGE=1\n", s.Version, prefix)
	for _, line := range s.Install {
		b.WriteString("RUN " + line + "\n")
	}
	fmt.Fprintf(&b, "ENV PATH=%s/bin:$PATH\n", prefix)
	if user != "" {
		b.WriteString("USER " + user + "\n")
	}
	return b.String()
}

// lastUser is the value of a Dockerfile's last USER instruction, "" for
// none.
func lastUser(df string) string {
	user := ""
	for _, line := range strings.Split(df, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && strings.EqualFold(f[0], "USER") {
			user = f[1]
		}
	}
	return user
}

// readAgentLog reads what an agent candidate left in FORGE_TRANSCRIPT, its
// agent's own log, into the trial: forge's transcript of it, its usage
// (unless FORGE_RESULT gave one: the candidate's word wins) and, when the
// agent ended in error, its words, which a failed trial's message becomes.
// A log that cannot be read leaves the trial as it was, with a note.
func readAgentLog(job runner.Job, res *runner.Result) {
	if res.Transcript == nil {
		return
	}
	log, err := agent.ReadLog(agent.Format(job.AgentLog), bytes.NewReader(res.Transcript))
	if err != nil {
		res.TranscriptNote = "the agent's log could not be read (" + err.Error() + "); kept as it was"
		return
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, st := range log.Steps {
		_ = enc.Encode(st) // a step that does not encode is left out
	}
	truncated := res.TranscriptTruncated
	res.SetTranscript(b.Bytes(), int64(b.Len()))
	res.TranscriptTruncated = res.TranscriptTruncated || truncated
	if res.Usage == nil && log.Usage != nil {
		// The model the candidate chose, where the log names none (codex's).
		for i := range log.Usage.Models {
			if log.Usage.Models[i].Model == "" {
				log.Usage.Models[i].Model = job.Env["FORGE_MODEL"]
			}
		}
		res.Usage = log.Usage
	}
	res.AgentTurns = log.Turns
	if log.Error != "" {
		res.AgentError = log.Error
		if res.ErrorKind.Fault() == runner.FaultCandidate && res.ErrorKind != runner.ErrTimeout {
			res.ErrorMessage = job.Env["FORGE_AGENT"] + ": " + log.Error
		}
	}
}
