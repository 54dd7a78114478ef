package forge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

const suiteHead = `objective: "Answer the question in the task"
candidates:
  - id: a
    script: a.py
  - id: b
    script: b.py
  - id: c
    script: c.py
`

func loadSuite(t *testing.T, manifest string, files map[string]string) (*Manifest, error) {
	t.Helper()
	tree := map[string]string{"forge.yaml": manifest, "a.py": okScript, "b.py": okScript, "c.py": okScript}
	for k, v := range files {
		tree[k] = v
	}
	dir := writeTree(t, tree)
	return Load(filepath.Join(dir, "forge.yaml"))
}

// TestTasksFromEverySource loads the same three tasks inline, from JSONL,
// CSV and YAML, and checks every field and what the candidate is given.
func TestTasksFromEverySource(t *testing.T) {
	inline := suiteHead + `tasks:
  - id: q1
    objective: "What is 17 * 23?"
    expected: 391
    files: [data/q1.csv]
    weight: 2
    pass_mark: 0.8
  - {id: q2, expected: "3.10", timeout: 5s, output_file: answer.txt}
  - {id: q3, env: {UNITS: metric}, expected: "yes"}
`
	jsonl := `{"id": "q1", "objective": "What is 17 * 23?", "expected": 391, "files": ["data/q1.csv"], "weight": 2, "pass_mark": 0.8}

{"id": "q2", "expected": "3.10", "timeout": "5s", "output_file": "answer.txt"}
{"id": "q3", "env": {"UNITS": "metric"}, "expected": "yes"}
`
	csv := "id,objective,expected,files,weight,pass_mark,timeout,output_file\n" +
		"q1,What is 17 * 23?,391,data/q1.csv,2,0.8,,\n" +
		"q2,,3.10,,,,5s,answer.txt\n" +
		"q3,,yes,,,,,\n"
	yml := `- id: q1
  objective: "What is 17 * 23?"
  expected: 391
  files: [data/q1.csv]
  weight: 2
  pass_mark: 0.8
- {id: q2, expected: "3.10", timeout: 5s, output_file: answer.txt}
- {id: q3, env: {UNITS: metric}, expected: "yes"}
`
	for _, c := range []struct {
		name, manifest string
		files          map[string]string
	}{
		{"inline", inline, nil},
		{"jsonl", suiteHead + "tasks_file: tasks.jsonl\n", map[string]string{"tasks.jsonl": jsonl}},
		{"csv", suiteHead + "tasks_file: tasks.csv\n", map[string]string{"tasks.csv": csv}},
		{"yaml", suiteHead + "tasks_file: tasks.yaml\n", map[string]string{"tasks.yaml": yml}},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"data/q1.csv": "x,y\n1,2\n"}
			for k, v := range c.files {
				files[k] = v
			}
			m, err := loadSuite(t, c.manifest, files)
			if err != nil {
				t.Fatal(err)
			}
			if got := taskIDs(m.Tasks); !slices.Equal(got, []string{"q1", "q2", "q3"}) {
				t.Fatalf("tasks = %v", got)
			}
			q1, q2, q3 := m.Tasks[0], m.Tasks[1], m.Tasks[2]
			if q1.Objective != "What is 17 * 23?" || q1.Weight != 2 || len(q1.files) != 1 || q1.files[0].Dst != "data/q1.csv" {
				t.Errorf("q1 = %+v", q1)
			}
			if q1.PassMark == nil || *q1.PassMark != 0.8 || q2.PassMark != nil {
				t.Errorf("pass marks: q1 %v, q2 %v; want 0.8 and none", q1.PassMark, q2.PassMark)
			}
			if q2.Objective != "" || q2.Weight != 1 || q2.Timeout != 5*time.Second || q2.OutputFile != "answer.txt" {
				t.Errorf("q2 = %+v", q2)
			}
			if c.name != "csv" && q3.Env["UNITS"] != "metric" {
				t.Errorf("q3 env = %v", q3.Env)
			}
			// The task file carries the fields as written, numbers in their
			// written form, with the objective filled in.
			var got map[string]any
			if err := json.Unmarshal(q2.JSON("default"), &got); err != nil {
				t.Fatal(err)
			}
			if got["id"] != "q2" || got["objective"] != "default" || got["expected"] != "3.10" {
				t.Errorf("q2 JSON = %v", got)
			}
			// A number stays a number, except in CSV, which has only text.
			want391 := `"expected":391`
			if c.name == "csv" {
				want391 = `"expected":"391"`
			}
			if !strings.Contains(string(q1.JSON("x")), want391) {
				t.Errorf("q1 JSON = %s, want %s", q1.JSON("x"), want391)
			}
		})
	}
}

// A tasks_file may be named by its absolute path, outside the manifest's
// directory.
func TestAbsoluteTasksFile(t *testing.T) {
	tasks := filepath.Join(writeTree(t, map[string]string{"tasks.jsonl": `{"id": "q1", "expected": "391"}` + "\n"}), "tasks.jsonl")
	m, err := loadSuite(t, suiteHead+"tasks_file: "+tasks+"\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := taskIDs(m.Tasks); !slices.Equal(got, []string{"q1"}) {
		t.Errorf("tasks = %v", got)
	}
}

// TestTaskErrors checks that each bad task is refused with the file, the
// line and the field.
func TestTaskErrors(t *testing.T) {
	noObjective := strings.Replace(suiteHead, `objective: "Answer the question in the task"`+"\n", "", 1)
	cases := []struct {
		name, manifest string
		files          map[string]string
		want           []string
	}{
		{"jsonl not json", suiteHead + "tasks_file: t.jsonl\n",
			map[string]string{"t.jsonl": "{\"id\": \"q1\"}\n\n{\"id\": q2}\n"},
			[]string{"t.jsonl:3: not a JSON object: column 8: found `q`, want a value: text in double quotes, a number"}},
		{"jsonl missing id", suiteHead + "tasks_file: t.jsonl\n",
			map[string]string{"t.jsonl": "{\"id\": \"q1\"}\n{\"objective\": \"x\"}\n"},
			[]string{"t.jsonl:2: id: is required"}},
		{"duplicate across inline and file", suiteHead + "tasks:\n  - id: q1\ntasks_file: t.jsonl\n",
			map[string]string{"t.jsonl": "{\"id\": \"q2\"}\n{\"id\": \"q1\"}\n"},
			[]string{"t.jsonl:2: id: duplicate task id \"q1\" (also at ", "forge.yaml:10)"}},
		{"duplicate inline", suiteHead + "tasks:\n  - id: q1\n  - id: q1\n", nil,
			[]string{"forge.yaml:11:9: tasks[1].id: duplicate task id \"q1\" (also at ", "forge.yaml:10)"}},
		{"no objective anywhere", noObjective + "tasks:\n  - id: q1\n    expected: 1\n", nil,
			[]string{"tasks[0].objective: is required: the manifest has no default objective:"}},
		{"unknown file", suiteHead + "tasks_file: t.jsonl\n",
			map[string]string{"t.jsonl": "{\"id\": \"q1\", \"files\": [\"nope.csv\"]}\n"},
			[]string{"t.jsonl:1: files: nope.csv: no such file or directory"}},
		{"missing tasks file", suiteHead + "tasks_file: nope.jsonl\n", nil,
			[]string{"forge.yaml:9:13: tasks_file: nope.jsonl: no such file or directory"}},
		{"csv short row", suiteHead + "tasks_file: t.csv\n",
			map[string]string{"t.csv": "id,expected\nq1,1\nq2\n"},
			[]string{"t.csv:3: 1 field, the header has 2"}},
		{"csv bad weight", suiteHead + "tasks_file: t.csv\n",
			map[string]string{"t.csv": "id,weight\nq1,1\nq2,-1\n"},
			[]string{"t.csv:3: weight: must be a positive number, not -1"}},
		{"csv bad pass_mark", suiteHead + "tasks_file: t.csv\n",
			map[string]string{"t.csv": "id,pass_mark\nq1,0.5\nq2,80%\nq3,1.5\n"},
			[]string{"t.csv:3: pass_mark: must be a number above 0 and at most 1 (the score that solves the task, e.g. 0.8), not 80%",
				"t.csv:4: pass_mark: must be a number above 0 and at most 1"}},
		{"weight not a number", suiteHead + "tasks:\n  - {id: q1, weight: [2]}\n", nil,
			[]string{"tasks[0].weight: must be a positive number, not [2]"}},
		{"yaml not a list", suiteHead + "tasks_file: t.yaml\n",
			map[string]string{"t.yaml": "id: q1\n"},
			[]string{"t.yaml:1:1: a tasks file in YAML is a list of tasks, not a mapping"}},
		{"yaml bad id", suiteHead + "tasks_file: t.yml\n",
			map[string]string{"t.yml": "- id: q1\n- id: 'q 2'\n"},
			[]string{"t.yml:2:7: [1].id: \"q 2\" is not a valid id"}},
		{"bad timeout", suiteHead + "tasks:\n  - {id: q1, timeout: soon}\n", nil,
			[]string{"forge.yaml:10:23: tasks[0].timeout: \"soon\" is not a duration"}},
		{"env not strings", suiteHead + "tasks_file: t.jsonl\n",
			map[string]string{"t.jsonl": "{\"id\": \"q1\", \"env\": {\"A\": [1]}}\n"},
			[]string{"t.jsonl:1: env.A: want text, not a list"}},
		{"unknown extension", suiteHead + "tasks_file: t.txt\n", map[string]string{"t.txt": "q1\n"},
			[]string{"t.txt: tasks_file must be .jsonl, .csv, .yaml or .yml"}},
		{"empty file", suiteHead + "tasks_file: t.jsonl\n", map[string]string{"t.jsonl": "\n"},
			[]string{"tasks_file: t.jsonl has no tasks"}},
		{"empty list", suiteHead + "tasks: []\n", nil,
			[]string{"forge.yaml:9:8: tasks: is empty"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadSuite(t, c.manifest, c.files)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}

func suitePlan(t *testing.T, o Overrides, ntasks int) *Plan {
	t.Helper()
	var b strings.Builder
	b.WriteString(suiteHead + "tasks:\n")
	for i := 1; i <= ntasks; i++ {
		fmt.Fprintf(&b, "  - id: t%d\n", i)
	}
	m, err := loadSuite(t, b.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSuitePlanInterleaves(t *testing.T) {
	p := suitePlan(t, Overrides{Trials: 2}, 3)
	var got []string
	for _, j := range p.Jobs {
		got = append(got, j.Name())
	}
	want := []string{
		"a/t1", "b/t1", "c/t1", "a/t1#2", "b/t1#2", "c/t1#2",
		"b/t2", "c/t2", "a/t2", "b/t2#2", "c/t2#2", "a/t2#2",
		"c/t3", "a/t3", "b/t3", "c/t3#2", "a/t3#2", "b/t3#2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("jobs =\n%v\nwant\n%v", got, want)
	}
	j := p.Jobs[0]
	last := j.Files[len(j.Files)-1]
	if j.Objective != "Answer the question in the task" || last.Dst != runner.TaskFile || last.Src != "" ||
		string(last.Data) != `{"id":"t1","objective":"Answer the question in the task"}` {
		t.Errorf("job t1: objective %q, task file %+v (%s)", j.Objective, last, last.Data)
	}
}

func TestSuitePlanFilters(t *testing.T) {
	p := suitePlan(t, Overrides{Tasks: []string{"t5", "t2", "t5"}, Only: []string{"b"}}, 6)
	var got []string
	for _, j := range p.Jobs {
		got = append(got, j.Name())
	}
	if !slices.Equal(got, []string{"b/t2", "b/t5"}) {
		t.Errorf("--tasks t5,t2 --only b: %v", got)
	}

	ids := func(p *Plan) []string { return taskIDs(p.Tasks) }
	s1 := suitePlan(t, Overrides{Sample: 4, Seed: 7}, 20)
	s2 := suitePlan(t, Overrides{Sample: 4, Seed: 7}, 20)
	s3 := suitePlan(t, Overrides{Sample: 4, Seed: 8}, 20)
	if len(s1.Tasks) != 4 || !slices.Equal(ids(s1), ids(s2)) || slices.Equal(ids(s1), ids(s3)) {
		t.Errorf("samples: seed 7 %v, again %v, seed 8 %v", ids(s1), ids(s2), ids(s3))
	}
	if s1.Sample == nil || *s1.Sample != (record.Sample{N: 4, Of: 20, Seed: 7}) || len(s1.Jobs) != 12 {
		t.Errorf("sample = %+v, %d jobs", s1.Sample, len(s1.Jobs))
	}
	num := func(t Task) int { n, _ := strconv.Atoi(t.ID[1:]); return n }
	if !slices.IsSortedFunc(s1.Tasks, func(a, b Task) int { return num(a) - num(b) }) {
		t.Errorf("sampled tasks not in manifest order: %v", ids(s1))
	}

	m, err := loadSuite(t, suiteHead+"tasks:\n  - id: t1\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ut *UnknownTaskError
	if _, err := m.Plan(Overrides{Tasks: []string{"t9"}}); !errors.As(err, &ut) || ut.ID != "t9" {
		t.Errorf("unknown task: %v", err)
	}
	m, err = loadSuite(t, suiteHead, nil)
	if err != nil {
		t.Fatal(err)
	}
	var nt *NoTasksError
	if _, err := m.Plan(Overrides{Sample: 2}); !errors.As(err, &nt) {
		t.Errorf("--sample without tasks: %v", err)
	}
}

// TestTaskSettingsWin checks the order task > candidate > defaults, and
// the command line's timeout over all.
func TestTaskSettingsWin(t *testing.T) {
	m, err := loadSuite(t, `objective: o
defaults: {env: {A: d, B: d, C: d}, timeout: 10s, output_file: d.md}
candidates:
  - {id: a, script: a.py, env: {B: c, C: c}, timeout: 20s, output_file: c.md}
tasks:
  - {id: t1, env: {C: t}, timeout: 30s, output_file: t.md}
  - {id: t2}
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Plan(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	j1, j2 := p.Jobs[0], p.Jobs[1]
	if j1.Env["A"] != "d" || j1.Env["B"] != "c" || j1.Env["C"] != "t" || j1.Timeout != 30*time.Second || j1.OutputFile != "t.md" {
		t.Errorf("t1: env %v timeout %s output %s", j1.Env, j1.Timeout, j1.OutputFile)
	}
	if j2.Env["C"] != "c" || j2.Timeout != 20*time.Second || j2.OutputFile != "c.md" {
		t.Errorf("t2: env %v timeout %s output %s", j2.Env, j2.Timeout, j2.OutputFile)
	}
	p, _ = m.Plan(Overrides{Timeout: time.Second})
	if p.Jobs[0].Timeout != time.Second {
		t.Errorf("--timeout: %s", p.Jobs[0].Timeout)
	}
}

// TestSuiteRunStoresByTaskAndResumes plays a suite with a fake runner:
// every job is stored under <run>/<candidate>/<task>/ with the task it
// played, the record lists the tasks, and a resume plays again only the
// job the infrastructure failed.
func TestSuiteRunStoresByTaskAndResumes(t *testing.T) {
	m, err := loadSuite(t, suiteHead+"tasks:\n  - {id: q1, expected: 1}\n  - {id: q2, objective: Other}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Plan(Overrides{Only: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	var played sync.Map
	fail := true
	fr := fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
		played.Store(job.Name(), true)
		res := runner.Result{}
		if job.Name() == "b/q2" && fail {
			res.Failed(runner.ErrInfra, "sandbox lost")
			return res, nil
		}
		res.SetArtifact([]byte(job.Objective), int64(len(job.Objective)))
		res.Settle(job, runner.Outcome{ExitCode: new(int), ArtifactFound: true})
		return res, nil
	}}
	out := t.TempDir()
	opts := Options{Manifest: m, Plan: p, Runner: fr, OutRoot: out, RunID: "s1"}
	rec, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.TaskIDs(); !slices.Equal(got, []string{"q1", "q2"}) || rec.Tasks[1].Objective != "Other" {
		t.Errorf("record tasks = %+v", rec.Tasks)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "s1", "a", "q2", "output.md")); string(b) != "Other" {
		t.Errorf("a/q2 artifact = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "s1", "b", "q1", "task.json")); string(b) != `{"expected":1,"id":"q1","objective":"Answer the question in the task"}` {
		t.Errorf("b/q1 task.json = %s", b)
	}
	if rec.Winner != nil || len(rec.Incomplete) != 1 || rec.Incomplete[0].CandidateID != "b" {
		t.Errorf("winner %v incomplete %+v", rec.Winner, rec.Incomplete)
	}

	fail = false
	played = sync.Map{}
	prev := readRecord(t, filepath.Join(out, "s1", record.ResultsFile))
	opts.Resume = &prev
	rec, err = Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var again []string
	played.Range(func(k, _ any) bool { again = append(again, k.(string)); return true })
	if !slices.Equal(again, []string{"b/q2"}) || len(rec.Incomplete) != 0 || len(rec.Results) != 4 {
		t.Errorf("resume played %v; incomplete %+v", again, rec.Incomplete)
	}

	// Resuming with other tasks is refused.
	p2, _ := m.Plan(Overrides{Only: []string{"a", "b"}, Tasks: []string{"q1"}})
	opts.Plan = p2
	var td *TasksDifferError
	if _, err := Run(context.Background(), opts); !errors.As(err, &td) {
		t.Errorf("resume with --tasks q1: %v", err)
	}
}

// TestCSVEveryBadLine: a CSV tasks file's every bad line is told, with
// the counts of a row of the wrong length and an unclosed quote where it
// opens.
func TestCSVEveryBadLine(t *testing.T) {
	_, err := loadSuite(t, suiteHead+"tasks_file: t.csv\n", map[string]string{"t.csv": "id,expected,notes\n" +
		"q1,1,a\n" +
		"q2,2\n" +
		"q3,3,x,y\n" +
		"q4,say \"hi\",z\n" +
		"q5,5,ok\n" +
		"q6,\"unclosed,7\n" +
		"q7,7,7\n"})
	if err == nil {
		t.Fatal("loaded")
	}
	want := []string{
		"t.csv:3: 2 fields, the header has 3",
		"t.csv:4: 4 fields, the header has 3",
		`t.csv:5:8: a quote inside a field that does not start with one: quote the whole field and write the quote as "" (e.g. "say ""hi""")`,
		`t.csv:7:4: this quote opens a field that is never closed: end the field with " (and write a quote inside it as "")`,
	}
	var got []string
	for _, line := range strings.Split(err.Error(), "\n") {
		got = append(got, line[strings.Index(line, "t.csv"):])
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestJSONLErrors: a JSONL line that is no task says where and why, in
// words.
func TestJSONLErrors(t *testing.T) {
	_, err := loadSuite(t, suiteHead+"tasks_file: t.jsonl\n", map[string]string{"t.jsonl": `{"id": "q1"}
{'id': 'q2'}
{"id": "q3"} {"id": "q4"}
["q5"]
  {"id": "q6", "x": [1 2]}
{"id": "q7"
`})
	if err == nil {
		t.Fatal("loaded")
	}
	want := []string{
		`t.jsonl:2: not a JSON object: column 2: found ` + "`'`" + `, want a key in double quotes ("id"); JSON quotes with ", not '`,
		`t.jsonl:3: not a JSON object: column 14: more after the object: one task a line`,
		`t.jsonl:4: not a JSON object: a list: a task is {"id": ...}`,
		`t.jsonl:5: not a JSON object: column 24: found ` + "`2`" + `, want , or ] after an item`,
		`t.jsonl:6: not a JSON object: column 12: the object is not closed: a task is one line, closed with }`,
	}
	var got []string
	for _, line := range strings.Split(err.Error(), "\n") {
		got = append(got, line[strings.Index(line, "t.jsonl"):])
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTasksFileProblemsAreCapped: a tasks file's first 20 problems are
// told, then how many more; the manifest's are all told.
func TestTasksFileProblemsAreCapped(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "{\"objective\": \"q%d\"}\n", i)
	}
	_, err := loadSuite(t, suiteHead+"tasks_file: t.jsonl\ndefaults: {trials: 0}\n", map[string]string{"t.jsonl": b.String()})
	if err == nil {
		t.Fatal("loaded")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 22 {
		t.Fatalf("%d lines, want 22:\n%s", len(lines), err)
	}
	if !strings.Contains(lines[0], "defaults.trials: must be at least 1") {
		t.Errorf("the manifest's problem is not first: %s", lines[0])
	}
	if !strings.HasSuffix(lines[20], "t.jsonl:20: id: is required") || !strings.HasSuffix(lines[21], "t.jsonl: and 10 more problems in this file") {
		t.Errorf("ends with\n%s\n%s", lines[20], lines[21])
	}
	if n := Problems(err); n != 31 {
		t.Errorf("Problems = %d, want 31", n)
	}
}

// TestTaskErrorsAreOneForm: the same bad task says the same problems,
// each at its key path, inline, in a YAML, a JSONL or a CSV tasks file.
func TestTaskErrorsAreOneForm(t *testing.T) {
	// file:line[:col]: [tasks[0]. or [0].]key: message
	form := regexp.MustCompile(`^.*\.(?:yaml|jsonl|csv):\d+(?::\d+)?: (?:tasks\[0\]\.|\[0\]\.)?(.*)$`)
	problems := func(manifest string, files map[string]string) string {
		t.Helper()
		_, err := loadSuite(t, manifest, files)
		if err == nil {
			t.Fatal("loaded")
		}
		var out []string
		for _, line := range strings.Split(err.Error(), "\n") {
			m := form.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("%q is not file:line: field: message", line)
			}
			out = append(out, m[1])
		}
		slices.Sort(out)
		return strings.Join(out, "\n")
	}
	yml := `{id: q1, env: {A: [1]}, timeout: soon, weight: x, verify: {comand: x}, environment: {pip: [""]}}`
	want := problems(suiteHead+"tasks:\n  - "+yml+"\n", nil)
	for name, c := range map[string]struct{ manifest, file, data string }{
		"yaml":  {suiteHead + "tasks_file: t.yaml\n", "t.yaml", "- " + yml + "\n"},
		"jsonl": {suiteHead + "tasks_file: t.jsonl\n", "t.jsonl", `{"id": "q1", "env": {"A": [1]}, "timeout": "soon", "weight": "x", "verify": {"comand": "x"}, "environment": {"pip": [""]}}` + "\n"},
	} {
		if got := problems(c.manifest, map[string]string{c.file: c.data}); got != want {
			t.Errorf("%s:\n%s\ninline:\n%s", name, got, want)
		}
	}
	csv := problems(suiteHead+"tasks_file: t.csv\n", map[string]string{"t.csv": "id,timeout,weight,verify\nq1,soon,x,y\n"})
	inline := problems(suiteHead+"tasks:\n  - {id: q1, timeout: soon, weight: x, verify: y}\n", nil)
	if csv != inline {
		t.Errorf("csv:\n%s\ninline:\n%s", csv, inline)
	}
	if !strings.Contains(want, "env.A: want text, not a list") || !strings.Contains(want, `verify.comand: unknown key "comand"`) {
		t.Errorf("inline:\n%s", want)
	}
}
