package daytona

import (
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// verifyJob writes answer into answer.txt after looking for the verifier's
// files; check.sh, uploaded only afterwards, rewards the right answer.
func (e *env) verifyJob(answer, command string) runner.Job {
	job := e.shJob("solver", `ls "$FORGE_TESTS_DIR" "$HOME/forge/.forge-solver.tests" 2>/dev/null > snooped.txt
printf '`+answer+`' > answer.txt
`)
	job.ArtifactOptional = true
	job.Verify = &runner.Verify{
		Files: []runner.File{
			{Data: []byte("42"), Dst: "expected.txt"},
			{Data: []byte{}, Dst: "empty/marker"},
			{Data: []byte(`cmp -s answer.txt "$FORGE_TESTS_DIR/expected.txt" && r=1 || r=0
echo "checked: $r; snooped: [$(cat snooped.txt)]; marker: $(ls "$FORGE_TESTS_DIR/empty"); task: $TASK_NAME"
echo $r > "$FORGE_VERIFIER_LOGS/reward.txt"
`), Dst: "check.sh"},
		},
		Command: command,
		Env:     map[string]string{"TASK_NAME": "answer"},
	}
	return job
}

func TestVerifierInTheSandbox(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	for _, c := range []struct {
		answer string
		reward float64
	}{{"42", 1}, {"41", 0}} {
		res := e.run(e.verifyJob(c.answer, `sh "$FORGE_TESTS_DIR/check.sh"`))
		if res.ErrorKind != runner.ErrNone || res.Reward == nil || *res.Reward != c.reward {
			t.Fatalf("answer %s: %s %q, reward %v, log %q", c.answer, res.ErrorKind, res.ErrorMessage, res.Reward, res.VerifierOutput)
		}
		if !strings.Contains(res.VerifierOutput, "snooped: []; marker: marker; task: answer") {
			t.Errorf("the verifier's log %q: the candidate saw its files, or it lacked its env or an empty file", res.VerifierOutput)
		}
		if res.Phases.Verify <= 0 {
			t.Errorf("phases %+v", res.Phases)
		}
	}
}

func TestVerifierFailuresAreTheTasks(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	for _, c := range []struct {
		command, want string
		timeout       time.Duration
	}{
		{"echo tests broke >&2; exit 4", "the verifier wrote no reward (reward.txt or reward.json in /", 0},
		{`echo '{"reward": "high"}' > "$FORGE_VERIFIER_LOGS/reward.json"`, `reward.json: "reward" is "high", not a number`, 0},
		{"sleep 30", "the verifier ran past its timeout of 1s", time.Second},
	} {
		job := e.verifyJob("42", c.command)
		job.Verify.Timeout = c.timeout
		res := e.run(job)
		if res.ErrorKind != runner.ErrVerifyFailed || !strings.HasPrefix(res.ErrorMessage, c.want) {
			t.Errorf("%s: %s %q, want verify_failed %q", c.command, res.ErrorKind, res.ErrorMessage, c.want)
		}
	}
	if n := len(e.srv.Live()); n != 0 {
		t.Errorf("%d sandboxes left", n)
	}
}

// A job with no network (network: none) gets a sandbox whose network is
// blocked: its candidate reaches its own loopback only.
func TestNoNetworkBlocksTheSandbox(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	job := e.shJob("offline", `echo done > "$2"`)
	job.NoNetwork = true
	if res := e.run(job); !res.Success {
		t.Fatalf("%s %q", res.ErrorKind, res.ErrorMessage)
	}
	if sbs := e.srv.Sandboxes(); len(sbs) != 1 || !sbs[0].NetworkBlockAll {
		t.Errorf("sandboxes %+v: want one, its network blocked", sbs)
	}
}

// BenchmarkVerify is a verifier's step on the emulator (its files'
// upload, forge.sh's verify mode, the report), one job at a time: the
// verify-s/job metric is phases.verify, the job's whole time job-s/job.
func BenchmarkVerify(b *testing.B) {
	e := newEnv(b, daytonatest.Options{}, nil)
	var verify, job float64
	for b.Loop() {
		res := e.run(e.verifyJob("42", `sh "$FORGE_TESTS_DIR/check.sh"`))
		if res.Reward == nil || *res.Reward != 1 {
			b.Fatalf("%s %q, reward %v", res.ErrorKind, res.ErrorMessage, res.Reward)
		}
		verify += res.Phases.Verify
		job += res.JobSeconds
	}
	b.ReportMetric(verify/float64(b.N), "verify-s/job")
	b.ReportMetric(job/float64(b.N), "job-s/job")
}
