package daytona

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/testkit/wait"
	"github.com/forge-run/forge/runner"
)

func capsOf(out, art int64) func(string) int64 {
	return func(key string) int64 {
		switch key {
		case "stdout", "stderr", "setup":
			return out
		case "artifact", "result", "transcript":
			return art
		}
		return 0
	}
}

const reportHead = "forge-runtime -1\nforge-size stdout file 3\nforge-size stderr file 0\nforge-size setup missing -1\n" +
	"forge-size artifact file 5\nforge-size result missing -1\n"

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestParseReport(t *testing.T) {
	caps := capsOf(100, 100)
	// Base64 split over lines, hex as od prints it, stray lines.
	enc := b64("hi\n")
	good := "wc: something odd\n" + reportHead + outputLine + " stdout base64\n" + enc[:2] + "\n" + enc[2:] + "\n" +
		outputLine + " artifact hex\n 61 00 ff\n 62 63\n"
	rep, err := parseReport([]byte(good), caps)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"stdout": []byte("hi\n"), "artifact": []byte("a\x00\xffbc")}
	if !reflect.DeepEqual(rep.files, want) || rep.size("artifact") != 5 || rep.kinds["artifact"] != "file" || rep.size("result") != -1 || rep.runtimeNS != -1 {
		t.Fatalf("parsed %+v", rep)
	}

	// No content is no outputs; content over its cap is cut to it.
	if rep, err := parseReport([]byte(reportHead), caps); err != nil || len(rep.files) != 0 || rep.size("stdout") != 3 {
		t.Fatalf("sizes only: %+v %v", rep, err)
	}
	capped := reportHead + outputLine + " artifact base64\n" + b64("abc") + "\n"
	if rep, err := parseReport([]byte(capped), capsOf(100, 2)); err != nil || string(rep.files["artifact"]) != "ab" {
		t.Fatalf("capped: %+v %v", rep, err)
	}

	for name, text := range map[string]string{
		"nothing":          "",
		"no sizes":         "forge: no mode x\nforge-runtime 3\n",
		"bad size":         "forge-size stdout file x\n",
		"bad runtime":      reportHead + "forge-runtime 1.5\n",
		"bad base64":       reportHead + outputLine + " stdout base64\n!!!!\n",
		"bad hex":          reportHead + outputLine + " stdout hex\n 6g\n",
		"unknown encoding": reportHead + outputLine + " stdout uu\n" + b64("hi") + "\n",
		"unknown key":      reportHead + outputLine + " secrets base64\n" + b64("hi\n") + "\n",
		"key twice":        reportHead + outputLine + " stdout base64\n" + b64("hi") + "\n" + outputLine + " stdout base64\n" + b64("hi") + "\n",
		"empty content":    reportHead + outputLine + " stderr base64\n",
	} {
		if _, err := parseReport([]byte(text), caps); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func TestDoneScanner(t *testing.T) {
	for text, want := range map[string]struct{ at, exit int }{
		"forge-done 0\n":                    {0, 0},
		"x\nforge-done 137\n.\n":            {2, 137},
		"xforge-done 1\nforge-done 2\n":     {14, 2},
		"forge-done-not\nforge-done 3\n":    {15, 3},
		"forge-done 1":                      {-1, 0}, // not whole yet
		"forge-done\n":                      {-1, 0},
		"forge-done x\n":                    {-1, 0},
		"forge-done 256\n":                  {-1, 0},
		"x forge-done 1\n":                  {-1, 0},
		"forge-done 1\nforge-done-tail\n":   {0, 1},
		"{\"stdout\":1}\nforge-done 0\n.\n": {13, 0},
	} {
		// Chunks split anywhere, the done line included.
		for size := 1; size <= len(text); size++ {
			var d doneScanner
			var got []byte
			exit, ok := 0, false
			for i := 0; i < len(text) && !ok; i += size {
				got, exit, ok = d.add(text[i:min(i+size, len(text))])
			}
			switch {
			case want.at < 0 && ok:
				t.Errorf("%q in chunks of %d: a done line at %d", text, size, len(got))
			case want.at >= 0 && (!ok || len(got) != want.at || exit != want.exit):
				t.Errorf("%q in chunks of %d: %v at %d exit %d; want at %d exit %d", text, size, ok, len(got), exit, want.at, want.exit)
			}
		}
	}
}

// forgeSh writes forge.sh to a file in a temporary home for a candidate
// that is "/bin/sh -c <cand> sh <output path>", with env on top of HOME
// and the setup lines setup; "sh FILE MODE" runs it as the session
// command "sh -c SCRIPT forge MODE" does.
func forgeSh(t *testing.T, cand string, env map[string]string, setup []string, outCap, artCap int64) (layout, string) {
	t.Helper()
	dir := t.TempDir()
	l := newLayout(dir, "c")
	if err := os.MkdirAll(l.work, 0o755); err != nil {
		t.Fatal(err)
	}
	all := map[string]string{"HOME": dir}
	maps.Copy(all, env)
	argv := []string{"/bin/sh", "-c", cand, "sh", l.path("out.md")}
	script := l.scriptText(argv, all, nil, setup, false, "", "", outputs{artifact: "out.md", result: "result.json", transcript: "transcript.jsonl",
		outCap: outCap, artCap: artCap, trCap: artCap})
	file := l.ctl + ".sh"
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return l, file
}

// forgeShReport parses what forge.sh printed, which must end with its
// done line giving exit.
func forgeShReport(t *testing.T, out []byte, exit int, caps func(string) int64) report {
	t.Helper()
	var d doneScanner
	text, got, ok := d.add(string(out))
	if !ok || got != exit || !bytes.HasSuffix(out, []byte(fmt.Sprintf("%s %d\n.\n", doneLine, exit))) {
		t.Fatalf("no done line with status %d:\n%s", exit, out)
	}
	rep, err := parseReport(text, caps)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return rep
}

func shells(t *testing.T) []string {
	var out []string
	for _, sh := range []string{"dash", "bash", "sh"} {
		if _, err := exec.LookPath(sh); err == nil {
			out = append(out, sh)
		}
	}
	if len(out) == 0 {
		t.Fatal("no POSIX shell")
	}
	return out
}

// forge.sh run: the candidate's exit status, its outputs in files, and the
// report on forge.sh's own stdout, even though the job's env hid PATH.
func TestForgeShRunReports(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(sh, func(t *testing.T) {
			cand := `printf 'out\n'; printf 'err' >&2; printf 'a\000\377b' > "$1"; exit 7`
			l, file := forgeSh(t, cand, map[string]string{"PATH": "/nonexistent"}, nil, 100, 100)
			if err := os.Symlink("/etc/passwd", l.path("result.json")); err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			out, err := exec.Command(sh, file, "run").Output()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
				t.Fatalf("exit: %v\n%s", err, out)
			}
			rep := forgeShReport(t, out, 7, capsOf(100, 100))
			// The runtime is the candidate's own, measured around it: more
			// than nothing, less than the whole test.
			if ns := rep.runtimeNS; ns <= 0 || ns > int64(time.Since(began)) {
				t.Errorf("runtime %d ns, want in (0, %d]", ns, time.Since(began))
			}
			wantKinds := map[string]string{"stdout": "file", "stderr": "file", "setup": "missing", "artifact": "file", "result": "symlink", "transcript": "missing"}
			wantSizes := map[string]int64{"stdout": 4, "stderr": 3, "setup": -1, "artifact": 4, "result": -1, "transcript": -1}
			if !reflect.DeepEqual(rep.kinds, wantKinds) || !reflect.DeepEqual(rep.sizes, wantSizes) {
				t.Errorf("kinds %v, sizes %v", rep.kinds, rep.sizes)
			}
			wantFiles := map[string][]byte{"stdout": []byte("out\n"), "stderr": []byte("err"), "artifact": []byte("a\x00\xffb")}
			if !reflect.DeepEqual(rep.files, wantFiles) {
				t.Errorf("outputs %q", rep.files)
			}
		})
	}
}

// forge.sh's done line gives the status it exits with, which is what the
// toolbox records as the command's exit code.
func TestForgeShExitsWithTheStatusItReports(t *testing.T) {
	for _, sh := range shells(t) {
		for cand, want := range map[string]int{"exit 0": 0, "exit 3": 3, "kill -9 $$": 137, "exit 255": 255} {
			_, file := forgeSh(t, cand, nil, nil, 100, 100)
			cmd := exec.Command(sh, file, "run")
			out, err := cmd.Output()
			if err != nil && cmd.ProcessState == nil {
				t.Fatal(err)
			}
			var d doneScanner
			_, exit, ok := d.add(string(out))
			if !ok || exit != want || cmd.ProcessState.ExitCode() != want {
				t.Errorf("%s %q: done %v %v, exit status %d, want %d\n%s", sh, cand, ok, exit, cmd.ProcessState.ExitCode(), want, out)
			}
		}
	}
}

// Outputs over their caps are reported capped, with their whole sizes;
// "collect" reports only what it is asked for; in a
// sandbox without base64 the content comes in hex.
func TestForgeShCaps(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(sh, func(t *testing.T) {
			cand := "head -c 50 /dev/zero | tr '\\000' o; head -c 100000 /dev/zero | tr '\\000' a > \"$1\""
			_, file := forgeSh(t, cand, nil, nil, 20, 1<<30)
			out, err := exec.Command(sh, file, "run").Output()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			rep := forgeShReport(t, out, 0, capsOf(20, 1<<30))
			if rep.size("stdout") != 50 || rep.size("artifact") != 100000 {
				t.Errorf("sizes %v", rep.sizes)
			}
			if string(rep.files["stdout"]) != strings.Repeat("o", 20) || string(rep.files["artifact"]) != strings.Repeat("a", 100000) {
				t.Errorf("stdout %q, artifact of %d bytes", rep.files["stdout"], len(rep.files["artifact"]))
			}

			cmd := exec.Command(sh, file, "collect", "stdout")
			cmd.Env = append(os.Environ(), "PATH="+toolsWithout(t, "base64"))
			out, err = cmd.Output()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !bytes.Contains(out, []byte(outputLine+" stdout hex\n")) {
				t.Errorf("collect printed:\n%s", out)
			}
			rep = forgeShReport(t, out, 0, capsOf(20, 1<<30))
			if len(rep.files) != 1 || string(rep.files["stdout"]) != strings.Repeat("o", 20) || rep.size("stdout") != 50 {
				t.Errorf("collect stdout: %+v\n%s", rep, out)
			}
		})
	}
}

// toolsWithout is a directory of links to the tools forge.sh and the
// tests' candidates use, all but the one left out.
func toolsWithout(t *testing.T, left string) string {
	t.Helper()
	bin := t.TempDir()
	for _, tool := range []string{"sh", "wc", "head", "cat", "mkdir", "ln", "od", "base64", "date", "tr", "printf"} {
		if p, err := exec.LookPath(tool); err == nil && tool != left {
			if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return bin
}

// forge.sh run and setup run their work once however often they are
// started: a start whose answer was lost may be sent again. The second
// start, sequential (a session's commands run one after another) or
// concurrent (waiting for the first), runs nothing and reports what the
// first did, ending with its status.
func TestForgeShStartsOnce(t *testing.T) {
	for _, sh := range shells(t) {
		for _, concurrent := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/concurrent=%v", sh, concurrent), func(t *testing.T) {
				count := filepath.Join(t.TempDir(), "ran")
				// The candidate counts its runs, and in the concurrent case
				// holds on until told to end, so the second start comes
				// while it runs.
				gate := filepath.Join(t.TempDir(), "gate")
				cand := `echo x >> "$COUNT"; while [ -n "$GATE" ] && [ ! -e "$GATE" ]; do sleep 0.01; done; printf 'out\n'; printf 'art' > "$1"; exit 3`
				env := map[string]string{"COUNT": count}
				if concurrent {
					env["GATE"] = gate
				}
				_, file := forgeSh(t, cand, env, []string{`echo setup >> "` + count + `.setup"`, "exit 4"}, 100, 100)
				start := func(mode string) *exec.Cmd {
					cmd := exec.Command(sh, file, mode)
					cmd.Stdout = new(bytes.Buffer)
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					return cmd
				}
				finish := func(cmd *exec.Cmd, want int) string {
					t.Helper()
					err := cmd.Wait()
					if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != want {
						t.Fatalf("exit: %v, want %d\n%s", err, want, cmd.Stdout)
					}
					return cmd.Stdout.(*bytes.Buffer).String()
				}
				for _, mode := range []struct {
					name string
					exit int
				}{{"setup", 4}, {"run", 3}} {
					var outs []string
					if concurrent && mode.name == "run" {
						first := start(mode.name)
						// The first start has its claim once the candidate counted.
						wait.For(t, "the candidate to count", 20*time.Second, func() bool {
							b, _ := os.ReadFile(count)
							return len(b) > 0
						})
						second := start(mode.name)
						if err := os.WriteFile(gate, nil, 0o644); err != nil {
							t.Fatal(err)
						}
						outs = append(outs, finish(first, mode.exit), finish(second, mode.exit))
					} else {
						outs = append(outs, finish(start(mode.name), mode.exit))
						if concurrent {
							os.WriteFile(gate, nil, 0o644)
						}
						outs = append(outs, finish(start(mode.name), mode.exit), finish(start(mode.name), mode.exit))
					}
					for i, out := range outs {
						if !strings.HasSuffix(out, fmt.Sprintf("%s %d\n.\n", doneLine, mode.exit)) {
							t.Errorf("%s start %d: no done line:\n%s", mode.name, i+1, out)
						}
						if mode.name != "run" {
							continue
						}
						rep := forgeShReport(t, []byte(out), mode.exit, capsOf(100, 100))
						if rep.runtimeNS <= 0 {
							t.Errorf("run start %d: runtime %d ns, want the first start's", i+1, rep.runtimeNS)
						}
						if got := string(rep.files["stdout"]) + string(rep.files["artifact"]); got != "out\nart" {
							t.Errorf("run start %d: reported %q", i+1, got)
						}
					}
				}
				if b, _ := os.ReadFile(count); string(b) != "x\n" {
					t.Errorf("the candidate ran %d times, want once", strings.Count(string(b), "x"))
				}
				if b, _ := os.ReadFile(count + ".setup"); string(b) != "setup\n" {
					t.Errorf("setup ran %d times, want once", strings.Count(string(b), "setup"))
				}
			})
		}
	}
}

// forge.sh prints the verifier's tools as the candidate starts and before
// the verifier: one the candidate rewrote has another digest, and the
// trial is marked tampered; the shells it did not touch are the same.
func TestForgeShFingerprintsTheVerifiersTools(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(sh, func(t *testing.T) {
			bin := t.TempDir()
			tool := filepath.Join(bin, "judge")
			if err := os.WriteFile(tool, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			v := &runner.Verify{Command: "judge check", Env: map[string]string{"PATH": bin + ":/usr/bin:/bin"}}
			dir := t.TempDir()
			l := newLayout(dir, "c")
			argv := []string{"/bin/sh", "-c", `printf '#!/bin/sh\necho 1\n' > "$1"`, "sh", tool}
			script := l.scriptText(argv, map[string]string{"HOME": dir}, nil, nil, false, "true", toolsText(v),
				outputs{artifact: "out.md", result: "result.json", transcript: "transcript.jsonl", outCap: 100, artCap: 100, trCap: 100})
			file := l.ctl + ".sh"
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(sh, file, "run").Output()
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out)
			}
			before := parseTools(out)
			out, err = exec.Command(sh, file, "verify").Output()
			if err != nil {
				t.Fatalf("verify: %v\n%s", err, out)
			}
			after := parseTools(out)
			if before["/bin/sh"].Print == "" || before["/bin/sh"] != after["/bin/sh"] || before["judge"].Path != tool {
				t.Fatalf("before %v, after %v", before, after)
			}
			var res runner.Result
			res.CheckTools(before, after)
			if !slices.Equal(res.Tampered, []string{tool}) {
				t.Errorf("tampered %q, want [%s]; before %v, after %v", res.Tampered, tool, before, after)
			}
		})
	}
}
