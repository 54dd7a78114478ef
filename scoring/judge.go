package scoring

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/forge-run/forge/internal/text"
)

// maxReason caps a judge's reason.
const maxReason = 2000

// Judges are c's judge scorers, in order. forge runs each after every
// successful trial and stores its verdict in Trial.Judges under the scorer's
// EffectiveName, for Score to read.
func (c Config) Judges() []Scorer {
	var out []Scorer
	for _, s := range c.effective().Scorers {
		if s.Type == TypeJudge {
			out = append(out, s)
		}
	}
	return out
}

// ParseVerdict reads a judge's stdout: a number in [0, 1], or a JSON object
// with "score" and an optional "reason" (capped at 2000 bytes). The whole
// output is tried, then its last non-blank line, so a judge may log first.
func ParseVerdict(stdout string) (score float64, reason string, err error) {
	whole := strings.TrimSpace(stdout)
	if len(whole) == 0 {
		return 0, "", errors.New("judge printed nothing; want a number in [0,1] or {\"score\": …, \"reason\": …}")
	}
	score, reason, err = parseVerdictText(whole)
	if err == nil || !errors.Is(err, errNotVerdict) {
		return score, reason, err
	}
	if i := strings.LastIndexByte(whole, '\n'); i >= 0 {
		if s, r, lerr := parseVerdictText(strings.TrimSpace(whole[i+1:])); !errors.Is(lerr, errNotVerdict) {
			return s, r, lerr
		}
	}
	return 0, "", fmt.Errorf("judge printed no score (want a number in [0,1] or {\"score\": …, \"reason\": …}): %q",
		capText(whole, 80))
}

var errNotVerdict = errors.New("not a verdict")

func parseVerdictText(b string) (float64, string, error) {
	if f, err := strconv.ParseFloat(b, 64); err == nil {
		return checkScore(f, "")
	}
	if len(b) == 0 || b[0] != '{' {
		return 0, "", errNotVerdict
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(b))
	if err := dec.Decode(&obj); err != nil || dec.More() {
		return 0, "", errNotVerdict
	}
	raw, ok := obj["score"]
	if !ok {
		return 0, "", errors.New("judge's JSON verdict has no \"score\"")
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, "", fmt.Errorf("judge's \"score\" is not a number: %s", capText(string(raw), 40))
	}
	var reason string
	if r, ok := obj["reason"]; ok {
		if err := json.Unmarshal(r, &reason); err != nil {
			reason = string(r)
		}
	}
	return checkScore(f, capText(reason, maxReason))
}

func checkScore(f float64, reason string) (float64, string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, "", fmt.Errorf("judge's score %v is not a finite number", f)
	}
	if f < 0 || f > 1 {
		return 0, "", fmt.Errorf("judge's score %v is outside [0, 1]", f)
	}
	return f, reason, nil
}

// capText makes s valid UTF-8 and cuts it to at most n bytes plus "…".
func capText(s string, n int) string {
	s, cut := text.Cap(strings.ToValidUTF8(s, "\uFFFD"), n)
	if cut > 0 {
		s += "…"
	}
	return s
}
