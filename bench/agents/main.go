// Command agents measures what installing an agent once per image saves:
// one Harbor task (examples/harbor's create-file) played N times by the
// real claude-code (npm, the pinned version) against the fake model, on
// the Daytona emulator, with the agent
//
//   - installed once, a layer over the task's image (forge's agent:), and
//   - installed in every trial, in its own sandbox (Harbor's way: the
//     same install lines run by the candidate before the agent).
//
// For each it prints the wall time, the sandbox-seconds (the jobs' own
// time plus, for the layer, its one build) and the trials solved.
//
//	go run ./bench/agents [-trials 20] [-concurrency 4]
//
// It is a benchmark, not a test: it takes a few minutes (the npm registry
// is read once per install).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/forge-run/forge/agent"
	"github.com/forge-run/forge/agent/agenttest"
	"github.com/forge-run/forge/bench/internal/forgebin"
	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

const model = "claude-sonnet-4-5"

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench/agents", flag.ContinueOnError)
	fs.SetOutput(stderr)
	trials := fs.Int("trials", 20, "trials of the one task")
	concurrency := fs.Int("concurrency", 4, "jobs at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !daytonatest.RootFS() {
		return errors.New("the emulator needs root and overlayfs to give sandboxes the task's /app")
	}
	bin, tmp, remove, err := forgebin.Build("forge-bench-agents-", stderr)
	if err != nil {
		return err
	}
	defer remove()
	task := filepath.Join(tmp, "tasks", "create-file")
	if err := os.CopyFS(task, os.DirFS(filepath.Join(repoRoot(), "examples", "harbor", "tasks", "create-file"))); err != nil {
		return err
	}
	script := agenttest.Script{Rules: []agenttest.Rule{{When: "hello.txt", Turns: []agenttest.Turn{
		{Shell: `printf 'Hello from forge, 6 tasks to go!\n' > /app/hello.txt`, Text: "Creating it."}, {Text: "Done."},
	}}}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fake := agenttest.Serve(l, agenttest.Options{Script: script})
	defer fake.Close()
	spec, _ := agent.Builtin("claude-code")
	if err := os.WriteFile(filepath.Join(tmp, "per-trial.sh"), []byte(perTrialScript(spec)), 0o755); err != nil {
		return err
	}
	manifest := fmt.Sprintf("harbor: tasks\ndefaults: {trials: %d, concurrency: %d, timeout: 10m}\n"+
		"candidates:\n  - {id: per-trial, script: per-trial.sh, secrets: [ANTHROPIC_API_KEY], env: {AGENT_BASE: %q}}\n",
		*trials, *concurrency, fake.URL)
	if err := os.WriteFile(filepath.Join(tmp, "per-trial.yaml"), []byte(manifest), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "claude-code %s on one Harbor task, %d trials, concurrency %d, against the fake model on the Daytona emulator\n\n",
		spec.Version, *trials, *concurrency)
	fmt.Fprintf(stdout, "%-34s %8s %16s %8s\n", "agent installed", "wall", "sandbox-seconds", "solved")
	for _, round := range []struct {
		name string
		args []string
	}{
		{"once per image (forge's agent:)", []string{"--harbor", "tasks", "--agent", "claude-code", "--model", model,
			"--trials", strconv.Itoa(*trials), "--concurrency", strconv.Itoa(*concurrency)}},
		{"in every trial (Harbor's way)", []string{"-f", "per-trial.yaml"}},
	} {
		srv := daytonatest.NewServer(daytonatest.Options{HostNetwork: true})
		id := "r" + strconv.Itoa(len(round.name))
		cmd := exec.Command(bin, append([]string{"run", "--daytona", "--no-fallback", "--quiet", "--run-id", id}, round.args...)...)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "DAYTONA_API_KEY="+srv.APIKey(), "DAYTONA_API_URL="+srv.URL(),
			"ANTHROPIC_API_KEY="+fake.Key(), "ANTHROPIC_BASE_URL="+fake.URL)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		wall := time.Since(start)
		srv.Close()
		if err != nil {
			return fmt.Errorf("%s: %v\n%s", round.name, err, out.String())
		}
		rec, err := record.Read(filepath.Join(tmp, "artifacts", id, record.ResultsFile))
		if err != nil {
			return err
		}
		sandbox, solved := 0.0, 0
		for _, r := range rec.Results {
			sandbox += r.JobSeconds
			if r.Reward != nil && *r.Reward == 1 {
				solved++
			}
		}
		for _, e := range rec.Environments {
			sandbox += e.BuildSeconds // a build runs in a sandbox of its own
		}
		fmt.Fprintf(stdout, "%-34s %7.1fs %15.0fs %5d/%d\n", round.name, wall.Seconds(), sandbox, solved, len(rec.Results))
	}
	return nil
}

// perTrialScript installs the agent in the trial's own sandbox with the
// built-in's own install lines, then runs it as forge would: what a
// harness that installs per trial does.
func perTrialScript(s agent.Spec) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	fmt.Fprintf(&b, "export FORGE_AGENT_PREFIX=\"$HOME/.agent\" FORGE_AGENT_VERSION=%s FORGE_AGENT_IMAGE=1\n", s.Version)
	for _, line := range s.Install {
		fmt.Fprintf(&b, "( %s ) >&2 || exit 1\n", line)
	}
	b.WriteString("export PATH=\"$FORGE_AGENT_PREFIX/bin:$PATH\"\n")
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		fmt.Fprintf(&b, "export %s=%s\n", k, text.ShellQuote(s.Env[k]))
	}
	fmt.Fprintf(&b, "export FORGE_INSTRUCTION=\"$FORGE_OBJECTIVE\" FORGE_MODEL=%s FORGE_API_BASE=\"$AGENT_BASE\"\n", model)
	fmt.Fprintf(&b, "set --\n%s", s.Run)
	return b.String()
}

// repoRoot is the directory of forge's go.mod at or above the working
// directory (go run ./bench/agents runs from the repository).
func repoRoot() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}
