package daytona

// Environments on Daytona: each is a snapshot, runner.SnapshotName of its
// hash, built once through the SDK from the Dockerfile its image builder
// writes, and reused by every job in it until "forge gc" deletes it.

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	apiclient "github.com/daytonaio/daytona/libs/api-client-go"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/runner"
)

var _ runner.Builder = (*Runner)(nil)

// EnvDir is an environment's directory in the sandboxes of its snapshot:
// the image's WORKDIR, runner.EnvDirVar, and with its bin/ first on PATH.
const EnvDir = "/opt/forge/env"

// A BuildError carries the log's last envTailLines lines; a line longer
// than maxLogLine bytes (a RUN line holding a file's base64) is cut.
const (
	envTailLines = 20
	maxLogLine   = 512
)

var errEnvTimeout = errors.New("environment build timed out")

// BuildEnvironment makes env's snapshot ready for this Runner's jobs:
// found active, it is reused; being built by another forge, waited for;
// failed, deleted and built again, once; missing, created from the image
// with the Runner's resources (a snapshot's sandboxes get its resources).
//
// log gets the lines the SDK streams (for 60 s at most: its HTTP timeout).
// A failed build or a refused create is a *runner.BuildError with the
// log's last lines (fetched whole when none was streamed). A snapshot this
// call created that did not become active is deleted. Calls for one hash
// build it once; later ones find what the first did.
func (r *Runner) BuildEnvironment(ctx context.Context, env *runner.Environment, log func(line string)) (runner.EnvironmentBuild, error) {
	if env == nil {
		return runner.EnvironmentBuild{}, errors.New("daytona: no environment to build")
	}
	// Seconds is left to the caller, which times the call.
	out := runner.EnvironmentBuild{Hash: env.Hash, Where: runner.SnapshotName(env.Hash)}
	if !validHash(env.Hash) {
		return out, fmt.Errorf("daytona: environment %s: its hash %q is not lowercase hex of at least 16 digits", env.Name, env.Hash)
	}
	if log == nil {
		log = func(string) {}
	}
	done, err := r.turns.Take(ctx, env.Hash, nil)
	if err != nil {
		return out, err
	}
	defer done()
	r.mu.Lock()
	failed, made := r.envs[env.Hash]
	closed := r.closed
	r.mu.Unlock()
	switch {
	case failed != nil:
		return out, failed
	case made:
		out.Reused = true
		return out, nil
	case closed:
		return out, errors.New("daytona: the runner is closed")
	}
	if err := r.unusable(); err != nil {
		return out, err
	}
	// A run that cannot go on stops its builds too.
	bctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(r.dead, func() { cancel(context.Cause(r.dead)) })
	defer stop()

	reused, err := r.makeEnvironment(bctx, env, log)
	switch uerr := r.unusable(); {
	case err != nil && uerr != nil:
		return out, uerr
	case err != nil && ctx.Err() != nil:
		return out, ctx.Err()
	}
	if _, ok := errors.AsType[*runner.BuildError](err); ok || err == nil {
		r.mu.Lock()
		r.envs[env.Hash] = err
		r.mu.Unlock()
	}
	out.Reused = reused
	return out, err
}

// validHash is an environment hash that can name a snapshot: lowercase hex,
// at least 16 digits.
var validHash = regexp.MustCompile(`^[0-9a-f]{16,}$`).MatchString

// makeEnvironment makes the snapshot ready within the environment's
// timeout, and says whether it was there already.
func (r *Runner) makeEnvironment(ctx context.Context, env *runner.Environment, log func(string)) (bool, error) {
	timeout := cmp.Or(env.BuildTimeout, runner.DefaultBuildTimeout)
	b := &envBuild{r: r, env: env, name: runner.SnapshotName(env.Hash), out: log}
	bctx, cancel := context.WithTimeoutCause(ctx, timeout, errEnvTimeout)
	defer cancel()
	reused, err := b.run(bctx)
	if err == nil {
		return reused, nil
	}
	if b.mine != nil {
		b.discard(ctx)
	}
	if ctx.Err() == nil && errors.Is(context.Cause(bctx), errEnvTimeout) {
		what := "built"
		if b.mine == nil && b.waited {
			what = "built by another forge"
		}
		return false, b.failure(fmt.Errorf("snapshot %s was not %s within %s (the environment's timeout)", b.name, what, timeout))
	}
	return false, err
}

// envBuild is one attempt at making an environment's snapshot ready.
type envBuild struct {
	r      *Runner
	env    *runner.Environment
	name   string
	out    func(string)
	tail   []string
	output bool // the build's own output came through the log, not only the SDK's lines
	// mine is the snapshot this build created, once known; ambiguous: a
	// create's outcome is unknown (a snapshot found then is taken for it).
	mine      *types.Snapshot
	ambiguous bool
	waited    bool // it waited for a build it did not start
}

// Snapshot states that end a build: active, removing and the failed ones
// (inactive: long unused). Any other is a snapshot still being made.
const (
	snapActive   = "active"
	snapRemoving = "removing"
)

func snapFailed(st string) bool   { return st == "error" || st == "build_failed" || st == "inactive" }
func snapBuilding(st string) bool { return st != snapActive && st != snapRemoving && !snapFailed(st) }

// maxNameConflicts bounds how often a create may find the name taken and
// the snapshot then not found.
const maxNameConflicts = 5

func (b *envBuild) run(ctx context.Context) (reused bool, err error) {
	rebuilt, conflicts := false, 0
	for {
		sn, err := b.get(ctx, b.name)
		if err != nil {
			return false, err
		}
		if sn == nil {
			created, logs, err := b.create(ctx)
			if err != nil {
				return false, err
			}
			if created == nil {
				// The name was taken meanwhile: by another forge, or by an
				// attempt of this one whose answer was lost.
				if conflicts++; conflicts > maxNameConflicts {
					return false, fmt.Errorf("daytona: snapshot %s: its name is taken, but the snapshot cannot be found", b.name)
				}
				continue
			}
			b.mine = created
			for line := range logs {
				b.line(line)
			}
			if sn, err = b.await(ctx, created, false); err != nil {
				return false, err
			}
			if sn == nil {
				b.mine = nil
				b.say("snapshot %s was deleted during its build; building it again", b.name)
				continue
			}
			return b.outcome(ctx, sn, false)
		}
		if b.ambiguous && b.mine == nil && (snapBuilding(sn.State) || sn.State == snapActive) {
			// A create whose answer was lost made it: built, not reused,
			// however fast it became active.
			b.mine = sn
		}
		switch st := sn.State; {
		case st == snapActive:
			return b.mine == nil, nil
		case st == snapRemoving:
			b.say("snapshot %s is being removed; waiting for it to go", b.name)
			if _, err := b.await(ctx, sn, true); err != nil {
				return false, err
			}
		case snapBuilding(st):
			if b.mine == nil {
				b.waited = true
				b.say("snapshot %s is %s, by another forge; waiting for it", b.name, st)
			}
			if sn, err = b.await(ctx, sn, false); err != nil {
				return false, err
			}
			if sn != nil {
				return b.outcome(ctx, sn, b.mine == nil)
			}
		default: // failed
			if rebuilt {
				return false, b.failed(ctx, sn)
			}
			rebuilt = true
			b.say("snapshot %s is %s (%s); deleting it to build it again", b.name, st, reasonOf(sn))
			if err := b.delete(ctx, sn); err != nil {
				return false, err
			}
			if _, err := b.await(ctx, sn, true); err != nil {
				return false, err
			}
		}
	}
}

// outcome is what a build that ended in sn means: ready (reused: others
// built it), or failed.
func (b *envBuild) outcome(ctx context.Context, sn *types.Snapshot, others bool) (bool, error) {
	switch {
	case sn.State == snapActive:
		return others, nil
	case sn.State == snapRemoving:
		return false, b.failure(fmt.Errorf("snapshot %s was deleted during its build", b.name))
	}
	return false, b.failed(ctx, sn)
}

// get finds a snapshot by name or ID; nil when there is none.
func (b *envBuild) get(ctx context.Context, key string) (*types.Snapshot, error) {
	r := b.r
	sn, err := retried(ctx, &r.opts, "get snapshot "+b.name, r.opts.calls(), func(ctx context.Context) (*types.Snapshot, error) {
		return orNone(r.client.Snapshot.Get(ctx, key))
	})
	if err != nil {
		return nil, r.callError(ctx, "daytona: get snapshot "+b.name, err)
	}
	return sn, nil
}

// await polls sn, 100 ms to PollInterval apart, until it is no longer
// being made, or with gone until it no longer exists; nil when it is gone.
func (b *envBuild) await(ctx context.Context, sn *types.Snapshot, gone bool) (*types.Snapshot, error) {
	for interval := 100 * time.Millisecond; ; interval = min(2*interval, b.r.opts.PollInterval) {
		now, err := b.get(ctx, sn.ID)
		if err != nil || now == nil || !gone && !snapBuilding(now.State) {
			return now, err
		}
		if err := sleep(ctx, interval); err != nil {
			return nil, err
		}
	}
}

// create asks for the snapshot; nil and no error when the name is taken.
func (b *envBuild) create(ctx context.Context) (*types.Snapshot, <-chan string, error) {
	r := b.r
	img, err := b.image()
	if err != nil {
		return nil, nil, err
	}
	params := &types.CreateSnapshotParams{Name: b.name, Image: img}
	if cpu, mem, disk := r.resourcesOf(b.env); cpu > 0 || mem > 0 || disk > 0 {
		params.Resources = &types.Resources{CPU: cpu, Memory: mem, Disk: disk}
	}
	var logs <-chan string
	sn, err := retried(ctx, &r.opts, "create snapshot "+b.name, r.opts.calls(), func(ctx context.Context) (sn *types.Snapshot, err error) {
		sn, logs, err = r.client.Snapshot.Create(ctx, params)
		if err == nil {
			return sn, nil
		}
		if c := classify(ctx, err).class; (c == classTransient || c == classCancelled) && !neverSent(err) {
			b.ambiguous = true
		}
		return nil, err // a 409 is not retried: the name is taken
	})
	if err == nil {
		return sn, logs, nil
	}
	switch st := statusOf(err); {
	case st == 409:
		return nil, nil, nil
	case st == 400 || st == 403 || st == 404 || st == 422:
		// The SDK's snapshot service keeps only the status, not the message.
		return nil, nil, b.failure(fmt.Errorf("Daytona refused to create snapshot %s: %s; the SDK does not pass on the API's reason: "+
			"the organization's snapshot quota may be reached (\"forge gc --older-than D\" deletes forge's unused snapshots), "+
			"the resources (daytona.resources) may exceed what one sandbox may have, or the API key may not be allowed to write snapshots",
			b.name, describe(err)))
	}
	return nil, nil, r.callError(ctx, "daytona: create snapshot "+b.name, err)
}

// delete deletes sn (a snapshot is gone once it was "removing").
func (b *envBuild) delete(ctx context.Context, sn *types.Snapshot) error {
	r := b.r
	err := r.opts.retry(ctx, "delete snapshot "+sn.Name, r.opts.deletions(), func(ctx context.Context) error {
		return gone(r.client.Snapshot.Delete(ctx, sn))
	})
	if err != nil {
		return r.callError(ctx, "daytona: delete snapshot "+b.name, err)
	}
	return nil
}

// discard deletes the snapshot this build created and that did not become
// active, on a context of its own.
func (b *envBuild) discard(ctx context.Context) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.r.opts.DeleteTimeout)
	defer cancel()
	if sn, err := b.get(dctx, b.mine.ID); err == nil && sn != nil && sn.State == snapActive {
		return // it made it after all
	}
	if err := b.delete(dctx, b.mine); err != nil {
		fmt.Fprintf(b.r.opts.Warn, "daytona: could not delete the unfinished snapshot %s (%s): %v; \"forge gc\" deletes it\n", b.name, b.mine.ID, err)
	}
}

// failed is the BuildError of a snapshot that ended in a failed state.
func (b *envBuild) failed(ctx context.Context, sn *types.Snapshot) error {
	if !b.output {
		b.fetchLog(ctx, sn.ID)
	}
	return b.failure(fmt.Errorf("snapshot %s ended %s: %s", b.name, sn.State, reasonOf(sn)))
}

// failure is a BuildError with the log's last lines.
func (b *envBuild) failure(err error) error {
	return &runner.BuildError{Name: b.env.Name, Hash: b.env.Hash, Tail: slices.Clone(b.tail), Err: err}
}

func reasonOf(sn *types.Snapshot) string {
	return cmp.Or(ptrOr(sn.ErrorReason, ""), "no reason given")
}

// fetchLog reads the whole log of an ended build, best effort: the SDK
// follows it only once it sees the snapshot building, which a build that
// fails before its first poll never is.
func (b *envBuild) fetchLog(ctx context.Context, id string) {
	o := b.r.opts
	actx := context.WithValue(ctx, apiclient.ContextAccessToken, o.APIKey)
	resp, err := newAPIClient(o).SnapshotsAPI.GetSnapshotBuildLogs(actx, id).Execute()
	if err != nil || resp == nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		b.line(sc.Text())
	}
}

// line passes a line of the build's log on, and keeps the last ones.
func (b *envBuild) line(l string) {
	if kept, cut := text.Cap(l, maxLogLine); cut > 0 {
		l = kept + "…"
	}
	// Lines the SDK (streamSnapshotBuildLogs) and forge write are not the build's.
	if !slices.ContainsFunc([]string{"Creating snapshot ", "Created snapshot ", "Error: ", "daytona: "},
		func(p string) bool { return strings.HasPrefix(l, p) }) {
		b.output = true
	}
	if len(b.tail) == envTailLines {
		b.tail = append(b.tail[:0], b.tail[1:]...)
	}
	b.tail = append(b.tail, l)
	b.out(l)
}

func (b *envBuild) say(format string, args ...any) {
	b.line("daytona: " + fmt.Sprintf(format, args...))
}

// resourcesOf is what the sandboxes of env get: the environment's own ask
// (a Harbor task's), else daytona.resources; 0 for Daytona's default.
func (r *Runner) resourcesOf(env *runner.Environment) (cpu, memGB, diskGB int) {
	if env != nil && (env.CPU > 0 || env.MemoryGB > 0 || env.DiskGB > 0) {
		return env.CPU, env.MemoryGB, env.DiskGB
	}
	return r.opts.CPU, r.opts.MemoryGB, r.opts.DiskGB
}
