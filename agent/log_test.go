package agent

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-run/forge/internal/testkit/golden"
)

// The fixtures are the real CLIs' logs, recorded against the fake model
// (go test ./agent -run 'TestClaudeCode|TestCodex' -record); each has a
// golden file of what ReadLog reads in it (-update rewrites them).

func fixture(t *testing.T, agentName, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", agentName, name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func format(t *testing.T, agentName string) Format {
	t.Helper()
	spec, ok := Builtin(agentName)
	if !ok {
		t.Fatalf("no agent %q", agentName)
	}
	return spec.Log
}

func TestReadLogFixtures(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*", "*.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, path := range paths {
		agentName := filepath.Base(filepath.Dir(path))
		name := strings.TrimSuffix(filepath.Base(path), ".jsonl")
		t.Run(agentName+"/"+name, func(t *testing.T) {
			log, err := ReadLog(format(t, agentName), bytes.NewReader(fixture(t, agentName, name)))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			enc := json.NewEncoder(&got)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(log); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, strings.TrimSuffix(path, ".jsonl")+".golden.json", got.Bytes())
		})
	}
}

func TestReadLogSkipsWhatIsNotJSON(t *testing.T) {
	in := append([]byte("WARNING: proceeding\n\n[1, 2]\n"), fixture(t, "codex", "solve")...)
	log, err := ReadLog(FormatCodex, bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := ReadLog(FormatCodex, bytes.NewReader(fixture(t, "codex", "solve")))
	if log.Skipped != 2 || len(log.Steps) != len(plain.Steps) || len(log.Steps) == 0 {
		t.Errorf("skipped %d, %d steps; want 2 skipped (the blank line is none) and the %d steps", log.Skipped, len(log.Steps), len(plain.Steps))
	}
}

func TestReadLogNothingReadable(t *testing.T) {
	for _, in := range []string{"", "Error: claude native binary not installed.\n", `{"type":"thread.started"}` + "\n"} {
		if _, err := ReadLog(FormatClaudeCode, strings.NewReader(in)); err == nil {
			t.Errorf("ReadLog(%q) read it as claude-code's log, want an error", in)
		}
	}
	if _, err := ReadLog(FormatNone, strings.NewReader(`{"type":"result"}`)); err == nil {
		t.Error("ReadLog(FormatNone) read a log, want an error")
	}
}

// A log cut before claude-code's result line (the agent killed): the error
// says so, and the usage is the calls' as they started.
func TestReadLogClaudeCodeCut(t *testing.T) {
	in := fixture(t, "claude-code", "solve")
	lines := bytes.SplitAfter(bytes.TrimSpace(in), []byte("\n"))
	log, err := ReadLog(FormatClaudeCode, bytes.NewReader(bytes.Join(lines[:len(lines)-1], nil)))
	if err != nil {
		t.Fatal(err)
	}
	if log.Error != "the log ends before claude-code's result line" || len(log.Steps) != 4 {
		t.Errorf("error %q, %d steps; want the cut said, and the 4 steps", log.Error, len(log.Steps))
	}
	if log.Usage == nil || log.Usage.CostUSD != nil || len(log.Usage.Models) != 1 || log.Usage.Models[0].Calls != 2 {
		t.Errorf("usage %+v, want the 2 calls' and no cost", log.Usage)
	}
}

func TestReadLogCapsToolResults(t *testing.T) {
	out := strings.Repeat("é", 1500) // 3000 bytes
	line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user",
		"content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": out}}}})
	log, err := ReadLog(FormatClaudeCode, bytes.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	got := log.Steps[0].Text()
	if want := strings.Repeat("é", 1024) + "… (3000 bytes in all)"; got != want {
		t.Errorf("content %q…, want the first 2 KiB and the size", got[:40])
	}
}

// FuzzReadLog: any bytes read as either format give steps forge can write
// (content valid JSON, tool results capped) or an error, never a panic.
func FuzzReadLog(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*", "*.jsonl"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"type":"assistant","message":{"content":"hi","usage":{"input_tokens":-1}}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, format := range []Format{FormatClaudeCode, FormatCodex} {
			log, err := ReadLog(format, bytes.NewReader(in))
			if err != nil {
				continue
			}
			for _, st := range log.Steps {
				b, err := json.Marshal(st)
				if err != nil || !json.Valid(b) {
					t.Fatalf("%s: step %+v does not write: %v", format, st, err)
				}
				if st.Type == "tool_result" && len(st.Text()) > maxExcerpt+40 {
					t.Fatalf("%s: a tool result of %d bytes", format, len(st.Text()))
				}
			}
		}
	})
}
