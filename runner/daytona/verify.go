package daytona

// The verifier: its files uploaded once the candidate has ended, its
// command run by forge.sh in the job's session (verifyText), with a reward
// directory of its own (isolateText).

import (
	"context"
	"fmt"
	"maps"
	"path"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/forge-run/forge/runner"
)

// verifyScript is the verifier's part of forge.sh: its command in its own
// environment, and the empty files of the tests directory; "" without one.
func (j *jobRun) verifyScript() (string, error) {
	if j.job.Verify == nil {
		return "", nil
	}
	env := map[string]string{"HOME": j.lay.home}
	maps.Copy(env, j.job.VerifyEnv(j.lay.tests, j.lay.logs))
	if err := exportable("verifier env", env); err != nil {
		return "", err
	}
	var ensure []string
	for _, f := range j.job.VerifyFiles() {
		dst, data, err := fileData(f, j.lay.tests, "verifier file")
		if err != nil {
			return "", err
		}
		if len(data) == 0 {
			ensure = append(ensure, fmt.Sprintf("mkdir -p %s && : > %s", shQuote(path.Dir(dst)), shQuote(dst)))
		}
	}
	command := j.job.Verify.Command
	if u := j.job.Verify.User; u != "" {
		// As Harbor runs it: the tests directory and the logs the user's.
		command = fmt.Sprintf("chown -R %[1]s %[2]s %[3]s && exec su -s /bin/sh -c %[4]s %[1]s",
			shQuote(u), shQuote(j.lay.tests), shQuote(j.lay.logs), shQuote(command))
	}
	return j.lay.verifyText(command, env, ensure), nil
}

// verify uploads the verifier's files, runs it and records its reward.
func (j *jobRun) verify(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, f := range j.job.VerifyFiles() {
		dst, data, err := fileData(f, j.lay.tests, "verifier file")
		if err != nil {
			return err
		}
		if len(data) > 0 { // the empty ones verifyText makes
			g.Go(func() error { return j.uploadRetried(gctx, data, dst) })
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	v := j.job.Verify
	run, err := j.runInSession(ctx, strings.Join(append([]string{"verify"}, j.procs...), " "), v.EffectiveTimeout())
	if err != nil {
		return err
	}
	rep, err := j.report(ctx, run, "verifier", "reward", "rewardjson")
	if err != nil {
		return err
	}
	o := runner.VerifyOutcome{ExitCode: run.exit, TimedOut: run.timedOut,
		Log: rep.files["verifier"], LogBytes: rep.size("verifier"), LogsDir: j.lay.logs}
	for _, f := range []struct {
		key, name string
		into      *[]byte
	}{{"reward", runner.RewardText, &o.Text}, {"rewardjson", runner.RewardJSON, &o.JSON}} {
		switch rep.kinds[f.key] {
		case "file":
			*f.into = append([]byte{}, rep.files[f.key]...) // non-nil: the file is there, even empty
		case "symlink":
			o.Problem = f.name + " is a symlink; forge reads only regular files"
		case "unreadable", "other":
			o.Problem = f.name + " is not a readable regular file"
		}
	}
	j.res.CheckTools(j.tools, parseTools(run.report))
	j.res.Verified(v, o)
	return nil
}
