package cli_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// fakeOpenAI is an OpenAI-compatible chat endpoint: it answers every
// request whose bearer token is key, shorter for a system prompt that asks
// for few sentences, and records what it was sent.
type fakeOpenAI struct {
	key string

	mu       sync.Mutex
	requests []fakeRequest
}

type fakeRequest struct {
	Auth, Model, System string
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model    string `json:"model"`
		Messages []struct{ Role, Content string }
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, `{"error": "bad request"}`, http.StatusBadRequest)
		return
	}
	req := fakeRequest{Auth: r.Header.Get("Authorization"), Model: body.Model}
	if len(body.Messages) > 0 {
		req.System = body.Messages[0].Content
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	if req.Auth != "Bearer "+f.key {
		http.Error(w, `{"error": {"message": "Incorrect API key provided"}}`, http.StatusUnauthorized)
		return
	}
	answer := "Each trial of a task is one draw from a noisy process, so a single trial cannot tell skill from luck; " +
		"several trials per task estimate the variance the comparison needs."
	tokens := 120
	if strings.Contains(req.System, "three sentences") {
		answer, tokens = "One trial is one noisy draw from the agent; several trials per task separate skill from luck.", 60
	}
	json.NewEncoder(w).Encode(map[string]any{
		"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": answer}}},
		"usage":   map[string]any{"total_tokens": tokens},
	})
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

// TestSampleAgent plays examples/agent against a fake OpenAI-compatible
// endpoint: the key reaches the agents (the endpoint saw it), the two
// prompts are told apart, and no byte of the key is written anywhere.
func TestSampleAgent(t *testing.T) {
	const key = "sk-agent-test-5d41402abc4b2a76"
	api := &fakeOpenAI{key: key}
	srv := httptest.NewServer(api)
	defer srv.Close()
	dir := copyExample(t, "agent")

	cmd, stdout, stderr := forgeCmd(dir, []string{"OPENAI_API_KEY=" + key, "OPENAI_BASE_URL=" + srv.URL + "/v1", "MODEL=fake-model"},
		"run", "--run-id", "a1", "--verbose")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	rec := readResults(t, filepath.Join(dir, "artifacts", "a1", "results.json"))
	for _, r := range rec.Results {
		if !r.Success {
			t.Errorf("%s: %s %s", r.CandidateID, r.ErrorKind, r.ErrorMessage)
		}
	}
	if len(api.requests) != 2 {
		t.Fatalf("the endpoint got %d requests, want 2", len(api.requests))
	}
	for _, r := range api.requests {
		if r.Auth != "Bearer "+key || r.Model != "fake-model" {
			t.Errorf("request %+v", r)
		}
	}
	if rec.Winner == nil || *rec.Winner != "terse" {
		t.Errorf("winner %v: %s (terse uses half the tokens)", rec.Winner, rec.WinnerLine)
	}
	if files := filesHolding(t, dir, key); len(files) > 0 {
		t.Errorf("the key is written in %v", files)
	}
	if strings.Contains(stdout.String()+stderr.String(), key) {
		t.Error("forge printed the key")
	}

	// On Daytona (the emulator) too; no request to the Daytona API holds
	// the key but the upload of the secrets file forge.sh reads and removes.
	dsrv := daytonatest.Start(t, daytonatest.Options{})
	cmd, _, stderr = forgeCmd(dir, append(daytonaEnv(dsrv), "OPENAI_API_KEY="+key, "OPENAI_BASE_URL="+srv.URL+"/v1", "MODEL=fake-model"),
		"run", "--daytona", "--no-fallback", "--run-id", "a3")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("--daytona: exit %d\n%s", code, stderr)
	}
	if len(api.requests) != 4 {
		t.Errorf("the endpoint got %d requests, want 4", len(api.requests))
	}
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
	cmd, _, stderr = forgeCmd(dir, []string{"OPENAI_BASE_URL=" + srv.URL + "/v1"}, "run", "--run-id", "a2")
	if code := exitCodeOf(t, cmd.Run()); code != 2 || !strings.Contains(stderr.String(), "OPENAI_API_KEY (needed by terse, thorough)") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if len(api.requests) != 4 {
		t.Errorf("a run without the key reached the endpoint")
	}
}
