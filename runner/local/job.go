package local

// One Run: a job from its working directory to its cleanup, as the steps of
// a runner.Pipeline.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/forge-run/forge/runner"
)

// Run runs job in a fresh working directory, removed afterwards (Close waits
// for that). It returns an error only when the machine cannot run jobs at all;
// a failing candidate is recorded in the Result. A job in an environment runs
// only once BuildEnvironment made it ready.
func (r *Runner) Run(ctx context.Context, job runner.Job) (runner.Result, error) {
	begin := time.Now()
	res := runner.Result{
		CandidateID: job.CandidateID,
		Trial:       job.Trial,
		Backend:     Backend,
		StartedAt:   begin.UTC(),
	}
	p := &jobPipeline
	if job.Dir != "" {
		p = &plainPipeline
		job.ArtifactOptional = true // nothing is read back: exit 0 is success
	}
	j := &jobRun{r: r, job: job, res: &res, steps: r.steps.job()}
	err := p.Run(ctx, j, &j.job, &res)
	end := time.Now()
	res.FinishedAt = end.UTC()
	res.JobSeconds = end.Sub(begin).Seconds()
	r.steps.finished(j.steps, end.Sub(begin))
	return res, err
}

// jobPipeline is a job's way through its working directory. Making its box
// (its PID namespace or cgroup) is "create", once its files are in.
var jobPipeline = runner.Pipeline[*jobRun]{
	Steps: []runner.PipelineStep[*jobRun]{
		{Phase: runner.PhaseUpload, Do: (*jobRun).upload},
		{Phase: runner.PhaseCreate, Do: (*jobRun).create},
		{Phase: runner.PhaseSetup, Do: (*jobRun).setup},
		{Phase: runner.PhaseExecute, Do: (*jobRun).execute},
		{Phase: runner.PhaseDownload, Do: (*jobRun).download},
		{Phase: runner.PhaseVerify, Do: (*jobRun).verify},
	},
	Cleanup: (*jobRun).cleanup,
}

// plainPipeline is a plain job's: in its own directory, nothing copied in or
// read back.
var plainPipeline = runner.Pipeline[*jobRun]{
	Steps: []runner.PipelineStep[*jobRun]{
		{Phase: runner.PhaseCreate, Do: (*jobRun).createPlain},
		{Phase: runner.PhaseExecute, Do: (*jobRun).executePlain},
	},
	Cleanup: (*jobRun).cleanup,
}

// jobRun is the state of one Run.
type jobRun struct {
	r   *Runner
	job runner.Job
	res *runner.Result

	// dir is where the job's processes run: workdir, or a plain job's Dir.
	dir string
	// workdir is the fresh working directory Run made (and removes).
	workdir workdirID
	// outRel is the artifact's path in workdir.
	outRel string
	// verifyDir holds the verifier's files and logs, made after the
	// candidate ended (and removed with the working directory).
	verifyDir string
	envDir    string
	// user runs the job's processes; nil: forge's user. etc name it, in
	// slot's mount namespace.
	user *jobUser
	etc  []etcFile
	slot *nsSlot
	box  *box
	// spent are boxes whose processes were ended (the candidate's, once
	// the verifier has its own), closed at cleanup.
	spent []*box
	// outcome is how the candidate's process ended, for download.
	outcome runner.Outcome
	// tools are the verifier's tools as the candidate started.
	tools runner.ToolPrints
	// steps are the step timings, nil unless StepsFileEnv is set.
	steps *jobSteps
}

// upload makes the job's working directory, copies its files in and gives
// it to the job's user.
func (j *jobRun) upload(context.Context) error {
	if err := j.environment(); err != nil {
		return err
	}
	t := j.steps.now()
	outRel, err := runner.RelPath(j.job.EffectiveOutputFile())
	if err != nil {
		return errors.New("output file " + err.Error())
	}
	j.outRel = filepath.FromSlash(outRel)
	// forge-<pid>-…: a later forge removes it if this one is killed before
	// it can (removeStale).
	w, made, err := j.r.newWorkdir(fmt.Sprintf("forge-%d-%s-", os.Getpid(), safeName(j.job.CandidateID)))
	if err != nil {
		return runner.StopRun(fmt.Errorf("make working directory in %s: %w", j.r.opts.TempDir, err))
	}
	j.workdir, j.dir = w, w.path
	if made {
		if err := os.Mkdir(filepath.Join(w.path, "tmp"), 0o700); err != nil {
			return fmt.Errorf("make %s/tmp: %v", w.path, err)
		}
		j.r.noteNew(&j.workdir)
	}
	if err := upload(w.path, j.job.Files); err != nil {
		return err
	}
	j.steps.add(stepWorkdir, t)
	return j.takeUser()
}

// create makes the job's box; never one with the network it was denied.
func (j *jobRun) create(context.Context) error {
	if j.job.NoNetwork && !j.r.platform.readOnly() {
		return errors.New("network: none: this machine cannot give a job a network of its own (forge needs root and namespaces here)")
	}
	return j.contain()
}

// createPlain makes a plain job's box, in its own directory.
func (j *jobRun) createPlain(context.Context) error {
	if err := j.environment(); err != nil {
		return err
	}
	switch {
	case !filepath.IsAbs(j.job.Dir):
		return fmt.Errorf("the job's directory %q is not absolute", j.job.Dir)
	case len(j.job.Files) > 0 || len(j.job.Setup) > 0:
		return errors.New("a job with its own directory takes no files and no setup")
	case len(j.job.Command) == 0:
		return errors.New("the job has no command")
	}
	if fi, err := os.Stat(j.job.Dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("the job's directory %s is not a directory", j.job.Dir)
	}
	j.dir = j.job.Dir
	return j.contain()
}

// contain makes the job's box; a machine that cannot stops the run.
func (j *jobRun) contain() error {
	b, err := j.r.platform.newBox(boxSpec{marker: marker(j.job), user: j.user, view: j.view(false), steps: j.steps})
	if err != nil {
		return runner.StopRun(fmt.Errorf("contain job %s: %w", j.job.Name(), err))
	}
	j.box = b
	return nil
}

// execute runs the candidate in its working directory.
func (j *jobRun) execute(ctx context.Context) error {
	if len(j.job.Command) == 0 {
		return errors.New("the job has no command")
	}
	if v := j.job.Verify; v != nil {
		j.tools = toolPrints(v, j.r.path)
	}
	return j.runCandidate(ctx, j.job.Argv(filepath.Join(j.workdir.path, j.outRel)), j.env(true))
}

// executePlain runs a plain job's command and settles it: nothing is read
// back.
func (j *jobRun) executePlain(ctx context.Context) error {
	if err := j.runCandidate(ctx, j.job.Command, j.plainEnv()); err != nil {
		return err
	}
	j.res.Settle(j.job, j.outcome)
	return nil
}

// runCandidate runs argv in j.dir and records its output, runtime and
// outcome.
func (j *jobRun) runCandidate(ctx context.Context, argv, env []string) error {
	t := j.steps.now()
	path, err := j.r.lookPath(argv[0], envValue(env, "PATH"), j.dir, j.user)
	j.steps.add(stepLookup, t)
	if err != nil {
		return &runner.StepError{Kind: runner.ErrCandidateFailed, Err: err}
	}
	p, err := j.r.runProcess(ctx, j.box, process{
		path: path, argv: argv, dir: j.dir, env: env, user: j.user,
		timeout:  j.job.EffectiveTimeout(),
		endAll:   true,
		maxBytes: j.job.Limits.OutputCap(),
		echo:     j.job.Echo,
		steps:    j.steps,
	})
	if err != nil {
		return &runner.StepError{Kind: startErrorKind(err), Err: err}
	}
	j.res.RuntimeSeconds = p.runtime.Seconds()
	j.res.Output = p.stdout.String()
	j.res.Stderr = p.stderr.String()
	j.res.OutputTruncated = p.stdout.Truncated() || p.stderr.Truncated()
	j.outcome = runner.Outcome{ExitCode: p.exitCode, TimedOut: p.timedOut, Cancelled: p.cancelled}
	return nil
}

// setup runs the setup commands; when one fails, the Result says why.
func (j *jobRun) setup(ctx context.Context) error {
	timeout := cmp.Or(j.job.SetupTimeout, runner.DefaultSetupTimeout)
	i, p, err := j.r.runSteps(ctx, j.box, shellSteps{lines: j.job.Setup, proc: process{
		dir: j.dir, env: j.env(j.job.SetupSecrets), user: j.user,
		timeout:  timeout,
		maxBytes: j.job.Limits.OutputCap(),
	}})
	switch {
	case i < 0:
		return nil
	case err != nil:
		return &runner.StepError{Kind: startErrorKind(err), Err: fmt.Errorf("setup %q: %v", j.job.Setup[i], err)}
	}
	j.res.Output, j.res.Stderr = p.stdout.String(), p.stderr.String()
	j.res.OutputTruncated = p.stdout.Truncated() || p.stderr.Truncated()
	if p.cancelled {
		return cmp.Or(ctx.Err(), context.Canceled)
	}
	j.res.SetupFailed(runner.Outcome{ExitCode: p.exitCode, TimedOut: p.timedOut}, timeout, j.res.Output, j.res.Stderr)
	return runner.ErrEnded
}

// takeUser gives the job a user of its own, when jobs get one, owning the
// working directory.
func (j *jobRun) takeUser() error {
	if j.r.users == nil {
		return nil
	}
	t := j.steps.now()
	u, err := j.r.users.acquire()
	j.steps.add(stepUID, t)
	if err != nil {
		return err
	}
	j.user = u
	t = j.steps.now()
	err = give(j.workdir.path, u)
	j.steps.add(stepChown, t)
	if err != nil {
		return fmt.Errorf("give the working directory to the job's user: %w", err)
	}
	if j.r.platform.readOnly() { // where forge may mount
		defer j.steps.add(stepPasswd, j.steps.now())
		if j.slot = j.r.takeSlot(u, j.workdir.path); j.slot != nil {
			j.etc = j.slot.etc
			return nil
		}
		if j.etc, err = j.r.jobEtc(u, j.workdir.path); err != nil {
			return err
		}
		j.slot = &nsSlot{fd: -1, etc: j.etc}
	}
	return nil
}

// cleanup ends the job's boxes and removes its directories, and frees its
// user once nothing of the job is left.
func (j *jobRun) cleanup(context.Context) error {
	if j.workdir.path == "" && j.box == nil && j.user == nil {
		return nil
	}
	var failed []string
	t := j.steps.now()
	for _, b := range append(j.spent, j.box) {
		if b == nil {
			continue
		}
		if err := b.close(); err != nil {
			failed = append(failed, "could not end the job's processes: "+err.Error())
		}
	}
	j.steps.add(stepRelease, t)
	dirs := slices.DeleteFunc([]string{j.workdir.path, j.verifyDir}, func(d string) bool { return d == "" })
	if len(failed) > 0 {
		if j.slot != nil {
			j.r.dropSlot(j.slot)
		}
		for _, dir := range dirs { // what could not be ended may still write there
			_ = removeAll(dir)
		}
		// and its user is never another job's, nor its directory
		return errors.New(strings.Join(failed, "; "))
	}
	var err error
	if u := j.user; u != nil {
		t = j.steps.now()
		err = j.r.users.removeLeftovers(u, dirs...)
		j.steps.add(stepSweep, t)
	}
	// Freed once nothing of the job is left, its directories too; its
	// slot once its /proc is gone (putSlot), beside the next job too.
	freeUser := j.user != nil && err == nil
	j.r.removeWorkdir(j.workdir, j.verifyDir, j.steps, func() {
		if freeUser {
			j.r.users.release(j.user)
		}
		if j.slot != nil {
			j.r.putSlot(j.slot)
		}
	})
	return err
}

// safeName keeps a candidate id usable in a directory name.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}

// env is the candidate's whole environment (the setup's, with secrets only
// under setup_secrets): baseEnv, the manifest's env, secrets, FORGE_*, then
// inEnvironment. Nothing else of forge's.
func (j *jobRun) env(secrets bool) []string {
	m := j.r.baseEnv(j.workdir.path)
	maps.Copy(m, j.job.ProtocolEnv(func(rel string) string { return filepath.Join(j.workdir.path, filepath.FromSlash(rel)) }))
	if secrets {
		maps.Copy(m, j.job.Secrets) // their names are never FORGE_*
	}
	if j.envDir != "" {
		inEnvironment(m, j.envDir)
	}
	return runner.EnvList(m)
}

// plainEnv is a plain job's environment: its Env and Secrets, forge's PATH,
// HOME, LANG and TMPDIR and the FORGE_* variables that name the job.
func (j *jobRun) plainEnv() []string {
	getenv := j.r.opts.Getenv
	m := make(map[string]string, len(j.job.Env)+8)
	maps.Copy(m, j.job.Env)
	maps.Copy(m, j.job.Secrets) // a judge's own (scoring's secrets:)
	m["PATH"] = cmp.Or(getenv("PATH"), defaultPath)
	if home := getenv("HOME"); home != "" {
		m["HOME"] = home
	}
	m["LANG"] = cmp.Or(getenv("LANG"), "C.UTF-8")
	m["TMPDIR"] = cmp.Or(getenv("TMPDIR"), os.TempDir())
	protocol := j.job.ProtocolEnv(func(string) string { return "" })
	for _, k := range []string{"FORGE_OBJECTIVE", "FORGE_CANDIDATE_ID", "FORGE_TRIAL", "FORGE_RUN_ID", "FORGE_TASK_ID"} {
		if v, ok := protocol[k]; ok {
			m[k] = v
		}
	}
	if j.envDir != "" {
		inEnvironment(m, j.envDir)
	}
	return runner.EnvList(m)
}

// marker are the environment entries that identify the job's processes:
// the protocol's own (ProtocolEnv), so that the sweep finds what the job
// was given.
func marker(job runner.Job) []string {
	env := job.ProtocolEnv(func(string) string { return "" })
	m := []string{
		"FORGE_RUN_ID=" + env["FORGE_RUN_ID"],
		"FORGE_CANDIDATE_ID=" + env["FORGE_CANDIDATE_ID"],
		"FORGE_TRIAL=" + env["FORGE_TRIAL"],
	}
	if job.TaskID != "" {
		m = append(m, "FORGE_TASK_ID="+env["FORGE_TASK_ID"])
	}
	return m
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// view is how the job's processes see the file system: readOnly's directory
// read-only; the candidate's (not the verifier's) network its own, as the job
// asks, and its Hidden paths empty where forge can mount; and, in a working
// directory of its own (not a plain job's, such as a judge in the manifest's
// directory), the Runner's hidden directories gone, Hidden paths under them
// with them, and a /proc of its own. Elsewhere a candidate could read them:
// the local backend is a lifetime boundary, not a security one.
func (j *jobRun) view(verifier bool) view {
	v := view{readOnly: j.readOnly(), etc: j.etc}
	if !verifier {
		v.noNetwork = j.job.NoNetwork
		if j.r.platform.readOnly() {
			v.hidden = j.job.Hidden
		}
	}
	if h := j.r.hiding; h != nil && j.job.Dir == "" {
		v.hide, v.proc = h, true
		v.hidden = slices.DeleteFunc(slices.Clone(v.hidden), h.hides)
	}
	// The job's kept mount namespace serves when v asks nothing else of one
	// but the Runner's hiding, the same for all its jobs.
	if v.readOnly == "" && len(v.hidden) == 0 && !v.noNetwork && j.r.keepsNamespaces() {
		v.slot = j.slot
	}
	return v
}

// readOnly is the directory the job's processes see read-only: the cache
// when this Runner holds environments, or just the job's environment when the
// job runs inside the cache; nothing when the job runs inside that.
func (j *jobRun) readOnly() string {
	if !j.r.platform.readOnly() {
		return ""
	}
	j.r.envMu.Lock()
	root := ""
	for _, st := range j.r.envs {
		if st.dir != "" {
			root = filepath.Dir(st.dir)
			break
		}
	}
	j.r.envMu.Unlock()
	for _, dir := range []string{root, j.envDir} {
		if dir != "" && !within(j.dir, dir) {
			return dir
		}
	}
	return ""
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// download reads the artifact, FORGE_RESULT and transcript into the result
// and settles the job.
func (j *jobRun) download(context.Context) error {
	t := j.steps.now()
	j.readOutputs()
	j.steps.add(stepDownload, t)
	j.res.Settle(j.job, j.outcome)
	return nil
}

// readOutputs reads the artifact, FORGE_RESULT and transcript into the result.
func (j *jobRun) readOutputs() {
	root, err := os.OpenRoot(j.workdir.path)
	if err != nil {
		j.outcome.ArtifactProblem = "cannot open the working directory: " + err.Error()
		return
	}
	defer root.Close()
	limit := j.job.Limits.ArtifactCap()

	b, size, err := readBack(root, j.outRel, limit)
	switch {
	case errors.Is(err, errMissing):
	case err != nil:
		j.outcome.ArtifactProblem = fmt.Sprintf("artifact %s %v; refused", filepath.ToSlash(j.outRel), err)
	default:
		j.res.SetArtifact(b, size)
		j.outcome.ArtifactFound = true
	}

	b, size, err = readBack(root, runner.ResultFile, limit)
	switch {
	case errors.Is(err, errMissing):
	case err != nil:
		j.res.SubmitError = fmt.Sprintf("FORGE_RESULT file %s; ignored", err)
	case size > int64(len(b)):
		j.res.SubmitError = fmt.Sprintf("FORGE_RESULT file is %d bytes, over the %d-byte cap; ignored", size, limit)
	default:
		j.res.Submit(b)
	}

	b, size, err = readBack(root, runner.TranscriptFile, j.job.Limits.TranscriptCap())
	switch {
	case errors.Is(err, errMissing):
	case err != nil:
		j.res.RefuseTranscript(err.Error())
	default:
		j.res.SetTranscript(b, size)
	}
}

// baseEnv is what job and build processes get from forge: PATH (what
// their users can reach of it), LANG, HOME, TMPDIR under it, PYTHONUNBUFFERED.
func (r *Runner) baseEnv(home string) map[string]string {
	getenv := r.opts.Getenv
	return map[string]string{
		"PATH":             r.path,
		"HOME":             home,
		"LANG":             cmp.Or(getenv("LANG"), "C.UTF-8"),
		"TMPDIR":           filepath.Join(home, "tmp"),
		"PYTHONUNBUFFERED": "1",
	}
}
