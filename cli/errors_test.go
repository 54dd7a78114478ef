package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// Each kind of error forge understands gets its hint, however deep it is
// wrapped; the hints that say how to go on need a run that ran.
func TestExplainHintsByKind(t *testing.T) {
	o := &runOptions{env: &Env{}, manifest: "forge.yaml", out: "artifacts", passAt: 1, reportOptions: reportOptions{format: "table"}}
	tm := &tournament{o: o, id: "r1"}
	ran := &record.Record{Backend: "daytona"}
	unusable := &runner.UnusableError{Kind: runner.ErrInfra, Err: errors.New("API unreachable")}
	failing := &runner.UnusableError{Kind: runner.ErrInfra, Err: &forge.FailingInfraError{Trials: 3, Trial: "a", Attempts: 3, Last: "503"}}
	for _, c := range []struct {
		err  error
		rec  *record.Record
		want string // a prefix, then "…" and a suffix
	}{
		{&forge.UnknownCandidateError{ID: "x", Manifest: "m"}, nil, `--only x: no candidate "x" in m…`},
		{&forge.NoTasksError{Manifest: "m"}, nil, "--tasks/--sample: m has no tasks to choose from"},
		{&forge.MissingSecretsError{Dir: "d"}, nil, "…(--allow-missing-secrets leaves out the candidates that need them)"},
		{fmt.Errorf("play: %w", unusable), ran, "play: infra: API unreachable; everything started has been cleaned up, partial results in " +
			filepath.Join("artifacts", "r1", "results.json")},
		{fmt.Errorf("play: %w", failing), ran, "play: infra: 3 trials…; once it works again, finish the run with: forge run --resume r1 --daytona"},
		{unusable, nil, "infra: API unreachable"},
		{errors.New("disk full"), ran, "disk full"},
		{&forge.MergeRefusedError{Msg: "shard 2/3 is missing", Why: forge.ShardsMissing}, nil, "shard 2/3 is missing; merge it too, or --allow-partial"},
		{&forge.MergeRefusedError{Msg: "a is not a shard", Why: forge.NotAShard}, nil, "a is not a shard (forge run --shard K/N plays a shard)"},
	} {
		got := explain(c.err, tm, c.rec).Error()
		prefix, suffix, cut := strings.Cut(c.want, "…")
		if !cut && got != c.want || cut && (!strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, suffix)) {
			t.Errorf("explain(%v) = %q, want %q", c.err, got, c.want)
		}
		if !errors.Is(explain(c.err, tm, c.rec), c.err) {
			t.Errorf("explain(%v) does not wrap it", c.err)
		}
	}
}
