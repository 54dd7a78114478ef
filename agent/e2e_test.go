//go:build unix

package agent

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forge-run/forge/agent/agenttest"
	"github.com/forge-run/forge/runner"
)

// The real agent CLIs, run by their Specs' scripts against the fake model.
// With -record, each scenario's log is written to testdata/AGENT/ as a
// fixture of TestReadLogFixtures (then run that with -update).

var record = flag.Bool("record", false, "write the real agents' logs to testdata/ as ReadLog's fixtures")

// script is what the fake model answers in these tests.
var script = agenttest.Script{Rules: []agenttest.Rule{
	{When: "Create the file hello.txt", Turns: []agenttest.Turn{
		{Text: "I will create the file.", Shell: "echo hi > hello.txt && cat hello.txt"},
		{Text: "Created hello.txt."},
	}},
	{When: "Run the check that fails", Turns: []agenttest.Turn{
		{Shell: "echo checking; ls /nonexistent-dir; exit 3"},
		{Text: "The check failed with exit code 3."},
	}},
	{When: "Loop until stopped", Turns: []agenttest.Turn{{Shell: "echo again"}}},
}}

// scenario is one run of an agent.
type scenario struct {
	name     string
	prompt   string
	model    string // "": the agent's test model
	key      string // "": the fake's
	maxTurns string
	asUser   bool // as an unprivileged user (when the test runs as root)
}

// testModel is the model each agent is run with: one the agent knows by
// itself (codex warns of a model it has no metadata for).
var testModel = map[string]string{"claude-code": "claude-sonnet-4-5", "codex": "gpt-5.5"}

// run is what a scenario's run gave.
type run struct {
	stdout, stderr []byte
	exit           int
	took           time.Duration
	dir            string // its working directory
	log            Log
}

// apiBase is FORGE_API_BASE for the agent: claude-code's base is the
// Anthropic SDK's (no /v1), codex's the OpenAI SDK's (with /v1).
func apiBase(spec Spec, srv *agenttest.Server) string {
	if spec.Name == "codex" {
		return srv.OpenAIBase()
	}
	return srv.URL
}

// runScenario runs the agent's Run script as forge would: sh -c RUN, in a
// working directory of its own, with a fresh home.
func runScenario(t *testing.T, spec Spec, srv *agenttest.Server, sc scenario) run {
	t.Helper()
	bin := agenttest.CLI(t, spec.Name)
	binDir := filepath.Dir(bin)
	dir, home := t.TempDir(), t.TempDir()
	var cred *syscall.Credential
	if sc.asUser {
		if os.Getuid() != 0 {
			t.Skip("not root: the other scenarios run the agent as this user already")
		}
		binDir = userCopy(t, bin)
		cred = &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}
		for _, d := range []string{dir, home} {
			userDir(t, d)
		}
	}
	model, key := sc.model, sc.key
	if model == "" {
		model = testModel[spec.Name]
	}
	if key == "" {
		key = srv.Key()
	}
	env := []string{
		"PATH=" + binDir + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"FORGE_INSTRUCTION=" + sc.prompt,
		"FORGE_MODEL=" + model,
		"FORGE_MAX_TURNS=" + sc.maxTurns,
		"FORGE_API_BASE=" + apiBase(spec, srv),
		spec.KeyEnv + "=" + key,
	}
	for k, v := range spec.Env {
		env = append(env, k+"="+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", spec.Run, "sh")
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := run{stdout: stdout.Bytes(), stderr: stderr.Bytes(), took: time.Since(start), dir: dir}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.exit = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v", spec.Name, err)
	}
	t.Logf("%s %s: exit %d in %v", spec.Name, sc.name, r.exit, r.took.Round(time.Millisecond))
	if ctx.Err() != nil {
		t.Fatalf("%s did not end within its deadline; stderr:\n%s", spec.Name, r.stderr)
	}
	if *record && !sc.asUser {
		path := filepath.Join("testdata", spec.Name, sc.name+".jsonl")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, r.stdout, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r.log, err = ReadLog(spec.Log, bytes.NewReader(r.stdout)); err != nil {
		t.Fatalf("ReadLog: %v\nstdout:\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
	return r
}

// nobody is the unprivileged user a scenario runs as.
const nobody = 65534

// userDir makes dir, and the directories above it up to the temporary
// directory, reachable by nobody, and dir nobody's.
func userDir(t *testing.T, dir string) {
	t.Helper()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
}

// userCopy links the installed package of bin into a directory nobody can
// reach (the shared cache may be in root's home) and returns the copy's
// directory of bin. Hard links: the 400 MB are not copied.
func userCopy(t *testing.T, bin string) string {
	t.Helper()
	pkg := filepath.Dir(filepath.Dir(filepath.Dir(bin))) // DIR of DIR/node_modules/.bin/NAME
	dst := filepath.Join(t.TempDir(), "agent")
	userDir(t, filepath.Dir(dst))
	err := filepath.WalkDir(pkg, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(pkg, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		default:
			return os.Link(p, to)
		}
	})
	if err != nil {
		t.Fatalf("link %s for another user: %v", pkg, err)
	}
	return filepath.Join(dst, "node_modules", ".bin")
}

// wantUsage checks the log's tokens against what the fake answered.
func wantUsage(t *testing.T, got *runner.Usage, srv *agenttest.Server, model string) {
	t.Helper()
	want := runner.ModelUsage{Model: model}
	for _, r := range srv.Requests() {
		if r.Status == 200 && r.Model != "" && (r.Path == "/v1/messages" || r.Path == "/v1/responses") {
			want.InputTokens += int64(r.Usage.Input)
			want.CachedInputTokens += int64(r.Usage.Cached)
			want.OutputTokens += int64(r.Usage.Output)
		}
	}
	want.TotalTokens = want.InputTokens + want.OutputTokens
	if got == nil || len(got.Models) != 1 {
		t.Fatalf("usage %+v, want one model's", got)
	}
	g := got.Models[0]
	g.Calls = 0
	if g != want {
		t.Errorf("usage %+v, want %+v (what the fake answered)", g, want)
	}
}

func steps(l Log) string {
	var b strings.Builder
	for _, s := range l.Steps {
		b.WriteString(s.Role + "/" + s.Type + " ")
	}
	return strings.TrimSpace(b.String())
}

func toolResults(srv *agenttest.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		if len(r.ToolResults) > len(out) {
			out = r.ToolResults
		}
	}
	return out
}

func TestClaudeCode(t *testing.T) {
	spec, _ := Builtin("claude-code")
	t.Run("solve", func(t *testing.T) { t.Parallel(); solve(t, spec, false) })
	t.Run("solve-as-user", func(t *testing.T) { t.Parallel(); solve(t, spec, true) })
	t.Run("tool-fails", func(t *testing.T) { t.Parallel(); toolFails(t, spec) })
	t.Run("plain", func(t *testing.T) { t.Parallel(); plain(t, spec) })
	t.Run("refused-key", func(t *testing.T) { t.Parallel(); refusedKey(t, spec, "Invalid API key") })
	t.Run("unknown-model", func(t *testing.T) { t.Parallel(); unknownModel(t, spec, "claude-nope-1") })
	t.Run("max-turns", func(t *testing.T) {
		t.Parallel()
		srv := agenttest.Start(t, agenttest.Options{Script: script})
		r := runScenario(t, spec, srv, scenario{name: "max-turns", prompt: "Loop until stopped.", maxTurns: "2"})
		if r.exit == 0 || r.log.Error != "Reached maximum number of turns (2)" {
			t.Errorf("exit %d, error %q; want a failure at the turn limit", r.exit, r.log.Error)
		}
		if got := len(srv.Requests()); got != 2 {
			t.Errorf("%d model calls, want 2 (the limit)", got)
		}
	})
}

func TestCodex(t *testing.T) {
	spec, _ := Builtin("codex")
	t.Run("solve", func(t *testing.T) { t.Parallel(); solve(t, spec, false) })
	t.Run("solve-as-user", func(t *testing.T) { t.Parallel(); solve(t, spec, true) })
	t.Run("tool-fails", func(t *testing.T) { t.Parallel(); toolFails(t, spec) })
	t.Run("plain", func(t *testing.T) { t.Parallel(); plain(t, spec) })
	t.Run("refused-key", func(t *testing.T) { t.Parallel(); refusedKey(t, spec, "401 Unauthorized: Incorrect API key provided") })
	t.Run("unknown-model", func(t *testing.T) { t.Parallel(); unknownModel(t, spec, "gpt-nope-1") })
	t.Run("no-metadata", func(t *testing.T) {
		// A model codex has no metadata for: it says so, and goes on.
		t.Parallel()
		srv := agenttest.Start(t, agenttest.Options{Script: script})
		r := runScenario(t, spec, srv, scenario{name: "no-metadata", prompt: "Say hello.", model: "gpt-5-codex"})
		if r.exit != 0 || r.log.Error != "" || steps(r.log) != "system/event assistant/message" ||
			!strings.Contains(r.log.Steps[0].Text(), "Model metadata for `gpt-5-codex` not found") {
			t.Errorf("exit %d, error %q, steps %s; want the warning, then the answer", r.exit, r.log.Error, steps(r.log))
		}
	})
}

// solve: one shell call, its result, the final answer.
func solve(t *testing.T, spec Spec, asUser bool) {
	srv := agenttest.Start(t, agenttest.Options{Script: script})
	r := runScenario(t, spec, srv, scenario{name: "solve", prompt: "Create the file hello.txt containing hi.", asUser: asUser})
	if r.exit != 0 || r.log.Error != "" {
		t.Fatalf("exit %d, error %q; stderr:\n%s", r.exit, r.log.Error, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(r.dir, "hello.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("hello.txt: %q, %v; want hi", b, err)
	}
	if got, want := steps(r.log), "assistant/message assistant/tool_call tool/tool_result assistant/message"; got != want {
		t.Errorf("steps %s, want %s", got, want)
	}
	if got := toolResults(srv); len(got) != 1 || !strings.Contains(got[0], "hi") {
		t.Errorf("the model got tool results %q, want the command's output", got)
	}
	call, res := r.log.Steps[1], r.log.Steps[2]
	if call.ToolCallID == "" || res.ToolCallID != call.ToolCallID || !bytes.Contains(call.Tool.Arguments, []byte("echo hi")) {
		t.Errorf("tool call %+v and result %+v: want the command, linked by id", call, res)
	}
	model := ""
	if spec.Name == "claude-code" {
		model = testModel[spec.Name]
	}
	wantUsage(t, r.log.Usage, srv, model)
	if spec.Name == "claude-code" {
		// claude-code prices the tokens itself: $3, $0.30 and $15 per
		// million input, cached input and output tokens of Sonnet 4.5.
		m := r.log.Usage.Models[0]
		want := (float64(m.InputTokens-m.CachedInputTokens)*3 + float64(m.CachedInputTokens)*0.3 + float64(m.OutputTokens)*15) / 1e6
		if c := r.log.Usage.CostUSD; c == nil || math.Abs(*c-want) > 1e-9 {
			t.Errorf("cost %v, want %v", c, want)
		}
	}
}

// toolFails: the command exits 3; the result says so.
func toolFails(t *testing.T, spec Spec) {
	srv := agenttest.Start(t, agenttest.Options{Script: script})
	r := runScenario(t, spec, srv, scenario{name: "tool-fails", prompt: "Run the check that fails."})
	if r.exit != 0 || r.log.Error != "" {
		t.Fatalf("exit %d, error %q", r.exit, r.log.Error)
	}
	for _, s := range r.log.Steps {
		if s.Type == "tool_result" {
			if got := string(s.Extra["exit_code"]); got != "3" || !strings.Contains(s.Text(), "No such file") {
				t.Errorf("tool result %q with exit code %s, want the output and 3", s.Text(), got)
			}
			return
		}
	}
	t.Errorf("no tool result in %s", steps(r.log))
}

// plain: the model answers at once, with text.
func plain(t *testing.T, spec Spec) {
	srv := agenttest.Start(t, agenttest.Options{Script: script})
	r := runScenario(t, spec, srv, scenario{name: "plain", prompt: "Say hello."})
	if r.exit != 0 || r.log.Error != "" || steps(r.log) != "assistant/message" || r.log.Steps[0].Text() != "Done." {
		t.Errorf("exit %d, error %q, steps %s; want the answer Done.", r.exit, r.log.Error, steps(r.log))
	}
	if r.log.Turns != 1 {
		t.Errorf("%d turns, want 1", r.log.Turns)
	}
}

// refusedKey: the fake refuses the key; the agent ends soon, saying so.
func refusedKey(t *testing.T, spec Spec, words string) {
	srv := agenttest.Start(t, agenttest.Options{Script: script})
	r := runScenario(t, spec, srv, scenario{name: "refused-key", prompt: "Say hello.", key: "wrong-key"})
	if r.exit == 0 || !strings.Contains(r.log.Error, words) {
		t.Errorf("exit %d, error %q; want a failure saying %q", r.exit, r.log.Error, words)
	}
	// Ends soon: by the requests it made, not a clock (claude-code makes
	// 11 by default, 10 retries over 3 minutes).
	if n := len(srv.Requests()); n > 8 {
		t.Errorf("%d requests before giving up on a refused key", n)
	}
	for _, req := range srv.Requests() {
		if req.KeyOK || req.Status != 401 {
			t.Errorf("request %s %s: key ok %v, status %d; want refused", req.Method, req.Path, req.KeyOK, req.Status)
		}
	}
}

// unknownModel: the fake does not know the model; the agent ends at once.
func unknownModel(t *testing.T, spec Spec, model string) {
	srv := agenttest.Start(t, agenttest.Options{Script: script})
	r := runScenario(t, spec, srv, scenario{name: "unknown-model", prompt: "Say hello.", model: model})
	if r.exit == 0 || !strings.Contains(r.log.Error, model) {
		t.Errorf("exit %d, error %q; want a failure naming %s", r.exit, r.log.Error, model)
	}
	// At once: by the requests it made, not a clock.
	if n := len(srv.Requests()); n > 3 {
		t.Errorf("%d requests before giving up on an unknown model", n)
	}
}
