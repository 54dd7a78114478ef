package local

// The verifier: after the candidate, in the job's box and working directory.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"github.com/forge-run/forge/runner"
)

// verify runs the job's verifier once the candidate has ended: its files
// in a directory made only now (the candidate never saw them), its reward
// read from another.
func (j *jobRun) verify(ctx context.Context) error {
	v := j.job.Verify
	tests, logs, err := j.verifyFiles()
	if err != nil {
		return err
	}
	// The candidate's box cannot start more: the verifier gets its own.
	// Its own files are in jobsDir, which the Runner's hiding keeps.
	b, err := j.r.platform.newBox(boxSpec{marker: marker(j.job), user: j.user, view: j.view(true)})
	if err != nil {
		return fmt.Errorf("contain the verifier: %w", err)
	}
	j.spent, j.box = append(j.spent, j.box), b
	j.res.CheckTools(j.tools, toolPrints(v, j.r.path))
	env := j.r.baseEnv(j.workdir.path)
	maps.Copy(env, j.job.VerifyEnv(tests, logs))
	// One log, stdout and stderr as they came.
	p, err := j.r.runProcess(ctx, j.box, process{
		path: "/bin/sh", argv: []string{"sh", "-c", "exec 2>&1\n" + v.Command}, dir: j.dir, user: j.user,
		env: runner.EnvList(env), timeout: v.EffectiveTimeout(), endAll: true,
		maxBytes: j.job.Limits.OutputCap(),
	})
	switch {
	case err != nil:
		return fmt.Errorf("start the verifier: %w", err)
	case p.cancelled:
		return cmp.Or(ctx.Err(), context.Canceled)
	}
	o := runner.VerifyOutcome{ExitCode: p.exitCode, TimedOut: p.timedOut, Log: p.stdout.Bytes(), LogBytes: p.stdout.Total(), LogsDir: "$" + runner.VerifierLogsVar}
	root, err := os.OpenRoot(logs)
	if err != nil {
		return fmt.Errorf("open the verifier's logs: %w", err)
	}
	defer root.Close()
	for _, f := range []struct {
		name string
		into *[]byte
	}{{runner.RewardText, &o.Text}, {runner.RewardJSON, &o.JSON}} {
		b, _, err := readBack(root, f.name, runner.MaxRewardBytes)
		switch {
		case errors.Is(err, errMissing):
		case err != nil && o.Problem == "":
			o.Problem = f.name + " " + err.Error()
		case err == nil:
			*f.into = b
		}
	}
	j.res.Verified(v, o)
	return nil
}

// verifyFiles makes the verifier's directory, owned by the job's user, with
// its files in tests and an empty logs.
func (j *jobRun) verifyFiles() (tests, logs string, err error) {
	dir, err := os.MkdirTemp(j.r.jobsDir, fmt.Sprintf("forge-%d-verify-", os.Getpid()))
	if err != nil {
		return "", "", fmt.Errorf("make the verifier's directory: %w", err)
	}
	j.verifyDir = dir
	tests, logs = filepath.Join(dir, "tests"), filepath.Join(dir, "logs", "verifier")
	for _, d := range []string{tests, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", "", fmt.Errorf("make the verifier's directory: %w", err)
		}
	}
	if err := upload(tests, j.job.VerifyFiles()); err != nil {
		return "", "", fmt.Errorf("the verifier's files: %w", err)
	}
	// The job's user runs it (its candidate has ended): the verifier reads
	// what the candidate left as the candidate could, never as root.
	if j.user != nil {
		if err := give(dir, j.user); err != nil {
			return "", "", fmt.Errorf("give the verifier's directory to the job's user: %w", err)
		}
	}
	return tests, logs, nil
}
