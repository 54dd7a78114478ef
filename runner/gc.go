package runner

import (
	"fmt"
	"io"
)

// GCTally writes and counts forge gc's lines, the same on every backend.
type GCTally struct {
	W      io.Writer
	DryRun bool
	// Deleted counts what was deleted (in a dry run: what would be).
	Deleted, Kept, Failed int
}

// Keep says desc stays, and why.
func (t *GCTally) Keep(desc, why string) {
	fmt.Fprintf(t.W, "keep    %s: %s\n", desc, why)
	t.Kept++
}

// Delete says desc was deleted, or in a dry run, would be.
func (t *GCTally) Delete(desc string) {
	if t.DryRun {
		fmt.Fprintf(t.W, "would delete %s\n", desc)
	} else {
		fmt.Fprintf(t.W, "deleted %s\n", desc)
	}
	t.Deleted++
}

// Fail says desc could not be deleted, and why.
func (t *GCTally) Fail(desc, why string) {
	fmt.Fprintf(t.W, "FAILED  %s: %s\n", desc, why)
	t.Failed++
}

// Summary is the closing line: "gc: WHAT: deleted N, kept N, failed N".
func (t *GCTally) Summary(what string) {
	verb := "deleted"
	if t.DryRun {
		verb = "would delete"
	}
	if what != "" {
		what += ": "
	}
	fmt.Fprintf(t.W, "gc: %s%s %d, kept %d, failed %d\n", what, verb, t.Deleted, t.Kept, t.Failed)
}
