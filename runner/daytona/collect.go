package daytona

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	sdkerrors "github.com/daytonaio/daytona/libs/sdk-go/pkg/errors"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/options"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"
	"golang.org/x/sync/errgroup"

	"github.com/forge-run/forge/runner"
)

// collectTimeout bounds the command that measures a job's outputs.
const collectTimeout = 30 * time.Second

// collect learns what the job left, for the outputs named by keys: from
// the report forge.sh printed after the command when there is one, else by
// running "forge.sh collect" (which reports the same way). Outputs the
// report does not inline (too big, or no base64 in the sandbox) are
// downloaded, capped copies where over their caps; empty ones are not (the
// SDK cannot download an empty file).
func (j *jobRun) collect(ctx context.Context, rep []byte, keys ...string) (collected, map[string][]byte, error) {
	capOf := jobOutputs(j.outputFile(), j.job.Limits).capOf
	r, err := parseWrapperReport(rep, capOf)
	if err != nil {
		cmd := "sh " + shQuote(j.lay.controlScript()) + " collect " + strings.Join(keys, " ")
		out, err := retried(ctx, &j.r.opts, "measure outputs in "+j.name, j.r.opts.calls(), func(ctx context.Context) (*types.ExecuteResponse, error) {
			return j.sb.Process.ExecuteCommand(ctx, cmd, options.WithExecuteTimeout(collectTimeout))
		})
		if err != nil {
			return collected{}, nil, j.classified("measure the outputs", ctx, err)
		}
		if out.ExitCode == 0 {
			r, err = parseWrapperReport([]byte(out.Result), capOf)
		}
		if out.ExitCode != 0 || err != nil {
			return collected{}, nil, fmt.Errorf("measure the outputs: exit status %d: %s", out.ExitCode, runner.LastErrorLine(out.Result))
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
			"transcript": j.lay.path(runner.TranscriptFile),
		}[key]
		if size > capOf(key) {
			remote = j.lay.capped(key)
		}
		g.Go(func() error {
			data, err := retried(gctx, &j.r.opts, "download "+remote, j.r.opts.calls(), func(ctx context.Context) ([]byte, error) {
				return j.downloadFile(ctx, remote)
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
	p, _ := runner.RelPath(j.job.EffectiveOutputFile())
	return p
}

// downloadFile downloads one file through the toolbox client directly: the
// SDK's DownloadFile leaves the generated client's temporary file
// (HttpClientFile*) behind and fails on an empty body.
func (j *jobRun) downloadFile(ctx context.Context, remote string) ([]byte, error) {
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

// download collects the outputs, the artifact, the FORGE_RESULT file and
// the transcript, and settles the job.
func (j *jobRun) download(ctx context.Context, run sessionRun) error {
	meta, files, err := j.collect(ctx, run.report, "stdout", "stderr", "artifact", "result", "transcript")
	if err != nil {
		return err
	}
	lim := j.job.Limits
	stdout := &runner.CappedBuffer{Max: lim.OutputCap()}
	stdout.Write(files["stdout"])
	stderr := &runner.CappedBuffer{Max: lim.OutputCap()}
	stderr.Write(files["stderr"])
	if j.job.Echo != nil {
		// Output comes back when the job ends, so --verbose shows it then.
		for _, s := range []string{"stdout", "stderr"} {
			w := &runner.EchoWriter{Stream: s, Echo: j.job.Echo, Max: lim.OutputCap()}
			w.Write(files[s])
			w.Close()
		}
	}
	j.res.Output, j.res.Stderr = stdout.String(), stderr.String()
	j.res.OutputTruncated = meta.Stdout > lim.OutputCap() || meta.Stderr > lim.OutputCap() || stdout.Truncated() || stderr.Truncated()

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
		if int64(len(art)) > lim.ArtifactCap() {
			art = art[:lim.ArtifactCap()]
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
		if meta.Result > lim.ArtifactCap() {
			j.res.SubmitError = fmt.Sprintf("FORGE_RESULT is %d bytes, more than the %d allowed", meta.Result, lim.ArtifactCap())
		} else {
			j.res.Submit(files["result"])
		}
	case "unreadable":
		j.res.SubmitError = "FORGE_RESULT is not readable"
	case "symlink", "other":
		j.res.SubmitError = "FORGE_RESULT is not a regular file"
	}
	switch meta.TranscriptKind {
	case "file":
		tr := files["transcript"]
		if int64(len(tr)) > lim.TranscriptCap() {
			tr = tr[:lim.TranscriptCap()]
		}
		j.res.SetTranscript(tr, meta.Transcript)
	case "unreadable":
		j.res.RefuseTranscript("is not readable")
	case "symlink":
		j.res.RefuseTranscript("is a symlink")
	case "other":
		j.res.RefuseTranscript("is not a regular file")
	}
	j.res.Settle(j.job, o)
	return nil
}
