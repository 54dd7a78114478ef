// Package golden compares test output with a file under testdata/ and, with
// go test's -update flag, rewrites the file instead: the one rule for every
// golden file in forge's tests.
package golden

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files with the current output")

// Check fails t when got differs from the file at path, showing both; with
// -update it writes got to path.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run the test with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
