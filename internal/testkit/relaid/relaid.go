// Package relaid lays JSON files out as another writer could (keys sorted,
// another indentation), for tests that hold readers to JSON, not a layout.
package relaid

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// Document rewrites the JSON file at path, keys sorted, indented with indent.
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

// sorted is b with its keys sorted, indented with indent or on one line.
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
