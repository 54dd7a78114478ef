package cli_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-run/forge/internal/testkit/testfiles"
	"github.com/forge-run/forge/runner/daytona"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// TestDaytonaSuiteWithSecrets plays a small suite on the emulator with a
// secret: every job is a sandbox named and labelled by its task, the
// candidate gets its task and its secret, and the secret reaches the
// sandbox only through the file forge.sh reads and removes before the
// candidate starts: no create request, label, name, command line or other
// request holds it, no file is left with it, and setup lines see it only
// with setup_secrets.
func TestDaytonaSuiteWithSecrets(t *testing.T) {
	t.Parallel()
	const secret = "sk-suite-canary-8f14e45fceea167a"
	srv := daytonatest.Start(t, daytonatest.Options{})
	dir := t.TempDir()
	files := map[string]string{
		"forge.yaml": `objective: Add the numbers
tasks_file: tasks.jsonl
defaults: {concurrency: 4, secrets: [SUITE_KEY]}
candidates:
  - id: good
    script: good.sh
    setup: ['test -z "$SUITE_KEY"']
  - id: open
    script: good.sh
    setup: ['test -n "$SUITE_KEY"']
    setup_secrets: true
scoring:
  - type: artifact
    checks: [{equals_task: expected}]
daytona:
  network_allow_list: [203.0.113.0/24]
`,
		"tasks.jsonl": `{"id": "t1", "a": 1, "b": 2, "expected": "3"}
{"id": "t2", "a": 5, "b": 5, "expected": "10"}
`,
		"good.sh": `a=$(sed 's/.*"a":\([0-9]*\).*/\1/' "$FORGE_TASK")
b=$(sed 's/.*"b":\([0-9]*\).*/\1/' "$FORGE_TASK")
echo $((a + b)) > "$2"
echo "task $FORGE_TASK_ID key $SUITE_KEY"
if ls -a "$HOME"/forge | grep -q secrets; then echo "secrets file: left"; else echo "secrets file: gone"; fi
`,
	}
	testfiles.Write(t, dir, files)
	cmd, stdout, stderr := forgeCmd(dir, append(daytonaEnv(srv), "SUITE_KEY="+secret),
		"run", "--daytona", "--no-fallback", "--run-id", "s1", "--verbose")
	if code := exitCodeOf(t, cmd.Run()); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	rec := readResults(t, filepath.Join(dir, "artifacts", "s1", "results.json"))
	if len(rec.Results) != 4 || len(rec.Tasks) != 2 {
		t.Fatalf("%d results, %d tasks", len(rec.Results), len(rec.Tasks))
	}
	for _, r := range rec.Results {
		if !r.Success || r.Score == nil || *r.Score != 1 {
			t.Errorf("%s/%s: success %v score %v: %s", r.CandidateID, r.TaskID, r.Success, r.Score, r.ErrorMessage)
		}
		if want := "task " + r.TaskID + " key ***\nsecrets file: gone\n"; r.Output != want {
			t.Errorf("%s/%s printed %q, want %q", r.CandidateID, r.TaskID, r.Output, want)
		}
	}
	if files := filesHolding(t, dir, secret); len(files) > 0 {
		t.Errorf("the secret is written in %v", files)
	}
	if strings.Contains(stdout.String()+stderr.String(), secret) {
		t.Error("forge printed the secret")
	}

	// What the API saw.
	uploads := 0
	for _, c := range srv.CallLog() {
		holds := bytes.Contains(c.Body, []byte(secret)) || strings.Contains(c.Path+c.Query, secret)
		if holds && strings.HasSuffix(c.Query, "secrets") && c.Op == daytonatest.OpUploadFile {
			uploads++
			continue
		}
		if holds {
			t.Errorf("%s %s?%s holds the secret", c.Method, c.Path, c.Query)
		}
	}
	if uploads != 4 {
		t.Errorf("the secrets file was uploaded %d times, want once per job", uploads)
	}
	names := map[string]bool{}
	for _, sb := range srv.Sandboxes() {
		names[sb.Name] = true
		for k, v := range sb.Labels {
			if strings.Contains(k+v, secret) {
				t.Errorf("sandbox %s label %s holds the secret", sb.Name, k)
			}
		}
		if sb.Labels[daytona.LabelTask] == "" || sb.NetworkAllowList != "203.0.113.0/24" {
			t.Errorf("sandbox %s: labels %v, allow list %q", sb.Name, sb.Labels, sb.NetworkAllowList)
		}
		for _, c := range sb.Commands {
			if strings.Contains(c, secret) {
				t.Errorf("sandbox %s ran a command line holding the secret: %q", sb.Name, c)
			}
		}
	}
	if !names["forge-s1-good-t1-1"] || !names["forge-s1-open-t2-1"] {
		t.Errorf("sandbox names %v", names)
	}
	// Setup sees the secret only with setup_secrets: good's setup fails if
	// it sees it, open's if it does not, and every job succeeded.
	checkEmulator(t, srv, secret)
}
