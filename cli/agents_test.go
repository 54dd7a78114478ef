package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-run/forge/agent/agenttest"
	"github.com/forge-run/forge/internal/testkit/testfiles"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// agentCache is the environment cache the tests of real agents share, so
// that each agent is installed (from npm) once per machine, not per test:
// environments are content-addressed, and forges that meet on one build it
// once. Under the system's temporary directory, which the jobs' users may
// search.
func agentCache(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "forge-test-agent-environments")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// modelEnv points both agents at the fake model, with key.
func modelEnv(model *agenttest.Server, key string) []string {
	return []string{"ANTHROPIC_API_KEY=" + key, "OPENAI_API_KEY=" + key,
		"ANTHROPIC_BASE_URL=" + model.URL, "OPENAI_BASE_URL=" + model.OpenAIBase()}
}

// agentTools are the shell tools the agents call, by candidate id.
var agentTools = map[string]string{"claude-code-claude-sonnet-4-5": "Bash", "codex-gpt-5.5": "exec_command"}

// suiteScript has the fake model solve examples/suite's arithmetic-1 (one
// shell call writing the answer) and answer string-1 without writing it.
var suiteScript = agenttest.Script{
	Rules: []agenttest.Rule{{When: "49 rows of 32 bottles", Turns: []agenttest.Turn{
		{Shell: "printf 1568 > output.md", Text: "Multiplying."},
		{Text: "Done: 1568."},
	}}},
	Default: []agenttest.Turn{{Text: "I do not know."}},
}

// The real claude-code and codex (from npm, the pinned versions) play
// examples/suite locally against the fake model (--agent … --model …
// instead of its candidates), as users of their own when forge is root:
// each installed once into an environment of its own, the key a secret no
// file of the run holds, their logs read into transcripts, tokens and cost.
func TestAgentsPlayASuiteLocally(t *testing.T) {
	t.Parallel()
	model := agenttest.Start(t, agenttest.Options{Key: "sk-fake-agents-0123456789", Script: suiteScript})
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "examples", "suite"))); err != nil {
		t.Fatal(err)
	}
	cmd, stdout, stderr := forgeCmd(dir, append(modelEnv(model, model.Key()), "XDG_CACHE_HOME="+agentCache(t), "DAYTONA_API_KEY="),
		"run", "--run-id", "a1", "--quiet", "--tasks", "arithmetic-1,string-1", "--timeout", "120s",
		"--agent", "claude-code", "--model", "claude-sonnet-4-5", "--agent", "codex", "--model", "gpt-5.5")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rec := readResults(t, filepath.Join(dir, "artifacts", "a1", "results.json"))
	if len(rec.Results) != 4 {
		t.Fatalf("%d results, want 2 agents × 2 tasks", len(rec.Results))
	}
	checkAgentRun(t, dir, "a1", rec, model.Key(), agentTools)
	for _, r := range rec.Results {
		switch {
		case r.TaskID == "arithmetic-1" && (!r.Success || r.ArtifactContent != "1568"):
			t.Errorf("%s/arithmetic-1: success %v, artifact %q (%s %s)", r.CandidateID, r.Success, r.ArtifactContent, r.ErrorKind, r.ErrorMessage)
		case r.TaskID == "string-1" && r.ErrorKind != runner.ErrArtifactMissing:
			t.Errorf("%s/string-1: %s %q, want artifact_missing", r.CandidateID, r.ErrorKind, r.ErrorMessage)
		}
		// claude-code gives its own cost; codex tokens only (no pricing here).
		if r.CandidateID == "claude-code-claude-sonnet-4-5" && (r.Cost == nil || r.Cost.USD <= 0) {
			t.Errorf("%s/%s: cost %+v", r.CandidateID, r.TaskID, r.Cost)
		}
	}
	// Each agent installed once, into an environment of its own.
	if len(rec.Environments) != 2 {
		t.Errorf("environments %+v, want one per agent", rec.Environments)
	}
}

// checkAgentRun checks what every agent trial of a run recorded: a
// transcript with the shell call the agent made on the solved task, token
// usage per model, and no trace of the key in any file of the run.
func checkAgentRun(t *testing.T, dir, id string, rec record.Record, key string, tool map[string]string) {
	t.Helper()
	for _, r := range rec.Results {
		if r.Usage == nil || r.Usage.Tokens() == 0 || r.Usage.Models[0].Model == "" {
			t.Errorf("%s/%s: usage %+v", r.CandidateID, r.TaskID, r.Usage)
		}
		if r.TranscriptPath == "" || r.TranscriptSteps == 0 {
			t.Errorf("%s/%s: no transcript (%q, %d steps, %s)", r.CandidateID, r.TaskID, r.TranscriptPath, r.TranscriptSteps, r.TranscriptNote)
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "artifacts", id, filepath.FromSlash(r.TranscriptPath)))
		if err != nil {
			t.Fatal(err)
		}
		called := false
		for line := range strings.Lines(string(b)) {
			var st struct {
				Type string `json:"type"`
				Tool struct {
					Name string `json:"name"`
				} `json:"tool"`
			}
			if json.Unmarshal([]byte(line), &st) == nil && st.Type == "tool_call" && st.Tool.Name == tool[r.CandidateID] {
				called = true
			}
		}
		if solved := r.Success || (r.Reward != nil && *r.Reward == 1); solved && !called {
			t.Errorf("%s/%s: the transcript has no %s call:\n%s", r.CandidateID, r.TaskID, tool[r.CandidateID], b)
		}
	}
	filepath.WalkDir(filepath.Join(dir, "artifacts", id), func(p string, d os.DirEntry, err error) error {
		if b, _ := os.ReadFile(p); err == nil && !d.IsDir() && strings.Contains(string(b), key) {
			t.Errorf("%s holds the agents' key", p)
		}
		return nil
	})
}

// harborScript has the fake model solve examples/harbor's create-file and
// only look around on the other tasks.
var harborScript = agenttest.Script{
	Rules: []agenttest.Rule{{When: "hello.txt", Turns: []agenttest.Turn{
		{Shell: `printf 'Hello from forge, 6 tasks to go!\n' > /app/hello.txt`, Text: "Creating the file."},
		{Text: "Done."},
	}}},
	Default: []agenttest.Turn{{Shell: "ls -la", Text: "Looking around."}, {Text: "I could not do it."}},
}

// The real agents play examples/harbor's tasks on the emulator with no
// manifest (forge run --harbor DIR --agent … --model …): each task image
// gets each agent installed once (a snapshot per image × agent), each
// trial is judged by its task's verifier, and the record has the
// transcripts, tokens and cost, never the key.
func TestDaytonaAgentsPlayHarborTasks(t *testing.T) {
	t.Parallel()
	if !daytonatest.RootFS() {
		t.Fatal("the Daytona emulator gives sandboxes no root file system of their own here (it needs root and overlayfs)")
	}
	// The sandboxes reach the fake model on this machine.
	srv := daytonatest.Start(t, daytonatest.Options{HostNetwork: true})
	model := agenttest.Start(t, agenttest.Options{Key: "sk-fake-agents-0123456789", Script: harborScript})
	dir := copyHarbor(t)
	os.Remove(filepath.Join(dir, "forge.yaml"))
	env := append(modelEnv(model, model.Key()), "DAYTONA_API_KEY="+srv.APIKey(), "DAYTONA_API_URL="+srv.URL())
	cmd, stdout, stderr := forgeCmd(dir, env, "run", "--daytona", "--no-fallback", "--run-id", "h1", "--quiet",
		"--harbor", "tasks", "--tasks", "create-file,csv-transform",
		"--agent", "claude-code", "--model", "claude-sonnet-4-5", "--agent", "codex", "--model", "gpt-5.5")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rec := readResults(t, filepath.Join(dir, "artifacts", "h1", "results.json"))
	if len(rec.Results) != 4 {
		t.Fatalf("%d results, want 2 agents × 2 tasks", len(rec.Results))
	}
	checkAgentRun(t, dir, "h1", rec, model.Key(), agentTools)
	for _, r := range rec.Results {
		want := map[string]float64{"create-file": 1, "csv-transform": 0}[r.TaskID]
		if r.Reward == nil || *r.Reward != want {
			t.Errorf("%s/%s: reward %v, want %v (%s %s)", r.CandidateID, r.TaskID, r.Reward, want, r.ErrorKind, r.ErrorMessage)
		}
	}
	if n := srv.Calls(daytonatest.OpCreateSnapshot); n != 4 {
		t.Errorf("%d snapshots built, want 4: each task image × each agent, once", n)
	}
	checkEmulator(t, srv, model.Key())
}

// A key the model refuses, or a model it does not know: each agent's trial
// fails with the agent's own words (candidate_failed), not at its timeout.
func TestAgentsRefusedKeyAndUnknownModel(t *testing.T) {
	t.Parallel()
	model := agenttest.Start(t, agenttest.Options{Key: "sk-fake-agents-0123456789", Script: suiteScript})
	dir := t.TempDir()
	testfiles.Write(t, dir, map[string]string{"forge.yaml": `objective: What is 2+3?
defaults: {timeout: 100s}
candidates:
  - {id: claude-refused, agent: claude-code, model: claude-sonnet-4-5}
  - {id: codex-refused, agent: codex, model: gpt-5.5}
  - {id: claude-unknown, agent: claude-code, model: claude-nonesuch-9}
  - {id: codex-unknown, agent: codex, model: gpt-nonesuch-9}
`})
	cmd, stdout, stderr := forgeCmd(dir, append(modelEnv(model, "sk-wrong-key"), "XDG_CACHE_HOME="+agentCache(t), "DAYTONA_API_KEY="),
		"run", "--run-id", "k1", "--quiet", "--only", "claude-refused,codex-refused")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	cmd, stdout, stderr = forgeCmd(dir, append(modelEnv(model, model.Key()), "XDG_CACHE_HOME="+agentCache(t), "DAYTONA_API_KEY="),
		"run", "--run-id", "k2", "--quiet", "--only", "claude-unknown,codex-unknown")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var results []record.Trial
	for _, id := range []string{"k1", "k2"} {
		results = append(results, readResults(t, filepath.Join(dir, "artifacts", id, "results.json")).Results...)
	}
	// The agents' own words, as the fake (strict as the vendors) answers.
	want := map[string]string{
		"claude-refused": "claude-code: Invalid API key", "codex-refused": "codex: unexpected status 401 Unauthorized",
		"claude-unknown": "claude-code: ", "codex-unknown": "codex: The requested model 'gpt-nonesuch-9'",
	}
	for _, r := range results {
		if r.ErrorKind != runner.ErrCandidateFailed || !strings.HasPrefix(r.ErrorMessage, want[r.CandidateID]) || r.AgentError == "" {
			t.Errorf("%s: %s %q (agent: %q), want candidate_failed with %q", r.CandidateID, r.ErrorKind, r.ErrorMessage, r.AgentError, want[r.CandidateID])
		}
	}
}
