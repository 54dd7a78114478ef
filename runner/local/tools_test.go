//go:build linux

package local

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/forge-run/forge/runner"
)

// toolsRunner is a Runner whose jobs run as forge's user with bin, a
// directory they may write, first on their PATH, holding a bash that runs
// the system's.
func toolsRunner(t *testing.T) (r *Runner, bash string) {
	t.Helper()
	bin := t.TempDir()
	bash = filepath.Join(bin, "bash")
	if err := os.WriteFile(bash, []byte("#!/bin/sh\nexec /bin/bash \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "PATH" {
			return bin + string(os.PathListSeparator) + os.Getenv("PATH")
		}
		return os.Getenv(k)
	}
	return newRunner(t, Options{User: UserRoot, Getenv: getenv}), bash
}

// A candidate that replaces the bash its verifier runs with one that
// writes a reward of 1 is judged (its reward counts) but marked tampered,
// naming the tool; an honest one on the same machine is not marked.
func TestTamperedToolIsMarked(t *testing.T) {
	t.Parallel()
	r, bash := toolsRunner(t)
	command := `bash "$FORGE_TESTS_DIR/check.sh"`

	honest := mustRun(t, r, verifyJob(t, "42\n", command))
	assertKind(t, honest, runner.ErrNone)
	if honest.Reward == nil || *honest.Reward != 1 || honest.Tampered != nil {
		t.Errorf("honest: reward %v, tampered %q (log %q)", honest.Reward, honest.Tampered, honest.VerifierOutput)
	}

	// Rewritten in place: the same inode, a new size and change time.
	cheat := pyJob(t, "cheat", `open(`+strconv.Quote(bash)+`, "w").write('#!/bin/sh\necho 1 > "$FORGE_VERIFIER_LOGS/reward.txt"\n')
open("answer.txt", "w").write("41\n")
`)
	cheat.ArtifactOptional = true
	cheat.Verify = verifyJob(t, "", command).Verify
	res := mustRun(t, r, cheat)
	assertKind(t, res, runner.ErrNone)
	if res.Reward == nil || *res.Reward != 1 || !slices.Equal(res.Tampered, []string{bash}) {
		t.Errorf("cheat: reward %v, tampered %q; want 1, [%s] (log %q)", res.Reward, res.Tampered, bash, res.VerifierOutput)
	}
}

// BenchmarkToolPrints is what the check adds to a job with a verifier:
// its tools fingerprinted twice, as the candidate starts and before the
// verifier.
func BenchmarkToolPrints(b *testing.B) {
	v := &runner.Verify{Command: `bash "$FORGE_TESTS_DIR/test.sh"`,
		Files: []runner.File{{Data: []byte("#!/usr/bin/env python3\n"), Dst: "test.sh"}}}
	path := os.Getenv("PATH")
	for b.Loop() {
		var res runner.Result
		res.CheckTools(toolPrints(v, path), toolPrints(v, path))
	}
}
