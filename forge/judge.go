package forge

import (
	"context"
	"maps"
	"path/filepath"
	"strconv"
	"time"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// JudgeMaxOutput caps a judge's stdout and stderr, each.
const JudgeMaxOutput = 64 << 10

// judges runs the manifest's judges, in order, on the stored artifact of a
// successful trial (judge). Not in play: with this loop there, each local
// job's cgroup step took 0.06 ms instead of 0.02 (FORGE_LOCAL_STEPS
// medians, six runs of 300 jobs), for a reason not found (not the
// collector; stack growth is not in a profile).
func (s *state) judges(ctx context.Context, job runner.Job, artifact string) []record.JudgeResult {
	var out []record.JudgeResult
	for _, sc := range s.o.Manifest.Scoring.Judges() {
		out = append(out, s.judge(ctx, sc, job, artifact))
	}
	return out
}

// judge runs the manifest's judge sc on the stored artifact of a
// successful trial, as a plain job of Options.Judges (docs/manifest.md,
// "scoring": its command, environment and limits). Any failure is the
// JudgeResult's Error, with a nil Score.
func (s *state) judge(ctx context.Context, sc scoring.Scorer, job runner.Job, artifact string) record.JudgeResult {
	failed := func(msg string) record.JudgeResult { return record.JudgeResult{Name: sc.EffectiveName(), Error: msg} }
	switch {
	case len(sc.Command) == 0 || sc.Command[0] == "":
		return failed("judge has no command")
	case ctx.Err() != nil:
		return failed("cancelled before the judge started")
	}
	env := map[string]string{}
	maps.Copy(env, job.Env)
	env["FORGE_ARTIFACT"] = artifact
	if job.TaskID != "" {
		env["FORGE_TASK"] = s.stored(job, taskFile)
	}
	timeout := sc.EffectiveTimeout()
	jr, err := s.o.Judges.Run(ctx, runner.Job{
		RunID:       job.RunID,
		CandidateID: job.CandidateID,
		TaskID:      job.TaskID,
		Secrets:     s.o.Plan.JudgeSecrets[sc.EffectiveName()],
		Trial:       job.Trial,
		Objective:   job.Objective,
		Command:     append(append([]string(nil), sc.Command...), job.Objective, artifact),
		Env:         env,
		Dir:         s.o.Manifest.Dir,
		Timeout:     timeout,
		Limits:      runner.Limits{MaxOutputBytes: JudgeMaxOutput},
	})
	if err != nil {
		return failed("judge failed: " + err.Error())
	}
	if msg := judgeFailure(jr, timeout); msg != "" {
		return failed(msg)
	}
	score, reason, err := scoring.ParseVerdict(jr.Output)
	if err != nil {
		return failed(err.Error())
	}
	return record.JudgeResult{Name: sc.EffectiveName(), Score: &score, Reason: reason}
}

// judgeFailure says why a judge's job gave no verdict to read, or "" when
// it exited 0.
func judgeFailure(jr runner.Result, timeout time.Duration) string {
	withStderr := func(msg string) string {
		if line := runner.LastErrorLine(jr.Stderr); line != "" {
			msg += ": " + line
		}
		return msg
	}
	switch {
	case jr.Success:
		return ""
	case jr.ErrorKind == runner.ErrCancelled:
		return "cancelled while judging"
	case jr.ErrorKind == runner.ErrTimeout:
		return "judge timed out after " + timeout.String()
	case jr.ExitCode != nil && *jr.ExitCode != 0:
		return withStderr("judge exited with status " + strconv.Itoa(*jr.ExitCode))
	case jr.ErrorKind == runner.ErrCandidateFailed && jr.ExitCode == nil && jr.RuntimeSeconds == 0:
		// Never started: the runner could not find or execute the command.
		return "cannot start judge: " + jr.ErrorMessage
	case jr.ErrorKind == runner.ErrCandidateFailed && jr.ExitCode == nil:
		return withStderr("judge was killed by a signal")
	}
	return "judge failed: " + jr.ErrorMessage
}

// stored is the absolute path of a file stored for job (store), as judges
// get it.
func (s *state) stored(job runner.Job, name string) string {
	p := filepath.Join(s.dir, jobDir(job, s.o.Plan.Trials), name)
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
