package compare

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// Resolve finds the results.json a user means by ref: a run id under
// outRoot (first), a run directory, or a results.json; it is not read.
func Resolve(ref, outRoot string) (string, error) {
	if ref == "" {
		return "", errors.New("empty run reference: give a run id, a run directory or a results.json path")
	}
	if runner.ValidID(ref) && outRoot != "" {
		dir := filepath.Join(outRoot, ref)
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			p := filepath.Join(dir, record.ResultsFile)
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("run %s: %s has no %s (did the run start?)", ref, dir, record.ResultsFile)
			}
			return p, nil
		}
	}
	fi, err := os.Stat(ref)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if runner.ValidID(ref) && outRoot != "" {
			return "", fmt.Errorf("run %s: no such run in %s, and no file or directory %s", ref, outRoot, ref)
		}
		return "", fmt.Errorf("run %s: no such file or directory", ref)
	case err != nil:
		return "", fmt.Errorf("run %s: %w", ref, err)
	case fi.IsDir():
		p := filepath.Join(ref, record.ResultsFile)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("run %s: directory has no %s", ref, record.ResultsFile)
		}
		return p, nil
	}
	return ref, nil
}

// Open is Resolve then record.Read.
func Open(ref, outRoot string) (*record.Record, string, error) {
	path, err := Resolve(ref, outRoot)
	if err != nil {
		return nil, "", err
	}
	rec, err := record.Read(path)
	return rec, path, err
}
