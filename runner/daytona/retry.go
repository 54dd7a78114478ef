package daytona

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// budget says which failures of one call are tried again, and how often:
// every call goes through the one policy (retried) with its own budget.
type budget struct {
	transient   int  // attempts after 5xx, 408, network errors, client timeouts
	rateLimited int  // attempts after 429s, which had no effect
	conflicts   bool // retry 409s ("state change in progress") until ctx ends
}

func (o *Options) calls() budget {
	return budget{transient: o.Retry.Tries, rateLimited: o.Retry.RateLimitTries}
}

// deletions is the budget of a deletion, which matters most: more
// transient retries, and a sandbox changing state is waited out.
func (o *Options) deletions() budget {
	return budget{transient: o.Retry.Tries + 3, rateLimited: o.Retry.RateLimitTries, conflicts: true}
}

// retryHint is what an operation returns to be tried again whatever err's
// class: at once without using up its budget (it waited for capacity
// itself), or else as after a transient failure (a 409 on create whose
// sandbox cannot be found yet).
type retryHint struct {
	err    error
	atOnce bool
}

func (e *retryHint) Error() string { return e.err.Error() }
func (e *retryHint) Unwrap() error { return e.err }

// retry is retried for an operation with no result.
func (o *Options) retry(ctx context.Context, what string, b budget, op func(context.Context) error) error {
	_, err := retried(ctx, o, what, b, func(ctx context.Context) (struct{}, error) { return struct{}{}, op(ctx) })
	return err
}

// retried is the backend's one retry policy: op runs until it succeeds,
// fails beyond its budget or ctx ends, with jittered exponential waits
// never shorter than Retry-After. The error is op's last, unwrapped from
// backoff.Permanent or retryHint.
func retried[T any](ctx context.Context, o *Options, what string, b budget, op func(context.Context) (T, error)) (T, error) {
	sched := &backoff.ExponentialBackOff{InitialInterval: o.Retry.Initial, MaxInterval: o.Retry.Max, RandomizationFactor: 0.5, Multiplier: 2}
	transient, limited := 0, 0
	for {
		v, err := op(ctx)
		var hint *retryHint
		var perm *backoff.PermanentError
		switch {
		case err == nil:
			return v, nil
		case errors.As(err, &hint) && hint.atOnce:
			if ctx.Err() != nil {
				return v, hint.err
			}
			continue
		case errors.As(err, &perm):
			return v, perm.Err
		}
		f := classify(ctx, err)
		if hint != nil {
			err, f.class = hint.err, classTransient
		}
		switch {
		case f.class == classTransient:
			if transient++; transient >= b.transient {
				return v, err
			}
		case f.class == classRateLimited:
			if limited++; limited >= b.rateLimited {
				return v, err
			}
		case f.class == classConflict && b.conflicts:
		default:
			return v, err
		}
		wait := max(sched.NextBackOff(), f.retryAfter)
		if f.class != classConflict { // a sandbox between states: expected, not news
			fmt.Fprintf(o.Warn, "daytona: %s: %s; retrying in %s\n", what, describe(err), wait.Round(time.Millisecond))
		}
		if sleep(ctx, wait) != nil {
			return v, err
		}
	}
}

// allPages gathers a listing page by page (100 a page), each page retried
// as every call is; list answers a page's items and the number of pages.
func allPages[T any](ctx context.Context, o *Options, what string, list func(ctx context.Context, page, limit int) ([]T, int, error)) ([]T, error) {
	var all []T
	for page := 1; ; page++ {
		var pages int
		items, err := retried(ctx, o, what, o.calls(), func(ctx context.Context) (items []T, err error) {
			items, pages, err = list(ctx, page, 100)
			return items, err
		})
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if page >= pages {
			return all, nil
		}
	}
}
