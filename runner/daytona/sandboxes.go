package daytona

// The life of a run's sandboxes: creating them (paced, gated by capacity,
// found by name after an ambiguous attempt), deleting them, and the sweep.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/options"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"

	"github.com/forge-run/forge/runner"
)

// adopt sends sb's toolbox calls through Options.ToolboxHTTPClient.
func (r *Runner) adopt(sb *daytona.Sandbox) *daytona.Sandbox {
	if sb != nil {
		sb.ToolboxClient.GetConfig().HTTPClient = r.opts.ToolboxHTTPClient
	}
	return sb
}

func (r *Runner) deleted(name, id string) error {
	r.mu.Lock()
	delete(r.undeleted, name)
	r.mu.Unlock()
	r.capacity.release(name)
	return r.ledger.append(LedgerEntry{Event: eventDeleted, RunID: r.opts.RunID, Name: name, ID: id})
}

// createSandbox creates the sandbox called name through the capacity gate,
// the pacer and the retry policy, finding ambiguous outcomes by name. A
// sandbox that exists is returned even with an error: delete it.
func (r *Runner) createSandbox(ctx context.Context, name string, params any) (*daytona.Sandbox, error) {
	ambiguous := false // an attempt may have created it although it failed
	defer func() {
		if !ambiguous && r.capacity.notCreated(name) {
			r.ledger.append(LedgerEntry{Event: eventNotCreated, RunID: r.opts.RunID, Name: name})
		}
	}()
	return retried(ctx, &r.opts, "create "+name, r.opts.calls(), func(ctx context.Context) (*daytona.Sandbox, error) {
		return r.createOnce(ctx, name, params, &ambiguous)
	})
}

// createOnce is one attempt of createSandbox. Its errors are for the retry
// policy: permanent ones stop, a retryHint tries again.
func (r *Runner) createOnce(ctx context.Context, name string, params any, ambiguous *bool) (*daytona.Sandbox, error) {
	if err := r.unusable(); err != nil {
		return nil, backoff.Permanent(err)
	}
	if err := r.capacity.acquire(ctx, name); err != nil {
		return nil, backoff.Permanent(err)
	}
	if err := r.pacer.wait(ctx); err != nil {
		return nil, backoff.Permanent(err)
	}
	if err := r.ledger.append(LedgerEntry{Event: eventCreate, RunID: r.opts.RunID, Name: name}); err != nil {
		return nil, backoff.Permanent(err)
	}
	r.capacity.asking(name)
	sb, err := r.client.Create(ctx, params, options.WithTimeout(r.opts.CreateTimeout))
	if err == nil {
		r.pacer.succeeded()
		r.mu.Lock()
		delete(r.abandoned, name) // a sandbox of that name is this one
		r.mu.Unlock()
		*ambiguous = true // it exists: never "not created"
		return r.adopt(sb), nil
	}
	f := classify(ctx, err)
	if (f.class == classTransient || f.class == classCancelled) && !neverSent(err) {
		*ambiguous = true
	}
	if reason, ok := failedToStart(f, err); ok {
		*ambiguous = true // it exists, failed
		return r.startFailed(ctx, name, reason, params)
	}
	if f.class == classConflict || f.class == classTransient && *ambiguous {
		// It may exist: made by an earlier attempt whose answer was lost,
		// or (a 409) left by an earlier process of this run, ours by name.
		found, lerr := r.lookup(ctx, name)
		switch {
		case lerr != nil || found == nil:
		case *ambiguous:
			var werr error
			if found.State != "started" {
				werr = found.WaitForStart(ctx, r.opts.CreateTimeout)
			}
			return found, backoff.Permanent(werr)
		default:
			fmt.Fprintf(r.opts.Warn, "daytona: sandbox %s already exists from an earlier attempt; deleting it first\n", name)
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.DeleteTimeout)
			derr := r.deleteSandbox(dctx, name, found)
			cancel()
			if derr != nil {
				return nil, backoff.Permanent(derr)
			}
		}
	}
	switch f.class {
	case classAuth:
		return nil, backoff.Permanent(r.stop(runner.ErrAuth, errKeyRefused(err)))
	case classRateLimited:
		r.pacer.throttled(f.retryAfter)
		return nil, err
	case classQuota:
		if err := r.waitForCapacity(ctx, name, err); err != nil {
			return nil, backoff.Permanent(err)
		}
		return nil, &retryHint{err: err, atOnce: true}
	case classPermanent, classNotFound:
		return nil, backoff.Permanent(r.stop(runner.ErrInfra, fmt.Errorf(
			"Daytona refused to create a sandbox: %w; no retry can fix this: check %s (%s)",
			described(err), whatToCheck(params), startsFrom(params))))
	case classConflict:
		return nil, &retryHint{err: err}
	case classTransient:
		return nil, err
	}
	return nil, backoff.Permanent(err)
}

// startFailed finds sandbox name, which Daytona could not start, for its
// deletion, and stops the run: the next would fail the same way.
func (r *Runner) startFailed(ctx context.Context, name, reason string, params any) (*daytona.Sandbox, error) {
	// Found even when another job's failure has just stopped the run (ctx
	// cancelled): else only Close would find it, and say so.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.DeleteTimeout)
	found, _ := r.lookup(lctx, name)
	cancel()
	return found, backoff.Permanent(r.stop(runner.ErrInfra, fmt.Errorf(
		"Daytona could not start sandbox %s (%s): %s; check %s",
		name, reason, startsFrom(params), whatToCheck(params))))
}

// startsFrom says, for messages, what a sandbox of params starts from.
func startsFrom(params any) string {
	switch p := params.(type) {
	case types.ImageParams:
		s := fmt.Sprint("image ", p.Image)
		if r := p.Resources; r != nil {
			s += fmt.Sprintf(", cpu %d, memory %d GB, disk %d GB", r.CPU, r.Memory, r.Disk)
		}
		return s
	case types.SnapshotParams:
		switch {
		case strings.HasPrefix(p.Snapshot, runner.SnapshotPrefix):
			return "snapshot " + p.Snapshot + " of its environment"
		case p.Snapshot != "":
			return "snapshot " + p.Snapshot
		}
	}
	return "the default snapshot"
}

// whatToCheck says, for messages, where that is set.
func whatToCheck(params any) string {
	if p, ok := params.(types.SnapshotParams); ok && strings.HasPrefix(p.Snapshot, runner.SnapshotPrefix) {
		return "the environment (its snapshot may have been deleted meanwhile, e.g. by \"forge gc\")"
	}
	return "the manifest's daytona: block (image, snapshot, resources)"
}

// lookup finds a sandbox by name; nil, nil when there is none.
func (r *Runner) lookup(ctx context.Context, name string) (*daytona.Sandbox, error) {
	sb, err := retried(ctx, &r.opts, "look up "+name, r.opts.calls(), func(ctx context.Context) (*daytona.Sandbox, error) {
		return orNone(r.client.Get(ctx, name))
	})
	if err != nil {
		return nil, err
	}
	return r.adopt(sb), nil
}

// deleteSandbox deletes sb with the deletion budget; one already gone
// counts as deleted.
func (r *Runner) deleteSandbox(ctx context.Context, name string, sb *daytona.Sandbox) error {
	err := r.opts.retry(ctx, "delete "+name, r.opts.deletions(), func(ctx context.Context) error {
		return gone(sb.DeleteWithTimeout(ctx, 0))
	})
	if err == nil {
		return r.deleted(name, sb.ID)
	}
	return r.undeletable(name, sb.ID, err)
}

func (r *Runner) undeletable(name, id string, err error) error {
	label := name
	if id != "" {
		label = name + " (" + id + ")"
	}
	r.mu.Lock()
	r.undeleted[name] = label
	r.mu.Unlock()
	r.capacity.release(name) // it may still hold quota, but it is out of forge's hands
	fmt.Fprintf(r.opts.Warn, "daytona: could not delete sandbox %s: %s; it stops and deletes itself after its auto-stop, or run \"forge gc\"\n",
		label, describe(err))
	lerr := r.ledger.append(LedgerEntry{Event: eventUndeletable, RunID: r.opts.RunID, Name: name, ID: id, Error: describe(err)})
	return errors.Join(fmt.Errorf("delete sandbox %s: %w", label, described(err)), lerr)
}

func (r *Runner) reconcile(ctx context.Context, name string) error {
	sb, err := r.lookup(ctx, name)
	if err != nil {
		return r.undeletable(name, "", fmt.Errorf("look it up: %w", err))
	}
	if sb == nil {
		r.mu.Lock()
		r.abandoned[name] = true
		r.mu.Unlock()
		return r.deleted(name, "")
	}
	return r.deleteSandbox(ctx, name, sb)
}

func (r *Runner) listRun(ctx context.Context) ([]*daytona.Sandbox, error) {
	labels := map[string]string{LabelApp: LabelAppValue, LabelRun: r.opts.RunID}
	found, err := allPages(ctx, &r.opts, "list this run's sandboxes", func(ctx context.Context, page, limit int) ([]*daytona.Sandbox, int, error) {
		res, err := r.client.List(ctx, labels, &page, &limit)
		if err != nil {
			return nil, 0, err
		}
		return res.Items, res.TotalPages, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes of run %s: %w", r.opts.RunID, described(err))
	}
	return found, nil
}

// stillDestroying counts this run's deleted sandboxes not yet destroyed,
// which may still hold their share of the account's limits.
func (r *Runner) stillDestroying(ctx context.Context) int {
	found, _ := r.listRun(ctx)
	n := 0
	for _, sb := range found {
		if sb.State == "destroying" {
			n++
		}
	}
	return n
}

func (r *Runner) sweep(ctx context.Context) error {
	found, err := r.listRun(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, sb := range found {
		if sb.State == "destroying" || sb.State == "destroyed" {
			continue
		}
		r.mu.Lock()
		late := r.abandoned[sb.Name] // a creation given up that landed after all
		r.mu.Unlock()
		if !late {
			fmt.Fprintf(r.opts.Warn, "daytona: sandbox %s (%s) of this run was still alive at the end; deleting it\n", sb.Name, sb.ID)
		}
		errs = append(errs, r.deleteSandbox(ctx, sb.Name, r.adopt(sb)))
	}
	return errors.Join(errs...)
}

// Waits of a creation refused for the account's limits: up to lagGrace
// after one of the run's deletions the service may be catching up with it
// (tried again from lagFirstRetry on); while deleted sandboxes are still
// destroying, it is tried again every destroyingPoll.
const (
	lagGrace       = 5 * time.Second
	lagFirstRetry  = 100 * time.Millisecond
	destroyingPoll = time.Second
)

// waitForCapacity handles a creation refused for the account's limits:
// with none alive but some under way, it waits for them; with some alive,
// concurrency comes down to their number (announced once); with none
// alive, coming or destroying, the account is full without this run: the
// run stops.
func (r *Runner) waitForCapacity(ctx context.Context, name string, refusal error) error {
	what, _ := quotaRefusal(statusOf(refusal), messageOf(refusal))
	r.capacity.refused(name)
	for {
		alive, pending, changed, since := r.capacity.state(time.Now())
		recent := since >= 0 && since < lagGrace
		var lag <-chan time.Time
		switch {
		case alive == 0 && pending > 0: // wait for the creations under way
		case alive == 0 && !recent && r.stillDestroying(ctx) > 0:
			lag = time.After(destroyingPoll) // their share is freed once they are gone
		case alive == 0 && !recent:
			return r.stop(runner.ErrInfra, fmt.Errorf("Daytona account limit reached (%s) with none of this run's sandboxes alive: other sandboxes of the account use it all; "+
				"free some (forge gc deletes those forge left behind; the others are in the Daytona dashboard), lower concurrency or ask for smaller daytona.resources",
				what))
		case !recent: // the account admits the run's alive and destroying sandboxes
			if n := r.capacity.lower(alive + r.stillDestroying(ctx)); n > 0 {
				fmt.Fprintf(r.opts.Warn, "forge: account limit reached (%s): running %d at a time\n", what, n)
			}
			return nil
		default: // again as the deletion ages (as long again as it is old), or at a change
			lag = time.After(min(lagGrace-since, max(lagFirstRetry, since)))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
			if lag != nil {
				return nil
			}
		case <-lag:
			return nil
		}
	}
}
