// Package scoring turns results into standings: it scores each trial with the
// manifest's scorers, normalises across candidates, aggregates trials with
// their uncertainty, ranks candidates (ties kept as ties) and names a winner
// only when one is clearly better.
//
// It is pure: results in, standings out (Score). It does not run candidates
// or judges, read manifests from disk or print anything. Judges are user
// commands that forge runs after a successful trial, as jobs of the local
// runner under the same containment as candidates; scoring only names them
// (Config.Judges) and reads what one printed (ParseVerdict), and Score
// reads the verdicts the run stored in Result.Judges.
//
// # Scorers
//
// The manifest's scoring: list (Config) names scorers, each with a weight
// (default 1). Every scorer gives each trial a value in [0, 1]:
//
//   - success: 1 when the trial succeeded (exit 0 and artifact present).
//   - runtime: RuntimeSeconds of successful trials; faster is better.
//   - submitted: a top-level number of the candidate's FORGE_RESULT object,
//     goal maximize (default) or minimize. A successful trial that did not
//     submit a finite number there scores on_failure, and the standing
//     notes it: the candidate did not deliver its metric.
//   - artifact: the fraction of its checks the artifact passes (contains,
//     regex, min_bytes/max_bytes, json pointer exists / equals / min–max).
//   - judge: the score a judge command printed (see ParseVerdict). A judge
//     that failed gives the trial no value for that scorer: the trial's
//     composite is the weighted mean of its other scorers, and the standing
//     counts and notes the failure. It is never silently scored 0.
//
// A failed trial scores on_failure (default 0) on every scorer and takes no
// part in normalisation. A trial that ended by no fault of the candidate
// (error kind infra, auth or cancelled: the backend failed or the run was
// interrupted) is not scored at all (Score nil) and does not count in the
// success rate; the standing notes it. The zero Config means DefaultConfig: success
// (weight 1) and runtime (weight 0.2, minmax), so success dominates and
// speed breaks ties between successful candidates.
//
// # Normalisation
//
// Normalisation is per scorer, across all candidates' trial values (every
// successful trial with a value is pooled):
//
//   - raw: the value is already a score. Values outside [0, 1] are clamped
//     and the standing notes it; with goal minimize the score is 1 - value.
//     Default for success, artifact and judge; refused for runtime.
//   - minmax: (v - min) / (max - min), reversed for minimize, so the best
//     trial scores 1 and the worst 0. When every value is equal all score 1.
//     Default for runtime and submitted.
//   - rank: 1 - (number of strictly better values) / (n - 1): best 1, worst
//     0, equal values share the better score (as standings share ranks); a
//     single value scores 1.
//
// Runtimes are first put into noise groups (as Criterion's noise
// threshold): from the fastest up, a group takes every runtime less than
// max(5%, 10 ms) above its fastest, and each runtime counts as its group's
// fastest (RuntimeNoise, RuntimeResolution). Identical candidates whose
// clocks jittered by a few milliseconds therefore tie instead of being
// spread over [0, 1] by minmax; runtimes further apart keep their measured
// values. runtime_seconds itself is the candidate's own execution (see
// runner.Result), never the queue or the sandbox's creation.
//
// The trial's composite score is the weighted mean of its scorers' scores
// (weights renormalised over the scorers that have a value for it). With
// cross-candidate normalisation a trial's score depends on the other
// candidates' trials: scores compare within a run, not across runs.
//
// # Statistics
//
// Per candidate, over its scored trials: the mean composite score, the
// sample standard deviation (n-1), and the 95% confidence interval of the
// mean, BoundedCI95 (below): a score lies in [0, 1] and so does its
// interval, which a Student-t interval does not respect (a candidate
// failing 2 of 5 trials would get one reaching -0.25). Not bootstrap, which
// is unreliable at the 3–10 trials forge typically runs. The success rate
// comes with a 95% Wilson score interval (over all trials). Runtime mean,
// sample standard deviation and median are over successful trials.
//
// These are the only statistics forge computes: report and compare format
// them. Summarize gives them for any sample, Aggregate the standing of a
// candidate in a record that has results but was never scored, and
// WelchTest compares two samples' means as the standings do.
//
// # Ranking and ties
//
// Candidates rank by mean score, descending; candidates without results
// come last and tie with each other. A candidate shares the rank of the
// group above it ("=2") when it cannot be told from that group's best:
//
//   - both have at least two scored trials: Welch's unequal-variances t-test
//     (Welch–Satterthwaite degrees of freedom) gives two-sided p ≥ 0.05, i.e.
//     the 95% interval of the difference of means contains 0. Two-sided,
//     because which candidate is "first" was itself read off the data;
//   - one side has a single scored trial: the same test borrowing the other
//     side's variance (df = its n - 1);
//   - both have a single scored trial: the means are within 1e-9.
//
// Zero variance on both sides makes any difference certain (p = 0) and
// equal means a tie (p = 1). This rule is stricter than "the two 95%
// intervals overlap" (which would call many real differences ties) and is
// exactly the test behind the winner line, so a shown tie and "no clear
// winner" always agree. No correction for multiple comparisons is applied:
// only neighbours are compared.
//
// # Winner
//
// The winner is rank 1 when it is alone at rank 1 and succeeded at least
// once; nobody wins when nobody succeeded. Comparison records the test of
// rank 1 against rank 2, and WinnerLine says it in words:
//
//	winner: beta (0.81 ± 0.04), 1.24× alpha, p = 0.003
//	no clear winner: beta and alpha overlap (0.81 ± 0.04 vs 0.78 ± 0.05, p = 0.31)
//	winner: beta (0.81), 1.24× alpha (single trial; use --trials N for confidence)
//	no winner: no candidate succeeded
//
// where "± x" is the half-width of the 95% interval and "1.24×" the ratio of
// mean scores.
//
// A run that could not judge every candidate names no winner. A trial that
// ended by no fault of its candidate (infra, auth, cancelled: see
// runner.ErrorKind.Fault) is not scored; when some candidate has no other
// trial, or no result at all, the standings are incomplete: Incomplete
// lists those candidates and the line says why, e.g.
//
//	incomplete: c3 and c4 did not run (infra: Total CPU limit exceeded. Maximum allowed: 4.)
//
// When every candidate has at least one trial that ran to an end, the
// winner is decided on those and the line carries a note:
//
//	winner: beta (0.81 ± 0.04), 1.24× alpha, p = 0.003; 1 trial not scored (alpha trial 3: infra: …)
//
// # Suites
//
// In a suite every candidate runs every task, several trials each. These
// statistics are computed here too and nowhere else; they are pure
// functions that the standings and reports call:
//
//   - PassAtK: the unbiased pass@k of Chen et al. (2021, "Evaluating Large
//     Language Models Trained on Code"), 1 - C(n-c, k)/C(n, k) for c
//     successes in n trials, computed as a product; defined for n ≥ k ≥ 1.
//   - SummarizeTasks: a candidate's task score is the mean of its trials'
//     composite scores; its suite score is the weighted mean of its task
//     scores, with the standard error taken across tasks (trials averaged
//     within each task first), the clustered estimate that Miller (2024,
//     "Adding Error Bars to Evals", arXiv:2411.00640) recommends because
//     trials of one task are not independent:
//     SE = sqrt(n/(n-1) · Σ w_i²(t_i - m)²) / Σ w_i over n tasks.
//   - BoundedCI95: the 95% interval of a mean of scores in [0, 1] never
//     leaves [0, 1]. It is the Wilson score interval with the effective
//     sample size n_eff = m(1-m)/se² (Korn & Graubard 1998) and Student's
//     t with units-1 degrees of freedom in place of z. Far from 0 and 1 and
//     with many units it is the t-interval; with no spread it is [m, m],
//     except at 0 or 1, where the units can only be 0/1 outcomes all alike
//     and it is the Wilson interval of n in n (30 tasks all passed: [0.88,
//     1], not [1, 1]). 0/1
//     data give n_eff = n - 1, an interval wider than the ordinary Wilson
//     interval of the success rate, because the variance is estimated.
//   - ComparePaired: two candidates over the tasks both have scores for.
//     Wins, losses and ties (within 1e-9) of A over B, the mean difference
//     with its 95% paired-t interval, and a two-sided p-value from the
//     Wilcoxon signed-rank test when there are fewer than 30 tasks or the
//     differences fail the Jarque–Bera normality test (p < 0.05), else from
//     the paired t-test. Wilcoxon drops zero differences (Wilcoxon's
//     method), gives tied |differences| their average rank, and is exact
//     (the permutation distribution given the ties) up to 50 non-zero
//     differences, normal with tie and continuity corrections above.
//
// ScoreSuite puts them together. A trial is scored within its task:
// normalisation pools the task's trials across candidates, so a task that
// is slow for everyone costs nobody. A candidate's standing then has
// Score = its suite score with the interval over tasks (Standing.Suite:
// tasks scored, tasks solved, pass@k), a trial passing its task when it
// succeeds with a full score (Passed). Candidates rank by suite score; a
// candidate ties with the group above it when ComparePaired over their
// common tasks is not significant, and the winner line says the paired
// record:
//
//	winner: alpha 0.81 ± 0.04 over 40 tasks; beats beta on 23, loses 9, ties 8 (paired t, p = 0.003)
//
// The per-task matrix (Outcome.Tasks) lists tasks hardest first (lowest
// mean task score, then the widest spread across candidates), and
// Outcome.HeadToHead the wins, losses and ties of every pair. A candidate
// with a task on which no trial ran to an end leaves the standings
// incomplete, as a candidate without a scored trial does.
package scoring
