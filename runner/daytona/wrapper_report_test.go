package daytona

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	sdkerrors "github.com/daytonaio/daytona/libs/sdk-go/pkg/errors"
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

const reportJSON = `{"stdout":3,"stderr":0,"setup":-1,"artifact":5,"artifact_kind":"file","result":-1,"result_kind":"missing"}`

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestParseReport(t *testing.T) {
	caps := capsOf(100, 100)
	good := reportJSON + "\n" + inlineLine + " stdout artifact\n" + b64("hi\na\x00\xffbc") + "\n" + doneLine + " 0\n.\n"
	rep, err := parseWrapperReport([]byte(good), caps)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"stdout": []byte("hi\n"), "artifact": []byte("a\x00\xffbc")}
	if !reflect.DeepEqual(rep.inline, want) || rep.meta.Artifact != 5 || rep.meta.ArtifactKind != "file" || rep.meta.size("result") != -1 {
		t.Fatalf("parsed %+v", rep)
	}

	// Base64 split over lines, stray stderr before the JSON line, no done
	// line (the output of "forge.sh collect").
	enc := b64("hi\nabcde")
	collect := "wc: something odd\n" + reportJSON + "\n" + inlineLine + " stdout artifact\n" + enc[:4] + "\n" + enc[4:] + "\n"
	if rep, err := parseWrapperReport([]byte(collect), caps); err != nil || string(rep.inline["artifact"]) != "abcde" {
		t.Fatalf("collect output: %+v %v", rep, err)
	}

	// Over its cap, an output is inlined capped.
	capped := reportJSON + "\n" + inlineLine + " artifact\n" + b64("ab") + "\n"
	if rep, err := parseWrapperReport([]byte(capped), capsOf(100, 2)); err != nil || string(rep.inline["artifact"]) != "ab" || rep.meta.Artifact != 5 {
		t.Fatalf("capped: %+v %v", rep, err)
	}

	// Inline content that does not add up is dropped, the sizes are kept:
	// the outputs are then downloaded.
	for name, text := range map[string]string{
		"a file grew":     reportJSON + "\n" + inlineLine + " stdout artifact\n" + b64("hi\nabcdeX") + "\n",
		"a file shrank":   reportJSON + "\n" + inlineLine + " stdout artifact\n" + b64("hi\nabc") + "\n",
		"bad base64":      reportJSON + "\n" + inlineLine + " stdout\n" + "!!!!\n",
		"unknown key":     reportJSON + "\n" + inlineLine + " secrets\n" + b64("hi\n") + "\n",
		"key twice":       reportJSON + "\n" + inlineLine + " stdout stdout\n" + b64("hi\nhi\n") + "\n",
		"empty output":    reportJSON + "\n" + inlineLine + " stderr\n" + "\n",
		"a stranger line": reportJSON + "\n" + "hello\n",
	} {
		rep, err := parseWrapperReport([]byte(text), caps)
		if err != nil || rep.inline != nil || rep.meta.Stdout != 3 {
			t.Errorf("%s: %+v %v", name, rep, err)
		}
	}

	for name, text := range map[string]string{
		"nothing":      "",
		"no JSON":      "forge.sh: no mode x\n",
		"cut JSON":     `{"stdout":3,"std` + "\n" + doneLine + " 0\n",
		"after done":   doneLine + " 0\n" + reportJSON + "\n",
		"not an int":   `{"stdout":"3"}` + "\n",
		"only a brace": "{\n",
	} {
		if _, err := parseWrapperReport([]byte(text), caps); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func TestFindDone(t *testing.T) {
	for text, want := range map[string]struct{ at, exit int }{
		"forge-done 0\n":                    {0, 0},
		"forge-done\n":                      {0, -1},
		"x\nforge-done 137\n.\n":            {2, 137},
		"xforge-done 1\nforge-done 2\n":     {14, 2},
		"forge-done-not\nforge-done 3\n":    {15, 3},
		"forge-done 1":                      {-2, 0}, // not whole yet
		"forge-done x\n":                    {0, -1},
		"forge-done 256\n":                  {0, -1},
		"x forge-done 1\n":                  {-2, 0},
		"forge-done 1\nforge-done-tail\n":   {0, 1},
		"{\"stdout\":1}\nforge-done 0\n.\n": {13, 0},
	} {
		at, exit, ok := findDone([]byte(text))
		switch {
		case want.at == -2:
			if ok {
				t.Errorf("findDone(%q) found a done line at %d", text, at)
			}
		case !ok || at != want.at:
			t.Errorf("findDone(%q) = %d, %v; want %d", text, at, ok, want.at)
		case want.exit < 0 && exit != nil, want.exit >= 0 && (exit == nil || *exit != want.exit):
			t.Errorf("findDone(%q) exit %v, want %d", text, exit, want.exit)
		}
	}
}

// forgeSh writes forge.sh in a temporary home for a candidate that is
// "/bin/sh -c <cand> sh <output path>", with env on top of HOME.
func forgeSh(t *testing.T, cand string, env map[string]string, outCap, artCap int64) layout {
	t.Helper()
	dir := t.TempDir()
	l := newLayout(dir, "c")
	for _, d := range []string{l.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	all := map[string]string{"HOME": dir}
	for k, v := range env {
		all[k] = v
	}
	argv := []string{"/bin/sh", "-c", cand, "sh", l.path("out.md")}
	script := l.controlScriptText(argv, all, nil, outputs{artifact: "out.md", result: "result.json", transcript: "transcript.jsonl",
		outCap: outCap, artCap: artCap, trCap: artCap})
	if err := os.WriteFile(l.controlScript(), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return l
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
			l := forgeSh(t, cand, map[string]string{"PATH": "/nonexistent"}, 100, 100)
			if err := os.Symlink("/etc/passwd", l.path("result.json")); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(sh, l.controlScript(), "run")
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			began := time.Now()
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
				t.Fatalf("exit: %v\n%s", err, stdout.String())
			}
			text := stdout.String()
			if !strings.HasSuffix(text, doneLine+" 7\n.\n") {
				t.Fatalf("no done line:\n%s", text)
			}
			rep, err := parseWrapperReport(stdout.Bytes(), capsOf(100, 100))
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			// The runtime is the candidate's own, measured around it: more
			// than nothing, less than the whole test.
			if ns := rep.meta.RuntimeNS; ns <= 0 || ns > int64(time.Since(began)) {
				t.Errorf("runtime_ns %d, want in (0, %d]", ns, time.Since(began))
			}
			rep.meta.RuntimeNS = 0
			want := collected{Stdout: 4, Stderr: 3, Setup: -1, Artifact: 4, ArtifactKind: "file", Result: -1, ResultKind: "symlink",
				Transcript: -1, TranscriptKind: "missing"}
			if rep.meta != want {
				t.Errorf("meta %+v, want %+v", rep.meta, want)
			}
			wantInline := map[string][]byte{"stdout": []byte("out\n"), "stderr": []byte("err"), "artifact": []byte("a\x00\xffb")}
			if !reflect.DeepEqual(rep.inline, wantInline) {
				t.Errorf("inline %q", rep.inline)
			}
		})
	}
}

// forge.sh's done line gives the status it exits with, which is what the
// toolbox records as the command's exit code.
func TestForgeShExitsWithTheStatusItReports(t *testing.T) {
	for _, sh := range shells(t) {
		for cand, want := range map[string]int{"exit 0": 0, "exit 3": 3, "kill -9 $$": 137, "exit 255": 255} {
			l := forgeSh(t, cand, nil, 100, 100)
			cmd := exec.Command(sh, l.controlScript(), "run")
			out, err := cmd.Output()
			if err != nil && cmd.ProcessState == nil {
				t.Fatal(err)
			}
			_, exit, ok := findDone(out)
			if !ok || exit == nil || *exit != want || cmd.ProcessState.ExitCode() != want {
				t.Errorf("%s %q: done %v %v, exit status %d, want %d\n%s", sh, cand, ok, exit, cmd.ProcessState.ExitCode(), want, out)
			}
		}
	}
}

// Outputs over their caps are inlined capped (and cut to .cap files); over
// the inline budget they are left to be downloaded; "collect" reports only
// what it is asked for.
func TestForgeShCapsAndBudget(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(sh, func(t *testing.T) {
			big := inlineBudget + 10
			cand := "head -c 50 /dev/zero | tr '\\000' o; head -c " + strconv.Itoa(big) + " /dev/zero | tr '\\000' a > \"$1\""
			l := forgeSh(t, cand, nil, 20, 1<<30)
			out, err := exec.Command(sh, l.controlScript(), "run").Output()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			rep, err := parseWrapperReport(out, capsOf(20, 1<<30))
			if err != nil {
				t.Fatal(err)
			}
			if rep.meta.Stdout != 50 || rep.meta.Artifact != int64(big) {
				t.Errorf("sizes %+v", rep.meta)
			}
			if string(rep.inline["stdout"]) != strings.Repeat("o", 20) {
				t.Errorf("capped stdout %q", rep.inline["stdout"])
			}
			if _, ok := rep.inline["artifact"]; ok {
				t.Error("an artifact over the inline budget was inlined")
			}
			if b, err := os.ReadFile(l.capped("stdout")); err != nil || len(b) != 20 {
				t.Errorf("stdout.cap: %d bytes, %v", len(b), err)
			}

			out, err = exec.Command(sh, l.controlScript(), "collect", "setup").Output()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if bytes.Contains(out, []byte(doneLine)) {
				t.Error("collect printed the done line")
			}
			rep, err = parseWrapperReport(out, capsOf(20, 1<<30))
			if err != nil || rep.inline != nil || rep.meta.Stdout != 50 {
				t.Errorf("collect setup: %+v %v\n%s", rep, err, out)
			}
		})
	}
}

func TestStreamState(t *testing.T) {
	refused := sdkerrors.NewDaytonaError(errStreamConnect+": websocket: bad handshake", 0, nil)
	broken := sdkerrors.NewDaytonaError("WebSocket read error: unexpected EOF", 0, nil)
	var warn strings.Builder
	var s streamState
	for i := 0; i < refusedLimit; i++ {
		if !s.wanted() {
			t.Fatalf("not wanted after %d refusals", i)
		}
		s.note(&warn, refused, false)
		s.note(&warn, broken, false)
	}
	if s.wanted() {
		t.Error("still wanted after the limit of refusals")
	}
	if n := strings.Count(warn.String(), "\n"); n != 1 || !strings.Contains(warn.String(), "bad handshake") {
		t.Errorf("warnings:\n%s", warn.String())
	}
	s.note(&warn, nil, false)
	if !s.wanted() {
		t.Error("a stream that worked did not bring streams back")
	}
	var fresh streamState
	fresh.note(&warn, broken, true)
	for i := 0; i < 2*refusedLimit; i++ {
		fresh.note(io.Discard, refused, false)
	}
	if !fresh.wanted() {
		t.Error("refusals after a stream that delivered stopped streams")
	}
}

func TestDoneScanner(t *testing.T) {
	// Chunks split anywhere, the done line included.
	var d doneScanner
	text := reportJSON + "\n" + doneLine + " 3\n.\n"
	for i := 0; i < len(text)-3; i++ {
		if _, ok := d.add(text[i : i+1]); ok && i < len(reportJSON)+len(doneLine)+3 {
			t.Fatalf("done before the done line was whole (byte %d)", i)
		}
	}
	d = doneScanner{}
	ev, ok := d.add(text[:20])
	if !ok {
		ev, ok = d.add(text[20:])
	}
	if !ok || !ev.done || ev.exit == nil || *ev.exit != 3 || string(ev.report) != reportJSON+"\n" {
		t.Fatalf("event %+v %v", ev, ok)
	}

	// More than a report can be: the done line is still found, even split
	// over the cut, but no report comes with it.
	d = doneScanner{}
	junk := strings.Repeat("x", maxReport) + "\n" + doneLine + " 1"
	if _, ok := d.add(junk); ok {
		t.Fatal("done without the line's end")
	}
	if !d.cut || len(d.buf) > 20 {
		t.Fatalf("cut %v, kept %d bytes", d.cut, len(d.buf))
	}
	ev, ok = d.add("2\n.\n")
	if !ok || ev.report != nil || ev.exit == nil || *ev.exit != 12 {
		t.Fatalf("after the cut: %+v %v", ev, ok)
	}
	// A done line's look-alike inside a long line is not one.
	d = doneScanner{}
	if _, ok := d.add(strings.Repeat("y", maxReport+5) + doneLine + " 0\n"); ok {
		t.Fatal("a done line in the middle of a line counted")
	}
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
				l := forgeSh(t, cand, env, 100, 100)
				if err := os.WriteFile(l.setupScript(), []byte(`echo setup >> "`+count+`.setup"; exit 4`), 0o644); err != nil {
					t.Fatal(err)
				}
				start := func(mode string) *exec.Cmd {
					cmd := exec.Command(sh, l.controlScript(), mode)
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
						for {
							if b, _ := os.ReadFile(count); len(b) > 0 {
								break
							}
							time.Sleep(time.Millisecond) // polls for the condition
						}
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
						rep, err := parseWrapperReport([]byte(out), capsOf(100, 100))
						if err != nil {
							t.Fatalf("run start %d: %v\n%s", i+1, err, out)
						}
						if rep.meta.RuntimeNS <= 0 {
							t.Errorf("run start %d: runtime_ns %d, want the first start's", i+1, rep.meta.RuntimeNS)
						}
						if got := string(rep.inline["stdout"]) + string(rep.inline["artifact"]); got != "out\nart" {
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
