package record

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/forge-run/forge/runner"
)

// TestTrialJSON: a trial is one flat object in the order records have
// always had, Trial's own keys among runner.Result's, sandbox_id and
// error_message last and null when empty, score null when unscored; it
// reads back whole.
func TestTrialJSON(t *testing.T) {
	two, half := 2.0, 0.5
	tr := Trial{Result: runner.Result{CandidateID: "alpha", Trial: 1, Backend: "local", Success: true, Resources: &runner.Resources{CPU: 1},
		Reward: &half, Metrics: map[string]float64{"m": 1}, VerifierLogBytes: 3},
		Checks: []CheckResult{{Name: "c", Passed: 1, Of: 1}}, SecretInArtifact: true, Cost: &Cost{USD: 1},
		Attempts: 2, Environment: "sha256:e", AttemptErrors: []AttemptError{{Kind: runner.ErrInfra, Message: "m"}},
		Judges: []JudgeResult{{Name: "j"}}, PassMark: &two}
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	keys := func(b []byte) []string {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.Token()
		var out []string
		for dec.More() {
			k, _ := dec.Token()
			out = append(out, k.(string))
			var skip json.RawMessage
			dec.Decode(&skip)
		}
		return out
	}
	want := "candidate_id trial backend success exit_code output stderr output_truncated artifact_content artifact_path artifact_bytes " +
		"artifact_truncated checks secret_in_artifact submitted resources cost runtime_seconds job_seconds phases started_at finished_at " +
		"error_kind attempts environment attempt_errors judges reward metrics pass_mark verifier_log_bytes score sandbox_id error_message"
	if got := strings.Join(keys(b), " "); got != want {
		t.Errorf("keys\n%s\nwant\n%s", got, want)
	}
	for _, w := range []string{`"sandbox_id":null`, `"error_message":null`} {
		if !bytes.Contains(b, []byte(w)) {
			t.Errorf("%s lacks %s", b, w)
		}
	}
	var back Trial
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, tr) {
		t.Errorf("round trip: %v\n%+v\nwant\n%+v", err, back, tr)
	}
	tr.SandboxID, tr.ErrorMessage, tr.Checks, tr.PassMark = "sb-1", "boom", nil, nil
	if b, _ = json.Marshal(tr); !bytes.Contains(b, []byte(`"score":null,"sandbox_id":"sb-1","error_message":"boom"}`)) {
		t.Errorf("%s: want score null, then sandbox_id and error_message", b)
	}
}
