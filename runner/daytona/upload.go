package daytona

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	sdkerrors "github.com/daytonaio/daytona/libs/sdk-go/pkg/errors"
	"golang.org/x/sync/errgroup"

	"github.com/forge-run/forge/runner"
)

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
	home, err := retried(ctx, &j.r.opts, "ask "+j.name+" for its home directory", j.r.opts.calls(), j.sb.GetUserHomeDir)
	if err != nil {
		return j.classified("ask the sandbox for its home directory", ctx, err)
	}
	if !strings.HasPrefix(home, "/") {
		return fmt.Errorf("the sandbox reported home directory %q, not an absolute path", home)
	}
	j.lay = newLayout(home, j.job.CandidateID)

	type upload struct {
		data []byte
		dst  string
	}
	var uploads []upload
	var ensure []string
	for _, f := range j.job.Files {
		rel, err := runner.RelPath(f.Dst)
		if err != nil {
			return fmt.Errorf("copy %s: destination %v", f.Src, err)
		}
		data := f.Data
		if data == nil {
			if data, err = os.ReadFile(f.Src); err != nil {
				return fmt.Errorf("read %s: %v", f.Src, err)
			}
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
	outputFile, err := runner.RelPath(j.job.EffectiveOutputFile())
	if err != nil {
		return fmt.Errorf("output file %v", err)
	}
	env, err := j.env()
	if err != nil {
		return err
	}
	argv := j.job.Argv(j.lay.path(outputFile))
	for _, a := range argv {
		if strings.ContainsRune(a, 0) {
			return errors.New("an argument holds a NUL byte, which no process can receive")
		}
	}
	runEnsure := ensure
	if len(j.job.Setup) > 0 {
		uploads = append(uploads, upload{[]byte(j.lay.setupScriptText(j.job.Setup, env, ensure, j.job.SetupSecrets)), j.lay.setupScript()})
		runEnsure = nil
	}
	uploads = append(uploads, upload{[]byte(j.lay.controlScriptText(argv, env, runEnsure,
		jobOutputs(outputFile, j.job.Limits))), j.lay.controlScript()})
	if len(j.job.Secrets) > 0 && j.secretsAtSetup() {
		uploads = append(uploads, upload{[]byte(secretsText(j.job.Secrets)), j.lay.secrets()})
	}
	for _, u := range uploads {
		g.Go(func() error { return j.uploadRetried(ctx, u.data, u.dst) })
	}
	return nil
}

// secretsAtSetup reports whether the secrets file goes up with the setup
// script (the setup commands get the secrets), rather than just before the
// candidate.
func (j *jobRun) secretsAtSetup() bool { return j.job.SetupSecrets && len(j.job.Setup) > 0 }

// uploadSecrets uploads the secrets file, unless setup had it already.
func (j *jobRun) uploadSecrets(ctx context.Context) error {
	if len(j.job.Secrets) == 0 || j.secretsAtSetup() {
		return nil
	}
	return j.uploadRetried(ctx, []byte(secretsText(j.job.Secrets)), j.lay.secrets())
}

// uploadRetried uploads data to remote, retrying as every call does.
func (j *jobRun) uploadRetried(ctx context.Context, data []byte, remote string) error {
	err := j.r.opts.retry(ctx, "upload "+remote, j.r.opts.calls(), func(ctx context.Context) error {
		return j.uploadFile(ctx, data, remote)
	})
	if err != nil {
		return j.classified("upload "+remote, ctx, err)
	}
	return nil
}

// uploadFile uploads data to remote through the toolbox client directly: the
// SDK's UploadFile first copies the bytes into a temporary file on disk.
// The generated client wants an *os.File, which it reads to the end and
// closes; a pipe gives it one without touching the disk.
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

// env is the candidate's environment on top of the sandbox's: HOME, the
// manifest's env and the protocol's FORGE_* variables.
func (j *jobRun) env() (map[string]string, error) {
	env := j.job.ProtocolEnv(j.lay.path)
	env["HOME"] = j.lay.home
	for k, v := range j.job.Secrets { // checked here, exported from the secrets file
		if !runner.ValidEnvName(k) || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("secret %q cannot be exported in the sandbox", k)
		}
	}
	for k, v := range env {
		if !runner.ValidEnvName(k) {
			return nil, fmt.Errorf("env name %q cannot be exported in the sandbox", k)
		}
		if strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("env %s holds a NUL byte", k)
		}
	}
	return env, nil
}
