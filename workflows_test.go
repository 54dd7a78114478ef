package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The keys GitHub Actions allows (docs.github.com, "Workflow syntax for
// GitHub Actions"), of a workflow, a job and a step.
var (
	workflowKeys = []string{"name", "run-name", "on", "permissions", "env", "defaults", "concurrency", "jobs"}
	jobKeys      = []string{"name", "permissions", "needs", "if", "runs-on", "environment", "concurrency", "outputs",
		"env", "defaults", "steps", "timeout-minutes", "strategy", "continue-on-error", "container", "services",
		"uses", "with", "secrets"}
	stepKeys = []string{"id", "if", "name", "uses", "run", "working-directory", "shell", "with", "env",
		"continue-on-error", "timeout-minutes"}
	events = []string{"push", "pull_request", "pull_request_target", "schedule", "workflow_dispatch",
		"workflow_call", "workflow_run", "release", "merge_group", "repository_dispatch"}
)

// TestExampleWorkflows parses every workflow in examples/github-actions and
// checks what GitHub requires of one: on: with known events, jobs each with
// runs-on and steps, each step with uses or run (not both), needs: naming
// jobs that exist, ${{ matrix.X }} only where the job's matrix has X, and
// ${{ needs.X }} only for a job it needs. A sharded workflow's --shard K/N
// must match its matrix: N is the number of shards, K runs 1..N.
func TestExampleWorkflows(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("examples", "github-actions", "*.yml"))
	if err != nil || len(paths) < 2 {
		t.Fatalf("workflows: %v %v", paths, err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(path, "sharded") && (len(shardFlag.FindAll(b, -1)) == 0 || !strings.Contains(string(b), "forge merge")) {
				t.Error("the sharded workflow should play a --shard K/N per matrix job and forge merge them")
			}
			for _, p := range checkWorkflow(b) {
				t.Error(p)
			}
		})
	}
}

var (
	matrixRef = regexp.MustCompile(`\$\{\{\s*matrix\.([A-Za-z0-9_-]+)`)
	needsRef  = regexp.MustCompile(`\$\{\{[^}]*needs\.([A-Za-z0-9_-]+)`)
	shardFlag = regexp.MustCompile(`--shard[ =](\$\{\{[^}]*\}\}|[^\s/]+)/(\d+)`)
	usesRef   = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@\S+$`)
)

// checkWorkflow returns the problems of one workflow file.
func checkWorkflow(b []byte) []string {
	var probs []string
	bad := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	var wf map[string]any
	if err := yaml.Unmarshal(b, &wf); err != nil {
		return []string{"not YAML: " + err.Error()}
	}
	unknown(wf, workflowKeys, "workflow", bad)
	switch on := wf["on"].(type) {
	case string:
		if !slices.Contains(events, on) {
			bad("on: unknown event %q", on)
		}
	case []any:
		for _, e := range on {
			if s, _ := e.(string); !slices.Contains(events, s) {
				bad("on: unknown event %v", e)
			}
		}
	case map[string]any:
		for e := range on {
			if !slices.Contains(events, e) {
				bad("on: unknown event %q", e)
			}
		}
		if sched, ok := on["schedule"]; ok {
			list, _ := sched.([]any)
			for _, s := range list {
				if m, _ := s.(map[string]any); m == nil || len(strings.Fields(fmt.Sprint(m["cron"]))) != 5 {
					bad("on.schedule: %v is not a cron entry", s)
				}
			}
		}
	default:
		bad("on: missing or not events")
	}
	jobs, _ := wf["jobs"].(map[string]any)
	if len(jobs) == 0 {
		bad("jobs: none")
	}
	// A job that runs forge merge needs every job that plays a shard.
	var sharding, merging []string
	needsOf := map[string][]string{}
	for id, j := range jobs {
		job, _ := j.(map[string]any)
		if job == nil {
			bad("jobs.%s: not a mapping", id)
			continue
		}
		unknown(job, jobKeys, "jobs."+id, bad)
		if _, ok := job["runs-on"]; !ok {
			bad("jobs.%s: no runs-on", id)
		}
		var needs []string
		switch n := job["needs"].(type) {
		case nil:
		case string:
			needs = []string{n}
		case []any:
			for _, x := range n {
				needs = append(needs, fmt.Sprint(x))
			}
		default:
			bad("jobs.%s.needs: %v", id, n)
		}
		needsOf[id] = needs
		for _, n := range needs {
			if _, ok := jobs[n]; !ok || n == id {
				bad("jobs.%s.needs: no job %q", id, n)
			}
		}
		matrix := map[string][]any{}
		if st, _ := job["strategy"].(map[string]any); st != nil {
			m, _ := st["matrix"].(map[string]any)
			for k, v := range m {
				if vs, ok := v.([]any); ok {
					matrix[k] = vs
				} else if k != "include" && k != "exclude" {
					bad("jobs.%s.strategy.matrix.%s: not a list", id, k)
				}
			}
		}
		steps, _ := job["steps"].([]any)
		if len(steps) == 0 {
			bad("jobs.%s: no steps", id)
		}
		for i, s := range steps {
			step, _ := s.(map[string]any)
			where := fmt.Sprintf("jobs.%s.steps[%d]", id, i)
			if step == nil {
				bad("%s: not a mapping", where)
				continue
			}
			unknown(step, stepKeys, where, bad)
			_, uses := step["uses"]
			_, run := step["run"]
			if uses == run {
				bad("%s: needs exactly one of uses and run", where)
			}
			if u, ok := step["uses"].(string); uses && (!ok || !usesRef.MatchString(u)) {
				bad("%s: uses %v is not owner/repo@ref", where, step["uses"])
			}
			if r, ok := step["run"]; run {
				if _, isStr := r.(string); !isStr || !ok {
					bad("%s: run is not a string", where)
				}
			}
		}
		// References inside the job.
		raw, _ := yaml.Marshal(job)
		for _, m := range matrixRef.FindAllStringSubmatch(string(raw), -1) {
			if _, ok := matrix[m[1]]; !ok {
				bad("jobs.%s: ${{ matrix.%s }} but the job's matrix has no %s", id, m[1], m[1])
			}
		}
		for _, m := range needsRef.FindAllStringSubmatch(string(raw), -1) {
			if !slices.Contains(needs, m[1]) {
				bad("jobs.%s: ${{ needs.%s }} but the job does not need %s", id, m[1], m[1])
			}
		}
		if strings.Contains(string(raw), "forge merge") {
			merging = append(merging, id)
		}
		for _, m := range shardFlag.FindAllStringSubmatch(string(raw), -1) {
			sharding = append(sharding, id)
			n, _ := strconv.Atoi(m[2])
			k := matrixRef.FindStringSubmatch(m[1])
			if k == nil {
				bad("jobs.%s: --shard %s/%s: K should come from the matrix", id, m[1], m[2])
				continue
			}
			var got []int
			for _, v := range matrix[k[1]] {
				x, _ := v.(int)
				got = append(got, x)
			}
			slices.Sort(got)
			want := make([]int, n)
			for i := range want {
				want[i] = i + 1
			}
			if !slices.Equal(got, want) {
				bad("jobs.%s: --shard K/%d but matrix.%s is %v, not %v", id, n, k[1], got, want)
			}
		}
	}
	for _, m := range merging {
		for _, s := range sharding {
			if !slices.Contains(needsOf[m], s) {
				bad("jobs.%s merges shards but does not need jobs.%s, which plays them", m, s)
			}
		}
	}
	return probs
}

func unknown(m map[string]any, known []string, where string, bad func(string, ...any)) {
	for k := range m {
		if !slices.Contains(known, k) {
			bad("%s: unknown key %q", where, k)
		}
	}
}

// TestCheckWorkflowFindsProblems: the checks fail on broken workflows.
func TestCheckWorkflowFindsProblems(t *testing.T) {
	for broken, want := range map[string]string{
		"jobs: {a: {runs-on: x, steps: [{run: y}]}}":                                                                                "on: missing",
		"on: push\njobs: {a: {steps: [{run: y}]}}":                                                                                  "no runs-on",
		"on: push\njobs: {a: {runs-on: x, steps: [{name: y}]}}":                                                                     "exactly one of uses and run",
		"on: push\njobs: {a: {runs-on: x, needs: b, steps: [{run: y}]}}":                                                            `no job "b"`,
		"on: push\njobs: {a: {runs-on: x, steps: [{run: 'echo ${{ matrix.shard }}'}]}}":                                             "matrix has no shard",
		"on: push\njobs: {a: {runs-on: x, steps: [{run: 'echo ${{ needs.b.result }}'}]}}":                                           "does not need b",
		"on: push\njobs: {a: {runs-on: x, steps: [{uses: checkout}]}}":                                                              "not owner/repo@ref",
		"on: push\njobs: {a: {runs-on: x, step: [{run: y}]}}":                                                                       `unknown key "step"`,
		"on: pushed\njobs: {a: {runs-on: x, steps: [{run: y}]}}":                                                                    "unknown event",
		"on: push\njobs: {a: {runs-on: x, strategy: {matrix: {s: [1, 2]}}, steps: [{run: 'forge run --shard ${{ matrix.s }}/3'}]}}": "--shard K/3 but matrix.s is [1 2]",
		"on: push\njobs: {a: {runs-on: x, steps: [{run: 'forge run --shard 1/1'}]}}":                                                "K should come from the matrix",
		"on: push\njobs: {a: {runs-on: x, strategy: {matrix: {s: [1]}}, steps: [{run: 'forge run --shard ${{ matrix.s }}/1'}]}, b: {runs-on: x, steps: [{run: forge merge a}]}}": "jobs.b merges shards but does not need jobs.a",
	} {
		probs := checkWorkflow([]byte(broken))
		if !slices.ContainsFunc(probs, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("%s:\n got %q, want a problem saying %q", broken, probs, want)
		}
	}
}
