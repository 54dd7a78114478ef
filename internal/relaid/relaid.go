// Package relaid rewrites JSON files as another writer could lay them out,
// for tests that hold readers to reading JSON, not a layout: keys sorted
// (what jq -S makes), another indentation.
package relaid

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// Document rewrites the JSON document at path indented with indent, its
// objects' keys sorted.
func Document(path, indent string) error {
	return rewrite(path, func(b []byte) ([]byte, error) { return sorted(b, indent) })
}

// Lines rewrites the JSON Lines file at path: each line's keys sorted.
func Lines(path string) error {
	return rewrite(path, func(b []byte) ([]byte, error) {
		var out []byte
		for line := range bytes.Lines(b) {
			s, err := sorted(line, "")
			if err != nil {
				return nil, err
			}
			out = append(append(out, s...), '\n')
		}
		return out, nil
	})
}

func rewrite(path string, edit func([]byte) ([]byte, error)) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if b, err = edit(b); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, b, 0o644)
}

// sorted is b with its objects' keys sorted (a map's keys are marshalled
// in order), indented with indent, or on one line without.
func sorted(b []byte, indent string) ([]byte, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	if indent == "" {
		return json.Marshal(v)
	}
	return json.MarshalIndent(v, "", indent)
}
