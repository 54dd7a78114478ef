// Package compare reads finished runs back from their results.json and says
// what changed between two of them: per candidate, the mean score before and
// after, whether the change is statistically significant (Welch's t-test on
// the per-trial scores; for two suites the paired test over their common
// tasks, and which tasks changed), runtime, success rate and cost, and who
// won. It also lists the runs under an output root (History).
//
// It owns finding a run from what a user typed (a run id, a run directory or
// a results.json path), the comparison Report and its table, Markdown and
// JSON renderings, and the one-line-per-run history. It does not run
// candidates, score trials or rank standings: it takes the records the run
// wrote as they are, and borrows the significance test from scoring so a
// "regression" means the same thing as a "clear winner". It knows nothing of
// the command line: flags and exit codes live in cli.
package compare
