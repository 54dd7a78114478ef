package daytona

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	sdkerrors "github.com/daytonaio/daytona/libs/sdk-go/pkg/errors"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"
	"golang.org/x/sync/errgroup"

	"github.com/forge-run/forge/runner"
)

// jobRun is one job on its way through its sandbox.
type jobRun struct {
	r    *Runner
	job  runner.Job
	res  *runner.Result
	name string

	sb      *daytona.Sandbox
	lay     layout
	out     outputs
	script  string // forge.sh (scriptText)
	session bool
	streams sync.WaitGroup // the goroutines following log streams
	ran     sessionRun     // how the candidate's command ended
	// tools are the verifier's tools as the candidate started, procs
	// the processes then running (procsLine).
	tools   runner.ToolPrints
	procs   []string
	deleted bool // cleanup deleted the sandbox, or found none
}

// run runs the job through jobPipeline, stopped with the run (dead).
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
	err := jobPipeline.Run(ctx, j, &j.job, j.res)
	// A deletion ends every log stream still open; a sandbox that could not
	// be deleted may hold its stream until forge exits.
	if j.deleted {
		j.streams.Wait()
	}
	return err
}

// jobPipeline is a job's way through its sandbox.
var jobPipeline = runner.Pipeline[*jobRun]{
	Steps: []runner.PipelineStep[*jobRun]{
		{Phase: runner.PhaseCreate, Do: (*jobRun).create},
		{Phase: runner.PhaseUpload, Do: (*jobRun).upload},
		{Phase: runner.PhaseSetup, Do: (*jobRun).setup},
		{Phase: runner.PhaseExecute, Do: (*jobRun).execute},
		{Phase: runner.PhaseDownload, Do: (*jobRun).settle},
		{Phase: runner.PhaseVerify, Do: (*jobRun).verify},
	},
	Cleanup: (*jobRun).cleanup,
	// The run is stopped: unusable says why before dead is cancelled.
	Stopped: func(j *jobRun) error { return j.r.unusable() },
}

// execute runs the candidate in the job's session; the secrets go up just
// before, unless setup had them.
func (j *jobRun) execute(ctx context.Context) error {
	if len(j.job.Secrets) > 0 && !j.secretsAtSetup() {
		if err := j.uploadRetried(ctx, []byte(exports(j.job.Secrets)), j.lay.secrets()); err != nil {
			return err
		}
	}
	var err error
	j.ran, err = j.runInSession(ctx, "run", j.job.EffectiveTimeout())
	return err
}

func (j *jobRun) create(ctx context.Context) error {
	o := j.r.opts
	labels := maps.Collect(maps.All(o.Labels)) // forge's own win
	labels[LabelApp] = LabelAppValue
	labels[LabelRun] = o.RunID
	labels[LabelCandidate] = j.job.CandidateID
	labels[LabelTrial] = strconv.Itoa(j.job.Trial)
	if j.job.TaskID != "" {
		labels[LabelTask] = j.job.TaskID
	}
	autoStop := o.AutoStopMinutes
	if autoStop == 0 {
		setup := time.Duration(0)
		if len(j.job.Setup) > 0 {
			setup = j.setupTimeout()
		}
		autoStop = int(math.Ceil((setup + j.job.EffectiveTimeout() + AutoStopMargin).Minutes()))
	}
	base := types.SandboxBaseParams{
		Name: j.name, Labels: labels, EnvVars: maps.Collect(maps.All(o.Env)), NetworkBlockAll: o.NetworkBlockAll,
		AutoStopInterval: &autoStop, AutoDeleteInterval: new(0),
	}
	if e := j.job.Environment; j.job.NoNetwork || e != nil && e.NoInternet {
		base.NetworkBlockAll = true
	} else if len(o.NetworkAllowList) > 0 {
		list := strings.Join(o.NetworkAllowList, ",")
		base.NetworkAllowList = &list
	}
	if j.r.volumeID != "" {
		base.Volumes = []types.VolumeMount{{VolumeID: j.r.volumeID, MountPath: j.r.mountPath}}
	}
	// Params go by value: the SDK silently ignores a pointer. An
	// environment's snapshot wins over the runner's snapshot or image.
	var params any = types.SnapshotParams{SandboxBaseParams: base, Snapshot: o.Snapshot}
	if e := j.job.Environment; e != nil {
		j.r.mu.Lock()
		failed, made := j.r.envs[e.Hash]
		j.r.mu.Unlock()
		if !made || failed != nil {
			return fmt.Errorf("environment %s (%s) was not made ready by this Daytona runner (BuildEnvironment), so its job has no snapshot to start from",
				e.Name, runner.ShortHash(e.Hash))
		}
		params = types.SnapshotParams{SandboxBaseParams: base, Snapshot: runner.SnapshotName(e.Hash)}
	} else if o.Image != "" {
		p := types.ImageParams{SandboxBaseParams: base, Image: o.Image}
		if o.CPU > 0 || o.MemoryGB > 0 || o.DiskGB > 0 {
			p.Resources = &types.Resources{CPU: o.CPU, Memory: o.MemoryGB, Disk: o.DiskGB}
		}
		params = p
	}
	sb, err := j.r.createSandbox(ctx, j.name, params)
	if sb != nil {
		j.sb = sb
		j.res.SandboxID = sb.ID
		// daytona.resources, else Daytona's defaults (the default
		// snapshot's may differ; the SDK does not say).
		cpu, mem, disk := j.r.resourcesOf(j.job.Environment)
		j.res.Resources = &runner.Resources{CPU: float64(cmp.Or(cpu, 1)), MemoryGiB: float64(cmp.Or(mem, 1)), DiskGiB: float64(cmp.Or(disk, 3))}
		j.r.capacity.created(j.name, sb)
		if lerr := j.r.ledger.append(LedgerEntry{Event: eventCreated, RunID: o.RunID, Name: j.name, ID: sb.ID}); lerr != nil && err == nil {
			err = lerr
		}
	}
	if err != nil && sb == nil && statusOf(err) == 0 && classify(ctx, err).class == classTransient {
		// No answer from the API at all, retries spent: unreachable.
		return &runner.StepError{Err: errors.New("create sandbox " + j.name + ": " + describe(err)), Stop: &runner.UnusableError{Kind: runner.ErrInfra,
			Err: fmt.Errorf("cannot reach the Daytona API at %s: %w", o.APIURL, described(err))}}
	}
	if err != nil {
		return j.r.callError(ctx, "create sandbox "+j.name, err)
	}
	return nil
}

func (j *jobRun) setupTimeout() time.Duration {
	if j.job.SetupTimeout > 0 {
		return j.job.SetupTimeout
	}
	return j.r.opts.SetupTimeout
}

// cleanup deletes the sandbox on a fresh context with its own deadline,
// whatever happened; a creation whose outcome is unknown is found by name.
// After an error (the deletion's, or the ledger's) the sandbox may still
// exist: the Runner reports it (Undeleted), not the job.
func (j *jobRun) cleanup(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), j.r.opts.DeleteTimeout)
	defer cancel()
	var err error
	if j.sb != nil {
		err = j.r.deleteSandbox(ctx, j.name, j.sb)
	} else if j.r.capacity.mayExist(j.name) {
		err = j.r.reconcile(ctx, j.name)
	}
	j.deleted = err == nil
	return nil
}

// upload copies the candidate's files into the sandbox and makes forge.sh,
// which writes the others; the session is made meanwhile.
func (j *jobRun) upload(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	g.Go(func() error { return j.ensureSession(gctx) })
	err := j.uploadFiles(gctx, g)
	if werr := g.Wait(); werr != nil {
		return werr // the first failure, which may have cancelled the rest
	}
	return err
}

// uploadFiles learns the sandbox's layout, makes forge.sh and starts the
// uploads in g.
func (j *jobRun) uploadFiles(ctx context.Context, g *errgroup.Group) error {
	if err := j.locate(ctx); err != nil {
		return err
	}
	uploads, ensure, err := j.stage()
	if err != nil {
		return err
	}
	if err := j.makeScript(ensure); err != nil {
		return err
	}
	if len(j.job.Secrets) > 0 && j.secretsAtSetup() {
		uploads = append(uploads, upload{[]byte(exports(j.job.Secrets)), j.lay.secrets()})
	}
	for _, u := range uploads {
		g.Go(func() error { return j.uploadRetried(ctx, u.data, u.dst) })
	}
	return nil
}

// locate asks the sandbox for its home (and working) directory: the job's
// layout.
func (j *jobRun) locate(ctx context.Context) error {
	home, err := j.askDir(ctx, "home directory", j.sb.GetUserHomeDir)
	if err != nil {
		return err
	}
	j.lay = newLayout(home, j.job.CandidateID)
	if v := j.job.Verify; v != nil && v.AtRoot {
		j.lay.tests, j.lay.logs = runner.TestsDir, runner.VerifierLogsDir
	}
	if j.job.InImageWorkdir {
		if j.lay.start, err = j.askDir(ctx, "working directory", j.sb.GetWorkingDir); err != nil {
			return err
		}
	}
	return nil
}

// askDir asks the sandbox for one of its directories (what), which must
// be absolute.
func (j *jobRun) askDir(ctx context.Context, what string, get func(context.Context) (string, error)) (string, error) {
	dir, err := retried(ctx, &j.r.opts, "ask "+j.name+" for its "+what, j.r.opts.calls(), get)
	if err != nil {
		return "", j.r.callError(ctx, "ask the sandbox for its "+what, err)
	}
	if !strings.HasPrefix(dir, "/") {
		return "", fmt.Errorf("the sandbox reported %s %q, not an absolute path", what, dir)
	}
	return dir, nil
}

// upload is a file to upload.
type upload struct {
	data []byte
	dst  string
}

// stage sorts the job's files into those uploaded and those forge.sh
// writes (ensure), with the volume's link.
func (j *jobRun) stage() (uploads []upload, ensure []string, err error) {
	for _, f := range j.job.Files {
		dst, data, err := fileData(f, j.lay.work, "copy")
		if err != nil {
			return nil, nil, err
		}
		// forge.sh writes the files the SDK cannot upload (empty ones) and
		// forge's own (the task), as it exports the protocol's variables.
		if len(data) == 0 || f.Data != nil && !bytes.ContainsRune(data, 0) {
			ensure = append(ensure, fmt.Sprintf("mkdir -p %s && printf %%s %s > %s", shQuote(path.Dir(dst)), shQuote(string(data)), shQuote(dst)))
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
	return uploads, ensure, nil
}

// fileData is where f goes in dir and its content; what names the file in
// an error.
func fileData(f runner.File, dir, what string) (dst string, data []byte, err error) {
	rel, err := runner.RelPath(f.Dst)
	if err != nil {
		return "", nil, fmt.Errorf("%s %s: destination %w", what, f.Src, err)
	}
	data = f.Data
	if data == nil {
		if data, err = os.ReadFile(f.Src); err != nil {
			return "", nil, fmt.Errorf("read %s: %w", f.Src, err)
		}
	}
	return dir + "/" + rel, data, nil
}

// makeScript makes forge.sh (scriptText): the candidate's command line and
// environment, its outputs and the verifier's part.
func (j *jobRun) makeScript(ensure []string) error {
	outputFile, err := runner.RelPath(j.job.EffectiveOutputFile())
	if err != nil {
		return fmt.Errorf("output file %w", err)
	}
	env, err := j.env()
	if err != nil {
		return err
	}
	argv := j.job.Argv(j.lay.path(outputFile))
	if j.lay.start != j.lay.work {
		argv = j.job.FilesAt(argv, j.lay.path)
	}
	if slices.ContainsFunc(argv, func(a string) bool { return strings.ContainsRune(a, 0) }) {
		return errors.New("an argument holds a NUL byte, which no process can receive")
	}
	lim := j.job.Limits
	j.out = outputs{artifact: outputFile, result: runner.ResultFile, transcript: runner.TranscriptFile,
		outCap: lim.OutputCap(), artCap: lim.ArtifactCap(), trCap: lim.TranscriptCap()}
	verify, err := j.verifyScript()
	if err != nil {
		return err
	}
	tools := ""
	if v := j.job.Verify; v != nil {
		tools = toolsText(v)
	}
	j.script = j.lay.scriptText(argv, env, ensure, j.job.Setup, j.secretsAtSetup(), verify, tools, j.out)
	return nil
}

// secretsAtSetup: the secrets go up for the setup commands, not just
// before the candidate.
func (j *jobRun) secretsAtSetup() bool { return j.job.SetupSecrets && len(j.job.Setup) > 0 }

func (j *jobRun) uploadRetried(ctx context.Context, data []byte, remote string) error {
	err := j.r.opts.retry(ctx, "upload "+remote, j.r.opts.calls(), func(ctx context.Context) error {
		return j.uploadFile(ctx, data, remote)
	})
	switch {
	case err == nil:
		return nil
	case refusedWrite(err):
		return &runner.StepError{Lasting: true, Err: fmt.Errorf("the image's user may not write %s: %w; the sandbox runs as that user, "+
			"and a fresh sandbox of the image would refuse it too", remote, described(err))}
	}
	return j.r.callError(ctx, "upload "+remote, err)
}

// uploadFile uploads data through the generated client with a pipe as its
// *os.File: the SDK's UploadFile writes a temporary file first.
func (j *jobRun) uploadFile(ctx context.Context, data []byte, remote string) error {
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

// env is the candidate's environment over the sandbox's: HOME, the
// manifest's env and the protocol's FORGE_* variables.
func (j *jobRun) env() (map[string]string, error) {
	env := j.job.ProtocolEnv(j.lay.path)
	env["HOME"] = j.lay.home
	for k, v := range j.job.Secrets { // exported from the secrets file
		if !runner.ValidEnvName(k) || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("secret %q cannot be exported in the sandbox", k)
		}
	}
	return env, exportable("env", env)
}

// exportable says why env cannot be exported in the sandbox, if it cannot;
// what names it in the error.
func exportable(what string, env map[string]string) error {
	for k, v := range env {
		if !runner.ValidEnvName(k) {
			return fmt.Errorf("%s name %q cannot be exported in the sandbox", what, k)
		}
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("%s %s holds a NUL byte", what, k)
		}
	}
	return nil
}

// settle reads the outputs, the artifact, the FORGE_RESULT file and the
// transcript from forge.sh's report, and settles the job.
func (j *jobRun) settle(ctx context.Context) error {
	run := j.ran
	if j.job.Verify != nil {
		text := run.report
		if text == nil { // timed out: what it printed before
			text = run.early
		}
		j.tools, j.procs = parseTools(text), parseProcs(text)
	}
	rep, err := j.report(ctx, run, strings.Fields(outputKeys)...)
	if err != nil {
		return err
	}
	files := rep.files // each capped (outputs.capOf)
	lim := j.job.Limits
	if j.job.Echo != nil { // output comes back at the end: --verbose shows it then
		for _, s := range []string{"stdout", "stderr"} {
			w := &runner.EchoWriter{Stream: s, Echo: j.job.Echo, Max: lim.OutputCap()}
			w.Write(files[s])
			w.Close()
		}
	}
	j.res.Output, j.res.Stderr = string(files["stdout"]), string(files["stderr"])
	j.res.OutputTruncated = rep.size("stdout") > lim.OutputCap() || rep.size("stderr") > lim.OutputCap()

	switch {
	case run.timedOut:
		j.res.RuntimeSeconds = j.job.EffectiveTimeout().Seconds()
	case rep.runtimeNS >= 0:
		j.res.RuntimeSeconds = float64(rep.runtimeNS) / 1e9
	default:
		// No clock in the sandbox: the client's view of the execution.
		j.res.RuntimeSeconds = j.res.Phases.Execute
	}
	// What an output is when it is no readable regular file.
	problem := map[string]string{"symlink": "is a symlink", "unreadable": "is not readable", "other": "is not a regular file"}
	o := runner.Outcome{ExitCode: run.exit, TimedOut: run.timedOut}
	switch k := rep.kinds["artifact"]; k {
	case "file":
		o.ArtifactFound = true
		j.res.SetArtifact(files["artifact"], max(rep.sizes["artifact"], int64(len(files["artifact"]))))
	case "symlink":
		o.ArtifactProblem = "the artifact " + j.job.EffectiveOutputFile() + " is a symlink; forge reads only regular files"
	case "unreadable", "other":
		o.ArtifactProblem = "the artifact " + j.job.EffectiveOutputFile() + " " + problem[k]
	}
	switch rep.kinds["result"] {
	case "file":
		if rep.sizes["result"] > lim.ArtifactCap() {
			j.res.SubmitError = fmt.Sprintf("FORGE_RESULT is %d bytes, more than the %d allowed", rep.sizes["result"], lim.ArtifactCap())
		} else {
			j.res.Submit(files["result"])
		}
	case "unreadable":
		j.res.SubmitError = "FORGE_RESULT is not readable"
	case "symlink", "other":
		j.res.SubmitError = "FORGE_RESULT is not a regular file"
	}
	switch k := rep.kinds["transcript"]; k {
	case "file":
		j.res.SetTranscript(files["transcript"], rep.sizes["transcript"])
	case "symlink", "unreadable", "other":
		j.res.RefuseTranscript(problem[k])
	}
	j.res.Settle(j.job, o)
	return nil
}
