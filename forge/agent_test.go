package forge

import (
	"strings"
	"testing"

	"github.com/forge-run/forge/agent"
	"github.com/forge-run/forge/runner"
)

// The install goes on an image as root, into the agent's prefix on PATH,
// and the image's own user is back after it.
func TestInstallOnImage(t *testing.T) {
	spec := agent.Spec{Name: "a", Version: "1.0", Install: []string{"step one", "step two"}}
	got := installOnImage("FROM x\nUSER runner\nWORKDIR /app\n", spec)
	want := "FROM x\nUSER runner\nWORKDIR /app\nUSER root\n" +
		"ENV FORGE_AGENT_VERSION=1.0 FORGE_AGENT_PREFIX=/opt/forge-agents/a FORGE_AGENT_IMAGE=1\n" +
		"RUN step one\nRUN step two\nENV PATH=/opt/forge-agents/a/bin:$PATH\nUSER runner\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := installOnImage("FROM x", spec); strings.Contains(got, "USER") {
		t.Errorf("an image without USER got one:\n%s", got)
	}
}

func TestAgentID(t *testing.T) {
	for _, c := range [][3]string{
		{"claude-code", "claude-sonnet-4-5", "claude-code-claude-sonnet-4-5"},
		{"codex", "openai/gpt-5:high", "codex-openai-gpt-5-high"},
		{"parrot", "", "parrot"},
	} {
		if got := agentID(c[0], c[1]); got != c[2] || !ValidID(got) {
			t.Errorf("agentID(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}

// A log forge cannot read leaves the trial as it was, with a note; one it
// reads becomes forge's transcript, and a failed trial's message the
// agent's own words.
func TestReadAgentLog(t *testing.T) {
	job := runner.Job{Env: map[string]string{"FORGE_AGENT": "claude-code", "FORGE_MODEL": "m"}, AgentLog: string(agent.FormatClaudeCode)}
	res := runner.Result{ErrorKind: runner.ErrCandidateFailed, ErrorMessage: "exit status 1"}
	res.SetTranscript([]byte("not json at all\n"), 16)
	readAgentLog(job, &res)
	if res.ErrorMessage != "exit status 1" || !strings.Contains(res.TranscriptNote, "the agent's log could not be read") {
		t.Errorf("unreadable: %q, note %q", res.ErrorMessage, res.TranscriptNote)
	}

	log := `{"type":"system","subtype":"init","session_id":"s","model":"m"}` + "\n" +
		`{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key","num_turns":1,"modelUsage":{"":{"inputTokens":3,"outputTokens":4}}}` + "\n"
	res = runner.Result{ErrorKind: runner.ErrCandidateFailed, ErrorMessage: "exit status 1"}
	res.SetTranscript([]byte(log), int64(len(log)))
	readAgentLog(job, &res)
	if res.AgentError == "" || !strings.HasPrefix(res.ErrorMessage, "claude-code: ") {
		t.Errorf("the agent's error: %q, message %q", res.AgentError, res.ErrorMessage)
	}
	if res.Usage == nil || res.Usage.Models[0].Model != "m" {
		t.Errorf("usage %+v", res.Usage)
	}
}
