package runner

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestVerifyTools(t *testing.T) {
	script := filepath.Join(t.TempDir(), "run.py")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env -S python3.12 -u\nprint(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"/bin/sh", "bash", "python3"}
	for _, c := range []struct {
		command string
		files   []File
		want    []string
	}{
		{"bash /tests/test.sh", []File{{Data: []byte("#!/bin/bash\nexit 0\n"), Dst: "test.sh"}}, append(base, "/bin/bash")},
		{`sh "$FORGE_TESTS_DIR/check.sh"`, []File{{Data: []byte("echo 1\n"), Dst: "check.sh"}}, append(base, "sh")},
		{`STRICT=1 uv run pytest`, nil, append(base, "uv")},
		{`"$FORGE_TESTS_DIR/run.py" --fast`, []File{{Src: script, Dst: "run.py"}}, append(base, "python3.12")},
		{`exec /usr/bin/node check.js`, nil, append(base, "/usr/bin/node")},
	} {
		v := &Verify{Command: c.command, Files: c.files}
		if got := v.Tools(); !slices.Equal(got, c.want) {
			t.Errorf("%s: tools %q, want %q", c.command, got, c.want)
		}
	}
}

func TestCheckTools(t *testing.T) {
	before := ToolPrints{"/bin/sh": {"/bin/sh", "a"}, "bash": {"/usr/bin/bash", "b"}, "python3": {"/usr/bin/python3", "c"}}
	for _, c := range []struct {
		name          string
		before, after ToolPrints
		want          []string
	}{
		{"same", before, ToolPrints{"/bin/sh": {"/bin/sh", "a"}, "bash": {"/usr/bin/bash", "b"}, "python3": {"/usr/bin/python3", "c"}}, nil},
		{"changed, moved, gone", before, ToolPrints{"/bin/sh": {"/bin/sh", "x"}, "bash": {"/tmp/bin/bash", "b"}}, []string{"/bin/sh", "/tmp/bin/bash", "/usr/bin/python3"}},
		{"one appeared", ToolPrints{"/bin/sh": {"/bin/sh", "a"}}, ToolPrints{"/bin/sh": {"/bin/sh", "a"}, "node": {"/usr/bin/node", "n"}}, nil},
		{"not looked at before", nil, ToolPrints{}, nil},
		{"not looked at after", before, nil, nil},
	} {
		var r Result
		r.CheckTools(c.before, c.after)
		if !slices.Equal(r.Tampered, c.want) {
			t.Errorf("%s: tampered %q, want %q", c.name, r.Tampered, c.want)
		}
	}
}
