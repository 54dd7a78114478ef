package cli_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clipperhouse/displaywidth"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/forge-run/forge/cli"
	"github.com/forge-run/forge/internal/testkit/relaid"
	"github.com/forge-run/forge/internal/testkit/wait"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner/local"
	"github.com/forge-run/forge/runner/local/localtest"
	"github.com/forge-run/forge/schema"
)

// TestMain makes the test binary double as the forge command, so scripts
// run `exec forge ...` as a real process (signals, exit codes, stdout).
func TestMain(m *testing.M) {
	testscript.Main(waitingTests{m}, map[string]func(){
		"forge": func() { os.Exit(cli.Main()) },
	})
}

// waitingTests runs the package's tests four at a time unless -parallel
// says otherwise: they mostly wait, on forge processes, candidates that
// sleep and the emulator's delays, not on this process's CPUs (two, here,
// which is go test's default).
type waitingTests struct{ m *testing.M }

func (w waitingTests) Run() int {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(max(4, runtime.GOMAXPROCS(0))))
	}
	return w.m.Run()
}

// TestScripts plays the sessions in testdata/script/*.txtar.
func TestScripts(t *testing.T) {
	t.Parallel()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		// Under the test's own temporary directory: testscript removes its
		// own root only when every script ran, which -run filtering prevents.
		WorkdirRoot: localtest.TempDir(t),
		Setup: func(env *testscript.Env) error {
			// The jobs' users reach their working directories in $TMPDIR.
			if err := os.Chmod(env.WorkDir, 0o711); err != nil {
				return err
			}
			env.Setenv("REPO", repo)
			// A fake secret: it must never reach a candidate, a log or a report.
			env.Setenv("DAYTONA_API_KEY", "dtn_canary_0123456789")
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "root" { // forge runs as root: its jobs get users of their own
				return os.Geteuid() == 0, nil
			}
			if cond != "envreadonly" { // jobs see environments read-only here
				return false, fmt.Errorf("unknown condition %q", cond)
			}
			r, err := local.New(local.Options{})
			if err != nil {
				return false, err
			}
			defer r.Close()
			return r.ReadOnlyEnvironments(), nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":    cmdExitcode,
			"json":        cmdJSON,
			"sample":      cmdSample,
			"nosurvivors": cmdNoSurvivors,
			"validjson":   cmdValidJSON,
			"record":      cmdRecord,
			"relaid":      cmdRelaid,
			"nosecret":    cmdNoSecret,
			"maxwidth":    cmdMaxWidth,
		},
	})
}

// cmdMaxWidth fails when a line of the last command's stdout is wider
// than N columns: maxwidth 80
func cmdMaxWidth(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: maxwidth N")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("maxwidth: %v", err)
	}
	for i, line := range strings.Split(ts.ReadFile("stdout"), "\n") {
		if w := displaywidth.String(line); w > n {
			ts.Fatalf("stdout line %d is %d columns wide, over %d: %s", i+1, w, n, line)
		}
	}
}

// cmdExitcode runs a command and checks its exact exit code:
// exitcode 2 forge validate -f bad.yaml
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = scriptEnv(ts)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	fmt.Fprint(ts.Stdout(), stdout.String())
	fmt.Fprint(ts.Stderr(), stderr.String())
	got := 0
	if ee, ok := err.(*exec.ExitError); ok {
		got = ee.ExitCode()
	} else if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d\nstderr:\n%s", strings.Join(args[1:], " "), got, want, stderr.String())
	}
}

func scriptEnv(ts *testscript.TestScript) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if v := ts.Getenv(k); v != "" || k == "PATH" {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range []string{"HOME", "WORK", "TMPDIR", "REPO", "PWD", "NO_COLOR", "GITHUB_STEP_SUMMARY",
		"DAYTONA_API_KEY", "DAYTONA_API_URL", "DAYTONA_BASE_URL", "DAYTONA_TARGET", "SECRET_CANARY", "XDG_CACHE_HOME"} {
		env = append(env, k+"="+ts.Getenv(k))
	}
	return env
}

// cmdJSON checks a value in a JSON file by a dotted path with [i] indexes:
// json artifacts/r1/results.json results[0].error_kind timeout
// The value is compared as JSON text when it is not a string ("null", "true",
// "0"); 'json FILE PATH' alone only checks the path exists, and `! json`
// checks the value differs.
func cmdJSON(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: json FILE PATH [VALUE]")
	}
	b := []byte(ts.ReadFile(args[0]))
	if filepath.Base(args[0]) == record.ResultsFile {
		b = recordJSON(ts, args[0]) // its trials beside it included
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		ts.Fatalf("%s is not valid JSON: %v", args[0], err)
	}
	got, ok := lookup(v, args[1])
	if !ok {
		if neg && len(args) == 2 {
			return
		}
		ts.Fatalf("%s: no %s", args[0], args[1])
	}
	if len(args) == 2 {
		if neg {
			ts.Fatalf("%s: %s exists", args[0], args[1])
		}
		return
	}
	text := ""
	if s, isStr := got.(string); isStr {
		text = s
	} else {
		jb, _ := json.Marshal(got)
		text = string(jb)
	}
	if (text == args[2]) == neg {
		ts.Fatalf("%s: %s = %q, want %s%q", args[0], args[1], text, map[bool]string{true: "not ", false: ""}[neg], args[2])
	}
}

func lookup(v any, path string) (any, bool) {
	for _, part := range strings.FieldsFunc(path, func(r rune) bool { return r == '.' || r == '[' }) {
		if strings.HasSuffix(part, "]") {
			i, err := strconv.Atoi(strings.TrimSuffix(part, "]"))
			arr, ok := v.([]any)
			if err != nil || !ok || i < 0 || i >= len(arr) {
				return nil, false
			}
			v = arr[i]
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[part]; !ok {
			return nil, false
		}
	}
	return v, true
}

// cmdRecord writes the record whose results.json is FILE, its trials
// beside it, as one document (the JSON report's) to OUT:
// record artifacts/r1/results.json r1.json
func cmdRecord(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: record FILE OUT")
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), recordJSON(ts, args[0]), 0o644))
}

// recordJSON is the record whose results.json is file, its trials beside
// it, as one document.
func recordJSON(ts *testscript.TestScript, file string) []byte {
	rec, err := record.Read(ts.MkAbs(file))
	ts.Check(err)
	b, err := record.Marshal(rec)
	ts.Check(err)
	return b
}

// cmdRelaid rewrites the record in DIR as another writer could lay it
// out: results.json indented with tabs, every object's keys sorted:
// relaid artifacts/r1
func cmdRelaid(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: relaid DIR")
	}
	ts.Check(relaid.Document(ts.MkAbs(filepath.Join(args[0], record.ResultsFile)), "\t"))
	ts.Check(relaid.Lines(ts.MkAbs(filepath.Join(args[0], record.TrialsFile))))
}

// cmdValidJSON checks a results.json, and each line of trials.jsonl
// beside it, against the JSON Schema in schema/:
// validjson artifacts/t1/results.json
func cmdValidJSON(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: validjson FILE")
	}
	err := schema.ValidateResults([]byte(ts.ReadFile(args[0])))
	trials := filepath.Join(filepath.Dir(args[0]), record.TrialsFile)
	if b, rerr := os.ReadFile(ts.MkAbs(trials)); rerr == nil {
		for line := range bytes.Lines(b) {
			err = errors.Join(err, schema.ValidateTrial(line))
		}
	}
	if (err == nil) == neg {
		ts.Fatalf("%s: schema validation: %v", args[0], err)
	}
}

// cmdSample copies the repository's sample tournament (forge.yaml and
// candidates/) into the script's working directory.
func cmdSample(ts *testscript.TestScript, neg bool, args []string) {
	repo := ts.Getenv("REPO")
	ts.Check(os.CopyFS(ts.MkAbs("candidates"), os.DirFS(filepath.Join(repo, "candidates"))))
	b, err := os.ReadFile(filepath.Join(repo, "forge.yaml"))
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs("forge.yaml"), b, 0o644))
}

// cmdNoSurvivors fails when any process of the run is still alive:
// nosurvivors RUN_ID
func cmdNoSurvivors(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: nosurvivors RUN_ID")
	}
	wait.For(ts, "the processes of run "+args[0]+" to end", 5*time.Second, func() bool {
		return len(localtest.Survivors(args[0])) == 0
	})
}

// cmdNoSecret fails when any file below DIR holds VALUE, raw or base64
// encoded, but the files named after it (relative to DIR), which must hold
// it:
// nosecret artifacts/r1 VALUE [EXCEPT...]
func cmdNoSecret(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: nosecret DIR VALUE [EXCEPT...]")
	}
	dir, value := ts.MkAbs(args[0]), args[1]
	forms := []string{value, base64.StdEncoding.EncodeToString([]byte(value)), base64.RawStdEncoding.EncodeToString([]byte(value))}
	except := map[string]bool{}
	for _, e := range args[2:] {
		except[filepath.Join(dir, filepath.FromSlash(e))] = true
	}
	files, err := holding(dir, forms...)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	seen := 0
	for _, f := range files {
		if !except[f] {
			ts.Fatalf("%s holds the secret unmasked", f)
		}
		seen++
	}
	if seen != len(except) {
		ts.Fatalf("%d of the %d files that should hold the secret (stored as written) do", seen, len(except))
	}
}
