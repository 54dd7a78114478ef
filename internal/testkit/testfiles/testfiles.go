// Package testfiles writes the files a test sets up.
package testfiles

import (
	"os"
	"path/filepath"
	"testing"
)

// Write writes files (by slash-separated path, relative to dir) under dir,
// making their directories.
func Write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
