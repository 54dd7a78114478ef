package scoring

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

func artifactResult(content string) record.Trial {
	r := record.Trial{Result: runner.Result{Success: true, ArtifactPath: "a/output.md"}}
	r.SetArtifact([]byte(content), int64(len(content)))
	return r
}

func TestChecks(t *testing.T) {
	doc := `{"count": 10, "score": 0.7, "items": [{"title": "x", "tags": ["a", 1]}], "a/b": {"m~n": true}, "s": "10"}`
	for _, c := range []struct {
		name    string
		check   Check
		content string
		want    bool
	}{
		{"contains yes", Check{Contains: "## Events"}, "# T\n## Events\n", true},
		{"contains no", Check{Contains: "## Events"}, "# T\n", false},
		{"regex multiline", Check{Regex: `(?m)^## `}, "# T\n## Events\n", true},
		{"regex no", Check{Regex: `^\d+$`}, "abc", false},
		{"min bytes ok", Check{MinBytes: i64(3)}, "abc", true},
		{"min bytes short", Check{MinBytes: i64(4)}, "abc", false},
		{"max bytes ok", Check{MaxBytes: i64(3)}, "abc", true},
		{"max bytes over", Check{MaxBytes: i64(2)}, "abc", false},
		{"both bounds", Check{MinBytes: i64(1), MaxBytes: i64(3)}, "ab", true},
		{"json parses", Check{JSON: str("")}, doc, true},
		{"json garbage", Check{JSON: str("")}, "{not json", false},
		{"pointer exists", Check{JSON: str("/items/0/title")}, doc, true},
		{"pointer missing", Check{JSON: str("/items/1")}, doc, false},
		{"pointer leading zero index", Check{JSON: str("/items/00")}, doc, false},
		{"pointer escapes", Check{JSON: str("/a~1b/m~0n")}, doc, true},
		{"equals int vs float", Check{JSON: str("/count"), Equals: 10}, doc, true},
		{"equals wrong", Check{JSON: str("/count"), Equals: 11}, doc, false},
		{"equals string vs number", Check{JSON: str("/s"), Equals: 10}, doc, false},
		{"equals string", Check{JSON: str("/s"), Equals: "10"}, doc, true},
		{"equals bool", Check{JSON: str("/a~1b/m~0n"), Equals: true}, doc, true},
		{"equals deep", Check{JSON: str("/items/0"), Equals: map[string]any{"title": "x", "tags": []any{"a", 1}}}, doc, true},
		{"equals deep differs", Check{JSON: str("/items/0"), Equals: map[string]any{"title": "x"}}, doc, false},
		{"min max in", Check{JSON: str("/score"), Min: f64(0.5), Max: f64(1)}, doc, true},
		{"min max out", Check{JSON: str("/score"), Min: f64(0.8)}, doc, false},
		{"min on a string", Check{JSON: str("/s"), Min: f64(0)}, doc, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cc := compileChecks([]Check{c.check})[0]
			b, size, _ := artifactOf(artifactResult(c.content))
			v := cc.judge(b, size, record.Trial{}, nil)
			if v.ok != c.want {
				t.Errorf("passed = %v, want %v", v.ok, c.want)
			}
			if !v.ok && (v.want == "" || v.got == "") {
				t.Errorf("a failed check says what it wanted (%q) and what it saw (%q)", v.want, v.got)
			}
		})
	}
}

func TestCheckFraction(t *testing.T) {
	checks := compileChecks([]Check{{Contains: "a"}, {Contains: "b"}, {Contains: "z"}, {MaxBytes: i64(100)}})
	if got, _ := checkFraction("artifact", checks, artifactResult("ab"), nil); got != 0.75 {
		t.Errorf("fraction = %v, want 0.75", got)
	}
	// No artifact at all (optional artifact not written): every check fails,
	// even max_bytes.
	if got, _ := checkFraction("artifact", checks, record.Trial{Result: runner.Result{Success: true}}, nil); got != 0 {
		t.Errorf("absent artifact fraction = %v, want 0", got)
	}
}

func TestArtifactOf(t *testing.T) {
	t.Run("base64 content read back from results.json", func(t *testing.T) {
		raw := []byte{0xff, 'h', 'i'}
		r := record.Trial{Result: runner.Result{ArtifactContent: base64.StdEncoding.EncodeToString(raw), ArtifactEncoding: "base64", ArtifactBytes: 3}}
		b, size, present := artifactOf(r)
		if string(b) != string(raw) || size != 3 || !present {
			t.Errorf("got %q %d %v", b, size, present)
		}
	})
	t.Run("truncated: sizes use the full size", func(t *testing.T) {
		r := record.Trial{Result: runner.Result{ArtifactPath: "x"}}
		r.SetArtifact([]byte("abc"), 5000)
		cc := compileChecks([]Check{{MinBytes: i64(4000)}, {Contains: "abc"}})
		if got, _ := checkFraction("artifact", cc, r, nil); got != 1 {
			t.Errorf("fraction = %v, want 1", got)
		}
	})
}

// TestTaskChecks compares the artifact, a JSON value in it and a
// FORGE_RESULT value with the task's fields.
func TestTaskChecks(t *testing.T) {
	task := &Task{ID: "q1", Fields: map[string]any{
		"expected": json.Number("391"), "word": "forty", "pattern": `^\d+$`, "bad": "(", "list": []any{"a", json.Number("1")},
	}}
	submitted := map[string]any{"answer": 391.0, "text": "about forty-two", "list": []any{"a", 1.0}}
	for _, c := range []struct {
		name     string
		check    Check
		artifact string
		want     bool
		note     string
	}{
		{"equals text, trimmed", Check{EqualsTask: "expected"}, " 391\n", true, ""},
		{"equals as numbers", Check{EqualsTask: "expected"}, "391.0", true, ""},
		{"equals differs", Check{EqualsTask: "expected"}, "392", false, ""},
		{"equals text is not a prefix", Check{EqualsTask: "word"}, "forty-two", false, ""},
		{"contains", Check{ContainsTask: "word"}, "it is forty-two", true, ""},
		{"regex", Check{RegexTask: "pattern"}, "391", true, ""},
		{"regex fails", Check{RegexTask: "pattern"}, "39a", false, ""},
		{"json value equals", Check{JSON: str("/n"), EqualsTask: "expected"}, `{"n": 391}`, true, ""},
		{"json string equals number", Check{JSON: str("/n"), EqualsTask: "expected"}, `{"n": "391"}`, true, ""},
		{"json missing", Check{JSON: str("/m"), EqualsTask: "expected"}, `{"n": 391}`, false, ""},
		{"json list", Check{JSON: str("/l"), EqualsTask: "list"}, `{"l": ["a", 1]}`, true, ""},
		{"result equals", Check{Result: str("/answer"), EqualsTask: "expected"}, "", true, ""},
		{"result contains", Check{Result: str("/text"), ContainsTask: "word"}, "", true, ""},
		{"result missing", Check{Result: str("/nope"), ContainsTask: "word"}, "", false, ""},
		{"result exists", Check{Result: str("/text")}, "", true, ""},
		{"no such field", Check{EqualsTask: "answer"}, "391", false, `task q1 has no field "answer" to compare with`},
		{"not a regex", Check{RegexTask: "bad"}, "391", false, `task q1: field "bad" is not a regular expression`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := artifactResult(c.artifact)
			r.Submitted = submitted
			got, note := checkFraction("artifact", compileChecks([]Check{c.check}), r, task)
			if (got == 1) != c.want || !strings.Contains(note, c.note) || (c.note == "" && note != "") {
				t.Errorf("fraction %v note %q, want pass %v note %q", got, note, c.want, c.note)
			}
		})
	}
	// FORGE_RESULT is checked without an artifact; the artifact's checks fail.
	noArtifact := record.Trial{Result: runner.Result{Success: true, Submitted: submitted}}
	if got, _ := checkFraction("artifact", compileChecks([]Check{{Result: str("/answer"), EqualsTask: "expected"}, {EqualsTask: "expected"}}), noArtifact, task); got != 0.5 {
		t.Errorf("no artifact: fraction %v, want 0.5", got)
	}
	// Without a task (a check the manifest refuses without tasks) the check
	// fails and says why.
	if got, note := checkFraction("artifact", compileChecks([]Check{{EqualsTask: "expected"}}), artifactResult("391"), nil); got != 0 || note == "" {
		t.Errorf("no task: %v %q", got, note)
	}
}

// TestChecksMadeAtFinishOutliveTheExcerpt: a record keeps only the start of
// an artifact; checks made as the trial finished (Checker) still see all
// of it, and scoring reads them instead of the excerpt.
func TestChecksMadeAtFinishOutliveTheExcerpt(t *testing.T) {
	cfg := Config{Scorers: []Scorer{{Type: TypeArtifact, Checks: []Check{{Contains: "needle"}, {Contains: "absent"}}}}}
	art := []byte(strings.Repeat("hay ", runner.ArtifactExcerpt) + "needle")
	r := record.Trial{Result: runner.Result{CandidateID: "a", Success: true}}
	r.SetArtifact(art, int64(len(art)))
	r.Checks = NewChecker(cfg).Check(r, nil)
	if len(r.Checks) != 1 || r.Checks[0].Passed != 1 || r.Checks[0].Of != 2 {
		t.Fatalf("checks = %+v, want 1 of 2 passed", r.Checks)
	}
	r.Excerpt()
	if !r.ArtifactCut || strings.Contains(r.ArtifactContent, "needle") {
		t.Fatalf("excerpt kept the needle or is not marked cut (cut=%v)", r.ArtifactCut)
	}
	if got := Score(cfg, []string{"a"}, []record.Trial{r}).Scores[0]; got == nil || *got != 0.5 {
		t.Errorf("score from the checks = %v, want 0.5", got)
	}
	r.Checks = nil // what scoring would make of the excerpt alone
	if got := Score(cfg, []string{"a"}, []record.Trial{r}).Scores[0]; got == nil || *got != 0 {
		t.Errorf("score from the excerpt = %v, want 0", got)
	}
	if NewChecker(cfg).Check(record.Trial{Result: runner.Result{Success: false}}, nil) != nil {
		t.Error("a failed trial was checked")
	}
}

// TestFailedChecksSayWantAndGot: a trial's checks record, for each failed
// one, the check as written, what it wanted and what the trial gave, cut
// short; the passed ones are not listed.
func TestFailedChecksSayWantAndGot(t *testing.T) {
	cfg := Config{Scorers: []Scorer{{Type: TypeArtifact, Checks: []Check{
		{EqualsTask: "expected"}, {Contains: "total"}, {MinBytes: i64(1)}, {JSON: str("/n"), Min: f64(10)},
	}}}}
	r := artifactResult("the answer is 392 " + strings.Repeat("x", 500))
	r.Success = true
	got := NewChecker(cfg).Check(r, &Task{ID: "q7", Fields: map[string]any{"expected": "391"}})
	if len(got) != 1 || got[0].Passed != 1 || got[0].Of != 4 {
		t.Fatalf("checks %+v", got)
	}
	f := got[0].Failed
	if len(f) != 3 {
		t.Fatalf("failed %+v, want the 3 failed checks", f)
	}
	if f[0].Check != "equals_task: expected" || f[0].Want != "391" || !strings.HasPrefix(f[0].Got, "the answer is 392") || len(f[0].Got) > 210 {
		t.Errorf("equals_task: %+v", f[0])
	}
	if f[1].Check != `contains: "total"` || f[1].Want != `contains "total"` {
		t.Errorf("contains: %+v", f[1])
	}
	if f[2].Check != "json: /n value: a number ≥ 10" || f[2].Got == "" {
		t.Errorf("json min: %+v", f[2])
	}
}
