package runner

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Runner runs one job in one fresh, isolated sandbox. A failing, timed out or
// cancelled candidate is recorded in the Result with a nil error; Run returns
// an error only when the backend is unusable and the run should stop. Whatever
// Run started is gone when it returns.
type Runner interface {
	Run(ctx context.Context, job Job) (Result, error)
}

// File is one file copied into the job's working directory before it starts.
type File struct {
	// Src is an absolute local path; Data, when not nil, is the content.
	Src  string
	Data []byte
	// Dst is the path in the working directory, valid by RelPath.
	Dst string
}

// Limits caps what a job may produce; zero means the default.
type Limits struct {
	MaxOutputBytes     int64 // stdout and stderr, each
	MaxArtifactBytes   int64 // the artifact and FORGE_RESULT
	MaxTranscriptBytes int64
}

// Default limits.
const (
	DefaultMaxOutput   = 1 << 20
	DefaultMaxArtifact = 1 << 20
	DefaultTimeout     = 60 * time.Second
	DefaultOutputFile  = "output.md"
)

// OutputCap is the cap on stdout and stderr, each, in bytes.
func (l Limits) OutputCap() int64 { return cmp.Or(l.MaxOutputBytes, DefaultMaxOutput) }

// ArtifactCap caps the artifact and the FORGE_RESULT file.
func (l Limits) ArtifactCap() int64 { return cmp.Or(l.MaxArtifactBytes, DefaultMaxArtifact) }

// DefaultMaxTranscript caps the transcript: it holds every message of a trial.
const DefaultMaxTranscript = 4 << 20

// TranscriptCap is the cap on the transcript, in bytes.
func (l Limits) TranscriptCap() int64 { return positiveOr(l.MaxTranscriptBytes, DefaultMaxTranscript) }

// positiveOr is v when positive, else d.
func positiveOr[T int64 | time.Duration](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

// DefaultSetupTimeout bounds all of a job's setup lines when it sets none.
const DefaultSetupTimeout = 5 * time.Minute

// Job is one candidate's one trial: everything a backend needs to run it.
type Job struct {
	RunID       string
	CandidateID string
	Trial       int // 1-based
	Objective   string
	// TaskID names the suite's task the job plays; Files then hold the
	// task as TaskFile.
	TaskID string

	// Command is the candidate's argv before the objective and output path
	// are appended; relative paths are relative to the working directory.
	Command []string
	// Files are copied into the working directory before anything runs.
	Files []File
	// Env is the manifest's env; it never overrides FORGE_* variables.
	Env map[string]string
	// Secrets are variables passed on purpose, values masked: the candidate
	// gets them (over Env), setup only with SetupSecrets. A backend keeps
	// them out of everything else: logs, create requests, files it leaves.
	Secrets      map[string]string `json:"-"`
	SetupSecrets bool
	// Setup are shell lines run in order before the candidate; they come
	// from the manifest's author, never from the objective.
	Setup []string
	// SetupTimeout bounds all the setup lines together.
	SetupTimeout time.Duration
	// Environment, when set, is what the job runs in, built beforehand by
	// the backend's Builder.
	Environment *Environment
	// InImageWorkdir starts the setup, the candidate and the verifier in
	// the sandbox's working directory (its image's WORKDIR: Harbor tasks
	// expect /app) instead of the job's own; the job's files stay in its
	// own, and a Command word naming one of them becomes its absolute path.
	InImageWorkdir bool
	// AgentLog is the format of the agent's own log the candidate writes
	// to FORGE_TRANSCRIPT (an agent candidate), which forge reads into the
	// trial's transcript, usage and notes; the backends pass it by.
	AgentLog string
	// Verify, when set, judges the trial in its sandbox once the candidate
	// has ended.
	Verify *Verify
	// NoNetwork gives the job no network but its own loopback (the
	// manifest's network: none): locally a network namespace per process,
	// on Daytona a sandbox with its network blocked.
	NoNetwork bool
	// Hidden are paths of this machine the candidate must not read (where
	// its verifier's files come from): a local backend that can mount
	// shows them empty; a sandbox never has them.
	Hidden []string

	// OutputFile is the artifact's relative path; empty: DefaultOutputFile.
	OutputFile string
	// ArtifactOptional makes exit code 0 alone a success.
	ArtifactOptional bool
	// Timeout bounds the candidate's execution (not setup, not cleanup).
	Timeout time.Duration
	Limits  Limits

	// Dir, when set, makes the job a plain command (forge's judges): Command
	// is its whole argv, run in the existing absolute Dir; nothing is read
	// back, so exit 0 is success. Files and Setup must be empty. Only the
	// local backend runs such jobs.
	Dir string

	// Progress is called as the job enters each phase; cheap, concurrent-safe.
	Progress func(Phase) `json:"-"`
	// Echo, when set, gets the candidate's output line by line (--verbose),
	// up to the output cap. It must be safe for concurrent use.
	Echo func(stream, line string) `json:"-"`
}

// FilesAt is argv with each word that names one of the job's files (by
// its relative path) made at(path): for a job that does not start in its
// own working directory (InImageWorkdir).
func (j Job) FilesAt(argv []string, at func(rel string) string) []string {
	out := slices.Clone(argv)
	// The objective and the output path, after Command, are the job's own.
	for i, a := range argv[:min(len(argv), len(j.Command))] {
		rel, err := RelPath(strings.TrimPrefix(a, "./"))
		if err == nil && slices.ContainsFunc(j.Files, func(f File) bool { return f.Dst == rel }) {
			out[i] = at(rel)
		}
	}
	return out
}

// Name is the job's name for people: "alpha", "alpha#2", "alpha/q7#2".
func (j Job) Name() string { return TrialName(j.CandidateID, j.TaskID, j.Trial, j.Trial > 1) }

// TrialName names a trial for people: "candidate[/task][#trial]", the trial
// only when numbered; without a candidate, "task[#trial]".
func TrialName(candidate, task string, trial int, numbered bool) string {
	n := candidate
	if task != "" {
		if n != "" {
			n += "/"
		}
		n += task
	}
	if numbered {
		n += "#" + strconv.Itoa(trial)
	}
	return n
}

// Enter reports that the job entered phase p.
func (j Job) Enter(p Phase) {
	if j.Progress != nil {
		j.Progress(p)
	}
}

// Phase is one step of a job's life in its sandbox.
type Phase string

// The phases, in order.
const (
	PhaseCreate   Phase = "create"
	PhaseUpload   Phase = "upload"
	PhaseSetup    Phase = "setup"
	PhaseExecute  Phase = "execute"
	PhaseDownload Phase = "download"
	PhaseVerify   Phase = "verify"
	PhaseCleanup  Phase = "cleanup"
)

// UnusableError is returned by Runner.Run when the backend cannot be used: the
// run stops, cleans up and exits 3. Kind is ErrAuth or ErrInfra.
type UnusableError struct {
	Kind ErrorKind
	Err  error
}

func (e *UnusableError) Error() string { return string(e.Kind) + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *UnusableError) Unwrap() error { return e.Err }
