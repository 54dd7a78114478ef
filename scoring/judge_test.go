package scoring

import (
	"strings"
	"testing"
)

func TestParseVerdict(t *testing.T) {
	for _, c := range []struct {
		name, out string
		score     float64
		reason    string
		errWant   string
	}{
		{"number", "0.75\n", 0.75, "", ""},
		{"one", "1", 1, "", ""},
		{"zero padded", "  \n0\n\n", 0, "", ""},
		{"json", `{"score": 0.8, "reason": "good – ünïcode"}` + "\n", 0.8, "good – ünïcode", ""},
		{"json reason not a string", `{"score": 0.5, "reason": {"a": 1}}`, 0.5, `{"a": 1}`, ""},
		{"multi-line json", "{\n  \"score\": 0.3,\n  \"reason\": \"ok\"\n}\n", 0.3, "ok", ""},
		{"logs then verdict", "thinking...\n{\"score\": 0.25}\n", 0.25, "", ""},
		{"logs then number", "step 1\nstep 2\n0.5\n", 0.5, "", ""},
		{"garbage", "looks great!\n", 0, "", "judge printed no score"},
		{"verdict then logs", "0.5\ndone\n", 0, "", "judge printed no score"},
		{"nothing", "", 0, "", "judge printed nothing"},
		{"blank", " \n\t\n", 0, "", "judge printed nothing"},
		{"above range", "1.5", 0, "", "outside [0, 1]"},
		{"negative", `{"score": -0.1}`, 0, "", "outside [0, 1]"},
		{"nan", "nan", 0, "", "not a finite number"},
		{"inf", "+Inf", 0, "", "not a finite number"},
		{"inf json", `{"score": 1e999}`, 0, "", "not a number"},
		{"score as text", `{"score": "0.5"}`, 0, "", `"score" is not a number`},
		{"no score key", `{"reason": "meh"}`, 0, "", `has no "score"`},
		{"logs then bad verdict", "log\n{\"score\": 2}", 0, "", "outside [0, 1]"},
		{"two objects", `{"score": 0.1} {"score": 0.2}`, 0, "", "judge printed no score"},
	} {
		t.Run(c.name, func(t *testing.T) {
			score, reason, err := ParseVerdict(c.out)
			if c.errWant != "" {
				if err == nil || !strings.Contains(err.Error(), c.errWant) {
					t.Errorf("ParseVerdict(%q) error = %v, want it to contain %q", c.out, err, c.errWant)
				}
				return
			}
			if err != nil || score != c.score || reason != c.reason {
				t.Errorf("ParseVerdict(%q) = %v, %q, %v; want %v, %q", c.out, score, reason, err, c.score, c.reason)
			}
		})
	}
}

func TestParseVerdictLongReasonCapped(t *testing.T) {
	long := strings.Repeat("é", 3000)
	_, reason, err := ParseVerdict(`{"score": 0.5, "reason": "` + long + `"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(reason) > maxReason+len("…") || !strings.HasSuffix(reason, "…") {
		t.Errorf("reason not capped: %d bytes", len(reason))
	}
}

func TestParseVerdictGarbageIsQuotedShort(t *testing.T) {
	_, _, err := ParseVerdict(strings.Repeat("x", 500) + "\xff")
	if err == nil || len(err.Error()) > 200 {
		t.Errorf("error %v: want a short quote of the output", err)
	}
}

func TestConfigJudges(t *testing.T) {
	if j := (Config{}).Judges(); j != nil {
		t.Errorf("default config has no judges, got %+v", j)
	}
	a := Scorer{Type: TypeJudge, Name: "a", Command: []string{"a"}}
	b := Scorer{Type: TypeJudge, Name: "b", Command: []string{"b"}}
	j := Config{Scorers: []Scorer{{Type: TypeSuccess}, a, {Type: TypeRuntime}, b}}.Judges()
	if len(j) != 2 || j[0].Name != "a" || j[1].Name != "b" {
		t.Errorf("Judges = %+v, want a then b", j)
	}
}
