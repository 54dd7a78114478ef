package runner

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/forge-run/forge/internal/text"
)

// ErrorKind says why a job did not succeed; the zero value is JSON null.
type ErrorKind string

// The error kinds of docs/results.md and docs/protocol.md.
const (
	ErrNone            ErrorKind = ""
	ErrTimeout         ErrorKind = "timeout"
	ErrCandidateFailed ErrorKind = "candidate_failed"
	ErrArtifactMissing ErrorKind = "artifact_missing"
	ErrInfra           ErrorKind = "infra"
	ErrAuth            ErrorKind = "auth"
	ErrCancelled       ErrorKind = "cancelled"
	// ErrVerifyFailed: the task's verifier gave no reward (none written,
	// unreadable, or it ran past its timeout): the task's fault.
	ErrVerifyFailed ErrorKind = "verify_failed"
)

// MarshalJSON writes the empty kind as null.
func (k ErrorKind) MarshalJSON() ([]byte, error) {
	if k == ErrNone {
		return []byte("null"), nil
	}
	return json.Marshal(string(k))
}

// UnmarshalJSON reads null as the empty kind.
func (k *ErrorKind) UnmarshalJSON(b []byte) error {
	var s string // null leaves it empty
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*k = ErrorKind(s)
	return nil
}

// Fault says whose doing a trial's end was: the one rule for whether it is
// scored, counts against the success rate, is a JUnit failure, error or skip,
// counts for gates, and is played again by --resume.
type Fault int

// The faults.
const (
	// FaultNone: the trial succeeded.
	FaultNone Fault = iota
	// FaultCandidate: timeout, candidate_failed, artifact_missing; scored.
	FaultCandidate
	// FaultInfra: infra, auth. Not scored, not in the success rate, played
	// again by --resume.
	FaultInfra
	// FaultInterrupted: cancelled; as FaultInfra, not scored, played again.
	FaultInterrupted
	// FaultTask: verify_failed. The task could not judge the trial: not
	// scored, not in the success rate, never retried (the same task would
	// fail again), counted apart.
	FaultTask
)

// Fault says whose doing an end with k was; an unknown (newer) kind counts
// as the candidate's.
func (k ErrorKind) Fault() Fault {
	switch k {
	case ErrNone:
		return FaultNone
	case ErrInfra, ErrAuth:
		return FaultInfra
	case ErrCancelled:
		return FaultInterrupted
	case ErrVerifyFailed:
		return FaultTask
	}
	return FaultCandidate
}

// Scored reports whether an end with k says something about the candidate.
func (k ErrorKind) Scored() bool {
	f := k.Fault()
	return f == FaultNone || f == FaultCandidate
}

// Phases holds the seconds a job spent in each phase; 0 for those a backend
// does not have.
type Phases struct {
	Create   float64 `json:"create"`
	Upload   float64 `json:"upload"`
	Setup    float64 `json:"setup"`
	Execute  float64 `json:"execute"`
	Download float64 `json:"download"`
	Verify   float64 `json:"verify,omitempty"`
	Cleanup  float64 `json:"cleanup"`
}

// phaseOrder is every phase in the order a job goes through them.
var phaseOrder = []Phase{PhaseCreate, PhaseUpload, PhaseSetup, PhaseExecute, PhaseDownload, PhaseVerify, PhaseCleanup}

// seconds are ph's fields in phaseOrder.
func (ph *Phases) seconds() []*float64 {
	return []*float64{&ph.Create, &ph.Upload, &ph.Setup, &ph.Execute, &ph.Download, &ph.Verify, &ph.Cleanup}
}

// Add records d against phase p.
func (ph *Phases) Add(p Phase, d time.Duration) {
	if i := slices.Index(phaseOrder, p); i >= 0 {
		*ph.seconds()[i] += d.Seconds()
	}
}

// PhaseTime is the seconds a job spent in one phase.
type PhaseTime struct {
	Phase   Phase
	Seconds float64
}

// List is every phase in the order a job goes through them, with its
// seconds (0 for those it did not have).
func (ph Phases) List() []PhaseTime {
	out := make([]PhaseTime, len(phaseOrder))
	for i, s := range ph.seconds() {
		out[i] = PhaseTime{phaseOrder[i], *s}
	}
	return out
}

// Result is what one job's sandbox gave back (docs/results.md); a run's
// record keeps it with what judging adds. Output and Stderr may hold any
// bytes; encoding/json replaces invalid UTF-8. A runner returns all it
// captured; the run then keeps only excerpts (Excerpt) and the paths of the
// stored files. Records of schemas 1 and 2 hold the whole output.
type Result struct {
	CandidateID string `json:"candidate_id"`
	// TaskID is the suite's task the trial played; absent without tasks.
	TaskID    string `json:"task_id,omitempty"`
	Trial     int    `json:"trial"`
	SandboxID string `json:"sandbox_id"`
	Backend   string `json:"backend"`
	Success   bool   `json:"success"`
	ExitCode  *int   `json:"exit_code"`
	// Output is stdout: its last OutputExcerpt bytes in a record.
	Output string `json:"output"`
	// Stderr is stderr: its last StderrExcerpt bytes in a record.
	Stderr string `json:"stderr"`
	// OutputTruncated: max_output cut what the candidate printed.
	OutputTruncated bool `json:"output_truncated"`
	// The stored logs' sizes and paths; *Cut: Output or Stderr holds only
	// the log's end (schema 3).
	OutputBytes int64  `json:"output_bytes,omitempty"`
	StderrBytes int64  `json:"stderr_bytes,omitempty"`
	OutputPath  string `json:"output_path,omitempty"`
	StderrPath  string `json:"stderr_path,omitempty"`
	OutputCut   bool   `json:"output_cut,omitempty"`
	StderrCut   bool   `json:"stderr_cut,omitempty"`

	// The transcript the candidate wrote, if any, stored in the run's
	// directory; the record never holds the transcript itself.
	TranscriptPath      string `json:"transcript_path,omitempty"`
	TranscriptBytes     int64  `json:"transcript_bytes,omitempty"`
	TranscriptSteps     int    `json:"transcript_steps,omitempty"`
	TranscriptTruncated bool   `json:"transcript_truncated,omitempty"`
	TranscriptNote      string `json:"transcript_note,omitempty"`

	// ArtifactContent is the artifact's start as text, or base64
	// (ArtifactEncoding); ArtifactCut when that is not all of it.
	ArtifactContent   string `json:"artifact_content"`
	ArtifactEncoding  string `json:"artifact_encoding,omitempty"`
	ArtifactPath      string `json:"artifact_path"`
	ArtifactBytes     int64  `json:"artifact_bytes"`
	ArtifactTruncated bool   `json:"artifact_truncated"`
	ArtifactCut       bool   `json:"artifact_cut,omitempty"`

	Submitted map[string]any `json:"submitted"`
	// SubmitError says why the FORGE_RESULT file was ignored.
	SubmitError string `json:"submit_error,omitempty"`
	// Usage is the model usage reported in FORGE_RESULT; UsageNote says
	// what of it was left out. Neither ever fails the trial.
	Usage     *Usage `json:"usage,omitempty"`
	UsageNote string `json:"usage_note,omitempty"`
	// AgentError is how an agent candidate's agent said it ended in
	// error, in its own words (its log); AgentTurns how many turns it took.
	AgentError string `json:"agent_error,omitempty"`
	AgentTurns int    `json:"agent_turns,omitempty"`
	// Resources are the Daytona sandbox's, for its price.
	Resources *Resources `json:"resources,omitempty"`

	// RuntimeSeconds is the candidate's process alone, start to exit,
	// measured as close to it as the backend can (on Daytona, inside).
	RuntimeSeconds float64 `json:"runtime_seconds"`
	// JobSeconds is the whole job's wall time; Phases splits it.
	JobSeconds float64   `json:"job_seconds"`
	Phases     Phases    `json:"phases"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`

	ErrorKind    ErrorKind `json:"error_kind"`
	ErrorMessage string    `json:"error_message"`
	// Lasting says the infra failure is the sandbox's image's and a fresh
	// sandbox would fail the same way: the job is not played again. Not
	// written: a resumed run tries once more.
	Lasting bool `json:"-"`

	// Reward is what the task's verifier gave (reward.txt, or reward.json's
	// "reward"); Metrics are reward.json's other numbers.
	Reward  *float64           `json:"reward,omitempty"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// VerifierOutput is the end of the verifier's log (stdout and stderr
	// as they came, VerifierExcerpt bytes); the log is stored whole at
	// VerifierLogPath (VerifierLogBytes).
	VerifierOutput   string `json:"verifier_output,omitempty"`
	VerifierLogPath  string `json:"verifier_log_path,omitempty"`
	VerifierLogBytes int64  `json:"verifier_log_bytes,omitempty"`
	// Tampered lists the verifier's tools (runner.Verify.Tools) that
	// changed between the candidate's start and the verifier's: a trial
	// judged as usual, on tools the candidate may have replaced.
	Tampered []string `json:"tampered,omitempty"`

	// Artifact holds the raw artifact bytes (capped) for the run to store.
	Artifact []byte `json:"-"`
	// Transcript holds the transcript's bytes for the run to store.
	Transcript []byte `json:"-"`
	// VerifierLog holds the verifier's log (capped) for the run to store.
	VerifierLog []byte `json:"-"`
}

// MarshalJSON writes sandbox_id and error_message as null when empty.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	return json.Marshal(struct {
		plain
		SandboxID    *string `json:"sandbox_id"`
		ErrorMessage *string `json:"error_message"`
	}{plain(r), nullable(r.SandboxID), nullable(r.ErrorMessage)})
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// SetArtifact stores the artifact as text when valid UTF-8, else base64, so
// results.json stays valid and nothing is silently replaced. size is its full size.
func (r *Result) SetArtifact(b []byte, size int64) {
	r.Artifact = b
	r.ArtifactBytes = size
	r.ArtifactTruncated = size > int64(len(b))
	if utf8.Valid(b) {
		r.ArtifactContent = string(b)
		r.ArtifactEncoding = ""
		return
	}
	r.ArtifactContent = base64.StdEncoding.EncodeToString(b)
	r.ArtifactEncoding = "base64"
}

// Failed records that the job did not succeed, and why.
func (r *Result) Failed(kind ErrorKind, msg string) {
	r.Success = false
	r.ErrorKind = kind
	r.ErrorMessage = msg
}

// The excerpts a record keeps (Result.Excerpt), small enough that thousands
// of chatty trials stay a few megabytes.
const (
	OutputExcerpt   = 1 << 10
	StderrExcerpt   = 2 << 10
	ArtifactExcerpt = 2 << 10
	VerifierExcerpt = 1 << 10
)

// Excerpt keeps the end of Output and Stderr and the start of the artifact,
// cut at a character boundary and flagged, with their sizes, and drops the
// artifact's and transcript's bytes. Call it once the job's files are stored.
func (r *Result) Excerpt() {
	r.OutputBytes, r.StderrBytes = int64(len(r.Output)), int64(len(r.Stderr))
	r.Output, r.OutputCut = tail(r.Output, OutputExcerpt)
	r.Stderr, r.StderrCut = tail(r.Stderr, StderrExcerpt)
	r.VerifierOutput, _ = tail(r.VerifierOutput, VerifierExcerpt)
	// The artifact's excerpt comes from its content as the record has it
	// (masked), not from the bytes stored as written.
	switch r.ArtifactEncoding {
	case "":
		r.ArtifactCut = len(r.ArtifactContent) > ArtifactExcerpt
		r.ArtifactContent = head(r.ArtifactContent, ArtifactExcerpt)
	case "base64":
		n := base64.StdEncoding.EncodedLen(ArtifactExcerpt) // a whole number of 4-character groups
		r.ArtifactCut = len(r.ArtifactContent) > n
		r.ArtifactContent = strings.Clone(r.ArtifactContent[:min(n, len(r.ArtifactContent))])
	}
	r.Artifact = nil
	r.Transcript = nil
	r.VerifierLog = nil
}

// tail returns at most the last n bytes of s from a rune start, and whether cut.
func tail(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	i := len(s) - n
	for j := 0; j < utf8.UTFMax && i < len(s) && !utf8.RuneStart(s[i]); j++ {
		i++
	}
	return strings.Clone(s[i:]), true // not the whole log's memory
}

// head returns at most the first n bytes of s, ending at a rune boundary.
func head(s string, n int) string {
	if h, cut := text.Cap(s, n); cut > 0 {
		return strings.Clone(h)
	}
	return s
}
