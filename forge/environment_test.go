package forge

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

const envManifest = `objective: x
environments:
  agent:
    image: python:3.12-slim
    files: [requirements.txt]
    env: {PIP_NO_CACHE_DIR: "1"}
    pip: [httpx==0.27, "it's"]
    build:
      - pip install -r requirements.txt
  twin:
    image: python:3.12-slim
    files: [requirements.txt]
    env: {PIP_NO_CACHE_DIR: "1"}
    pip: [httpx==0.27, "it's"]
    build:
      - pip install -r requirements.txt
defaults:
  environment: agent
candidates:
  - id: a
    script: a.py
  - id: b
    script: a.py
    environment: twin
  - id: c
    script: a.py
    environment:
      build: [make]
`

func TestEnvironmentsOfTheManifest(t *testing.T) {
	dir := writeTree(t, map[string]string{"forge.yaml": envManifest, "a.py": okScript, "requirements.txt": "openai\n"})
	m, err := Load(filepath.Join(dir, "forge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Plan(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	envOf := map[string]*runner.Environment{}
	for _, j := range p.Jobs {
		envOf[j.CandidateID] = j.Environment
	}
	a, b, c := envOf["a"], envOf["b"], envOf["c"]
	if a == nil || b == nil || c == nil {
		t.Fatalf("every candidate runs in an environment: a %v, b %v, c %v", a, b, c)
	}
	if a.Name != "agent" || b.Name != "twin" || c.Name != "c" {
		t.Errorf("names: %q %q %q, want agent, twin, c (an inline one takes its candidate's id)", a.Name, b.Name, c.Name)
	}
	if a.Hash != b.Hash {
		t.Errorf("the same content under two names is one environment: %s and %s", a.Hash, b.Hash)
	}
	if a.Hash == c.Hash || len(a.Hash) != 64 {
		t.Errorf("hashes: a %s, c %s", a.Hash, c.Hash)
	}
	want := []string{
		`python3 -m venv "$FORGE_ENV_DIR"`,
		`"$FORGE_ENV_DIR/bin/python" -m pip install --disable-pip-version-check --no-input 'httpx==0.27' 'it'\''s'`,
		"pip install -r requirements.txt",
	}
	if !slices.Equal(a.Build, want) {
		t.Errorf("build steps:\n%q\nwant\n%q", a.Build, want)
	}
	if len(a.Files) != 1 || a.Files[0].Dst != "requirements.txt" || a.Env["PIP_NO_CACHE_DIR"] != "1" {
		t.Errorf("files %v, env %v", a.Files, a.Env)
	}
	if got := p.Environments(); len(got) != 2 {
		t.Errorf("the plan's environments: %d, want 2 (agent and twin are one)", len(got))
	}

	// One byte of a build file is another environment; so is the
	// manifest's own change.
	if err := os.WriteFile(filepath.Join(dir, "requirements.txt"), []byte("openaj\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(filepath.Join(dir, "forge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := m2.Plan(Overrides{})
	if h := p2.Jobs[0].Environment.Hash; h == a.Hash {
		t.Error("a changed build file leaves the environment's hash unchanged")
	}
	if m2.Hash == m.Hash {
		t.Error("a changed build file leaves the manifest's hash unchanged (--resume would take the run for the same)")
	}
}

func TestEnvironmentErrors(t *testing.T) {
	cases := []struct{ name, manifest, want string }{
		{"unknown", "objective: x\ncandidates:\n  - id: a\n    script: a.py\n    environment: agnet\nenvironments:\n  agent: {build: [x]}\n",
			`forge.yaml:5:18: candidates[0].environment: unknown environment "agnet" (environments: agent)`},
		{"none at all", "objective: x\ndefaults: {environment: agent}\ncandidates: [{id: a, script: a.py}]\n",
			`defaults.environment: unknown environment "agent": the manifest has no environments:`},
		{"empty", "objective: x\nenvironments:\n  e: {env: {A: b}}\ncandidates: [{id: a, script: a.py, environment: e}]\n",
			"environments.e: builds nothing"},
		{"secret", "objective: x\nenvironments:\n  e: {build: [x], env: {K: '${KEY}'}}\ncandidates: [{id: a, script: a.py}]\n",
			"environments.e.env.K: values are literal here"},
		{"unknown key inline", "objective: x\ncandidates:\n  - id: a\n    script: a.py\n    environment: {biuld: [x]}\n",
			`candidates[0].environment.biuld: unknown key "biuld" (did you mean "build"?)`},
		{"missing file", "objective: x\nenvironments:\n  e: {files: [nope.txt]}\ncandidates: [{id: a, script: a.py}]\n",
			"environments.e.files[0]: nope.txt:"},
		{"bad name", "objective: x\nenvironments:\n  'a b': {build: [x]}\ncandidates: [{id: a, script: a.py}]\n",
			`"a b" is not a valid environment name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{"forge.yaml": tc.manifest, "a.py": okScript})
			_, err := Load(filepath.Join(dir, "forge.yaml"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load = %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}

// builderRunner is a fake backend that builds environments.
type builderRunner struct {
	fakeRunner
	build func(ctx context.Context, env *runner.Environment, log func(string)) (runner.EnvironmentBuild, error)
}

func (b builderRunner) BuildEnvironment(ctx context.Context, env *runner.Environment, log func(string)) (runner.EnvironmentBuild, error) {
	return b.build(ctx, env, log)
}

// envPlan is a plan of ids × trials jobs in env.
func envPlan(t *testing.T, env *runner.Environment, trials, concurrency int, ids ...string) (*Manifest, *Plan) {
	m, p := testPlan(t, ids, trials, concurrency)
	for i := range p.Jobs {
		p.Jobs[i].Environment = env
	}
	return m, p
}

func TestEnvironmentIsBuiltOnceBeforeItsJobs(t *testing.T) {
	env := &runner.Environment{Name: "agent", Hash: strings.Repeat("ab", 32), Build: []string{"x"}}
	m, p := envPlan(t, env, 10, 8, "alpha", "beta")
	var builds, ran atomic.Int32
	r := builderRunner{
		fakeRunner: fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
			if builds.Load() != 1 {
				t.Errorf("%s ran before its environment was built", job.Name())
			}
			ran.Add(1)
			return runner.Result{Success: true, ExitCode: new(int)}, nil
		}},
		build: func(ctx context.Context, e *runner.Environment, log func(string)) (runner.EnvironmentBuild, error) {
			if builds.Add(1) > 1 {
				t.Errorf("environment %s built again", e.Name)
			}
			log("Collecting httpx")
			log("Successfully installed httpx")
			return runner.EnvironmentBuild{Hash: e.Hash, Where: "/cache/" + runner.ShortHash(e.Hash), Seconds: 12.5}, nil
		},
	}
	var events []Event
	var mu sync.Mutex
	out := t.TempDir()
	rec, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: r, Backend: "local", OutRoot: out, RunID: "env1",
		Events: func(e Event) {
			if e.Kind == EventEnvironment {
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if builds.Load() != 1 || ran.Load() != 20 {
		t.Fatalf("%d builds and %d jobs, want 1 and 20", builds.Load(), ran.Load())
	}
	for _, res := range rec.Results {
		if res.Environment != env.Hash || !res.Success {
			t.Errorf("%s#%d: environment %q, success %v", res.CandidateID, res.Trial, res.Environment, res.Success)
		}
	}
	want := record.EnvironmentBuilt{Name: "agent", Hash: env.Hash, Where: "/cache/abababababababab", BuildSeconds: 12.5,
		Log: "environments/agent-abababababababab.log"}
	if len(rec.Environments) != 1 || rec.Environments[0] != want {
		t.Fatalf("record's environments: %+v\nwant %+v", rec.Environments, want)
	}
	log, err := os.ReadFile(filepath.Join(out, "env1", want.Log))
	if err != nil || string(log) != "Collecting httpx\nSuccessfully installed httpx\n" {
		t.Errorf("build log %q, %v", log, err)
	}
	// Started, two lines, ended.
	if len(events) != 4 || events[0].Line != nil || events[0].Built != nil || *events[1].Line != "Collecting httpx" || events[3].Built == nil {
		t.Errorf("environment events: %+v", events)
	}
	read, err := record.Read(filepath.Join(out, "env1", record.ResultsFile))
	if err != nil || len(read.Environments) != 1 || read.Results[0].Environment != env.Hash {
		t.Errorf("results.json keeps the environments: %v, %+v", err, read)
	}
}

func TestFailedBuildStopsTheRun(t *testing.T) {
	env := &runner.Environment{Name: "agent", Hash: strings.Repeat("cd", 32), Build: []string{"pip install nothere"}}
	m, p := envPlan(t, env, 5, 2, "alpha", "beta")
	var ran, builds atomic.Int32
	r := builderRunner{
		fakeRunner: fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
			ran.Add(1)
			return runner.Result{Success: true}, nil
		}},
		build: func(ctx context.Context, e *runner.Environment, log func(string)) (runner.EnvironmentBuild, error) {
			builds.Add(1)
			log("ERROR: No matching distribution found for nothere")
			return runner.EnvironmentBuild{}, &runner.BuildError{Name: e.Name, Hash: e.Hash,
				Tail: []string{"ERROR: No matching distribution found for nothere"}, Err: errors.New("step 1 exited 1")}
		},
	}
	out := t.TempDir()
	rec, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: r, Backend: "local", OutRoot: out, RunID: "env2"})
	var unusable *runner.UnusableError
	var be *runner.BuildError
	if !errors.As(err, &unusable) || !errors.As(err, &be) || be.Tail[0] != "ERROR: No matching distribution found for nothere" {
		t.Fatalf("Run = %v, want an UnusableError around the BuildError with its tail", err)
	}
	if ran.Load() != 0 || builds.Load() != 1 {
		t.Errorf("%d jobs ran and %d builds after a failed build, want 0 and 1", ran.Load(), builds.Load())
	}
	for _, res := range rec.Results {
		if res.Success || res.ErrorKind.Scored() {
			t.Errorf("%s#%d: %s %q: a job without its environment is not the candidate's failure", res.CandidateID, res.Trial, res.ErrorKind, res.ErrorMessage)
		}
	}
	if len(rec.Environments) != 1 || !strings.Contains(rec.Environments[0].Error, "step 1 exited 1") {
		t.Errorf("record's environments: %+v", rec.Environments)
	}
}

// A job that finds its built environment cannot take a job, in a way a
// fresh sandbox would repeat (Result.Lasting), spoils it: the
// environment's later jobs are not started, and as the manifest's (not a
// task's) environment it stops the run, as a failed build does.
func TestLastingFailureSpoilsItsEnvironment(t *testing.T) {
	env := &runner.Environment{Name: "agent", Hash: strings.Repeat("ef", 32), Build: []string{"x"}}
	m, p := envPlan(t, env, 4, 1, "alpha")
	var ran atomic.Int32
	r := builderRunner{
		fakeRunner: fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
			ran.Add(1)
			res := runner.Result{Lasting: true}
			res.Failed(runner.ErrInfra, "the image's user may not write /home/x/a.py")
			return res, nil
		}},
		build: func(ctx context.Context, e *runner.Environment, log func(string)) (runner.EnvironmentBuild, error) {
			return runner.EnvironmentBuild{Hash: e.Hash}, nil
		},
	}
	// Played one at a time: the first spoils the environment, the second
	// fails at once and stops the run. Only the first started.
	var started, done atomic.Int32
	events := func(e Event) {
		switch e.Kind {
		case EventStarted:
			started.Add(1)
		case EventDone:
			done.Add(1)
		}
	}
	rec, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: r, Backend: "fake", OutRoot: t.TempDir(), RunID: "env3", Events: events})
	if started.Load() != 1 || done.Load() != 2 {
		t.Errorf("%d jobs started, %d done; want 1 and 2", started.Load(), done.Load())
	}
	var be *runner.BuildError
	if !errors.As(err, &be) || !be.Built || !strings.Contains(err.Error(), "environment agent (efefefefefefefef) cannot run a job: the image's user may not write") {
		t.Fatalf("Run = %v, want the spoiled environment's error", err)
	}
	if ran.Load() != 1 || rec.Results[0].Attempts != 1 {
		t.Errorf("%d jobs ran, the first in %d attempts; want 1 and 1", ran.Load(), rec.Results[0].Attempts)
	}
	if len(rec.Environments) != 1 || rec.Environments[0].Error != "the image's user may not write /home/x/a.py" {
		t.Errorf("record's environments: %+v", rec.Environments)
	}
}

func TestBackendWithoutBuilderRefusesEnvironments(t *testing.T) {
	env := &runner.Environment{Name: "agent", Hash: strings.Repeat("ef", 32)}
	m, p := envPlan(t, env, 1, 1, "alpha")
	ran := false
	r := fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
		ran = true
		return runner.Result{}, nil
	}}
	out := t.TempDir()
	_, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: r, Backend: "odd", OutRoot: out, RunID: "env3"})
	if err == nil || !strings.Contains(err.Error(), "the odd backend cannot build environments (environment agent)") || ran {
		t.Fatalf("Run = %v (ran %v)", err, ran)
	}
	if _, err := os.Stat(filepath.Join(out, "env3")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run left %s: %v", filepath.Join(out, "env3"), err)
	}
}

// TestTaskEnvironments: a task names an environment, gives one inline, or
// one defined by a Dockerfile and its build context (in any tasks file);
// its jobs run in it over the candidate's, and a Dockerfile task is an
// image task whose identity is the Dockerfile and every context file.
func TestTaskEnvironments(t *testing.T) {
	files := map[string]string{
		"forge.yaml": `objective: x
environments:
  tools: {build: [make tools]}
defaults: {environment: {build: [make base]}}
tasks:
  - {id: named, environment: tools}
  - {id: inline, environment: {build: [make inline]}}
tasks_file: tasks.jsonl
candidates:
  - {id: a, script: a.py}
`,
		"tasks.jsonl":    `{"id": "image", "environment": {"dockerfile": "img/Dockerfile"}}` + "\n" + `{"id": "plain"}` + "\n",
		"a.py":           okScript,
		"img/Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\nCOPY app.py /app/\n",
		"img/app.py":     "print('v1')\n",
	}
	plan := func() *Plan {
		m, err := Load(filepath.Join(writeTree(t, files), "forge.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		p, err := m.Plan(Overrides{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := plan()
	by := map[string]runner.Job{}
	for _, j := range p.Jobs {
		by[j.TaskID] = j
	}
	switch {
	case by["named"].Environment == nil || by["named"].Environment.Name != "tools":
		t.Errorf("named: %+v", by["named"].Environment)
	case by["inline"].Environment == nil || by["inline"].Environment.Build[0] != "make inline":
		t.Errorf("inline: %+v", by["inline"].Environment)
	case by["plain"].Environment == nil || by["plain"].Environment.Build[0] != "make base":
		t.Errorf("plain (the defaults'): %+v", by["plain"].Environment)
	case by["image"].Environment == nil || !by["image"].InImageWorkdir || !slices.Equal(by["image"].Environment.ContextFiles, []string{"Dockerfile", "app.py"}):
		t.Errorf("image: %+v", by["image"].Environment)
	}
	if got := p.ImageTasks(); !slices.Equal(got, []string{"image"}) {
		t.Errorf("image tasks %v", got)
	}
	hash := by["image"].Environment.Hash
	files["img/app.py"] = "print('v2')\n"
	if plan().Jobs[0].Environment != nil && hashOf(plan(), "image") == hash {
		t.Error("a context file's content changed and the image's identity did not")
	}

	files["tasks.jsonl"] = `{"id": "bad", "environment": {"dockerfile": "img/Dockerfile", "build": ["x"]}}` + "\n" + `{"id": "worse", "environment": {"imgae": "x"}}` + "\n"
	_, err := Load(filepath.Join(writeTree(t, files), "forge.yaml"))
	for _, want := range []string{"tasks.jsonl:1: environment: a Dockerfile is the whole environment", "tasks.jsonl:2: environment.imgae: unknown key"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}

func hashOf(p *Plan, task string) string {
	for _, j := range p.Jobs {
		if j.TaskID == task {
			return j.Environment.Hash
		}
	}
	return ""
}

// TestTaskEnvironmentProblemsAreTheTasks: a problem with a tasks file's own
// environment is placed at the task's line, by its key path (a misspelt
// key too), and an unknown one lists the manifest's
// environments, as a candidate's does.
func TestTaskEnvironmentProblemsAreTheTasks(t *testing.T) {
	_, err := Load(filepath.Join(writeTree(t, map[string]string{
		"forge.yaml": "objective: x\nenvironments:\n  tools: {build: [make]}\ntasks_file: tasks.jsonl\ncandidates:\n  - {id: a, script: a.py}\n",
		"tasks.jsonl": `{"id": "t1", "environment": {"pip": ["x", ""]}}` + "\n" +
			`{"id": "t2", "environment": {"dockerfile": "nope/Dockerfile"}}` + "\n" +
			`{"id": "t3", "environment": "tool"}` + "\n" +
			`{"id": "t4", "environment": {"imgae": "x", "timeout": 5, "build": ["make"]}}` + "\n",
		"a.py": okScript,
	}), "forge.yaml"))
	if err == nil {
		t.Fatal("loaded")
	}
	for _, want := range []string{
		"tasks.jsonl:1: environment.pip[1]: is empty",
		"tasks.jsonl:2: environment.dockerfile: open ",
		`tasks.jsonl:3: environment: unknown environment "tool" (environments: tools)`,
		`tasks.jsonl:4: environment.imgae: unknown key`,
		`tasks.jsonl:4: environment.timeout: "5" is not a duration`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nlacks %q", err, want)
		}
	}
}
