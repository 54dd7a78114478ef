package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// lingering is a candidate that leaves a writer rewriting reward.txt with 1
// (setsid: no session of forge's is its parent) and, on serve, a server;
// on planted it plants a reward once and leaves nothing.
const lingering = `mkdir -p /logs/verifier
if [ "$FORGE_TASK_ID" = planted ]; then echo 1 > /logs/verifier/reward.txt; exit 0; fi
setsid nohup sh -c 'while :; do echo 1 > /logs/verifier/reward.txt; sleep 0.05; done' >/dev/null 2>&1 &
if [ "$FORGE_TASK_ID" = serve ]; then
  echo served > /app/index.html
  setsid nohup python3 -m http.server 8765 --bind 127.0.0.1 --directory /app >/dev/null 2>&1 &
  for i in $(seq 50); do python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:8765/")' 2>/dev/null && break; sleep 0.1; done
fi
`

// lingeringTasks are the tasks lingering plays, on images whose Dockerfile
// ends with extra: partial's verifier writes reward.json only, silent's and
// planted's nothing, serve's asks the server the candidate left for its page.
func lingeringTasks(extra string) map[string]string {
	files := map[string]string{
		"forge.yaml":                  "harbor: tasks\ncandidates:\n  - id: a\n    script: a.sh\nscoring:\n  - type: verifier\n",
		"a.sh":                        lingering,
		"tasks/partial/tests/test.sh": "sleep 0.3; echo '{\"reward\": 0.25}' > /logs/verifier/reward.json\n",
		"tasks/silent/tests/test.sh":  "sleep 0.3; echo 'the verifier writes no reward'\n",
		"tasks/planted/tests/test.sh": "echo 'the verifier writes no reward'\n",
		"tasks/serve/tests/test.sh": `page=$(python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:8765/index.html").read().decode().strip())' 2>&1)
echo "page: $page"; sleep 0.3
[ "$page" = served ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
`,
	}
	for _, task := range []string{"partial", "silent", "planted", "serve"} {
		files["tasks/"+task+"/task.toml"] = "version = \"1.0\"\n"
		files["tasks/"+task+"/instruction.md"] = "Nothing to do.\n"
		files["tasks/"+task+"/environment/Dockerfile"] = "FROM python:3.12-slim\nWORKDIR /app\n" + extra
	}
	return files
}

// checkLingering fails unless each task's trial is judged by its verifier
// alone (serve's reward serve): partial 0.25, silent and planted
// verify_failed.
func checkLingering(t *testing.T, rec record.Record, serve float64) {
	t.Helper()
	if len(rec.Results) != 4 {
		t.Fatalf("%d results, want 4", len(rec.Results))
	}
	for _, r := range rec.Results {
		reward := "none"
		if r.Reward != nil {
			reward = fmt.Sprint(*r.Reward)
		}
		got := func() string {
			return fmt.Sprintf("%s: %s %s; verifier: %s", r.TaskID, r.ErrorKind, r.ErrorMessage, r.VerifierOutput)
		}
		switch r.TaskID {
		case "partial":
			if r.Reward == nil || *r.Reward != 0.25 {
				t.Errorf("reward %s, want 0.25: %s", reward, got())
			}
		case "silent", "planted":
			if r.ErrorKind != runner.ErrVerifyFailed || r.Reward != nil || !strings.Contains(r.ErrorMessage, "wrote no reward") {
				t.Errorf("reward %s, want verify_failed: %s", reward, got())
			}
		case "serve":
			if r.Reward == nil || *r.Reward != serve {
				t.Errorf("reward %s, want %v: %s", reward, serve, got())
			}
		}
	}
}

// What the candidate leaves running cannot write the reward forge reads
// (issue 41): the verifier has a reward directory of its own, in a mount
// namespace of its own, so the writer's 1 never counts, a reward planted
// once neither, and the server the candidate was asked to leave is still
// there for the verifier to test.
func TestDaytonaLingeringWriterDoesNotScore(t *testing.T) {
	t.Parallel()
	playLingering(t, "", "l1", 1)
}

// Where the sandbox allows no mount namespace (its image has no unshare),
// forge.sh ends everything the candidate left before the verifier runs:
// the writer is gone, and so is the server.
func TestDaytonaLingeringWriterEndedWithoutNamespaces(t *testing.T) {
	t.Parallel()
	playLingering(t, "RUN rm -f /usr/bin/unshare /usr/sbin/unshare\n", "l2", 0)
}

// playLingering plays lingering's tasks on images whose Dockerfile ends
// with extra, as run runID, and checks them (checkLingering, serve's reward
// serve) and the emulator after.
func playLingering(t *testing.T, extra, runID string, serve float64) {
	t.Helper()
	srv, dir := harborTasks(t, lingeringTasks(extra))
	rec, _, _ := playDaytona(t, srv, dir, 0, runID, "--quiet")
	checkLingering(t, rec, serve)
	checkEmulator(t, srv, srv.APIKey())
}
