// Package cli is forge's command line: Main runs it in the process, Run in
// an Env (writers, environment, terminal, signals) that tests fill in.
//
// Each command is built in gh's way: newXCmd(env, runX) parses the flags
// into an options value, checks it (Validate) and hands it to runX, or to
// a test's function. errors.go alone turns errors into exit codes
// (docs/exit-codes.md). The record, scoring, reports and Daytona are not
// cli's.
package cli
