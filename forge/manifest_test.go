package forge

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/yamlcheck"
	"gopkg.in/yaml.v3"
)

// writeTree writes files (path → content) under a fresh directory.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const okScript = "print('hi')\n"

func TestLoadValid(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"forge.yaml": `objective: "Generate weekly AI events"
defaults:
  timeout: 45s
  trials: 2
  concurrency: 3
  output_file: post.md
  max_output: 512KiB
  files: [data/events.json]
  env: {SHARED: "1"}
candidates:
  - id: alpha
    script: candidates/alpha.py
  - id: beta.v2
    command: ["python3", "candidates/beta.py", "--fast"]
    timeout: 2m
    env: {MODE: fast, SHARED: "2"}
`,
		"candidates/alpha.py": okScript,
		"candidates/beta.py":  okScript,
		"data/events.json":    "{}",
	})
	m, err := Load(filepath.Join(dir, "forge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.Hash, "sha256:") {
		t.Errorf("hash = %q", m.Hash)
	}
	p, err := m.Plan(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Concurrency != 3 || p.Trials != 2 || len(p.Jobs) != 4 {
		t.Fatalf("plan = conc %d trials %d jobs %d", p.Concurrency, p.Trials, len(p.Jobs))
	}
	a, b := p.Jobs[0], p.Jobs[2]
	if got := strings.Join(a.Command, " "); got != "python3 candidates/alpha.py" {
		t.Errorf("alpha command = %q", got)
	}
	if got := strings.Join(b.Command, " "); got != "python3 candidates/beta.py --fast" {
		t.Errorf("beta command = %q", got)
	}
	if a.Timeout != 45*time.Second || b.Timeout != 2*time.Minute {
		t.Errorf("timeouts = %s, %s", a.Timeout, b.Timeout)
	}
	if a.OutputFile != "post.md" || a.Limits.MaxOutputBytes != 512<<10 {
		t.Errorf("output file %q, max output %d", a.OutputFile, a.Limits.MaxOutputBytes)
	}
	if b.Env["MODE"] != "fast" || b.Env["SHARED"] != "2" || a.Env["SHARED"] != "1" {
		t.Errorf("env alpha %v beta %v", a.Env, b.Env)
	}
	dsts := func(j int) string {
		var s []string
		for _, f := range p.Jobs[j].Files {
			s = append(s, f.Dst)
		}
		return strings.Join(s, ",")
	}
	if dsts(0) != "candidates/alpha.py,data/events.json" || dsts(2) != "candidates/beta.py,data/events.json" {
		t.Errorf("files = %s | %s", dsts(0), dsts(2))
	}
	// Flags win over the manifest.
	p, err = m.Plan(Overrides{Concurrency: 1, Trials: 1, Timeout: time.Second, Only: []string{"beta.v2"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Concurrency != 1 || len(p.Jobs) != 1 || p.Jobs[0].Timeout != time.Second || p.Jobs[0].CandidateID != "beta.v2" {
		t.Errorf("overridden plan = %+v", p)
	}
	if _, err := m.Plan(Overrides{Only: []string{"nobody"}}); err == nil || !strings.Contains(err.Error(), `no candidate "nobody"`) {
		t.Errorf("--only nobody: %v", err)
	}
}

// TestLoadErrors checks that each bad manifest is refused with a message that
// names the file, the line and column, and the key.
func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name, manifest string
		files          map[string]string
		want           []string
	}{
		{"unknown key", "objective: x\ncandidates:\n  - id: a\n    script: a.py\n    timout: 5s\n", nil,
			[]string{"forge.yaml:5:5", "candidates[0].timout", `unknown key "timout" (did you mean "timeout"?)`}},
		{"unknown top-level key", "objectiv: x\ncandidates: [{id: a, script: a.py}]\n", nil,
			[]string{"forge.yaml:1:1", `unknown key "objectiv"`}},
		{"duplicate id", "objective: x\ncandidates:\n  - id: a\n    script: a.py\n  - id: a\n    script: a.py\n", nil,
			[]string{"forge.yaml:5:9", "candidates[1].id", `duplicate id "a"`}},
		{"dotdot id", "objective: x\ncandidates:\n  - id: ../evil\n    script: a.py\n", nil,
			[]string{"forge.yaml:3:9", "candidates[0].id", `"../evil" is not a valid id`}},
		{"dot-dot exactly", "objective: x\ncandidates:\n  - id: ..\n    script: a.py\n", nil,
			[]string{"candidates[0].id", "not a valid id"}},
		{"missing script", "objective: x\ncandidates:\n  - id: a\n    script: nope.py\n", nil,
			[]string{"forge.yaml:4:13", "candidates[0].script", "nope.py", "no such file"}},
		{"bad duration", "objective: x\ndefaults:\n  timeout: 5 minutes\ncandidates: [{id: a, script: a.py}]\n", nil,
			[]string{"forge.yaml:3:12", `"5 minutes" is not a duration`}},
		{"negative duration", "objective: x\ndefaults:\n  timeout: -5s\ncandidates: [{id: a, script: a.py}]\n", nil,
			[]string{"forge.yaml:3:12", "must be positive"}},
		{"empty candidates", "objective: x\ncandidates: []\n", nil,
			[]string{"forge.yaml:2:13", "candidates", "at least one candidate"}},
		{"no candidates key", "objective: x\n", nil, []string{"candidates", "at least one candidate"}},
		{"missing objective", "candidates: [{id: a, script: a.py}]\n", nil, []string{"objective", "is required"}},
		{"not yaml", "objective: [unclosed\ncandidates:\n", nil, []string{"forge.yaml:", "not valid YAML"}},
		{"binary", "\x7fELF\x02\x01\x01\x00\x00\x00", nil, []string{"forge.yaml", "binary"}},
		{"a list", "- id: a\n", nil, []string{"forge.yaml:1:1", "must be a mapping"}},
		{"empty file", "", nil, []string{"forge.yaml", "empty"}},
		{"wrong type", "objective: x\ndefaults:\n  trials: many\ncandidates: [{id: a, script: a.py}]\n", nil,
			[]string{"forge.yaml:3:11: defaults.trials: want a whole number (e.g. 4), not the text \"many\""}},
		{"negative trials", "objective: x\ndefaults:\n  trials: -1\ncandidates: [{id: a, script: a.py}]\n", nil,
			[]string{"forge.yaml:3:11", "defaults.trials", "at least 1"}},
		{"negative retries", "objective: x\ndefaults:\n  retries: -1\ncandidates: [{id: a, script: a.py}]\n", nil,
			[]string{"forge.yaml:3:12", "defaults.retries", "must not be negative"}},
		{"negative candidate retries", "objective: x\ncandidates:\n  - id: a\n    script: a.py\n    retries: -2\n", nil,
			[]string{"forge.yaml:5:14", "candidates[0].retries", "must not be negative"}},
		{"script and command", "objective: x\ncandidates:\n  - id: a\n    script: a.py\n    command: [python3, a.py]\n", nil,
			[]string{"candidates[0].command", "not both"}},
		{"neither script nor command", "objective: x\ncandidates:\n  - id: a\n", nil,
			[]string{"candidates[0]", "needs script:, command: or agent:"}},
		{"FORGE_ env", "objective: x\ncandidates:\n  - id: a\n    script: a.py\n    env: {FORGE_OUTPUT: x}\n", nil,
			[]string{"candidates[0].env", "set by forge itself"}},
		{"output outside workdir", "objective: x\ndefaults:\n  output_file: ../x.md\ncandidates: [{id: a, script: a.py}]\n", nil,
			[]string{"forge.yaml:3:16", "defaults.output_file", `"../x.md" does not name a file inside the working directory`}},
		{"candidate output outside workdir", "objective: x\ncandidates:\n  - id: a\n    script: a.py\n    output_file: ../x.md\n", nil,
			[]string{"forge.yaml:5:18", "candidates[0].output_file", `"../x.md" does not name a file inside the working directory`}},
		{"absolute output", "objective: x\ncandidates: [{id: a, script: a.py, output_file: /tmp/x.md}]\n", nil,
			[]string{"candidates[0].output_file", `"/tmp/x.md" is absolute`}},
		{"output is the workdir", "objective: x\ncandidates: [{id: a, script: a.py, output_file: out/..}]\n", nil,
			[]string{"candidates[0].output_file", "does not name a file inside"}},
		{"script outside manifest dir", "objective: x\ncandidates: [{id: a, script: ../outside.py}]\n", map[string]string{"../outside.py": okScript},
			[]string{"candidates[0].script", "outside the manifest's directory"}},
		{"file name with a backslash", "objective: x\ndefaults:\n  files: ['data\\x.json']\ncandidates: [{id: a, script: a.py}]\n",
			map[string]string{`data\x.json`: "{}"},
			[]string{"defaults.files[0]", "cannot be copied by its path relative to the manifest's directory", "backslash"}},
		{"not executable", "objective: x\ncandidates: [{id: a, script: run.bin}]\n", map[string]string{"run.bin": "x"},
			[]string{"candidates[0].script", "not executable"}},
		{"duplicate key", "objective: x\nobjective: y\ncandidates: [{id: a, script: a.py}]\n", nil,
			[]string{"forge.yaml:2:1: objective: is given twice (also at line 1): keep one"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if runtime.GOOS == "windows" && strings.Contains(tc.name, "backslash") {
				t.Skip("a backslash separates directories on Windows")
			}
			files := map[string]string{"forge.yaml": tc.manifest, "a.py": okScript}
			for k, v := range tc.files {
				files[k] = v
			}
			dir := writeTree(t, files)
			_, err := Load(filepath.Join(dir, "forge.yaml"))
			if err == nil {
				t.Fatal("Load accepted a bad manifest")
			}
			msg := strings.ReplaceAll(err.Error(), filepath.Join(dir, "forge.yaml"), "forge.yaml")
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q\n does not contain %q", msg, w)
				}
			}
			var me *Error
			if !errors.As(err, &me) {
				t.Errorf("error is not a *forge.Error: %T", err)
			}
		})
	}
}

// TestLoadCleansOutputFile: output_file follows runner.RelPath, so a path
// that stays inside the working directory once cleaned is valid, and the
// jobs carry it cleaned.
func TestLoadCleansOutputFile(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"forge.yaml": "objective: x\ndefaults:\n  output_file: ./out//post.md\ncandidates:\n  - {id: a, script: a.py, output_file: out/../x.md}\n  - {id: b, script: a.py}\n",
		"a.py":       okScript,
	})
	m, err := Load(filepath.Join(dir, "forge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Plan(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := p.Jobs[0].EffectiveOutputFile(), p.Jobs[1].EffectiveOutputFile(); a != "x.md" || b != "out/post.md" {
		t.Errorf("output files %q, %q; want x.md, out/post.md", a, b)
	}
}

func TestLoadReportsEveryError(t *testing.T) {
	dir := writeTree(t, map[string]string{"forge.yaml": "objective: x\ncandidates:\n  - {id: a, scrpit: a.py}\n  - {id: b, comand: [x]}\n"})
	_, err := Load(filepath.Join(dir, "forge.yaml"))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, w := range []string{`"scrpit"`, `"comand"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q missing from %v", w, err)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "forge.yaml"))
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]Size{"1048576": 1 << 20, "512KiB": 512 << 10, "1MiB": 1 << 20, "2GB": 2e9, "1.5 KiB": 1536} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "0", "lots", "1XB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}

// FuzzParse feeds arbitrary bytes to the manifest parser: it must never
// panic, and whatever it accepts must satisfy the manifest's invariants.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"objective: x\ncandidates: [{id: a, script: a.py}]\n",
		"objective: x\ndefaults: {timeout: 5s, trials: 2, max_output: 1MiB}\ncandidates:\n  - id: a\n    command: [python3, a.py]\n    env: {A: b}\n",
		"objective: &o x\ncandidates: [{id: *o, script: a.py}]\n",
		"a: &a [*a]\n",
		"objective: x\nscoring:\n  - {type: success}\ndaytona: {image: python:3.12, resources: {cpu: 1}}\n",
		"objective: x\ncandidates: [{id: a, script: a.py}]\nbox: {size: 2}\n",
		"\x00\xff",
		"- - -",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	var calls int
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("fuzz.yaml", data, sizeBlock(&calls))
		if err != nil {
			if m != nil {
				t.Fatal("manifest returned with an error")
			}
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if b, ok := m.Blocks["box"]; ok && b.(int) < 0 {
			t.Fatalf("accepted a box of size %d", b)
		}
		if strings.TrimSpace(m.Objective) == "" || len(m.Candidates) == 0 {
			t.Fatalf("accepted a manifest without objective or candidates: %q", data)
		}
		seen := map[string]bool{}
		for _, c := range m.Candidates {
			if !ValidID(c.ID) || seen[c.ID] {
				t.Fatalf("accepted bad or duplicate id %q", c.ID)
			}
			seen[c.ID] = true
		}
	})
}

func TestLoadScoringErrors(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.py": okScript, "forge.yaml": `objective: x
candidates: [{id: a, script: a.py}]
scoring:
  - type: success
  - type: submitted
    field: quality
    wieght: 2
`})
	_, err := Load(filepath.Join(dir, "forge.yaml"))
	if err == nil || !strings.Contains(err.Error(), "forge.yaml:7:5") || !strings.Contains(err.Error(), `unknown key "wieght" (did you mean "weight"?)`) {
		t.Fatalf("err = %v", err)
	}
	dir = writeTree(t, map[string]string{"a.py": okScript, "forge.yaml": `objective: x
candidates: [{id: a, script: a.py}]
scoring:
  - type: success
  - type: artifact
    checks:
      - regex: "(unclosed"
`})
	_, err = Load(filepath.Join(dir, "forge.yaml"))
	if err == nil || !strings.Contains(err.Error(), "scoring[1].checks[0]") || !strings.Contains(err.Error(), "forge.yaml:7:") {
		t.Fatalf("err = %v", err)
	}
}

// sizeBlock is a backend's block as forge sees it: a key of the manifest
// that a Block decodes and checks, here {size: n} with n ≥ 0.
func sizeBlock(calls *int) Block {
	return Block{Name: "box", Decode: func(n *yaml.Node, path string) (any, []error) {
		*calls++
		var b struct {
			Size int `yaml:"size"`
		}
		if errs := yamlcheck.UnknownKeys(n, reflect.TypeOf(b), path); len(errs) > 0 {
			return nil, errs
		}
		if err := n.Decode(&b); err != nil {
			return nil, []error{err}
		}
		if b.Size < 0 {
			return nil, []error{yamlcheck.Under(n, path, "must not be negative", "size")}
		}
		return b.Size, nil
	}}
}

func TestLoadBlocks(t *testing.T) {
	var calls int
	box := sizeBlock(&calls)
	load := func(manifest string, blocks ...Block) (*Manifest, string) {
		t.Helper()
		dir := writeTree(t, map[string]string{"forge.yaml": manifest, "a.py": okScript})
		m, err := Load(filepath.Join(dir, "forge.yaml"), blocks...)
		if err == nil {
			return m, ""
		}
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			if _, ok := e.(*Error); !ok {
				t.Errorf("%v is a %T, not a *forge.Error", e, e)
			}
		}
		return nil, strings.ReplaceAll(err.Error(), filepath.Join(dir, "forge.yaml"), "forge.yaml")
	}
	const ok = "objective: x\ncandidates: [{id: a, script: a.py}]\n"

	m, msg := load(ok+"box: {size: 3}\n", box)
	if msg != "" || m.Blocks["box"] != 3 || calls != 1 {
		t.Errorf("box: {size: 3}: blocks %v, %d calls, error %s", m.Blocks, calls, msg)
	}
	if m, msg := load(ok, box); msg != "" || len(m.Blocks) != 0 || calls != 1 {
		t.Errorf("no box: blocks %v, %d calls, error %s", m.Blocks, calls, msg)
	}

	for _, tc := range []struct{ name, manifest, want string }{
		{"the block's problem with the others, in the file's order",
			"objective: x\nbox: {size: -1}\ncandidates: [{id: '..', script: a.py}]\nscoring: [{type: success, weight: -1}]\n",
			"forge.yaml:2:13: box.size: must not be negative\n" +
				"forge.yaml:3:19: candidates[0].id: \"..\" is not a valid id: use letters, digits, '_', '.' and '-' only (not . or ..)\n" +
				"forge.yaml:4:10: scoring: at least one scorer needs a positive weight\n" +
				"forge.yaml:4:35: scoring[0].weight: weight must be ≥ 0 and finite"},
		{"unknown keys of both", "objective: x\ncandidates: [{id: a, scrpit: a.py}]\nbox: {szie: 1}\n",
			"forge.yaml:2:22: candidates[0].scrpit: unknown key \"scrpit\" (did you mean \"script\"?)\n" +
				"forge.yaml:3:7: box.szie: unknown key \"szie\" (did you mean \"size\"?)"},
		{"a type error in the block", ok + "box: {size: big}\n",
			"forge.yaml:3:13: box.size: want a whole number (e.g. 4), not the text \"big\""},
		{"a block's name is a known key", ok + "boxx: {size: 1}\n",
			"forge.yaml:3:1: boxx: unknown key \"boxx\" (did you mean \"box\"?)"},
	} {
		if _, msg := load(tc.manifest, box); msg != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, msg, tc.want)
		}
	}
	// A block nobody decodes is an unknown key.
	if _, msg := load(ok + "box: {size: 1}\n"); !strings.Contains(msg, `forge.yaml:3:1: box: unknown key "box"`) {
		t.Errorf("box without its Block: %s", msg)
	}
}

// TestHashOfASharedScript: a script three candidates name is read once
// but hashed as each names it, as before it was read once (the pinned hash
// is the earlier code's), and its content changes the hash.
func TestHashOfASharedScript(t *testing.T) {
	files := map[string]string{
		"forge.yaml": "objective: x\ncandidates:\n  - {id: a, script: a.py}\n  - {id: b, script: a.py}\n  - {id: c, command: [python3, a.py]}\n",
		"a.py":       okScript,
	}
	m, err := Load(filepath.Join(writeTree(t, files), "forge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "sha256:49fb11c2c6ccddb99d99b50f189164d16a8554bc8947d4954d6c3aaaf2168bd2"; m.Hash != want {
		t.Errorf("hash %s, want %s", m.Hash, want)
	}
	files["a.py"] = okScript + "# changed\n"
	m2, err := Load(filepath.Join(writeTree(t, files), "forge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if m2.Hash == m.Hash || m2.Files["a.py"] == m.Files["a.py"] {
		t.Errorf("the script changed, the hash or its digest did not: %s, %s", m2.Hash, m2.Files["a.py"])
	}
}

// TestHashIsTheBytes: the hash is of the manifest's bytes and its files',
// whatever reads its blocks (this one was computed when forge decoded the
// daytona: block itself).
func TestHashIsTheBytes(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"forge.yaml": "objective: x\ndefaults:\n  files: [data.json]\ncandidates:\n  - {id: a, script: a.py}\ndaytona:\n  image: python:3.12\n  resources: {cpu: 2}\n",
		"a.py":       okScript,
		"data.json":  "{}",
	})
	ignore := Block{Name: "daytona", Decode: func(*yaml.Node, string) (any, []error) { return nil, nil }}
	m, err := Load(filepath.Join(dir, "forge.yaml"), ignore)
	if err != nil {
		t.Fatal(err)
	}
	if want := "sha256:8246ed87b8093507f12a3d555c9979bd525482204f75064d0100b28f2d4113a7"; m.Hash != want {
		t.Errorf("hash %s, want %s", m.Hash, want)
	}
}

// loadErrors loads the manifest in files and returns its problems, one a
// line, with the directory left out.
func loadErrors(t *testing.T, files map[string]string) (*Manifest, []string) {
	t.Helper()
	dir := writeTree(t, files)
	m, err := Load(filepath.Join(dir, "forge.yaml"))
	if err == nil {
		return m, nil
	}
	return nil, strings.Split(strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""), "\n")
}

// TestLoadEveryProblemAtOnce: a type error, a bad duration or size, a
// missing file and a check on a field no task has do not hide one another
// nor the rest: one Load says them all, in the file's order, each at its
// place and key.
func TestLoadEveryProblemAtOnce(t *testing.T) {
	_, got := loadErrors(t, map[string]string{"a.py": okScript, "forge.yaml": `objective: Answer the question in the task
defaults:
  concurrency: 0
  trials: -1
  timeout: 5 minutes
  max_output: lots
  setup: pip install httpx
candidates:
  - id: alpha
    script: a.py
    timout: 30s
  - id: alpha
    script: missing.py
    retries: many
    environment: {pip: [httpx], timeout: -5s}
tasks:
  - {id: q1, expected: "391"}
scoring:
  - type: artifact
    checks:
      - equals_task: nosuchfield
`})
	want := []string{
		"forge.yaml:3:16: defaults.concurrency: must be at least 1 (the jobs run at once), not 0",
		"forge.yaml:4:11: defaults.trials: must be at least 1 (the runs of each candidate on each task), not -1",
		`forge.yaml:5:12: defaults.timeout: "5 minutes" is not a duration (want e.g. 90s, 2m, 1h30m)`,
		`forge.yaml:6:15: defaults.max_output: "lots" is not a positive size (want e.g. 1048576, 512KiB, 1MiB)`,
		`forge.yaml:7:10: defaults.setup: want a list of text (e.g. [a, b], or one "- item" a line), not the text "pip install httpx"`,
		`forge.yaml:11:5: candidates[0].timout: unknown key "timout" (did you mean "timeout"?)`,
		`forge.yaml:12:9: candidates[1].id: duplicate id "alpha" (also candidates[0])`,
		`forge.yaml:13:13: candidates[1].script: missing.py: no such file or directory (resolved to missing.py)`,
		`forge.yaml:14:14: candidates[1].retries: want a whole number (e.g. 4), not the text "many"`,
		`forge.yaml:15:42: candidates[1].environment.timeout: must be positive, not "-5s" (want e.g. 90s, 2m, 1h30m)`,
		`forge.yaml:21:22: scoring[0].checks[0].equals_task: no task has a field "nosuchfield" (the tasks have: expected, id)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLoadTab: a tab in the indentation is told as one, at its line, in
// the manifest and in a YAML tasks file.
func TestLoadTab(t *testing.T) {
	_, got := loadErrors(t, map[string]string{"a.py": okScript,
		"forge.yaml": "objective: x\ncandidates:\n  - id: a\n    script: a.py\n\ttimeout: 5s\n"})
	if want := "forge.yaml:5:1: a tab in the indentation: YAML indents with spaces"; strings.Join(got, "\n") != want {
		t.Errorf("got %q, want %q", got, want)
	}
	_, got = loadErrors(t, map[string]string{"a.py": okScript,
		"forge.yaml": "objective: x\ncandidates: [{id: a, script: a.py}]\ntasks_file: t.yaml\n",
		"t.yaml":     "- id: q1\n  expected: 1\n- id: q2\n \texpected: 2\n"})
	if want := "t.yaml:4:2: a tab in the indentation: YAML indents with spaces"; strings.Join(got, "\n") != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestLoadRanges: every count is checked for its range when given, 0
// included, and not when left out.
func TestLoadRanges(t *testing.T) {
	_, got := loadErrors(t, map[string]string{"a.py": okScript, "forge.yaml": `objective: x
defaults:
  trials: 0
  concurrency: 20000
  retries: 101
candidates:
  - {id: a, script: a.py, retries: -1}
  - {id: b, script: a.py, retries: 0}
gates:
  max_infra_errors: -1
  min_success_rate: 2
`})
	want := []string{
		"forge.yaml:3:11: defaults.trials: must be at least 1 (the runs of each candidate on each task), not 0",
		"forge.yaml:4:16: defaults.concurrency: must be at most 10000, not 20000",
		"forge.yaml:5:12: defaults.retries: must be at most 100, not 101",
		"forge.yaml:7:36: candidates[0].retries: must not be negative (0 plays no trial again), not -1",
		"forge.yaml:10:21: gates.max_infra_errors: must not be negative",
		"forge.yaml:11:21: gates.min_success_rate: must be between 0 and 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, got := loadErrors(t, map[string]string{"a.py": okScript, "forge.yaml": "objective: x\ncandidates: [{id: a, script: a.py}]\n"}); got != nil {
		t.Errorf("no counts: %q", got)
	}
}

// TestLoadCheckOnTaskFields: a check that compares with a field no task
// has is refused; one only some tasks have is noted.
func TestLoadCheckOnTaskFields(t *testing.T) {
	const head = "objective: x\ncandidates: [{id: a, script: a.py}]\ntasks:\n  - {id: q1, answer: 1}\n  - {id: q2, answer: 2}\n  - {id: q3}\n" +
		"scoring:\n  - type: artifact\n    checks:\n"
	_, got := loadErrors(t, map[string]string{"a.py": okScript, "forge.yaml": head + "      - {json: /x, equals_task: answr}\n"})
	if want := `forge.yaml:10:33: scoring[0].checks[0].equals_task: no task has a field "answr" (did you mean "answer"?)`; strings.Join(got, "\n") != want {
		t.Errorf("got %q, want %q", got, want)
	}
	m, got := loadErrors(t, map[string]string{"a.py": okScript, "forge.yaml": head + "      - {contains_task: answer}\n"})
	if got != nil {
		t.Fatalf("refused a field some tasks have: %q", got)
	}
	if want := []string{`scoring[0].checks[0].contains_task: 1 of 3 tasks have no field "answer" (q3): their trials fail this check`}; !reflect.DeepEqual(m.Notes, want) {
		t.Errorf("notes %q, want %q", m.Notes, want)
	}
}
