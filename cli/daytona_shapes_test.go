package cli_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/forge-run/forge/internal/testkit/testfiles"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// The candidate shapes a user writes, each played on the emulator, whose
// sandboxes start as bare as the service's (a home holding only what its
// image put there): what forge uploads, or not, must never decide whether
// a candidate starts.
func TestDaytonaCandidateShapes(t *testing.T) {
	t.Parallel()
	const echo = `{id: a, command: ["sh", "-c", "echo hi > \"$FORGE_OUTPUT\""]}`
	// A task image: WORKDIR /app, where the candidate starts.
	image := map[string]string{"images/task/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\n"}
	for _, tc := range []struct {
		name, manifest string
		files          map[string]string
		trials         int
		want           string // the artifact of every trial
	}{
		{"command", "candidates:\n  - " + echo + "\n", nil, 1, "hi\n"},
		{"command in an environment", "environments:\n  tools:\n    build: ['mkdir -p bin']\n" +
			"defaults: {environment: tools, trials: 4}\ncandidates:\n  - " + echo + "\n", nil, 4, "hi\n"},
		{"command with files", "candidates:\n  - {id: a, command: [\"sh\", \"-c\", \"cat data/in.txt > \\\"$FORGE_OUTPUT\\\"\"], files: [data/in.txt]}\n",
			map[string]string{"data/in.txt": "from a file\n"}, 1, "from a file\n"},
		{"script", "candidates:\n  - {id: a, script: a.sh}\n", map[string]string{"a.sh": "echo hi > \"$FORGE_OUTPUT\"\n"}, 1, "hi\n"},
		{"command on a task image", "environments:\n  task: {dockerfile: images/task/Dockerfile}\n" +
			"defaults: {environment: task}\ncandidates:\n  - {id: a, command: [\"sh\", \"-c\", \"pwd > \\\"$FORGE_OUTPUT\\\"\"]}\n", image, 1, "/app\n"},
		{"script on a task image", "environments:\n  task: {dockerfile: images/task/Dockerfile}\n" +
			"defaults: {environment: task}\ncandidates:\n  - {id: a, script: a.sh}\n",
			mergeFiles(image, map[string]string{"a.sh": "pwd > \"$FORGE_OUTPUT\"\n"}), 1, "/app\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := daytonatest.Start(t, daytonatest.Options{})
			dir := t.TempDir()
			testfiles.Write(t, dir, mergeFiles(tc.files, map[string]string{
				"forge.yaml": "objective: x\n" + strings.Replace(tc.manifest, "defaults: {", "defaults: {timeout: 20s, output_file: a.txt, ", 1),
			}))
			if !strings.Contains(tc.manifest, "defaults:") {
				testfiles.Write(t, dir, map[string]string{"forge.yaml": "objective: x\ndefaults: {timeout: 20s, output_file: a.txt}\n" + tc.manifest})
			}
			rec, _, stderr := playDaytona(t, srv, dir, 0, "s1", "--quiet")
			if len(rec.Results) != tc.trials {
				t.Fatalf("%d results, want %d\n%s", len(rec.Results), tc.trials, stderr)
			}
			for _, r := range rec.Results {
				if !r.Success || r.ArtifactContent != tc.want {
					t.Errorf("trial %d: success %v, artifact %q, want %q (%s: %s)", r.Trial, r.Success, r.ArtifactContent, tc.want, r.ErrorKind, r.ErrorMessage)
				}
			}
			checkEmulator(t, srv, srv.APIKey())
		})
	}
}

// A claim forge.sh can never make (its directory read-only to the image's
// user) fails the job, as infra, with the path and the shell's error: not
// a wait until the timeout (which ended the job "timeout" before).
func TestDaytonaImpossibleClaimFailsAtOnce(t *testing.T) {
	t.Parallel()
	srv := harborEmulator(t)
	dir := t.TempDir()
	testfiles.Write(t, dir, map[string]string{
		"forge.yaml": "objective: x\nenvironments:\n  ro: {dockerfile: Dockerfile}\n" +
			"defaults: {environment: ro, timeout: 60s}\ncandidates:\n  - {id: a, command: [\"true\"]}\n",
		"Dockerfile": "FROM python:3.12-slim\nRUN useradd -m runner && mkdir /home/runner/forge && chmod 555 /home/runner/forge\nUSER runner\n",
	})
	rec, _, _ := playDaytona(t, srv, dir, 3, "c1", "--quiet")
	r := rec.Results[0]
	if r.ErrorKind != runner.ErrInfra || !strings.Contains(r.ErrorMessage, "/home/runner/forge/.forge-a.run.claim") ||
		!strings.Contains(r.ErrorMessage, "Permission denied") {
		t.Errorf("%s %q: want infra naming the claim and the shell's error", r.ErrorKind, r.ErrorMessage)
	}
	checkEmulator(t, srv, srv.APIKey())
}

func mergeFiles(a, b map[string]string) map[string]string {
	m := maps.Clone(a)
	if m == nil {
		m = map[string]string{}
	}
	maps.Copy(m, b)
	return m
}
