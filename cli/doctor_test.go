package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestShimNote: doctor names a python3 that is a script in front of the
// interpreter (a pyenv shim) with what one start costs, and says nothing
// of the interpreter itself.
func TestShimNote(t *testing.T) {
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	real := strings.TrimSpace(string(out))
	if note := shimNote(real); note != "" {
		t.Errorf("the interpreter %s: note %q, want none", real, note)
	}
	shim := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(shim, []byte("#!/bin/sh\nexec "+real+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if note := shimNote(shim); !strings.Contains(note, "a script in front of the interpreter (a shim?): each start takes ") {
		t.Errorf("a shim: note %q", note)
	}
}
