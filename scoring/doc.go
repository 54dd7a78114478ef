// Package scoring turns a run's trials (record.Trial) into standings: it
// scores each trial with the manifest's scorers, normalises across
// candidates, aggregates trials with their uncertainty, ranks candidates
// (ties kept as ties) and names a winner only when one is clearly better.
//
// It is pure: trials in, standings out (Score, ScoreSuite). It does not run
// candidates or judges, read manifests from disk or print anything. Judges are
// user commands that forge runs after a successful trial; scoring only names
// them (Config.Judges), reads what one printed (ParseVerdict) and scores the
// verdicts the run stored in Trial.Judges. These are the only statistics
// forge computes: report and compare format them.
//
// # Scorers
//
// The manifest's scoring: list (Config; docs/manifest.md) names weighted
// scorers, each giving a trial a value in [0, 1]. A failed trial scores
// on_failure (default 0) on every scorer and takes no part in normalisation;
// a judge that failed gives no value, never a silent 0. A trial that ended by
// no fault of the candidate (infra, auth, cancelled) is not scored and does
// not count in the success rate. The zero Config means DefaultConfig.
//
// # Normalisation
//
// Per scorer, across all candidates' trial values:
//
//   - raw: the value is the score, clamped to [0, 1] (noted); 1 - value for
//     goal minimize. Default for success, artifact and judge.
//   - minmax: (v - min) / (max - min), reversed for minimize; all 1 when every
//     value is equal. Default for runtime and submitted.
//   - rank: 1 - (strictly better values) / (n - 1); equal values share the
//     better score.
//
// Runtimes are first put into noise groups (withinNoise: RuntimeNoise,
// RuntimeResolution), so identical candidates whose clocks jittered tie. A
// trial's composite is the weighted mean of its scorers' scores, the weights
// renormalised over those that have a value. Scores compare within a run,
// not across runs.
//
// # Statistics and ranking
//
// Per candidate, over its scored trials: the mean composite, the sample
// standard deviation and the 95% interval of the mean (BoundedCI95, which
// stays in [0, 1] where a Student-t interval does not; not bootstrap, which
// is unreliable at 3–10 trials). The success rate has a 95% Wilson interval;
// runtime figures are over successful trials. Summarize and Aggregate give the
// same figures for any sample or unscored record, WelchTest the same test.
//
// Candidates rank by mean score; those without results come last, tied. A
// candidate shares the rank of the group above it ("=2") when it cannot be
// told from that group's best: Welch's t-test, two-sided p ≥ 0.05 (with a
// single trial on one side, that side borrows the other's variance; with
// single trials on both, means within 1e-9). It is the test behind the winner
// line, so a shown tie and "no clear winner" always agree. Only neighbours are
// compared, so no multiple-comparison correction applies.
//
// # Winner
//
// The winner is rank 1 when it is alone there and succeeded at least once;
// Comparison records the test of rank 1 against rank 2 and WinnerLine says
// it (docs/results.md shows each form). A run that could not judge every
// candidate (Incomplete) names no winner.
//
// # Suites
//
// In a suite every candidate runs every task (ScoreSuite). A trial is
// normalised within its task, so a task slow for everyone costs nobody. A
// candidate's score is SummarizeTasks over its task scores (tasks, not
// trials, are the independent unit), with pass@k (PassAtK) and the tasks
// solved in its Standing.Suite. Candidates tie when ComparePaired over their
// common tasks is not significant, and the winner line gives the paired
// record.
//
// Outcome.Tasks lists tasks hardest first (lowest mean, then widest spread);
// Outcome.HeadToHead the wins, losses and ties of every pair.
package scoring
