// Package wait polls a condition in a test until it holds or a deadline
// passes: the one way forge's tests wait for something they cannot be told
// of (a file appearing, a process ending, a count reaching a number).
package wait

import "time"

// T is what For needs of a test: testing.TB, or a testscript.TestScript.
type T interface {
	Fatalf(format string, args ...any)
}

// For checks cond every 10 ms until it holds, and fails t ("timed out
// waiting for what") if it still does not after limit.
func For(t T, what string, limit time.Duration, cond func() bool) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
