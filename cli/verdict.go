package cli

import (
	"fmt"
	"strings"

	"github.com/forge-run/forge/forge"
)

// gateFlags are the gates a finished run is held to besides the
// manifest's gates: (forge run, forge merge).
type gateFlags struct {
	out          string
	failUnder    float64
	failUnderSet bool
	baseline     string
	maxDrop      float64
	maxDropSet   bool
}

// verdict ends a finished run whose reports are written, as forge run and
// forge merge both do: a run with no verdict exits 3 (a candidate did not
// run: finish says how to finish it; shards not merged), a shard's own run
// exits 0 (its jobs ran; the verdict is forge merge's), and a whole run is
// held to its gates (exit 1 when one fails).
func verdict(env *Env, m *forge.Manifest, rec *forge.Record, g gateFlags, finish string) error {
	switch {
	case len(rec.MissingShards) > 0:
		fmt.Fprintf(env.Stderr, "forge: no verdict: %s not merged (its jobs are recorded cancelled); merge every shard for the verdict\n",
			forge.ShardsText(rec.MissingShards))
		return errSilent{code: ExitInfra}
	case len(rec.Incomplete) > 0:
		// Gates judge a verdict; an incomplete run has none.
		ids := make([]string, len(rec.Incomplete))
		for i, u := range rec.Incomplete {
			ids[i] = u.CandidateID
		}
		fmt.Fprintf(env.Stderr, "forge: no verdict: %s did not run; %s\n", strings.Join(ids, ", "), finish)
		return errSilent{code: ExitInfra}
	case rec.Shard != nil:
		fmt.Fprintf(env.Stderr, "forge: shard %s: %d of %d jobs played; forge merge the %d shards for the verdict\n",
			rec.Shard, rec.Shard.Jobs, rec.Shard.Of, rec.Shard.Count)
		return nil
	}
	failed := checkGates(m, rec, g.failUnder, g.failUnderSet)
	if g.baseline != "" {
		drops, err := baselineReport(env, g.out, g.baseline, rec, g.maxDrop, g.maxDropSet)
		if err != nil {
			return err
		}
		for _, d := range drops {
			failed = append(failed, "--max-drop: "+d)
		}
	}
	if len(failed) > 0 {
		for _, f := range failed {
			fmt.Fprintln(env.Stderr, "forge: gate failed: "+f)
		}
		return errSilent{code: ExitGateFailed}
	}
	return nil
}
