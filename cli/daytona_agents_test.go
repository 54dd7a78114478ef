package cli_test

import (
	"strings"
	"testing"

	"github.com/forge-run/forge/internal/testkit/testfiles"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// An agent on Harbor tasks, on the emulator: installed once per task image
// (a snapshot of the task's Dockerfile with the install on top, as root,
// built once for every trial), run in the image's WORKDIR with the task's
// instruction, and judged by the task's verifier.
func TestDaytonaAgentInstalledOncePerImage(t *testing.T) {
	t.Parallel()
	task := func(name, file string) map[string]string {
		return map[string]string{
			"tasks/" + name + "/task.toml":              "version = \"1.0\"\n",
			"tasks/" + name + "/instruction.md":         "Write hello into " + file + ".\n",
			"tasks/" + name + "/environment/Dockerfile": "FROM python:3.12-slim\nENV TASK=" + name + "\nWORKDIR /app\n",
			"tasks/" + name + "/tests/test.sh": "grep -qx hello /app/" + file + " && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n" +
				"echo \"path: $PATH\"\n",
		}
	}
	files := map[string]string{
		"forge.yaml": `harbor: tasks
defaults: {trials: 2}
agents:
  scribe:
    version: 0.1.0
    install:
      - echo "installing scribe $FORGE_AGENT_VERSION as $(id -un) into $FORGE_AGENT_PREFIX" && mkdir -p "$FORGE_AGENT_PREFIX/bin"
      - printf '#!/bin/sh\nf=$(printf %%s "$FORGE_INSTRUCTION" | sed -n "s/.* into \\(.*\\)\\./\\1/p")\necho hello > "$f"\necho "{\\"wrote\\":\\"$f\\",\\"model\\":\\"$FORGE_MODEL\\",\\"in\\":\\"$(pwd)\\"}"\n' > "$FORGE_AGENT_PREFIX/bin/scribe" && chmod +x "$FORGE_AGENT_PREFIX/bin/scribe"
    run: scribe
    log: none
candidates:
  - {agent: scribe, model: m1}
`,
	}
	maps2 := mergeFiles(mergeFiles(files, task("one", "hello.txt")), task("two", "greeting.txt"))
	srv := harborEmulator(t)
	dir := t.TempDir()
	testfiles.Write(t, dir, maps2)
	rec, _, stderr := playDaytona(t, srv, dir, 0, "a1", "--quiet")
	if len(rec.Results) != 4 {
		t.Fatalf("%d results, want 4\n%s", len(rec.Results), stderr)
	}
	for _, r := range rec.Results {
		if r.CandidateID != "scribe-m1" || r.Reward == nil || *r.Reward != 1 {
			t.Errorf("%s/%s trial %d: reward %v (%s %s)\n%s", r.CandidateID, r.TaskID, r.Trial, r.Reward, r.ErrorKind, r.ErrorMessage, r.Output)
		}
		if !strings.Contains(r.Output, `"model":"m1","in":"/app"`) {
			t.Errorf("%s trial %d: the agent did not run with its model in the image's WORKDIR: %q", r.TaskID, r.Trial, r.Output)
		}
	}
	// One snapshot per task image, each the task's Dockerfile and the
	// install over it; none of the task image alone.
	if n := srv.Calls(daytonatest.OpCreateSnapshot); n != 2 {
		t.Errorf("%d snapshots built, want 2 (one per task image)", n)
	}
	for _, sn := range srv.Snapshots() {
		if !strings.Contains(sn.Log, "installing scribe 0.1.0 as root into /opt/forge-agents/scribe") {
			t.Errorf("snapshot %s: the install did not run as root into /opt/forge-agents:\n%s", sn.Name, sn.Log)
		}
	}
	checkEmulator(t, srv, srv.APIKey())
}
