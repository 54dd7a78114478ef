package forge

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/testkit/testfiles"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// TestReadHarborTasks: both task.toml layouts in use, a directory of
// tasks sorted by name, sizes written as numbers or strings, unknown keys
// noted once with how many tasks have them.
func TestReadHarborTasks(t *testing.T) {
	dir := t.TempDir()
	common := map[string]string{"instruction.md": "Make /app/hello.txt say hi.\n", "tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
		"environment/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\n"}
	older := map[string]string{"task.toml": `version = "1.0"
[metadata]
author_name = "a"
difficulty = "easy"
category = "files"
tags = ["shell", "files"]
[verifier]
timeout_sec = 120.0
env = {MODE = "strict"}
[agent]
timeout_sec = 300.0
[environment]
build_timeout_sec = 600.0
cpus = 2
memory_mb = 4096
storage_mb = 10240
[solution]
env = {SEED = "1"}
`, "solution/solve.sh": "echo hi > /app/hello.txt\n"}
	newer := map[string]string{"task.toml": `schema_version = "1.1"
[task]
name = "org/fix-bug"
keywords = ["python"]
[metadata]
difficulty = "hard"
[agent]
timeout_sec = 90
[environment]
memory = "2G"
storage = "512M"
allow_internet = false
gpus = 1
[sandbox]
warm = true
`}
	for name, files := range map[string]map[string]string{"b-older": older, "a-newer": newer, "c-newer": newer} {
		testfiles.Write(t, filepath.Join(dir, name), common)
		testfiles.Write(t, filepath.Join(dir, name), files)
	}
	testfiles.Write(t, filepath.Join(dir, "not-a-task"), map[string]string{"README.md": "x"})
	tasks, notes, err := ReadHarborTasks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 3 || tasks[0].ID != "a-newer" || tasks[1].ID != "b-older" {
		t.Fatalf("tasks: %+v", tasks)
	}
	n, o := tasks[0], tasks[1]
	no := false
	if n.Name != "org/fix-bug" || n.AgentTimeout != 90*time.Second || n.MemoryMB != 2048 || n.StorageMB != 512 ||
		!reflect.DeepEqual(n.AllowInternet, &no) || n.Metadata["difficulty"] != "hard" || n.Oracle || n.Dockerfile != "environment/Dockerfile" {
		t.Errorf("the newer layout: %+v", n)
	}
	if o.Name != "b-older" || o.VerifierTimeout != 2*time.Minute || o.BuildTimeout != 10*time.Minute || o.CPUs != 2 || o.MemoryMB != 4096 ||
		o.StorageMB != 10240 || o.VerifierEnv["MODE"] != "strict" || o.SolutionEnv["SEED"] != "1" || !o.Oracle || o.Metadata["category"] != "files" ||
		!strings.Contains(o.Instruction, "hello.txt") {
		t.Errorf("the older layout: %+v", o)
	}
	want := []string{"task.toml: environment.gpus is not a key forge knows; ignored (2 of 3 tasks)",
		"task.toml: sandbox.warm is not a key forge knows; ignored (2 of 3 tasks)"}
	if !reflect.DeepEqual(notes, want) {
		t.Errorf("notes:\n%q\nwant\n%q", notes, want)
	}
	one, _, err := ReadHarborTasks(filepath.Join(dir, "b-older"))
	if err != nil || len(one) != 1 || one[0].ID != "b-older" {
		t.Errorf("one task directory: %+v, %v", one, err)
	}
}

// TestHarborTaskErrors: a broken task.toml names its file and line; a task
// of several containers, or without its instruction, verifier or image, is
// refused with what it lacks, and what it has instead.
func TestHarborTaskErrors(t *testing.T) {
	base := map[string]string{"instruction.md": "x", "tests/test.sh": "true", "task.toml": "version = \"1.0\"\n",
		"environment/Dockerfile": "FROM python:3.12-slim\n"}
	const noImage = "a Harbor task needs environment/Dockerfile (or [environment] docker_image), the image its agent and verifier run in: "
	for name, c := range map[string]struct {
		files map[string]string
		drop  string
		want  string
	}{
		"broken toml":  {map[string]string{"task.toml": "version = \"1.0\"\n[agent]\ntimeout_sec = = 3\n"}, "", "task.toml:3: "},
		"wrong type":   {map[string]string{"task.toml": "[agent]\ntimeout_sec = \"soon\"\n"}, "", "task.toml:2: agent.timeout_sec: want a number, not a string"},
		"negative":     {map[string]string{"task.toml": "[verifier]\ntimeout_sec = -1\n"}, "", "verifier.timeout_sec = -1: want a number of seconds above 0"},
		"bad size":     {map[string]string{"task.toml": "[environment]\nmemory = \"lots\"\n"}, "", `environment.memory: "lots": want a size`},
		"compose":      {map[string]string{"environment/docker-compose.yaml": "services: {}\n"}, "", "environment/docker-compose.yaml (several containers): not supported yet"},
		"empty image":  {map[string]string{"task.toml": "[environment]\ndocker_image = \"\"\n"}, "", `environment.docker_image = "": want an image`},
		"relative dir": {map[string]string{"task.toml": "[environment]\nworkdir = \"workspace\"\n"}, "", `environment.workdir = "workspace": want an absolute path`},
		"dotdot dir":   {map[string]string{"task.toml": "[environment]\nworkdir = \"/work/../secret\"\n"}, "", `environment.workdir = "/work/../secret": want an absolute path`},
		"no verifier":  {nil, "tests/test.sh", "needs tests/test.sh"},
		"no objective": {nil, "instruction.md", "needs instruction.md"},
		"misnamed dockerfile": {map[string]string{"environment/dockerfile": "FROM python:3.12-slim\n"}, "environment/Dockerfile",
			noImage + "environment/dockerfile: did you mean Dockerfile?"},
		"context only": {map[string]string{"environment/app.py": "x", "environment/data.csv": "x"}, "environment/Dockerfile",
			noImage + "environment/ holds app.py, data.csv and no Dockerfile"},
		"no environment": {nil, "environment", noImage + "it has no environment/ directory"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "task")
			testfiles.Write(t, dir, base)
			testfiles.Write(t, dir, c.files)
			if c.drop != "" {
				os.RemoveAll(filepath.Join(dir, filepath.FromSlash(c.drop)))
			}
			_, _, err := ReadHarborTasks(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestHarborSuitePlan: the sample benchmark's manifest plans every agent on
// every task, each job in its task's image, started in its WORKDIR, judged
// by tests/test.sh at Harbor's paths, and told nothing of its verifier.
func TestHarborSuitePlan(t *testing.T) {
	m, err := Load(filepath.Join("..", "examples", "harbor", "forge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Plan(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tasks) != 6 || len(p.Jobs) != 2*6*3 {
		t.Fatalf("%d tasks, %d jobs; want 6 and 36", len(p.Tasks), len(p.Jobs))
	}
	if got := p.ImageTasks(); len(got) != 6 {
		t.Errorf("image tasks %v", got)
	}
	envs := map[string]bool{}
	for _, j := range p.Jobs {
		v, e := j.Verify, j.Environment
		switch {
		case v == nil || !v.AtRoot || v.Command != "bash /tests/test.sh":
			t.Fatalf("%s: verifier %+v", j.Name(), v)
		case e == nil || !strings.HasPrefix(e.Dockerfile, "FROM python:3.12-slim") || len(e.ContextFiles) == 0 ||
			e.CPU != 1 || e.MemoryGB != 1 || (e.DiskGB != 2 && e.DiskGB != 4):
			t.Fatalf("%s: environment %+v", j.Name(), e)
		case !j.InImageWorkdir || !j.ArtifactOptional:
			t.Fatalf("%s: starts in its image's WORKDIR %v, artifact optional %v", j.Name(), j.InImageWorkdir, j.ArtifactOptional)
		}
		envs[e.Hash] = true
		var names []string
		for _, f := range v.Files {
			names = append(names, f.Dst)
		}
		if !slices.Contains(names, "test.sh") {
			t.Errorf("%s: verifier files %v", j.Name(), names)
		}
		for _, f := range j.Files {
			if f.Dst == "instruction.md" && string(f.Data) != j.Objective {
				t.Errorf("%s: instruction.md is not the objective", j.Name())
			}
			if f.Dst == ".forge-task.json" && (strings.Contains(string(f.Data), "verify") || strings.Contains(string(f.Data), "test.sh")) {
				t.Errorf("%s: the task the candidate sees names its verifier: %s", j.Name(), f.Data)
			}
		}
	}
	if len(envs) != 6 {
		t.Errorf("%d environments for 6 task images", len(envs))
	}
	if p.Tasks[0].Fields["difficulty"] == nil {
		t.Errorf("task fields %v: no difficulty from task.toml", p.Tasks[0].Fields)
	}
}

// TestHarborImageAndSolutionEnv: a task whose [environment] docker_image
// names an image built already starts from it (over its Dockerfile, as
// Harbor does), in its WORKDIR, or in its [environment] workdir when it
// gives one; --oracle runs solve.sh with [solution] env, which the
// candidates never get.
func TestHarborImageAndSolutionEnv(t *testing.T) {
	dir := t.TempDir()
	base := map[string]string{"instruction.md": "x", "tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n", "solution/solve.sh": "true\n"}
	for name, files := range map[string]map[string]string{
		"prebuilt": {"task.toml": "version = \"1.0\"\n[environment]\ndocker_image = \"ghcr.io/org/prebuilt:1\"\n[solution]\nenv = {SEED = \"7\"}\n"},
		"both": {"task.toml": "version = \"1.0\"\n[environment]\ndocker_image = \"ghcr.io/org/both:2\"\nworkdir = \"/home/agent/\"\n",
			"environment/Dockerfile": "FROM python:3.12-slim\n"},
	} {
		testfiles.Write(t, filepath.Join(dir, "tasks", name), base)
		testfiles.Write(t, filepath.Join(dir, "tasks", name), files)
	}
	testfiles.Write(t, dir, map[string]string{"forge.yaml": "objective: x\nharbor: tasks\ncandidates: [{id: a, command: [\"true\"]}]\n"})
	m, err := Load(filepath.Join(dir, "forge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, oracle := range []bool{false, true} {
		p, err := m.Plan(Overrides{Oracle: oracle})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range p.Jobs {
			want := map[string]string{"both": "FROM ghcr.io/org/both:2\nWORKDIR /home/agent\n", "prebuilt": "FROM ghcr.io/org/prebuilt:1\n"}[j.TaskID]
			if e := j.Environment; e == nil || e.Dockerfile != want || len(e.ContextFiles) != 0 || !j.InImageWorkdir {
				t.Errorf("%s: environment %+v, in its WORKDIR %v; want one from %q", j.Name(), e, j.InImageWorkdir, want)
			}
			seed, ok := j.Env["SEED"]
			if wantSeed := oracle && j.TaskID == "prebuilt"; ok != wantSeed || ok && seed != "7" {
				t.Errorf("%s (oracle %v): SEED=%q (%v)", j.Name(), oracle, seed, ok)
			}
		}
	}
}

// TestTasksSelectByField: --tasks takes ids and field=value selectors
// (a Harbor task's difficulty, category, tags).
func TestTasksSelectByField(t *testing.T) {
	m, err := Load(filepath.Join("..", "examples", "harbor", "forge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, task := range m.Tasks {
		if task.Fields["difficulty"] == "easy" {
			want = append(want, task.ID)
		}
	}
	p, err := m.Plan(Overrides{Tasks: []string{"difficulty=easy"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := taskIDs(p.Tasks); len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("difficulty=easy chose %v, want %v", got, want)
	}
	if _, err := m.Plan(Overrides{Tasks: []string{"difficulty=impossible"}}); err == nil || !strings.Contains(err.Error(), `no task of`) {
		t.Errorf("a selector nothing matches: %v", err)
	}
}

// TestHarborEnvFromHost: a Harbor task's [verifier] and [solution] env
// values "${NAME}" and "${NAME:-default}" are the host's variable (as
// forge looks one up), else the default; one found nowhere stops the plan
// naming it and the task (the solution's only for --oracle); what came
// from the host is masked as a secret is.
func TestHarborEnvFromHost(t *testing.T) {
	dir := t.TempDir()
	testfiles.Write(t, filepath.Join(dir, "tasks", "judged"), map[string]string{
		"task.toml": "version = \"1.0\"\n[verifier]\nenv = {KEY = \"${JUDGE_KEY}\", MODE = \"${JUDGE_MODE:-strict}\", PLAIN = \"x\"}\n" +
			"[solution]\nenv = {TOKEN = \"${SOLVE_TOKEN}\"}\n",
		"instruction.md": "x", "tests/test.sh": "true\n", "solution/solve.sh": "true\n",
		"environment/Dockerfile": "FROM python:3.12-slim\n"})
	testfiles.Write(t, dir, map[string]string{"forge.yaml": "objective: x\nharbor: tasks\ncandidates: [{id: a, command: [\"true\"]}]\n"})
	m, err := Load(filepath.Join(dir, "forge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	host := map[string]string{"JUDGE_KEY": "sk-judge-0123456789"}
	look := func(k string) (string, bool) { v, ok := host[k]; return v, ok }
	p, err := m.Plan(Overrides{Lookup: look})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"KEY": "sk-judge-0123456789", "MODE": "strict", "PLAIN": "x"}
	if got := p.Jobs[0].Verify.Env; !reflect.DeepEqual(got, want) {
		t.Errorf("verifier env %v, want %v", got, want)
	}
	if !slices.Contains(p.SecretValues(), "sk-judge-0123456789") {
		t.Errorf("secret values %q lack the host's key", p.SecretValues())
	}
	_, err = m.Plan(Overrides{Lookup: look, Oracle: true})
	var me *MissingSecretsError
	if !errors.As(err, &me) || !slices.Equal(me.Missing["SOLVE_TOKEN"], []string{"task judged"}) {
		t.Errorf("--oracle without SOLVE_TOKEN: %v", err)
	}
	host["SOLVE_TOKEN"] = "tok-0123456789"
	if p, err = m.Plan(Overrides{Lookup: look, Oracle: true}); err != nil || p.Jobs[0].Env["TOKEN"] != "tok-0123456789" {
		t.Errorf("--oracle with SOLVE_TOKEN: %v, env %v", err, p.Jobs[0].Env)
	}
	delete(host, "JUDGE_KEY")
	if _, err := m.Plan(Overrides{Lookup: look}); !errors.As(err, &me) || !slices.Equal(me.Missing["JUDGE_KEY"], []string{"task judged"}) {
		t.Errorf("without JUDGE_KEY: %v", err)
	}
}

// TestTaskTakesNoKeyOfForge: a Harbor task's [verifier] and [solution] env
// may not take forge's own variables nor a candidate's secret from the
// host, nor may a tasks file's task by its secrets:, env_from_host: or a
// ${NAME} of the defaults': Load refuses each, naming the task, the key
// and why (issue 41).
func TestTaskTakesNoKeyOfForge(t *testing.T) {
	harborTask := func(toml string) map[string]string {
		return map[string]string{"task.toml": "version = \"1.0\"\n" + toml, "instruction.md": "x", "tests/test.sh": "true\n",
			"solution/solve.sh": "true\n", "environment/Dockerfile": "FROM python:3.12-slim\n"}
	}
	const candidates = "defaults: {secrets: [SHARED_KEY], env_from_host: [GATEWAY]}\n" +
		"candidates:\n  - {id: a, command: [\"true\"], secrets: [OPENAI_API_KEY]}\n  - {id: b, command: [\"true\"]}\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"daytona key to the verifier", harborTask("[verifier]\nenv = {FOO = \"${DAYTONA_API_KEY}\", OK = \"${JUDGE_KEY}\"}\n"),
			[]string{`task.toml: verifier.env: FOO = "${DAYTONA_API_KEY}": task t1 may not take DAYTONA_API_KEY: DAYTONA_* variables are forge's own (its API key and settings)`}},
		{"forge's own, with a default", harborTask("[verifier]\nenv = {RUN = \"${FORGE_RUN_ID:-x}\"}\n"),
			[]string{`task.toml: verifier.env: RUN = "${FORGE_RUN_ID:-x}": task t1 may not take FORGE_RUN_ID: FORGE_* variables are forge's own`}},
		{"a candidate's secret to the solution", harborTask("[solution]\nenv = {K = \"${OPENAI_API_KEY}\"}\n"),
			[]string{`task.toml: solution.env: K = "${OPENAI_API_KEY}": task t1 may not take OPENAI_API_KEY: it is candidate a's secret, and what a task takes reaches every candidate`}},
		{"the candidates' secret", harborTask("[verifier]\nenv = {K = \"${SHARED_KEY}\"}\n"),
			[]string{`task t1 may not take SHARED_KEY: it is the candidates' secret (defaults.secrets)`}},
		{"tasks file", map[string]string{"tasks.jsonl": `{"id": "t1", "secrets": ["OPENAI_API_KEY"]}` + "\n" +
			`{"id": "t2", "env": {"A": "Bearer ${SHARED_KEY}", "G": "${GATEWAY}/v1"}}` + "\n" + `{"id": "t3", "env_from_host": ["OPENAI_API_KEY"]}` + "\n"},
			[]string{`tasks.jsonl:1: secrets: "OPENAI_API_KEY": task t1 may not take OPENAI_API_KEY: it is candidate a's secret`,
				`tasks.jsonl:2: env: A: ${SHARED_KEY}: task t2 may not take SHARED_KEY: it is the candidates' secret (defaults.secrets)`,
				`tasks.jsonl:3: env_from_host: "OPENAI_API_KEY": task t3 may not take OPENAI_API_KEY`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			manifest := "objective: x\ntasks_file: tasks.jsonl\n" + candidates
			if _, ok := c.files["task.toml"]; ok {
				testfiles.Write(t, filepath.Join(dir, "tasks", "t1"), c.files)
				manifest = "objective: x\nharbor: tasks\n" + candidates
			} else {
				testfiles.Write(t, dir, c.files)
			}
			testfiles.Write(t, dir, map[string]string{"forge.yaml": manifest})
			_, err := Load(filepath.Join(dir, "forge.yaml"))
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			if n := Problems(err); n != len(c.want) {
				t.Errorf("%d problems, want %d: %v", n, len(c.want), err)
			}
		})
	}
}

// TestHarborScoresByReward: a Harbor suite without scoring: ranks by its
// verifiers' reward, so a fast wrong answer (reward 0) is not first; a
// scoring: that weighs more than the reward, or leaves it out, is kept and
// noted (issue 41).
func TestHarborScoresByReward(t *testing.T) {
	dir := t.TempDir()
	testfiles.Write(t, filepath.Join(dir, "tasks", "t1"), map[string]string{"task.toml": "version = \"1.0\"\n", "instruction.md": "x",
		"tests/test.sh": "true\n", "environment/Dockerfile": "FROM python:3.12-slim\n"})
	load := func(scoring string) *Manifest {
		t.Helper()
		testfiles.Write(t, dir, map[string]string{"forge.yaml": "harbor: tasks\ncandidates: [{id: hasty, command: [\"true\"]}, {id: steady, command: [\"true\"]}]\n" + scoring})
		m, err := Load(filepath.Join(dir, "forge.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := load("")
	if len(m.Notes) != 0 {
		t.Errorf("notes %q", m.Notes)
	}
	p, err := m.Plan(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	reward := func(r float64) *float64 { return &r }
	rec := &record.Record{Results: []record.Trial{
		{Result: runner.Result{CandidateID: "hasty", TaskID: "t1", Trial: 1, Success: true, RuntimeSeconds: 0.1, Reward: reward(0)}},
		{Result: runner.Result{CandidateID: "steady", TaskID: "t1", Trial: 1, Success: true, RuntimeSeconds: 9, Reward: reward(1)}},
	}}
	score(rec, m.Scoring, p.suite(1))
	if st := rec.Standings; len(st) != 2 || st[0].CandidateID != "steady" || st[0].Score != 1 || st[1].Score != 0 {
		t.Errorf("standings %+v, want steady first, 1 to 0", st)
	}

	for scoring, want := range map[string]string{
		"scoring: [{type: verifier}]\n": "",
		"scoring: [{type: success}, {type: runtime, weight: 0.2}]\n": "scoring: a Harbor suite's verifiers judge its trials, and this one (success, runtime) leaves their reward out: " +
			"a trial rewarded 0 ranks as one rewarded 1; add {type: verifier}",
		"scoring: [{type: verifier}, {type: runtime, weight: 0.2}]\n": "scoring: a Harbor suite's verifiers judge its trials, and this one weighs runtime besides their reward: " +
			"a trial rewarded 0 may outrank one rewarded 1; [{type: verifier}] ranks by the reward alone",
	} {
		m := load(scoring)
		if got := strings.Join(m.Notes, "\n"); got != want {
			t.Errorf("%s notes %q\nwant %q", scoring, got, want)
		}
	}
}

// TestVerifyEnvTakesNoKeyOfForge: a ${NAME} in defaults.verify.env (which a
// Harbor task's verifier takes from the host) or in a task's verify env
// naming forge's own variables or a candidate's secret is refused as a
// task.toml's [verifier.env] is, naming where, the key and why (issue 41).
func TestVerifyEnvTakesNoKeyOfForge(t *testing.T) {
	dir := t.TempDir()
	testfiles.Write(t, filepath.Join(dir, "tasks", "t1"), map[string]string{"task.toml": "version = \"1.0\"\n", "instruction.md": "x",
		"tests/test.sh": "true\n", "environment/Dockerfile": "FROM python:3.12-slim\n"})
	testfiles.Write(t, dir, map[string]string{
		"forge.yaml": "objective: x\nharbor: tasks\ndefaults:\n  verify: {command: \"bash $FORGE_TESTS_DIR/test.sh\", env: {KEY: \"${DAYTONA_API_KEY}\", OK: \"${JUDGE_KEY}\"}}\n" +
			"candidates:\n  - {id: a, command: [\"true\"], secrets: [OPENAI_API_KEY]}\n",
		"tasks.yaml": "objective: x\ntasks: [{id: t2, verify: {command: \"true\", env: {K: \"${OPENAI_API_KEY}\"}}}]\n" +
			"candidates:\n  - {id: a, command: [\"true\"], secrets: [OPENAI_API_KEY]}\n",
	})
	for file, want := range map[string]string{
		"forge.yaml": `defaults.verify.env: KEY = "${DAYTONA_API_KEY}": the verifier may not take DAYTONA_API_KEY: DAYTONA_* variables are forge's own`,
		"tasks.yaml": `verify.env: K = "${OPENAI_API_KEY}": the verifier may not take OPENAI_API_KEY: it is candidate a's secret`,
	} {
		_, err := Load(filepath.Join(dir, file))
		if err == nil || !strings.Contains(err.Error(), want) || Problems(err) != 1 {
			t.Errorf("%s: %v\nwant one problem, %q", file, err, want)
		}
	}
}
