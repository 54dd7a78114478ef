package cli_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-run/forge/cli"
	"github.com/forge-run/forge/internal/testkit/golden"
)

// TestHelpGolden pins every command's help text: a changed flag or wording
// shows up in review as a diff of testdata/help/*.txt (go test -update).
func TestHelpGolden(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"run", "--help"}, {"merge", "--help"}, {"validate", "--help"}, {"compare", "--help"},
		{"history", "--help"}, {"gc", "--help"}, {"doctor", "--help"}, {"view", "--help"}, {"report", "--help"}, {"version", "--help"},
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
			golden.Check(t, path, stdout.Bytes())
		})
	}
}
