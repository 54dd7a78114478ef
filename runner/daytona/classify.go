package daytona

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdkerrors "github.com/daytonaio/daytona/libs/sdk-go/pkg/errors"
)

// class is what an error means for forge.
type class int

const (
	classPermanent   class = iota // a 4xx that retrying will not fix
	classAuth                     // 401/403 from the API: the key is bad
	classRateLimited              // 429: slow down, then retry
	classNotFound                 // 404
	classConflict                 // 409: name taken, or a state change in progress
	classTransient                // 5xx, 408, network errors, client timeouts: retry
	classCancelled                // our own context ended
	classQuota                    // 400/403 "Total CPU limit exceeded": wait for capacity
)

// failure is a classified error, with the wait the server asked for.
type failure struct {
	class      class
	retryAfter time.Duration
}

// maxRetryAfter caps what a server may ask us to wait.
const maxRetryAfter = 5 * time.Minute

// classify sorts an SDK error by its status; ctx is the call's: a status-0
// error after it ended is a cancellation, not a network problem.
func classify(ctx context.Context, err error) failure {
	e := sdkError(err)
	switch {
	case e == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
		return failure{class: classPermanent}
	case e == nil && ctx.Err() != nil:
		return failure{class: classCancelled}
	case e == nil:
		return failure{class: classTransient}
	}
	status := e.StatusCode
	if _, ok := quotaRefusal(status, messageOf(err)); ok {
		return failure{class: classQuota}
	}
	switch {
	case status == 0 && ctx.Err() != nil:
		return failure{class: classCancelled}
	case status == 0, status == http.StatusRequestTimeout, status >= 500:
		return failure{classTransient, retryAfter(e.Headers, time.Now())}
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return failure{class: classAuth}
	case status == http.StatusTooManyRequests:
		return failure{classRateLimited, retryAfter(e.Headers, time.Now())}
	case status == http.StatusNotFound:
		return failure{class: classNotFound}
	case status == http.StatusConflict:
		return failure{class: classConflict}
	}
	return failure{class: classPermanent}
}

// gone is err, but nil for a 404: what was to be deleted is gone.
func gone(err error) error {
	if statusOf(err) == http.StatusNotFound {
		return nil
	}
	return err
}

// orNone is v, err, but nil and no error for a 404: there is none.
func orNone[T any](v *T, err error) (*T, error) {
	if statusOf(err) == http.StatusNotFound {
		return nil, nil
	}
	return v, err
}

// statusOf is the HTTP status behind an SDK error (0 for network errors).
func statusOf(err error) int {
	if e := sdkError(err); e != nil {
		return e.StatusCode
	}
	return 0
}

// sdkError finds the SDK error in err's chain. The SDK's error types embed
// *DaytonaError without unwrapping to it, so each is looked for.
func sdkError(err error) *sdkerrors.DaytonaError {
	if e, ok := errors.AsType[*sdkerrors.DaytonaRateLimitError](err); ok {
		return e.DaytonaError
	}
	if e, ok := errors.AsType[*sdkerrors.DaytonaNotFoundError](err); ok {
		return e.DaytonaError
	}
	if e, ok := errors.AsType[*sdkerrors.DaytonaTimeoutError](err); ok {
		return e.DaytonaError
	}
	plain, _ := errors.AsType[*sdkerrors.DaytonaError](err)
	return plain
}

// retryAfter is the longest wait the server asked for: Retry-After, the real
// API's Retry-After-<throttler> or X-RateLimit-Reset-<throttler> (seconds
// or an HTTP date).
func retryAfter(h http.Header, now time.Time) time.Duration {
	var best time.Duration
	for name, vals := range h {
		lower := strings.ToLower(name)
		if lower != "retry-after" && !strings.HasPrefix(lower, "retry-after-") && !strings.HasPrefix(lower, "x-ratelimit-reset") {
			continue
		}
		for _, v := range vals {
			v = strings.TrimSpace(v)
			if secs, err := strconv.ParseFloat(v, 64); err == nil && secs > 0 && !math.IsInf(secs, 0) {
				best = max(best, time.Duration(math.Min(secs, maxRetryAfter.Seconds())*float64(time.Second)))
			} else if t, err := http.ParseTime(v); err == nil && t.After(now) {
				best = max(best, t.Sub(now))
			}
		}
	}
	return min(best, maxRetryAfter)
}

// describe renders an SDK error for a person: SDK errors never carry the
// key, nor the request.
func describe(err error) string {
	if st := statusOf(err); st != 0 {
		return fmt.Sprintf("%s (HTTP %d)", messageOf(err), st)
	}
	return messageOf(err)
}

func messageOf(err error) string {
	if e := sdkError(err); e != nil {
		return e.Message
	}
	return err.Error()
}

// refusedWrite recognises the toolbox refusing to write a file for want
// of permission (HTTP 400, the daemon's own error): the daemon runs as the
// image's user, so a fresh sandbox of the same image refuses it too.
func refusedWrite(err error) bool {
	return statusOf(err) == http.StatusBadRequest && strings.Contains(messageOf(err), "permission denied")
}

// described wraps an SDK error so that it reads as describe says (with
// its HTTP status) and stays reachable with errors.As.
func described(err error) error { return &describedError{err} }

type describedError struct{ err error }

func (e *describedError) Error() string { return describe(e.err) }
func (e *describedError) Unwrap() error { return e.err }

// neverSent reports a network error that happened before the request
// reached the service (nothing can have been created).
func neverSent(err error) bool {
	if statusOf(err) != 0 {
		return false
	}
	m := messageOf(err)
	return strings.Contains(m, "dial tcp") || strings.Contains(m, "connection refused") || strings.Contains(m, "no such host")
}

// failedToStart recognises a sandbox that ended in error or build_failed:
// the SDK's error from its wait for "started", or the API's 400 "Sandbox
// failed to start: <reason>".
func failedToStart(f failure, err error) (reason string, ok bool) {
	msg := messageOf(err)
	if !strings.HasPrefix(msg, errFailedToStart) || (f.class != classTransient && statusOf(err) != 400) {
		return "", false
	}
	reason = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(msg, errFailedToStart), ":"))
	if reason == "" {
		reason = "it ended in error or build_failed"
	}
	first, _, _ := strings.Cut(reason, "\n")
	return first, true
}

// errFailedToStart is what the SDK says when a sandbox ends in error or
// build_failed; it does not say which sandbox.
const errFailedToStart = "Sandbox failed to start"
