package cli_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-run/forge/internal/testkit/fakemodel"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// startFakeModel starts the sample's offline model server accepting only
// key and returns its base URL.
func startFakeModel(t *testing.T, key string) string {
	return fakemodel.Start(t, filepath.Join("..", "examples", "agent", "fake_model.py"), key)
}

// copyExample copies examples/<name> into a fresh directory.
func copyExample(t *testing.T, name string) string {
	t.Helper()
	src, dst := filepath.Join("..", "examples", name), t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// filesHolding lists the files below dir that hold any of forms.
func filesHolding(t *testing.T, dir string, forms ...string) []string {
	t.Helper()
	files, err := holding(dir, forms...)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func holding(dir string, forms ...string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, f := range forms {
			if bytes.Contains(b, []byte(f)) {
				out = append(out, path)
				break
			}
		}
		return nil
	})
	return out, err
}

// checkAgentTranscripts checks that each trial of the sample agent's run
// in runDir kept its transcript: stored beside its logs, three steps (the
// system prompt and the objective it sent, the model's reply with its
// usage), each with its time.
func checkAgentTranscripts(t *testing.T, runDir string, rec record.Record) {
	t.Helper()
	for _, r := range rec.Results {
		if r.TranscriptPath != r.CandidateID+"/transcript.jsonl" || r.TranscriptSteps != 3 || r.TranscriptNote != "" || r.TranscriptTruncated {
			t.Errorf("%s: transcript %q, %d steps, note %q, truncated %v", r.CandidateID, r.TranscriptPath, r.TranscriptSteps, r.TranscriptNote, r.TranscriptTruncated)
			continue
		}
		f, err := os.Open(filepath.Join(runDir, filepath.FromSlash(r.TranscriptPath)))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := runner.ReadTranscript(f, 0)
		f.Close()
		if err != nil || len(tr.Steps) != 3 || tr.Malformed != 0 {
			t.Fatalf("%s: %d steps, %d malformed, %v", r.CandidateID, len(tr.Steps), tr.Malformed, err)
		}
		var roles []string
		for _, st := range tr.Steps {
			roles = append(roles, st.Role)
			if st.Type != "message" || st.Time.IsZero() || st.Text() == "" {
				t.Errorf("%s: step %+v", r.CandidateID, st)
			}
		}
		if strings.Join(roles, " ") != "system user assistant" || tr.Steps[1].Text() != rec.Objective {
			t.Errorf("%s: roles %v, user said %q", r.CandidateID, roles, tr.Steps[1].Text())
		}
		u, note := tr.Steps[2].TokenUsage()
		if note != "" || u == nil || u.Tokens() != r.Usage.Tokens() || u.Models[0].Model != "gpt-4o-mini" {
			t.Errorf("%s: the reply's usage %+v %q, the trial's %+v", r.CandidateID, u, note, r.Usage)
		}
	}
}

// TestSampleAgent plays examples/agent against a fake OpenAI-compatible
// endpoint: the key reaches the agents (the endpoint saw it), the two
// prompts are told apart, no byte of the key is written anywhere, and
// each trial's transcript is kept.
func TestSampleAgent(t *testing.T) {
	t.Parallel()
	const key = "sk-agent-test-5d41402abc4b2a76"
	base := startFakeModel(t, key)
	dir := copyExample(t, "agent")

	// The model server refuses any other key: every trial succeeding says
	// the key reached the agents.
	cmd, stdout, stderr := forgeCmd(dir, []string{"OPENAI_API_KEY=" + key, "OPENAI_BASE_URL=" + base},
		"run", "--run-id", "a1", "--verbose")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	rec := readResults(t, filepath.Join(dir, "artifacts", "a1", "results.json"))
	for _, r := range rec.Results {
		if !r.Success {
			t.Errorf("%s: %s %s", r.CandidateID, r.ErrorKind, r.ErrorMessage)
		}
		// The agent reports its real usage; the manifest prices its model.
		if r.Usage == nil || r.Usage.Tokens() == 0 || r.Usage.Models[0].Model != "gpt-4o-mini" || r.UsageNote != "" {
			t.Errorf("%s: usage %+v %q", r.CandidateID, r.Usage, r.UsageNote)
		}
		if r.Cost == nil || r.Cost.ModelUSD <= 0 || r.Cost.Unpriced != "" {
			t.Errorf("%s: cost %+v", r.CandidateID, r.Cost)
		}
	}
	for _, st := range rec.Standings {
		if st.Cost == nil || st.Cost.USD <= 0 || st.Cost.PerSuccessUSD == nil {
			t.Errorf("%s: standing's cost %+v", st.CandidateID, st.Cost)
		}
	}
	if !strings.Contains(stdout.String(), "COST") || !strings.Contains(stdout.String(), "/success)") {
		t.Errorf("the table shows no cost:\n%s", stdout)
	}
	if rec.Winner == nil || *rec.Winner != "terse" {
		t.Errorf("winner %v: %s (terse uses fewer tokens)", rec.Winner, rec.WinnerLine)
	}
	checkAgentTranscripts(t, filepath.Join(dir, "artifacts", "a1"), rec)
	if files := filesHolding(t, dir, key); len(files) > 0 {
		t.Errorf("the key is written in %v", files)
	}
	if strings.Contains(stdout.String()+stderr.String(), key) {
		t.Error("forge printed the key")
	}

	// On Daytona (the emulator) too; no request to the Daytona API holds
	// the key but the upload of the secrets file forge.sh reads and removes.
	// Its sandboxes reach the model on this machine's network, as real
	// ones reach the provider's.
	dsrv := daytonatest.Start(t, daytonatest.Options{HostNetwork: true})
	cmd, _, stderr = forgeCmd(dir, append(daytonaEnv(dsrv), "OPENAI_API_KEY="+key, "OPENAI_BASE_URL="+base),
		"run", "--daytona", "--no-fallback", "--run-id", "a3")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("--daytona: exit %d\n%s", code, stderr)
	}
	rec = readResults(t, filepath.Join(dir, "artifacts", "a3", "results.json"))
	if rec.Standings[0].Cost == nil {
		t.Error("--daytona: no cost")
	}
	checkAgentTranscripts(t, filepath.Join(dir, "artifacts", "a3"), rec)
	for _, c := range dsrv.CallLog() {
		if bytes.Contains(c.Body, []byte(key)) && !(c.Op == daytonatest.OpUploadFile && strings.HasSuffix(c.Query, "secrets")) {
			t.Errorf("%s %s holds the key", c.Method, c.Path)
		}
	}
	if files := filesHolding(t, dir, key); len(files) > 0 {
		t.Errorf("the key is written in %v", files)
	}
	checkEmulator(t, dsrv, key)

	// Without the key, forge refuses the run before anything starts.
	cmd, _, stderr = forgeCmd(dir, []string{"OPENAI_BASE_URL=" + base}, "run", "--run-id", "a2")
	if code := exitCodeOf(t, cmd.Run()); code != 2 || !strings.Contains(stderr.String(), "OPENAI_API_KEY (needed by terse, thorough)") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "artifacts", "a2")); err == nil {
		t.Error("a run without the key started")
	}
}
