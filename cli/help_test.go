package cli_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-run/forge/cli"
)

var update = flag.Bool("update", false, "rewrite the golden help files")

// TestHelpGolden pins every command's help text: a changed flag or wording
// shows up in review as a diff of testdata/help/*.txt (go test -update).
func TestHelpGolden(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"run", "--help"}, {"validate", "--help"}, {"compare", "--help"},
		{"history", "--help"}, {"gc", "--help"}, {"doctor", "--help"}, {"version", "--help"},
	} {
		name := strings.TrimSuffix(strings.Join(args, "_"), "_--help")
		if name == "--help" {
			name = "forge"
		}
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := cli.Run(context.Background(), args, cli.Env{Stdout: &stdout, Stderr: &stderr})
			if code != 0 || stderr.Len() != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr.String())
			}
			path := filepath.Join("testdata", "help", name+".txt")
			if *update {
				if err := os.WriteFile(path, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./cli -run TestHelpGolden -update)", err)
			}
			if got := stdout.String(); got != string(want) {
				t.Errorf("help text changed; if intended, run go test ./cli -run TestHelpGolden -update\n--- got\n%s\n--- want\n%s", got, want)
			}
		})
	}
}
