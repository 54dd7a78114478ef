package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/compare"
	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
)

// gateOptions are the gates a finished run is held to besides the
// manifest's gates: (forge run, forge merge), and which were given.
type gateOptions struct {
	failUnder    float64
	failUnderSet bool
	baseline     string
	maxDrop      float64
	maxDropSet   bool
	// oracle: the run played the tasks' solutions (forge run --oracle),
	// which must solve every task.
	oracle bool
}

// addFlags registers the gates' flags; run says which run --baseline
// compares ("finished", "merged").
func (g *gateOptions) addFlags(cmd *cobra.Command, run string) {
	f := cmd.Flags()
	f.Float64Var(&g.failUnder, "fail-under", 0, "exit 1 when the best score (the winner's, or the tied best's) is below this (0..1)")
	f.StringVar(&g.baseline, "baseline", "", "compare the "+run+" run with `RUN` (a run id under --out, a run directory or a results.json)")
	f.Float64Var(&g.maxDrop, "max-drop", 0, "with --baseline: exit 1 when a candidate's score dropped significantly by more than this")
}

// Validate checks --fail-under and --max-drop.
func (g *gateOptions) Validate() error {
	return firstBroken([]rule{
		{g.failUnder < 0 || g.failUnder > 1, fmt.Sprintf("--fail-under %g: must be between 0 and 1", g.failUnder)},
		{g.maxDrop < 0 || g.maxDrop > 1, fmt.Sprintf("--max-drop %g: must be between 0 and 1", g.maxDrop)},
		{g.maxDropSet && g.baseline == "", "--max-drop needs --baseline"},
	})
}

// verdict ends a finished, reported run (forge run, forge merge): exit 3
// without a verdict (finish says how to finish it), 0 for a shard, else
// the gates decide (exit 1 when one fails). out is where --baseline is.
func (g *gateOptions) verdict(env *Env, out string, m *forge.Manifest, rec *record.Record, finish string) error {
	switch {
	case len(rec.MissingShards) > 0:
		fmt.Fprintf(env.Stderr, "forge: no verdict: %s not merged (its jobs are recorded cancelled); merge every shard for the verdict\n",
			forge.ShardsText(rec.MissingShards))
		return errSilent{code: ExitInfra}
	case len(rec.Incomplete) > 0:
		// Gates judge a verdict; an incomplete run has none. An image
		// that failed to build fails again: its file is to fix, and
		// replaying is no advice.
		broken, replayable := brokenImages(rec, out)
		for _, b := range broken {
			fmt.Fprintf(env.Stderr, "forge: no verdict: %s\n", text.Inert(b))
		}
		if len(replayable) > 0 {
			fmt.Fprintf(env.Stderr, "forge: no verdict: %s did not run; %s\n", strings.Join(replayable, ", "), finish)
		}
		return errSilent{code: ExitInfra}
	case rec.Shard != nil:
		fmt.Fprintf(env.Stderr, "forge: shard %s: %d of %d jobs played; forge merge the %d shards for the verdict\n",
			rec.Shard, rec.Shard.Jobs, rec.Shard.Of, rec.Shard.Count)
		return nil
	}
	var failed []string
	if g.failUnderSet {
		if why := rec.BelowScore(g.failUnder); why != "" {
			failed = append(failed, fmt.Sprintf("--fail-under %.3g: %s", g.failUnder, why))
		} else if score, ids, _ := rec.BestScore(); rec.Winner == nil {
			// Held without a winner (a tie): say whose score holds it.
			fmt.Fprintf(env.Stderr, "forge: --fail-under %.3g holds: the best score is %.3f (%s, not told apart)\n", g.failUnder, score, text.AndList(ids))
		}
	}
	if g.oracle {
		if unsolved := rec.Unsolved(); len(unsolved) > 0 {
			failed = append(failed, fmt.Sprintf("--oracle: the tasks' own solutions do not solve %d of %d %s: %s (a broken task, or its verifier)",
				len(unsolved), len(rec.Tasks), text.Plural(len(rec.Tasks), "task", "tasks"), strings.Join(unsolved, ", ")))
		}
	}
	failed = append(failed, m.Gates.Failed(rec)...)
	if g.baseline != "" {
		drops, err := baselineReport(env, out, g.baseline, rec, g.maxDrop, g.maxDropSet)
		if err != nil {
			return err
		}
		for _, d := range drops {
			failed = append(failed, "--max-drop: "+d)
		}
	}
	for _, f := range failed {
		fmt.Fprintln(env.Stderr, "forge: gate failed: "+f)
	}
	if len(failed) > 0 {
		return errSilent{code: ExitGateFailed}
	}
	return nil
}

// checkBaseline reads the run a --baseline names, so a bad reference is a
// usage error (exit 2) before anything starts.
func checkBaseline(outRoot, baselineRef string) error {
	if baselineRef == "" {
		return nil
	}
	if _, _, err := compare.Open(baselineRef, outRoot); err != nil {
		return withCode(ExitUsage, fmt.Errorf("--baseline: %w", err))
	}
	return nil
}

// baselineReport prints on stderr how head compares with --baseline and,
// when maxDropSet, returns a line per candidate that dropped by more than
// maxDrop.
func baselineReport(env *Env, outRoot, baselineRef string, head *record.Record, maxDrop float64, maxDropSet bool) (drops []string, err error) {
	base, _, err := compare.Open(baselineRef, outRoot)
	if err != nil {
		return nil, withCode(ExitUsage, fmt.Errorf("--baseline: %w", err))
	}
	rep := compare.Runs(base, head)
	fmt.Fprintln(env.Stderr)
	if err := compare.WriteTable(env.Stderr, rep, env.StderrTTY); err != nil {
		return nil, fmt.Errorf("print comparison with baseline %s: %w", baselineRef, err)
	}
	if maxDropSet {
		drops = rep.Drops(maxDrop)
	}
	return drops, nil
}
