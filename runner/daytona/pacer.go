package daytona

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// pacer spaces out sandbox creations: a token bucket halved on every 429
// and raised back on success (AIMD), and a shared pause for Retry-After
// (Daytona counts creations per organisation: one 429 concerns every job).
type pacer struct {
	max   rate.Limit
	floor rate.Limit
	lim   *rate.Limiter

	mu        sync.Mutex
	notBefore time.Time
	// trace, when set (by tests, before any use), is told of every pause
	// the server asked for and of every creation let through, in order.
	trace func(ev pacerEvent)
}

// pacerEvent is one thing the pacer did, for trace.
type pacerEvent struct {
	at time.Time
	// pause is the pause asked for by a rate-limit answer; zero for a
	// creation let through.
	pause time.Duration
}

func newPacer(perSecond float64) *pacer {
	max := rate.Limit(perSecond)
	return &pacer{max: max, floor: max / 64, lim: rate.NewLimiter(max, 1)}
}

// wait blocks until a creation may start.
func (p *pacer) wait(ctx context.Context) error {
	for {
		if err := sleep(ctx, time.Until(p.pausedUntil())); err != nil {
			return err
		}
		if err := p.lim.Wait(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The wait would outlast ctx's deadline: sleep until it ends.
			<-ctx.Done()
			return ctx.Err()
		}
		// A 429 may have arrived while we waited for the token; deciding
		// and tracing hold the lock, so a pause is either before the grant
		// (and seen) or after it.
		p.mu.Lock()
		now := time.Now()
		if !now.Before(p.notBefore) {
			if p.trace != nil {
				p.trace(pacerEvent{at: now})
			}
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
	}
}

func (p *pacer) pausedUntil() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.notBefore
}

// throttled records a rate-limit answer that asked for a pause of d (zero
// when it named none).
func (p *pacer) throttled(d time.Duration) {
	p.mu.Lock()
	now := time.Now()
	if until := now.Add(d); until.After(p.notBefore) {
		p.notBefore = until
	}
	if p.trace != nil {
		p.trace(pacerEvent{at: now, pause: d})
	}
	p.mu.Unlock()
	p.lim.SetLimit(max(p.lim.Limit()/2, p.floor))
}

// succeeded raises the rate by a tenth of the maximum, up to it.
func (p *pacer) succeeded() {
	p.lim.SetLimit(min(p.lim.Limit()+p.max/10, p.max))
}

// limit is the current creation rate per second.
func (p *pacer) limit() float64 { return float64(p.lim.Limit()) }

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
