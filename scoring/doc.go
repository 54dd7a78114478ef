// Package scoring turns results into standings: it scores each trial with the
// manifest's scorers, normalises across candidates, aggregates trials with
// their uncertainty, ranks candidates (ties kept as ties) and names a winner
// only when one is clearly better.
//
// It is pure: results in, standings out. It does not run candidates, read
// manifests from disk or print anything.
package scoring
