// Package forgebin builds the forge a bench program plays.
package forgebin

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// Build builds forge, from the repository the working directory is in,
// into a fresh temporary directory (pattern as os.MkdirTemp's), which the
// bench uses for its files too (every user may search it) and removes
// with remove. go build's errors go to stderr.
func Build(pattern string, stderr io.Writer) (bin, dir string, remove func(), err error) {
	dir, err = os.MkdirTemp("", pattern)
	if err != nil {
		return "", "", nil, err
	}
	remove = func() { os.RemoveAll(dir) }
	// As root, forge's jobs run as users of their own, who must reach
	// their files in it (an environment cache, say).
	if err := os.Chmod(dir, 0o755); err != nil {
		remove()
		return "", "", nil, err
	}
	bin = filepath.Join(dir, "forge")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = repoRoot()
	build.Stderr = stderr
	if err := build.Run(); err != nil {
		remove()
		return "", "", nil, fmt.Errorf("go build: %w", err)
	}
	return bin, dir, remove, nil
}

// repoRoot is the directory of forge's go.mod at or above the working
// directory; the working directory when there is none.
func repoRoot() string {
	wd, _ := os.Getwd()
	for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/forge-run/forge\n")) {
			return d
		}
	}
	return wd
}
