// Package squares writes a small suite for forge's own tests and benches:
// each task gives n and expects n²; "exact" answers every task, "rough" only
// the even ones. Every candidate appends a line to a file (Runs), by which a
// test counts how often each trial ran.
package squares

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Suite is what Write writes.
type Suite struct {
	Tasks, Trials, Concurrency int
	// Candidates is how many play (default 2): exact, rough, then exact3,
	// rough4 and so on.
	Candidates int
	// Runs is the file every candidate appends its trial to.
	Runs string
	// Extra is appended to the manifest (a daytona: block, say).
	Extra string
}

// ID is the id of the i-th candidate (from 0).
func ID(i int) string {
	kind := [2]string{"exact", "rough"}[i%2]
	if i < 2 {
		return kind
	}
	return fmt.Sprintf("%s%d", kind, i+1)
}

// Write writes forge.yaml, tasks.jsonl and the candidates' scripts in dir.
func (s Suite) Write(dir string) error {
	n := s.Candidates
	if n == 0 {
		n = 2
	}
	var tasks strings.Builder
	for i := 1; i <= s.Tasks; i++ {
		fmt.Fprintf(&tasks, "{\"id\": \"t%d\", \"n\": %d, \"expected\": \"%d\"}\n", i, i, i*i)
	}
	var m strings.Builder
	fmt.Fprintf(&m, "objective: Square the number\ntasks_file: tasks.jsonl\ndefaults:\n  trials: %d\n  concurrency: %d\n  env: {RUNS: %q}\ncandidates:\n",
		s.Trials, s.Concurrency, s.Runs)
	for i := range n {
		fmt.Fprintf(&m, "  - {id: %s, script: %s.sh}\n", ID(i), ID(i%2))
	}
	m.WriteString("scoring:\n  - type: artifact\n    checks: [{equals_task: expected}]\n")
	m.WriteString(s.Extra)
	const head = `echo "$FORGE_CANDIDATE_ID $FORGE_TASK_ID $FORGE_TRIAL" >> "$RUNS"
n=$(sed 's/.*"n": *\([0-9]*\).*/\1/' "$FORGE_TASK")
`
	files := map[string]string{
		"forge.yaml":  m.String(),
		"tasks.jsonl": tasks.String(),
		"exact.sh":    head + "echo $((n * n)) > \"$2\"\n",
		"rough.sh":    head + "case $n in *[13579]) echo $((n * n + 1)) > \"$2\" ;; *) echo $((n * n)) > \"$2\" ;; esac\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}
