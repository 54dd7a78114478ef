package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/forge-run/forge/forge"
)

// ResultsFile is the name of the record every run writes in its directory.
const ResultsFile = "results.json"

// Resolve finds the results.json a user means by ref: a run id (looked up as
// <outRoot>/<id>/results.json), a run directory, or the path of a
// results.json itself. A run id under outRoot wins over a directory of the
// same name in the working directory. The path is checked to exist, not read.
func Resolve(ref, outRoot string) (string, error) {
	if ref == "" {
		return "", errors.New("empty run reference: give a run id, a run directory or a results.json path")
	}
	if forge.ValidID(ref) && outRoot != "" {
		dir := filepath.Join(outRoot, ref)
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			p := filepath.Join(dir, ResultsFile)
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("run %s: %s has no %s (did the run start?)", ref, dir, ResultsFile)
			}
			return p, nil
		}
	}
	fi, err := os.Stat(ref)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if forge.ValidID(ref) && outRoot != "" {
			return "", fmt.Errorf("run %s: no such run in %s, and no file or directory %s", ref, outRoot, ref)
		}
		return "", fmt.Errorf("run %s: no such file or directory", ref)
	case err != nil:
		return "", fmt.Errorf("run %s: %w", ref, err)
	case fi.IsDir():
		p := filepath.Join(ref, ResultsFile)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("run %s: directory has no %s", ref, ResultsFile)
		}
		return p, nil
	}
	return ref, nil
}

// Load reads a run's results.json. Its errors name the file and say what is
// wrong with it: missing, not JSON, or a schema_version this forge does not
// read.
func Load(path string) (*forge.Record, error) {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: no such file", path)
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	rec, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

// decode reads the bytes of a results.json.
func decode(b []byte) (*forge.Record, error) {
	// Check the version first, so a future schema is reported as such and
	// not as whatever field no longer decodes.
	var head struct {
		SchemaVersion *int `json:"schema_version"`
	}
	var syntax *json.SyntaxError
	switch err := json.Unmarshal(b, &head); {
	case len(bytes.TrimSpace(b)) == 0:
		return nil, errors.New("not a results.json: the file is empty")
	case errors.As(err, &syntax):
		return nil, fmt.Errorf("not a results.json: not JSON (at byte %d: %w)", syntax.Offset, err)
	case err != nil:
		return nil, fmt.Errorf("not a results.json: want a JSON object: %w", err)
	case head.SchemaVersion == nil:
		return nil, errors.New("not a results.json: no schema_version")
	case *head.SchemaVersion != forge.SchemaVersion:
		return nil, fmt.Errorf("schema_version %d, this forge reads %d", *head.SchemaVersion, forge.SchemaVersion)
	}
	var rec forge.Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("not a results.json: %w", err)
	}
	return &rec, nil
}

// Open is Resolve then Load.
func Open(ref, outRoot string) (*forge.Record, string, error) {
	path, err := Resolve(ref, outRoot)
	if err != nil {
		return nil, "", err
	}
	rec, err := Load(path)
	if err != nil {
		return nil, path, err
	}
	return rec, path, nil
}
