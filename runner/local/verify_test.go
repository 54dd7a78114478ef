//go:build linux

package local

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
)

// verifyJob is a candidate that writes answer.txt (and looks for the
// verifier's files first: a snooper), judged by a verifier whose check.sh
// compares it with its own expected.txt.
func verifyJob(t *testing.T, answer, command string) runner.Job {
	t.Helper()
	job := pyJob(t, "solver", `import os, sys
found = [p for p in (os.environ.get("FORGE_TESTS_DIR"), os.environ.get("FORGE_VERIFIER_LOGS")) if p]
open("answer.txt", "w").write(`+strconv.Quote(answer)+`)
open("snooped.txt", "w").write(repr(found))
`)
	job.ArtifactOptional = true
	job.Verify = &runner.Verify{
		Files: []runner.File{
			{Data: []byte("42\n"), Dst: "expected.txt"},
			{Data: []byte(`cmp -s answer.txt "$FORGE_TESTS_DIR/expected.txt" && r=1 || r=0
echo "checked: $r; snooped: $(cat snooped.txt); task: $TASK_NAME"
echo $r > "$FORGE_VERIFIER_LOGS/reward.txt"
`), Dst: "check.sh"},
		},
		Command: command,
		Env:     map[string]string{"TASK_NAME": "answer"},
	}
	return job
}

func TestVerifierRewardsWhatTheCandidateLeft(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	for _, c := range []struct {
		answer string
		reward float64
	}{{"42\n", 1}, {"41\n", 0}} {
		res := mustRun(t, r, verifyJob(t, c.answer, `sh "$FORGE_TESTS_DIR/check.sh"`))
		assertKind(t, res, runner.ErrNone)
		if res.Reward == nil || *res.Reward != c.reward {
			t.Errorf("answer %q: reward %v, want %v (log %q)", c.answer, res.Reward, c.reward, res.VerifierOutput)
		}
		if !strings.Contains(res.VerifierOutput, "snooped: []") || !strings.Contains(res.VerifierOutput, "task: answer") {
			t.Errorf("the verifier's log %q: the candidate saw the verifier's directories, or the verifier lacked its env", res.VerifierOutput)
		}
		if res.Phases.Verify <= 0 {
			t.Errorf("phases %+v: no verify", res.Phases)
		}
	}
}

func TestVerifierRunsAfterAFailedCandidate(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	job := verifyJob(t, "42\n", `sh "$FORGE_TESTS_DIR/check.sh"`)
	job.Command = append(job.Command[:len(job.Command):len(job.Command)], "--fail")
	job.Files = append(job.Files, runner.File{Data: []byte("import sys\nopen('answer.txt','w').write('42\\n')\nsys.exit(3)\n"), Dst: "solver.py"})
	res := mustRun(t, r, job)
	assertKind(t, res, runner.ErrCandidateFailed)
	if res.Reward == nil || *res.Reward != 1 {
		t.Errorf("reward %v after a failed candidate (log %q)", res.Reward, res.VerifierOutput)
	}
}

func TestVerifierWithoutRewardIsTheTasksFault(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	for _, c := range []struct {
		name, command, want string
		timeout             time.Duration
	}{
		{"none", "echo tests broke >&2; exit 4", "the verifier wrote no reward (reward.txt or reward.json in $FORGE_VERIFIER_LOGS; exit status 4: tests broke)", 0},
		{"garbage", `echo great > "$FORGE_VERIFIER_LOGS/reward.txt"`, `reward.txt holds "great", not a number`, 0},
		{"json", `echo '{"score": 1}' > "$FORGE_VERIFIER_LOGS/reward.json"`, `reward.json has no "reward"`, 0},
		{"timeout", "sleep 30", "the verifier ran past its timeout of 300ms", 300 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			job := verifyJob(t, "42\n", c.command)
			job.Verify.Timeout = c.timeout
			res := mustRun(t, r, job)
			assertKind(t, res, runner.ErrVerifyFailed)
			if res.ErrorMessage != c.want || res.Reward != nil {
				t.Errorf("message %q reward %v, want %q", res.ErrorMessage, res.Reward, c.want)
			}
			if res.ErrorKind.Fault() != runner.FaultTask || res.ErrorKind.Scored() {
				t.Errorf("verify_failed is fault %v, scored %v", res.ErrorKind.Fault(), res.ErrorKind.Scored())
			}
		})
	}
}

func TestVerifierMetricsFromRewardJSON(t *testing.T) {
	t.Parallel()
	r := newRunner(t, Options{})
	res := mustRun(t, r, verifyJob(t, "42\n", `echo '{"reward": 0.5, "passed": 2, "total": 4, "note": "x"}' > "$FORGE_VERIFIER_LOGS/reward.json"`))
	assertKind(t, res, runner.ErrNone)
	if res.Reward == nil || *res.Reward != 0.5 || res.Metrics["passed"] != 2 || res.Metrics["total"] != 4 || len(res.Metrics) != 2 {
		t.Errorf("reward %v metrics %v", res.Reward, res.Metrics)
	}
}
