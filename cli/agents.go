package cli

import (
	"errors"
	"strings"

	"github.com/forge-run/forge/forge"
)

// agentFlags are forge run's --agent and --model, in the order given: each
// --model is the model of the --agent before it, so that "--agent
// claude-code --model M1 --agent codex --model M2" plays two candidates.
type agentFlags struct{ choices *[]forge.AgentChoice }

// join lists what field says of each choice, comma separated.
func (f agentFlags) join(field func(forge.AgentChoice) string) string {
	var s []string
	for _, c := range *f.choices {
		s = append(s, field(c))
	}
	return strings.Join(s, ",")
}

// agentFlag is --agent: a new agent to play.
type agentFlag agentFlags

func (f agentFlag) String() string {
	return agentFlags(f).join(func(c forge.AgentChoice) string { return c.Agent })
}

func (f agentFlag) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("name the agent (claude-code, codex, or one of the manifest's agents:)")
	}
	*f.choices = append(*f.choices, forge.AgentChoice{Agent: s})
	return nil
}

func (f agentFlag) Type() string { return "NAME" }

// modelFlag is --model: the model of the --agent before it.
type modelFlag agentFlags

func (f modelFlag) String() string {
	return agentFlags(f).join(func(c forge.AgentChoice) string { return c.Model })
}

func (f modelFlag) Set(s string) error {
	cs := *f.choices
	switch {
	case len(cs) == 0:
		return errors.New("give --agent NAME first: --model is the model of the --agent before it")
	case cs[len(cs)-1].Model != "":
		return errors.New("the --agent before it has a --model already: give --agent again for another candidate")
	}
	cs[len(cs)-1].Model = s
	return nil
}

func (f modelFlag) Type() string { return "MODEL" }
