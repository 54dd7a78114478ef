package cli

import (
	"strconv"
	"strings"

	"github.com/forge-run/forge/internal/text"
)

// resumeCommand is the command line that finishes run runID: --resume with
// the flags that shape the run and where it writes (the run's backend, not
// the one asked for, which may have fallen back).
func resumeCommand(o *runOptions, backend, runID string) string {
	args := []string{"forge", "run", "--resume", runID}
	if o.manifest != "forge.yaml" {
		args = append(args, "-f", o.manifest)
	}
	if o.out != "artifacts" {
		args = append(args, "--out", o.out)
	}
	if backend == "daytona" {
		args = append(args, "--daytona")
	}
	if o.trials > 0 {
		args = append(args, "--trials", strconv.Itoa(o.trials))
	}
	if len(o.only) > 0 {
		args = append(args, "--only", strings.Join(o.only, ","))
	}
	if o.concurrency > 0 {
		args = append(args, "--concurrency", strconv.Itoa(o.concurrency))
	}
	if o.timeout > 0 {
		args = append(args, "--timeout", o.timeout.String())
	}
	if o.retries.set {
		args = append(args, "--retries", strconv.Itoa(o.retries.n))
	}
	if o.format != "table" {
		args = append(args, "--format", o.format)
	}
	if o.matrix {
		args = append(args, "--matrix")
	}
	if o.passAt != 1 {
		args = append(args, "--pass-at", strconv.Itoa(o.passAt))
	}
	for _, r := range o.reports {
		args = append(args, "--report", r)
	}
	for i, a := range args {
		args[i] = text.ShellWord(a)
	}
	return strings.Join(args, " ")
}
