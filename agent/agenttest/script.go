package agenttest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// Script says what the fake model answers, conversation by conversation.
// A conversation is the messages of one request: the rule whose When is in
// its user messages answers it (the first such rule), else Default does.
// The fake keeps no state between requests: the turn it plays is the number
// of tool results the request carries, as every scripted turn but the last
// calls the shell once and waits for its result.
type Script struct {
	Rules []Rule `yaml:"rules"`
	// Default answers a conversation no rule matches (nil: DefaultTurns).
	Default []Turn `yaml:"default"`
	// Plain answers a request that offers no tools (an agent's side calls:
	// a title, a summary). "" is "OK".
	Plain string `yaml:"plain"`
}

// Rule is a scripted conversation.
type Rule struct {
	// When is a substring of the conversation's user messages ("": every
	// conversation).
	When  string `yaml:"when"`
	Turns []Turn `yaml:"turns"`
}

// Turn is one answer of the model. Past a rule's last turn the last turn is
// played again: a rule whose last turn calls the shell loops until the agent
// stops (its turn limit).
type Turn struct {
	// Shell is a command for the agent's shell tool (claude-code's Bash,
	// codex's exec_command); "" ends the turn with Text alone.
	Shell string `yaml:"shell"`
	// Text is said before the tool call, or is the final answer.
	Text string `yaml:"text"`
}

// DefaultTurns answer a conversation that no rule matches: a final answer.
var DefaultTurns = []Turn{{Text: "Done."}}

// LoadScript reads a script file (YAML; unknown keys are an error).
func LoadScript(path string) (Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Script{}, err
	}
	s, err := ParseScript(b)
	if err != nil {
		return Script{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseScript reads a script (YAML; unknown keys are an error).
func ParseScript(b []byte) (Script, error) {
	var s Script
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		return Script{}, err
	}
	return s, s.Validate()
}

// Validate says what makes the script unplayable.
func (s Script) Validate() error {
	for i, r := range s.Rules {
		if len(r.Turns) == 0 {
			return fmt.Errorf("rules[%d] (when %q) has no turns", i, r.When)
		}
	}
	return nil
}

// turnFor picks the turn that answers a conversation: its user text, and
// how many tool results it holds. rule is the matching rule's When.
func (s Script) turnFor(userText string, toolResults int) (t Turn, rule string) {
	turns := s.Default
	if len(turns) == 0 {
		turns = DefaultTurns
	}
	for _, r := range s.Rules {
		if strings.Contains(userText, r.When) {
			turns, rule = r.Turns, r.When
			break
		}
	}
	return turns[min(toolResults, len(turns)-1)], rule
}

// Tokens is how many tokens the fake counts for text: four for every three
// words, rounded (a deterministic stand-in for a tokenizer).
func Tokens(text string) int {
	return (len(strings.Fields(text))*4 + 1) / 3
}
