package cli

import (
	"fmt"

	"github.com/forge-run/forge/forge"
)

// checkGates returns one line per gate the finished run failed: --fail-under
// and the manifest's gates: block.
func checkGates(m *forge.Manifest, rec *forge.Record, failUnder float64, failUnderSet bool) []string {
	var failed []string
	if failUnderSet {
		if why := rec.BelowScore(failUnder); why != "" {
			failed = append(failed, fmt.Sprintf("--fail-under %.3g: %s", failUnder, why))
		}
	}
	return append(failed, m.Gates.Failed(rec)...)
}
