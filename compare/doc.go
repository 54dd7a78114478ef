// Package compare says what changed between two finished runs: per
// candidate, the score before and after, whether the change is significant
// (scoring's tests, so a "regression" means what a "clear winner" does),
// runtime, success and who won; and lists the runs under an output root
// (History). It finds a run from what a user typed (Resolve). It reads
// records through package record, never the engine (forge): it runs,
// scores and ranks nothing, and knows nothing of flags or exit codes.
package compare
