package scoring

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/forge-run/forge/runner"
)

// JudgeInput is what a judge is told about the trial it judges.
type JudgeInput struct {
	RunID       string
	CandidateID string
	Trial       int
	Objective   string
	// ArtifactPath is the artifact's absolute path on this machine.
	ArtifactPath string
	// WorkDir is the judge's working directory (the manifest's directory);
	// relative paths in its command resolve against it.
	WorkDir string
	// Env is the manifest's env; the FORGE_* variables win over it.
	Env map[string]string
}

// Judge process limits.
const (
	// judgeMaxOutput caps a judge's stdout and stderr, each.
	judgeMaxOutput = 64 << 10
	// judgeKillGrace is how long a judge has between SIGTERM and SIGKILL,
	// and how long forge waits for its output pipes once it has exited.
	judgeKillGrace = 2 * time.Second
	// maxReason caps a judge's reason.
	maxReason = 2000
)

// RunJudges runs every judge scorer of cfg, in order, on one trial's
// artifact and returns one JudgeResult each (named as the scorer). It runs
// nothing and returns nil when cfg has no judges.
//
// A judge runs locally, never through a shell, as
//
//	command... <objective> <artifact_path>
//
// in in.WorkDir, with PATH, HOME, LANG and TMPDIR from forge's environment,
// in.Env, and FORGE_OBJECTIVE, FORGE_ARTIFACT, FORGE_CANDIDATE_ID,
// FORGE_TRIAL and FORGE_RUN_ID; nothing else. It must print either a number
// in [0, 1] or a JSON object {"score": 0.8, "reason": "…"} on stdout (the
// whole output, or else its last non-blank line). It runs in its own process
// group, which gets SIGTERM at its timeout, SIGKILL 2s later, and SIGKILL
// once the judge has exited (no stragglers). Any failure — cannot start,
// non-zero exit, timeout, cancellation, garbage, a score outside [0, 1] or
// not finite — is returned in JudgeResult.Error with a nil Score. Output
// beyond 64 KiB per stream is dropped.
func RunJudges(ctx context.Context, cfg Config, in JudgeInput) []runner.JudgeResult {
	var out []runner.JudgeResult
	for _, s := range cfg.effective().Scorers {
		if s.Type != TypeJudge {
			continue
		}
		out = append(out, runJudge(ctx, s, in))
	}
	return out
}

func runJudge(ctx context.Context, s Scorer, in JudgeInput) runner.JudgeResult {
	res := runner.JudgeResult{Name: s.EffectiveName()}
	if len(s.Command) == 0 || s.Command[0] == "" {
		res.Error = "judge has no command"
		return res
	}
	if err := ctx.Err(); err != nil {
		res.Error = "cancelled before the judge started"
		return res
	}
	timeout := s.EffectiveTimeout()
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	argv := append(append([]string(nil), s.Command...), in.Objective, in.ArtifactPath)
	cmd := exec.CommandContext(tctx, argv[0], argv[1:]...)
	cmd.Dir = in.WorkDir
	cmd.Env = runner.EnvList(judgeEnv(in))
	stdout := &runner.CappedBuffer{Max: judgeMaxOutput}
	stderr := &runner.CappedBuffer{Max: judgeMaxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = judgeKillGrace
	group := newProcessGroup(cmd)
	cmd.Cancel = func() error {
		group.terminate(judgeKillGrace)
		return nil
	}

	if err := cmd.Start(); err != nil {
		res.Error = "cannot start judge: " + err.Error()
		return res
	}
	err := cmd.Wait()
	group.kill() // stragglers that outlived the judge
	group.stop()

	if group.terminated() {
		if ctx.Err() != nil {
			res.Error = "cancelled while judging"
		} else {
			res.Error = "judge timed out after " + timeout.String()
		}
		return res
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		msg := "judge exited with status " + strconv.Itoa(ee.ExitCode())
		if ee.ExitCode() < 0 {
			msg = "judge was killed: " + ee.Error()
		}
		if line := runner.LastErrorLine(stderr.String()); line != "" {
			msg += ": " + line
		}
		res.Error = msg
		return res
	case err != nil && !errors.Is(err, exec.ErrWaitDelay):
		res.Error = "judge failed: " + err.Error()
		return res
	}
	score, reason, perr := ParseVerdict(stdout.Bytes())
	if perr != nil {
		res.Error = perr.Error()
		return res
	}
	res.Score, res.Reason = &score, reason
	return res
}

// judgeEnv is the judge's whole environment.
func judgeEnv(in JudgeInput) map[string]string {
	env := make(map[string]string, len(in.Env)+9)
	for k, v := range in.Env {
		env[k] = v
	}
	basics := map[string]string{
		"PATH":   "/usr/local/bin:/usr/bin:/bin",
		"HOME":   "",
		"LANG":   "C.UTF-8",
		"TMPDIR": os.TempDir(),
	}
	for k, def := range basics {
		if v := os.Getenv(k); v != "" {
			env[k] = v
		} else if def != "" {
			env[k] = def
		}
	}
	env["FORGE_OBJECTIVE"] = in.Objective
	env["FORGE_ARTIFACT"] = in.ArtifactPath
	env["FORGE_CANDIDATE_ID"] = in.CandidateID
	env["FORGE_TRIAL"] = strconv.Itoa(in.Trial)
	env["FORGE_RUN_ID"] = in.RunID
	return env
}

// ParseVerdict reads a judge's stdout: a number in [0, 1], or a JSON object
// with a numeric "score" in [0, 1] and an optional "reason". The whole
// output is tried first, then its last non-blank line, so a judge may log
// before its verdict.
func ParseVerdict(out []byte) (score float64, reason string, err error) {
	whole := bytes.TrimSpace(out)
	if len(whole) == 0 {
		return 0, "", errors.New("judge printed nothing; want a number in [0,1] or {\"score\": …, \"reason\": …}")
	}
	score, reason, err = parseVerdictText(whole)
	if err == nil || !errors.Is(err, errNotVerdict) {
		return score, reason, err
	}
	if i := bytes.LastIndexByte(whole, '\n'); i >= 0 {
		last := bytes.TrimSpace(whole[i+1:])
		if s, r, lerr := parseVerdictText(last); !errors.Is(lerr, errNotVerdict) {
			return s, r, lerr
		}
	}
	return 0, "", fmt.Errorf("judge printed no score (want a number in [0,1] or {\"score\": …, \"reason\": …}): %q",
		snippet(whole, 80))
}

var errNotVerdict = errors.New("not a verdict")

func parseVerdictText(b []byte) (float64, string, error) {
	if f, err := strconv.ParseFloat(string(b), 64); err == nil {
		return checkScore(f, "")
	}
	if len(b) == 0 || b[0] != '{' {
		return 0, "", errNotVerdict
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&obj); err != nil || dec.More() {
		return 0, "", errNotVerdict
	}
	raw, ok := obj["score"]
	if !ok {
		return 0, "", errors.New("judge's JSON verdict has no \"score\"")
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, "", fmt.Errorf("judge's \"score\" is not a number: %s", snippet(raw, 40))
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

func snippet(b []byte, n int) string { return capText(string(b), n) }

// capText makes s valid UTF-8 and cuts it to at most n bytes plus "…".
func capText(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
