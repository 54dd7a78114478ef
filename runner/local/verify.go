package local

// The verifier: after the candidate, in the job's box and working directory.

import (
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
func (j *jobRun) verify(ctx context.Context) {
	v := j.job.Verify
	done := j.phase(runner.PhaseVerify)
	defer done()
	dir, err := os.MkdirTemp(j.r.opts.TempDir, fmt.Sprintf("forge-%d-verify-", os.Getpid()))
	if err != nil {
		j.res.Failed(runner.ErrInfra, "make the verifier's directory: "+err.Error())
		return
	}
	j.verifyDir = dir
	tests, logs := filepath.Join(dir, "tests"), filepath.Join(dir, "logs", "verifier")
	for _, d := range []string{tests, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			j.res.Failed(runner.ErrInfra, "make the verifier's directory: "+err.Error())
			return
		}
	}
	if err := upload(tests, j.job.VerifyFiles()); err != nil {
		j.res.Failed(runner.ErrInfra, "the verifier's files: "+err.Error())
		return
	}
	// The job's user runs it (its candidate has ended): the verifier reads
	// what the candidate left as the candidate could, never as root.
	if j.user != nil {
		if err := give(dir, j.user); err != nil {
			j.res.Failed(runner.ErrInfra, "give the verifier's directory to the job's user: "+err.Error())
			return
		}
	}
	// The candidate's box cannot start more: the verifier gets its own.
	vv := view{readOnly: j.readOnly(), etc: j.etc}
	vv.slot = j.slotFor(vv)
	b, err := j.r.platform.newBox(boxSpec{marker: marker(j.job), user: j.user, view: vv})
	if err != nil {
		j.res.Failed(runner.ErrInfra, "contain the verifier: "+err.Error())
		return
	}
	j.spent, j.box = append(j.spent, j.box), b
	env := j.r.baseEnv(j.workdir)
	maps.Copy(env, j.job.VerifyEnv(tests, logs))
	// One log, stdout and stderr as they came.
	p, err := j.r.runProcess(ctx, j.box, process{
		path: "/bin/sh", argv: []string{"sh", "-c", "exec 2>&1\n" + v.Command}, dir: j.dir, user: j.user,
		env: runner.EnvList(env), timeout: v.EffectiveTimeout(), endAll: true,
		maxBytes: j.job.Limits.OutputCap(),
	})
	switch {
	case err != nil:
		j.res.Failed(runner.ErrInfra, "start the verifier: "+err.Error())
		return
	case p.cancelled:
		j.res.Settle(j.job, runner.Outcome{Cancelled: true})
		return
	}
	o := runner.VerifyOutcome{ExitCode: p.exitCode, TimedOut: p.timedOut, Log: p.stdout.Bytes(), LogBytes: p.stdout.Total(), LogsDir: "$" + runner.VerifierLogsVar}
	root, err := os.OpenRoot(logs)
	if err != nil {
		j.res.Failed(runner.ErrInfra, "open the verifier's logs: "+err.Error())
		return
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
}
