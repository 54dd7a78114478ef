package cli_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/testkit/testfiles"
	"github.com/forge-run/forge/internal/testkit/wait"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local/localtest"
)

// TestKilledRunResumes: a suite run killed with SIGKILL at a random
// moment (after a random number of jobs finished, printed for replay) and
// then resumed ends with every job judged once: in results.json exactly
// once, none cancelled; a job that had finished before the kill (its line
// in the journal) was not played again, and only the jobs running at the
// kill were played twice.
func TestKilledRunResumes(t *testing.T) {
	t.Parallel()
	const tasks, conc = 20, 4
	seed := time.Now().UnixNano()
	if s := os.Getenv("FORGE_KILL_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	kill := rand.New(rand.NewPCG(uint64(seed), 0)).IntN(3*tasks - conc)
	t.Logf("seed %d: killed once %d jobs finished (FORGE_KILL_SEED=%d to replay)", seed, kill, seed)

	dir := localtest.TempDir(t)
	plays := filepath.Join(localtest.SharedDir(t), "plays.log")
	// Every job appends to it, whichever user it runs as.
	if err := os.WriteFile(plays, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(plays, 0o666); err != nil {
		t.Fatal(err)
	}
	// Each job notes that it ran; c fails every fifth task (a candidate's
	// failure is a verdict, never played again).
	script := `echo "$FORGE_CANDIDATE_ID $FORGE_TASK_ID" >> "$PLAYS"
sleep 0.05
n=${FORGE_TASK_ID#t}
if [ "$FORGE_CANDIDATE_ID" = c ] && [ $((n % 5)) -eq 0 ]; then echo "no answer" >&2; exit 1; fi
echo "$n" > "$2"
`
	var taskLines strings.Builder
	for i := 1; i <= tasks; i++ {
		fmt.Fprintf(&taskLines, "{\"id\": \"t%d\", \"expected\": \"%d\"}\n", i, i)
	}
	files := map[string]string{
		"a.sh": script, "b.sh": script, "c.sh": script,
		"tasks.jsonl": taskLines.String(),
		"forge.yaml": fmt.Sprintf(`objective: answer with the task number
tasks_file: tasks.jsonl
defaults: {concurrency: %d, env: {PLAYS: %q}}
candidates: [{id: a, script: a.sh}, {id: b, script: b.sh}, {id: c, script: c.sh}]
scoring: [{type: artifact, checks: [{equals_task: expected}]}]
`, conc, plays),
	}
	testfiles.Write(t, dir, files)
	journal := filepath.Join(dir, "artifacts", "k1", record.TrialsFile)
	lines := func() int {
		b, _ := os.ReadFile(journal)
		return bytes.Count(b, []byte("\n"))
	}

	cmd := exec.Command("forge", "run", "--run-id", "k1", "--quiet")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, fmt.Sprintf("%d jobs to finish", kill), 60*time.Second, func() bool {
		_, err := os.Stat(journal)
		return err == nil && lines() >= kill
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	before, err := record.Read(filepath.Join(dir, "artifacts", "k1", record.ResultsFile))
	if err != nil {
		t.Fatalf("the killed run cannot be read: %v", err)
	}
	if before.Finished() {
		t.Fatalf("the run had finished before the kill (%d jobs in the journal)", lines())
	}
	finished := map[string]bool{}
	for _, r := range before.Results {
		finished[r.CandidateID+" "+r.TaskID] = true
	}

	resume, _, stderr := forgeCmd(dir, nil, "run", "--resume", "k1", "--quiet")
	if code := exitCodeOf(t, resume.Run()); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	rec, err := record.Read(filepath.Join(dir, "artifacts", "k1", record.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range rec.Results {
		seen[r.CandidateID+" "+r.TaskID]++
		if r.ErrorKind.Fault() != runner.FaultNone && r.ErrorKind.Fault() != runner.FaultCandidate {
			t.Errorf("%s %s ended %s", r.CandidateID, r.TaskID, r.ErrorKind)
		}
		if r.Score == nil {
			t.Errorf("%s %s has no score", r.CandidateID, r.TaskID)
		}
	}
	if len(rec.Results) != 3*tasks || len(seen) != 3*tasks || !rec.Finished() || rec.Interrupted {
		t.Fatalf("%d results of %d jobs, finished %v, interrupted %v", len(rec.Results), len(seen), rec.Finished(), rec.Interrupted)
	}
	b, err := os.ReadFile(plays)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		ran[l]++
	}
	twice := 0
	for job := range seen {
		switch n := ran[job]; {
		case n == 0:
			t.Errorf("%s never ran", job)
		case n > 1 && finished[job]:
			t.Errorf("%s had finished before the kill but ran %d times", job, n)
		case n > 2:
			t.Errorf("%s ran %d times", job, n)
		case n == 2:
			twice++
		}
	}
	if twice > conc {
		t.Errorf("%d jobs ran twice; at most the %d running at the kill may", twice, conc)
	}
	if st := rec.Standings; len(st) != 3 || st[2].CandidateID != "c" || st[0].Score != 1 || st[1].Score != 1 {
		t.Errorf("standings %+v; a and b answer every task, c fails every fifth", st)
	}
}
