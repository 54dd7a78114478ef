// Package cli is forge's command line: Main runs it in the process, Run in
// an Env (writers, environment, terminal, signals) that tests fill in.
//
// Each command is built in gh's way: newXCmd(env, runX) parses the flags
// into an options value, which also says which flags were given where that
// matters (seedSet, failUnderSet, maxDropSet), checks it (Validate) and
// hands it to runX, or to the function a test passes instead. forge run's
// is runTournament: prepare (load and plan), play on the backend chosen in
// backend.go, report, end (the verdict, verdict.go, as forge merge's).
//
// errors.go is the one place where errors become exit codes
// (docs/exit-codes.md), with the one table of the hints forge adds to
// errors it understands. The record's format, scoring, reports and the
// Daytona API are not cli's: forge, scoring, report, compare and
// runner/daytona own them.
package cli
