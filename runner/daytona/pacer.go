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
	max, floor rate.Limit
	lim        *rate.Limiter

	mu        sync.Mutex
	notBefore time.Time
	// trace, set by tests before any use, is told in order of every pause
	// asked for and every creation let through.
	trace func(ev pacerEvent)
}

// pacerEvent is one thing the pacer did: a pause a 429 asked for, or with
// pause zero a creation let through.
type pacerEvent struct {
	at    time.Time
	pause time.Duration
}

func newPacer(perSecond float64) *pacer {
	max := rate.Limit(perSecond)
	return &pacer{max: max, floor: max / 64, lim: rate.NewLimiter(max, 1)}
}

func (p *pacer) wait(ctx context.Context) error {
	for {
		p.mu.Lock()
		until := p.notBefore
		p.mu.Unlock()
		if err := sleep(ctx, time.Until(until)); err != nil {
			return err
		}
		if err := p.lim.Wait(ctx); err != nil {
			// ctx ended, or the wait would outlast its deadline: sleep until it ends.
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

// throttled records a 429 that asked for a pause of d (zero: none named).
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
