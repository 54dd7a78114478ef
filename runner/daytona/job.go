package daytona

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	sdkerrors "github.com/daytonaio/daytona/libs/sdk-go/pkg/errors"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/options"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"
	"golang.org/x/sync/errgroup"

	"github.com/forge-run/forge/runner"
)

// sessionID is the toolbox session a job's commands run in.
const sessionID = "forge"

// collectTimeout bounds the command that measures a job's outputs.
const collectTimeout = 30 * time.Second

// Run runs one job in a fresh sandbox and deletes the sandbox, whatever
// happens. A failing candidate is data (nil error); the error is non-nil
// only when the backend is unusable (*runner.UnusableError): the API refused
// the key, or could not be reached at all.
func (r *Runner) Run(ctx context.Context, job runner.Job) (runner.Result, error) {
	start := time.Now()
	res := runner.Result{CandidateID: job.CandidateID, Trial: job.Trial, Backend: Backend, StartedAt: start.UTC()}
	j := &jobRun{r: r, job: job, res: &res, name: sandboxName(r.opts.RunID, job.CandidateID, job.Trial)}
	err := j.run(ctx)
	res.FinishedAt = time.Now().UTC()
	res.JobSeconds = time.Since(start).Seconds()
	return res, err
}

// jobRun is one job on its way through its sandbox.
type jobRun struct {
	r    *Runner
	job  runner.Job
	res  *runner.Result
	name string

	sb      *daytona.Sandbox
	tried   bool // a creation was attempted
	lay     layout
	session bool
	// streams are the goroutines following command log streams; the job
	// waits for them before it returns.
	streams sync.WaitGroup
}

// stepError is a failure of the job, already classified.
type stepError struct {
	kind runner.ErrorKind
	msg  string
	// unusable stops the whole run.
	unusable error
}

func (e *stepError) Error() string { return e.msg }

func infra(format string, args ...any) error {
	return &stepError{kind: runner.ErrInfra, msg: fmt.Sprintf(format, args...)}
}

func (j *jobRun) run(parent context.Context) error {
	if err := j.r.unusable(); err != nil {
		j.res.Failed(runner.ErrAuth, err.Error())
		return err
	}
	j.r.mu.Lock()
	closed := j.r.closed
	j.r.mu.Unlock()
	if closed {
		j.res.Failed(runner.ErrInfra, "the Daytona runner is closed")
		return nil
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	stop := context.AfterFunc(j.r.dead, func() { cancel(context.Cause(j.r.dead)) })
	defer stop()
	defer func() {
		j.cleanup(parent)
		// The deletion ended every log stream still open.
		j.streams.Wait()
	}()

	err := j.steps(ctx)
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(context.Cause(ctx), errDead), j.r.unusable() != nil:
		uerr := j.r.unusable()
		if uerr == nil {
			uerr = &runner.UnusableError{Kind: runner.ErrAuth, Err: errDead}
		}
		j.res.Failed(unusableKind(uerr), "stopped: "+uerr.Error())
		return uerr
	case parent.Err() != nil:
		j.res.Settle(j.job, runner.Outcome{Cancelled: true})
		return nil
	}
	var se *stepError
	if errors.As(err, &se) {
		j.res.Failed(se.kind, se.msg)
		return se.unusable
	}
	var ue *runner.UnusableError
	if errors.As(err, &ue) {
		j.res.Failed(ue.Kind, ue.Error())
		return ue
	}
	j.res.Failed(runner.ErrInfra, err.Error())
	return nil
}

// step runs one phase, timing it.
func (j *jobRun) step(p runner.Phase, f func() error) error {
	j.job.Enter(p)
	t := time.Now()
	err := f()
	j.res.Phases.Add(p, time.Since(t))
	return err
}

func (j *jobRun) steps(ctx context.Context) error {
	if err := j.step(runner.PhaseCreate, func() error { return j.create(ctx) }); err != nil {
		return err
	}
	if err := j.step(runner.PhaseUpload, func() error { return j.upload(ctx) }); err != nil {
		return err
	}
	if len(j.job.Setup) > 0 {
		var failed bool
		if err := j.step(runner.PhaseSetup, func() (err error) { failed, err = j.setup(ctx); return err }); err != nil || failed {
			return err
		}
	}
	var run sessionRun
	err := j.step(runner.PhaseExecute, func() error {
		var err error
		run, err = j.runInSession(ctx, "sh "+shQuote(j.lay.controlScript())+" run", j.job.EffectiveTimeout())
		return err
	})
	if err != nil {
		return err
	}
	return j.step(runner.PhaseDownload, func() error { return j.download(ctx, run) })
}

// create makes the job's sandbox.
func (j *jobRun) create(ctx context.Context) error {
	o := j.r.opts
	labels := make(map[string]string, len(o.Labels)+4)
	for k, v := range o.Labels {
		labels[k] = v
	}
	labels[LabelApp] = LabelAppValue
	labels[LabelRun] = o.RunID
	labels[LabelCandidate] = j.job.CandidateID
	labels[LabelTrial] = strconv.Itoa(j.job.Trial)
	env := make(map[string]string, len(o.Env))
	for k, v := range o.Env {
		env[k] = v
	}
	autoStop := o.AutoStopMinutes
	if autoStop == 0 {
		setup := time.Duration(0)
		if len(j.job.Setup) > 0 {
			setup = j.setupTimeout()
		}
		autoStop = int(math.Ceil((setup + j.job.EffectiveTimeout() + AutoStopMargin).Minutes()))
	}
	autoDelete := 0
	base := types.SandboxBaseParams{
		Name: j.name, Labels: labels, EnvVars: env, NetworkBlockAll: o.NetworkBlockAll,
		AutoStopInterval: &autoStop, AutoDeleteInterval: &autoDelete,
	}
	if j.r.volumeID != "" {
		base.Volumes = []types.VolumeMount{{VolumeID: j.r.volumeID, MountPath: j.r.mountPath}}
	}
	// Params go by value: the SDK silently ignores a pointer.
	var params any = types.SnapshotParams{SandboxBaseParams: base, Snapshot: o.Snapshot}
	if o.Image != "" {
		p := types.ImageParams{SandboxBaseParams: base, Image: o.Image}
		if o.CPU > 0 || o.MemoryGB > 0 || o.DiskGB > 0 {
			p.Resources = &types.Resources{CPU: o.CPU, Memory: o.MemoryGB, Disk: o.DiskGB}
		}
		params = p
	}
	j.tried = true
	sb, err := j.r.createSandbox(ctx, j.name, params)
	if sb != nil {
		j.sb = sb
		j.res.SandboxID = sb.ID
		j.r.track(j.name, sb)
		if lerr := j.r.ledger.append(LedgerEntry{Event: eventCreated, RunID: o.RunID, Name: j.name, ID: sb.ID}); lerr != nil && err == nil {
			err = lerr
		}
	}
	if err != nil {
		return j.classified("create sandbox "+j.name, ctx, err)
	}
	return nil
}

// classified turns an SDK error into the job's failure.
func (j *jobRun) classified(what string, ctx context.Context, err error) error {
	var ue *runner.UnusableError
	if errors.As(err, &ue) {
		return err
	}
	f := classify(ctx, err)
	switch f.class {
	case classCancelled:
		return err
	case classAuth:
		j.r.markDead(err)
		return j.r.unusable()
	}
	msg := fmt.Sprintf("%s: %s", what, describe(err))
	se := &stepError{kind: runner.ErrInfra, msg: msg}
	if f.class == classTransient && statusOf(err) == 0 && j.sb == nil {
		// No answer from the API at all, retries spent: unreachable.
		se.unusable = &runner.UnusableError{Kind: runner.ErrInfra, Err: fmt.Errorf("cannot reach the Daytona API at %s: %w", j.r.opts.APIURL, described(err))}
	}
	return se
}

func (j *jobRun) setupTimeout() time.Duration {
	if j.job.SetupTimeout > 0 {
		return j.job.SetupTimeout
	}
	return j.r.opts.SetupTimeout
}

// upload copies the job's files and forge's scripts into the sandbox with
// the SDK's file upload. Zero-byte files cannot be uploaded (the SDK then
// sends no file part); the scripts create them instead.
func (j *jobRun) upload(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	// The session the commands run in depends on nothing else.
	g.Go(func() error { return j.ensureSession(gctx) })
	err := j.uploadFiles(gctx, g)
	if werr := g.Wait(); werr != nil {
		return werr // the first failure, which may have cancelled the rest
	}
	return err
}

// uploadFiles learns the sandbox's home directory and starts the uploads in
// g.
func (j *jobRun) uploadFiles(ctx context.Context, g *errgroup.Group) error {
	var home string
	err := j.r.retry(ctx, "ask "+j.name+" for its home directory", func(ctx context.Context) error {
		var err error
		home, err = j.sb.GetUserHomeDir(ctx)
		return err
	})
	if err != nil {
		return j.classified("ask the sandbox for its home directory", ctx, err)
	}
	if !strings.HasPrefix(home, "/") {
		return infra("the sandbox reported home directory %q, not an absolute path", home)
	}
	j.lay = newLayout(home, j.job.CandidateID)

	type upload struct {
		data []byte
		dst  string
	}
	var uploads []upload
	var ensure []string
	for _, f := range j.job.Files {
		rel, err := relPath(f.Dst)
		if err != nil {
			return infra("file %s: %v", f.Dst, err)
		}
		data, err := os.ReadFile(f.Src)
		if err != nil {
			return infra("read %s: %v", f.Src, err)
		}
		dst := j.lay.path(rel)
		if len(data) == 0 {
			ensure = append(ensure, fmt.Sprintf("mkdir -p %s && : > %s", shQuote(path.Dir(dst)), shQuote(dst)))
			continue
		}
		uploads = append(uploads, upload{data, dst})
	}
	if j.r.mountPath != "" {
		link := j.lay.home + "/" + strings.TrimPrefix(j.r.opts.Volume.Mount, "/")
		if !strings.HasPrefix(j.r.opts.Volume.Mount, "/") && link != j.r.mountPath {
			ensure = append(ensure, fmt.Sprintf("[ -e %[1]s ] || [ -L %[1]s ] || { mkdir -p %[2]s && ln -s %[3]s %[1]s; }",
				shQuote(link), shQuote(path.Dir(link)), shQuote(j.r.mountPath)))
		}
	}
	env, err := j.env()
	if err != nil {
		return err
	}
	outputFile, err := relPath(j.job.EffectiveOutputFile())
	if err != nil {
		return infra("output file %s: %v", j.job.EffectiveOutputFile(), err)
	}
	argv := j.job.Argv(j.lay.path(outputFile))
	for _, a := range argv {
		if strings.ContainsRune(a, 0) {
			return infra("an argument holds a NUL byte, which no process can receive")
		}
	}
	runEnsure := ensure
	if len(j.job.Setup) > 0 {
		uploads = append(uploads, upload{[]byte(j.lay.setupScriptText(j.job.Setup, env, ensure)), j.lay.setupScript()})
		runEnsure = nil
	}
	uploads = append(uploads, upload{[]byte(j.lay.controlScriptText(argv, env, runEnsure,
		outputFile, runner.ResultFile, j.job.Limits.Output(), j.job.Limits.Artifact())), j.lay.controlScript()})
	for _, u := range uploads {
		g.Go(func() error {
			err := j.r.retry(ctx, "upload "+u.dst, func(ctx context.Context) error {
				return j.upload1(ctx, u.data, u.dst)
			})
			if err != nil {
				return j.classified("upload "+u.dst, ctx, err)
			}
			return nil
		})
	}
	return nil
}

// upload1 uploads data to remote through the toolbox client directly: the
// SDK's UploadFile first copies the bytes into a temporary file on disk.
// The generated client wants an *os.File, which it reads to the end and
// closes; a pipe gives it one without touching the disk.
func (j *jobRun) upload1(ctx context.Context, data []byte, remote string) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return j.sb.FileSystem.UploadFile(ctx, data, remote)
	}
	go func() {
		pw.Write(data)
		pw.Close()
	}()
	_, resp, err := j.sb.ToolboxClient.FileSystemAPI.UploadFile(ctx).Path(remote).File(pr).Execute()
	pr.Close() // unblocks the writer if the client failed before reading
	if err != nil {
		return sdkerrors.ConvertToolboxError(err, resp)
	}
	return nil
}

// env is the candidate's environment on top of the sandbox's: HOME, the
// manifest's env and the protocol's FORGE_* variables.
func (j *jobRun) env() (map[string]string, error) {
	outputFile, err := relPath(j.job.EffectiveOutputFile())
	if err != nil {
		return nil, infra("output file %s: %v", j.job.EffectiveOutputFile(), err)
	}
	env := j.job.ProtocolEnv(j.lay.path(outputFile), j.lay.path(runner.ResultFile))
	env["HOME"] = j.lay.home
	for k, v := range env {
		if !envName(k) {
			return nil, infra("env name %q cannot be exported in the sandbox", k)
		}
		if strings.ContainsRune(v, 0) {
			return nil, infra("env %s holds a NUL byte", k)
		}
	}
	return env, nil
}

// relPath checks a path relative to the working directory.
func relPath(p string) (string, error) {
	c := path.Clean(strings.ReplaceAll(p, "\\", "/"))
	if p == "" || path.IsAbs(c) || c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", errors.New("must be a relative path inside the working directory")
	}
	if strings.ContainsAny(c, "\x00\n\r") {
		return "", errors.New("must not hold control characters")
	}
	return c, nil
}

// setup runs the setup lines with their own timeout. failed reports that
// they failed (the Result already says how).
func (j *jobRun) setup(ctx context.Context) (failed bool, err error) {
	timeout := j.setupTimeout()
	run, err := j.runInSession(ctx, "sh "+shQuote(j.lay.controlScript())+" setup", timeout)
	if err != nil {
		return false, err
	}
	exit := run.exit
	if !run.timedOut && exit != nil && *exit == 0 {
		return false, nil
	}
	// Show what setup printed.
	meta, files, cerr := j.collect(ctx, nil, "setup")
	if cerr == nil && meta.Setup > 0 {
		buf := &runner.CappedBuffer{Max: j.job.Limits.Output()}
		buf.Write(files["setup"])
		j.res.Stderr = buf.String()
		j.res.OutputTruncated = meta.Setup > j.job.Limits.Output()
	}
	switch {
	case run.timedOut:
		j.res.Failed(runner.ErrTimeout, "setup timed out after "+timeout.String())
	default:
		msg := runner.LastErrorLine(j.res.Stderr)
		if msg == "" {
			msg = "setup failed"
			if exit != nil {
				msg += fmt.Sprintf(" with exit status %d", *exit)
			}
		}
		j.res.Failed(runner.ErrCandidateFailed, "setup: "+msg)
	}
	return true, nil
}

// Polling schedules of runInSession.
const (
	// firstPoll starts the polling of a command whose log stream is not
	// open; polls then slow down by a quarter each, to PollInterval.
	firstPoll = 50 * time.Millisecond
	// settlePoll starts the polling for the exit code of a command that
	// said it is over; polls then double, to PollInterval.
	settlePoll = 10 * time.Millisecond
	// settleGrace is how long past its timeout a command that said it is
	// over (before its timeout) may take to show its exit code.
	settleGrace = 10 * time.Second
)

// sessionRun is how a session command ended.
type sessionRun struct {
	// exit is its exit code; nil when it timed out.
	exit     *int
	timedOut bool
	// report is what forge.sh printed after the command, when its log
	// stream delivered it whole.
	report []byte
}

// runInSession starts command asynchronously in the job's session and
// returns when it has ended, the timeout passed (then the session, and with
// it the command's process tree, is killed) or ctx ended.
//
// It learns that the command ended from the command's log stream: forge.sh
// prints its report and a done line with its exit status when it is over,
// which the stream delivers at once (the toolbox itself closes the stream
// only after a second of silence at the earliest). That status is the
// command's exit code: forge.sh exits with it. Only when the stream ends
// without it is the exit code read with GetSessionCommand (polled from
// 10 ms, as the toolbox records it a moment after the command ends). A
// slow safety poll (PollInterval) runs alongside,
// so a stream that dies silently costs at most that; a stream that cannot
// be opened or breaks turns into the fast polling forge used before it
// (from 50 ms, slowing down to PollInterval). No HTTP call lasts longer
// than a poll and the stream is not an HTTP call, so the SDK's 60 s HTTP
// timeout never matters.
func (j *jobRun) runInSession(ctx context.Context, command string, timeout time.Duration) (sessionRun, error) {
	var run sessionRun
	if err := j.ensureSession(ctx); err != nil {
		return run, err
	}
	var resp map[string]any
	// Only rate limits are retried: after any other failure the command may
	// have started, and a candidate must not run twice.
	err := j.r.opts.retry(ctx, "start command in "+j.name, j.r.opts.once(), func(ctx context.Context) error {
		var err error
		resp, err = j.sb.Process.ExecuteSessionCommand(ctx, sessionID, command, true, false)
		return err
	})
	if err != nil {
		return run, j.classified("start the command", ctx, err)
	}
	cmdID, _ := resp["id"].(string)
	if cmdID == "" {
		return run, infra("the toolbox gave no command id")
	}
	limit := time.Now().Add(timeout)
	var events chan streamEvent
	if j.r.streams.wanted() {
		events = make(chan streamEvent, 1)
		sctx, stop := context.WithCancel(ctx)
		defer stop()
		j.streams.Add(1)
		go func() {
			defer j.streams.Done()
			j.followLogs(sctx, cmdID, events)
		}()
	}
	interval, grow := firstPoll, func(d time.Duration) time.Duration { return d * 5 / 4 }
	failures := 0
	for {
		wait := interval
		if events != nil {
			wait = j.r.opts.PollInterval // the safety poll
		}
		t := time.NewTimer(max(0, min(wait, time.Until(limit))))
		select {
		case <-ctx.Done():
			t.Stop()
			return run, ctx.Err()
		case <-t.C:
		case ev := <-events:
			t.Stop()
			events = nil
			if ev.done && ev.exit != nil {
				// forge.sh said how it ends: the toolbox will record the same
				// exit code a moment later; waiting for it costs a round trip.
				run.exit, run.report = ev.exit, ev.report
				return run, nil
			}
			if ev.done {
				run.report = ev.report
				if grace := time.Now().Add(settleGrace); grace.After(limit) {
					limit = grace
				}
				interval, grow = settlePoll, func(d time.Duration) time.Duration { return 2 * d }
			}
		}
		if !time.Now().Before(limit) {
			j.killSession(ctx)
			run.report = nil
			run.timedOut = true
			return run, nil
		}
		st, err := j.sb.Process.GetSessionCommand(ctx, sessionID, cmdID)
		if err != nil {
			f := classify(ctx, err)
			if (f.class == classTransient || f.class == classRateLimited) && failures < j.r.opts.Retry.Tries {
				failures++
				interval = max(interval, f.retryAfter)
				continue
			}
			return run, j.classified("poll the command", ctx, err)
		}
		failures = 0
		if code, ok := st["exitCode"]; ok {
			n, ok := toInt(code)
			if !ok {
				return run, infra("the toolbox gave exit code %v", code)
			}
			run.exit = &n
			return run, nil
		}
		if events == nil {
			interval = min(grow(interval), j.r.opts.PollInterval)
		}
	}
}

// ensureSession creates the job's toolbox session unless it exists.
func (j *jobRun) ensureSession(ctx context.Context) error {
	if j.session {
		return nil
	}
	err := j.r.retry(ctx, "create session in "+j.name, func(ctx context.Context) error {
		err := j.sb.Process.CreateSession(ctx, sessionID)
		if statusOf(err) == 409 { // created by an attempt whose answer was lost
			return nil
		}
		return err
	})
	if err != nil {
		return j.classified("create a session", ctx, err)
	}
	j.session = true
	return nil
}

// killSession deletes the job's session: the toolbox kills its process
// tree. It runs on ctx's values without its cancellation (the job's own
// may be ending), with its own deadline.
func (j *jobRun) killSession(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := j.r.retry(ctx, "kill the session in "+j.name, func(ctx context.Context) error {
		return j.sb.Process.DeleteSession(ctx, sessionID)
	})
	if err != nil && statusOf(err) != 404 {
		fmt.Fprintf(j.r.opts.Warn, "daytona: could not kill the timed-out command in %s: %s (the sandbox is deleted next)\n", j.name, describe(err))
	}
	j.session = false
}

func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int32:
		return int(n), true
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), true
	}
	return 0, false
}

// collect learns what the job left, for the outputs named by keys: from
// the report forge.sh printed after the command when there is one, else by
// running "forge.sh collect" (which reports the same way). Outputs the
// report does not inline (too big, or no base64 in the sandbox) are
// downloaded, capped copies where over their caps; empty ones are not (the
// SDK cannot download an empty file).
func (j *jobRun) collect(ctx context.Context, rep []byte, keys ...string) (collected, map[string][]byte, error) {
	lim := j.job.Limits
	capOf := func(key string) int64 {
		switch key {
		case "stdout", "stderr", "setup":
			return lim.Output()
		case "artifact", "result":
			return lim.Artifact()
		}
		return 0
	}
	r, err := parseReport(rep, capOf)
	if err != nil {
		var out *types.ExecuteResponse
		cmd := "sh " + shQuote(j.lay.controlScript()) + " collect " + strings.Join(keys, " ")
		err := j.r.retry(ctx, "measure outputs in "+j.name, func(ctx context.Context) error {
			var err error
			out, err = j.sb.Process.ExecuteCommand(ctx, cmd, options.WithExecuteTimeout(collectTimeout))
			return err
		})
		if err != nil {
			return collected{}, nil, j.classified("measure the outputs", ctx, err)
		}
		if out.ExitCode == 0 {
			r, err = parseReport([]byte(out.Result), capOf)
		}
		if out.ExitCode != 0 || err != nil {
			return collected{}, nil, infra("measure the outputs: exit status %d: %s", out.ExitCode, runner.LastErrorLine(out.Result))
		}
	}
	files := map[string][]byte{}
	var fmu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, key := range keys {
		if data, ok := r.inline[key]; ok {
			files[key] = data
			continue
		}
		size := r.meta.size(key)
		if size <= 0 {
			continue // missing, not a regular file, or empty
		}
		remote := map[string]string{
			"stdout": j.lay.stdout(), "stderr": j.lay.stderr(), "setup": j.lay.setupLog(),
			"artifact": j.lay.path(j.outputFile()), "result": j.lay.path(runner.ResultFile),
		}[key]
		if size > capOf(key) {
			remote = j.lay.capped(key)
		}
		g.Go(func() error {
			var data []byte
			err := j.r.retry(gctx, "download "+remote, func(ctx context.Context) error {
				var err error
				data, err = j.download1(ctx, remote)
				return err
			})
			if err != nil {
				return j.classified("download "+remote, ctx, err)
			}
			fmu.Lock()
			files[key] = data
			fmu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return r.meta, nil, err
	}
	return r.meta, files, nil
}

// outputFile is the artifact's path relative to the working directory
// (checked by upload).
func (j *jobRun) outputFile() string {
	p, _ := relPath(j.job.EffectiveOutputFile())
	return p
}

// download1 downloads one file through the toolbox client directly: the
// SDK's DownloadFile leaves the generated client's temporary file
// (HttpClientFile*) behind and fails on an empty body.
func (j *jobRun) download1(ctx context.Context, remote string) ([]byte, error) {
	f, resp, err := j.sb.ToolboxClient.FileSystemAPI.DownloadFile(ctx).Path(remote).Execute()
	if f != nil {
		defer os.Remove(f.Name())
		defer f.Close()
	}
	if err != nil {
		return nil, sdkerrors.ConvertToolboxError(err, resp)
	}
	if f == nil {
		return nil, nil
	}
	return io.ReadAll(f)
}

// download collects the outputs, the artifact and the FORGE_RESULT file and
// settles the job.
func (j *jobRun) download(ctx context.Context, run sessionRun) error {
	meta, files, err := j.collect(ctx, run.report, "stdout", "stderr", "artifact", "result")
	if err != nil {
		return err
	}
	lim := j.job.Limits
	stdout := &runner.CappedBuffer{Max: lim.Output()}
	stdout.Write(files["stdout"])
	stderr := &runner.CappedBuffer{Max: lim.Output()}
	stderr.Write(files["stderr"])
	if j.job.Echo != nil {
		// Output comes back when the job ends, so --verbose shows it then.
		for _, s := range []string{"stdout", "stderr"} {
			w := &runner.EchoWriter{Stream: s, Echo: j.job.Echo, Max: lim.Output()}
			w.Write(files[s])
			w.Close()
		}
	}
	j.res.Output, j.res.Stderr = stdout.String(), stderr.String()
	j.res.OutputTruncated = meta.Stdout > lim.Output() || meta.Stderr > lim.Output() || stdout.Truncated() || stderr.Truncated()

	switch {
	case run.timedOut:
		j.res.RuntimeSeconds = j.job.EffectiveTimeout().Seconds()
	case meta.RuntimeNS >= 0:
		j.res.RuntimeSeconds = float64(meta.RuntimeNS) / 1e9
	default:
		// No clock in the sandbox: the client's view of the execution.
		j.res.RuntimeSeconds = j.res.Phases.Execute
	}
	o := runner.Outcome{ExitCode: run.exit, TimedOut: run.timedOut}
	switch meta.ArtifactKind {
	case "file":
		o.ArtifactFound = true
		art := files["artifact"]
		if int64(len(art)) > lim.Artifact() {
			art = art[:lim.Artifact()]
		}
		j.res.SetArtifact(art, max(meta.Artifact, int64(len(art))))
	case "symlink":
		o.ArtifactProblem = "the artifact " + j.job.EffectiveOutputFile() + " is a symlink; forge reads only regular files"
	case "unreadable":
		o.ArtifactProblem = "the artifact " + j.job.EffectiveOutputFile() + " is not readable"
	case "other":
		o.ArtifactProblem = "the artifact " + j.job.EffectiveOutputFile() + " is not a regular file"
	}
	switch meta.ResultKind {
	case "file":
		if meta.Result > lim.Artifact() {
			j.res.SubmitError = fmt.Sprintf("FORGE_RESULT is %d bytes, more than the %d allowed", meta.Result, lim.Artifact())
		} else if m, err := runner.ParseSubmitted(files["result"]); err != nil {
			j.res.SubmitError = err.Error()
		} else {
			j.res.Submitted = m
		}
	case "unreadable":
		j.res.SubmitError = "FORGE_RESULT is not readable"
	case "symlink", "other":
		j.res.SubmitError = "FORGE_RESULT is not a regular file"
	}
	j.res.Settle(j.job, o)
	return nil
}

// cleanup deletes the sandbox on a fresh context with its own deadline,
// whatever happened to the job; a creation whose outcome is unknown is
// reconciled by name.
func (j *jobRun) cleanup(ctx context.Context) {
	if !j.tried {
		return
	}
	j.job.Enter(runner.PhaseCleanup)
	t := time.Now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), j.r.opts.DeleteTimeout)
	defer cancel()
	if j.sb != nil {
		j.r.deleteSandbox(ctx, j.name, j.sb)
	} else {
		j.r.mu.Lock()
		pending := j.r.pending[j.name]
		j.r.mu.Unlock()
		if pending {
			j.r.reconcile(ctx, j.name)
		}
	}
	j.res.Phases.Add(runner.PhaseCleanup, time.Since(t))
}
