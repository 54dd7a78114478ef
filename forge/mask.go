package forge

import (
	"github.com/forge-run/forge/internal/mask"
	"github.com/forge-run/forge/runner"
)

// maskResult replaces every secret in the text a job brought back with ***,
// and flags an artifact that holds one: the artifact file itself is the
// candidate's product and is stored as written.
func maskResult(m *mask.Masker, r *runner.Result) {
	if m == nil {
		return
	}
	r.Output = m.String(r.Output)
	r.Stderr = m.String(r.Stderr)
	r.ErrorMessage = m.String(r.ErrorMessage)
	r.SubmitError = m.String(r.SubmitError)
	r.AgentError = m.String(r.AgentError)
	if r.Transcript != nil {
		r.Transcript = []byte(m.String(string(r.Transcript)))
	}
	r.TranscriptNote = m.String(r.TranscriptNote)
	if r.VerifierLog != nil {
		r.VerifierLog = []byte(m.String(string(r.VerifierLog)))
	}
	r.VerifierOutput = m.String(r.VerifierOutput)
	r.SecretInArtifact = m.Contains(r.Artifact) || m.Contains([]byte(r.ArtifactContent))
	r.ArtifactContent = m.String(r.ArtifactContent)
	r.Submitted = maskValue(m, r.Submitted).(map[string]any)
	maskJudges(m, r.Judges)
}

// maskChecks masks what failed checks saw and wanted (a task's field may
// hold a secret's value as well as the artifact).
func maskChecks(m *mask.Masker, checks []runner.CheckResult) {
	if m == nil {
		return
	}
	for i := range checks {
		for j := range checks[i].Failed {
			f := &checks[i].Failed[j]
			f.Want, f.Got = m.String(f.Want), m.String(f.Got)
		}
	}
}

// maskJudges masks what judges said.
func maskJudges(m *mask.Masker, judges []runner.JudgeResult) {
	for i := range judges {
		judges[i].Reason = m.String(judges[i].Reason)
		judges[i].Error = m.String(judges[i].Error)
	}
}

// maskValue masks the strings of a decoded JSON value, keys included.
func maskValue(m *mask.Masker, v any) any {
	switch x := v.(type) {
	case string:
		return m.String(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = maskValue(m, e)
		}
		return out
	case map[string]any:
		if x == nil {
			return x
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[m.String(k)] = maskValue(m, e)
		}
		return out
	}
	return v
}
