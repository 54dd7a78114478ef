package runner

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/forge-run/forge/internal/text"
)

// The protocol's file names, relative to the working directory.
const (
	ResultFile = ".forge-result.json"
	TaskFile   = ".forge-task.json"
)

// Argv is the candidate's argv: Command, the objective, the output path.
func (j Job) Argv(outputPath string) []string {
	return slices.Concat(j.Command, []string{j.Objective, outputPath})
}

// ProtocolEnv returns the variables a candidate gets besides the backend's
// basics: the manifest's env, then the FORGE_* variables, which win. at gives
// the path the candidate sees for one relative to its working directory.
func (j Job) ProtocolEnv(at func(rel string) string) map[string]string {
	env := make(map[string]string, len(j.Env)+8)
	maps.Copy(env, j.Env)
	env["FORGE_OBJECTIVE"] = j.Objective
	env["FORGE_OUTPUT"] = at(j.EffectiveOutputFile())
	env["FORGE_RESULT"] = at(ResultFile)
	env["FORGE_TRANSCRIPT"] = at(TranscriptFile)
	env["FORGE_CANDIDATE_ID"] = j.CandidateID
	env["FORGE_TRIAL"] = fmt.Sprint(j.Trial)
	env["FORGE_RUN_ID"] = j.RunID
	if j.TaskID != "" {
		env["FORGE_TASK_ID"] = j.TaskID
		env["FORGE_TASK"] = at(TaskFile)
	}
	return env
}

// envNamePattern is a variable name a shell can set.
var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidEnvName reports whether a shell can set variable k.
func ValidEnvName(k string) bool { return envNamePattern.MatchString(k) }

// CheckEnvName says what is wrong with k as the name of a variable a job's
// Env gives the candidate: not a valid name, or a FORGE_* one forge sets.
func CheckEnvName(k string) error {
	switch {
	case !ValidEnvName(k):
		return fmt.Errorf("%q is not a valid variable name", k)
	case strings.HasPrefix(k, "FORGE_"):
		return fmt.Errorf("%q: FORGE_* variables are set by forge itself", k)
	}
	return nil
}

// EnvList renders env as sorted KEY=VALUE pairs.
func EnvList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// Outcome is what a backend observed of a finished candidate process.
type Outcome struct {
	// ExitCode is nil when the process never ran or a signal ended it.
	ExitCode *int
	// TimedOut is true when the job's timeout ended it.
	TimedOut bool
	// Cancelled is true when the run was cancelled (Ctrl-C) while it ran.
	Cancelled bool
	// ArtifactFound is true when the artifact was read back.
	ArtifactFound bool
	// ArtifactProblem says why an artifact that exists was refused.
	ArtifactProblem string
}

// Settle decides success and the error kind from what the backend observed,
// the same way for every backend. Output and Stderr must already be set.
func (r *Result) Settle(j Job, o Outcome) {
	r.ExitCode = o.ExitCode
	switch {
	case o.Cancelled:
		r.Failed(ErrCancelled, "cancelled before it finished")
	case o.TimedOut:
		r.Failed(ErrTimeout, "timed out after "+j.EffectiveTimeout().String())
	case o.ExitCode == nil:
		r.Failed(ErrCandidateFailed, cmp.Or(LastErrorLine(r.Stderr), "killed by a signal"))
	case *o.ExitCode != 0:
		r.Failed(ErrCandidateFailed, cmp.Or(LastErrorLine(r.Stderr), LastErrorLine(r.Output),
			fmt.Sprintf("exit status %d", *o.ExitCode)))
	case !o.ArtifactFound && o.ArtifactProblem != "":
		r.Failed(ErrArtifactMissing, o.ArtifactProblem)
	case !o.ArtifactFound && !j.ArtifactOptional:
		r.Failed(ErrArtifactMissing, "exited 0 but wrote no artifact at "+j.EffectiveOutputFile())
	default:
		r.Success = true
		r.ErrorKind = ErrNone
		r.ErrorMessage = ""
	}
}

// SetupFailed records a job whose setup failed, the same way for every
// backend: candidate_failed, "setup failed: " and why. o is how the setup
// command ended (a cancelled one is Settle's). ExitCode stays unset: the
// candidate never ran.
func (r *Result) SetupFailed(o Outcome, timeout time.Duration, stdout, stderr string) {
	last := LastErrorLine(stderr)
	var why string
	switch {
	case o.TimedOut && last != "":
		why = "timed out after " + timeout.String() + ": " + last
	case o.TimedOut:
		why = "timed out after " + timeout.String()
	case o.ExitCode == nil:
		why = cmp.Or(last, "killed by a signal")
	default:
		why = cmp.Or(last, LastErrorLine(stdout), fmt.Sprintf("exit status %d", *o.ExitCode))
	}
	r.Failed(ErrCandidateFailed, "setup failed: "+why)
}

// EffectiveTimeout is the job's execution timeout, or the default.
func (j Job) EffectiveTimeout() time.Duration { return positiveOr(j.Timeout, DefaultTimeout) }

// EffectiveOutputFile is the artifact's relative path, or the default.
func (j Job) EffectiveOutputFile() string { return cmp.Or(j.OutputFile, DefaultOutputFile) }

// maxErrorLine caps error_message.
const maxErrorLine = 300

// LastErrorLine returns the last non-blank line of s, trimmed, valid UTF-8 and
// capped: for a Python traceback, the exception line.
func LastErrorLine(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	s, cut := text.Cap(strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD")), maxErrorLine)
	if cut > 0 {
		s += "…"
	}
	return s
}

// ParseSubmitted reads a FORGE_RESULT file: a JSON object of the candidate's
// own metrics; anything else is refused with a reason.
func ParseSubmitted(b []byte) (map[string]any, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("FORGE_RESULT file is empty")
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("FORGE_RESULT is not a JSON object: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("FORGE_RESULT has data after its JSON object")
	}
	for k, v := range m {
		if n, ok := v.(json.Number); ok {
			m[k] = n.String() // as written, unless a finite number
			if f, ok := number(n); ok {
				m[k] = f
			}
		}
	}
	return m, nil
}

// Submit takes a FORGE_RESULT file whole: metrics into Submitted, model usage
// into Usage, or why they were ignored into SubmitError and UsageNote.
func (r *Result) Submit(b []byte) {
	m, err := ParseSubmitted(b)
	if err != nil {
		r.SubmitError = err.Error()
		return
	}
	r.Usage, r.UsageNote = ParseUsage(m)
	// Read into Usage (or noted): the record keeps it once, and a list of
	// a thousand calls' usages is no metric.
	delete(m, "usage")
	r.Submitted = m
}
