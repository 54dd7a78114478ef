package daytona

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"time"
)

// capacity is back-pressure from the account's limits (total CPU, memory,
// disk, sandbox count). Daytona refuses a creation that would take the
// organisation over its quota; the refusal clears when one of the
// organisation's running sandboxes is deleted. So a refused job goes back
// in line until one of this run's own sandboxes is gone, then tries again,
// and the run's effective concurrency comes down to what the account
// admits: once the account has refused a creation, at most as many of this
// run's sandboxes exist at once as existed when it refused.
//
// A slot is held by every sandbox of this run that exists or may exist:
// from the start of its creation until it is deleted, or known never to
// have been created.
type capacity struct {
	mu      sync.Mutex
	holders map[string]bool
	// limit is the most holders allowed at once; 0 until a refusal.
	limit int
	// freed is closed (and replaced) whenever a slot is released.
	freed     chan struct{}
	lastFreed time.Time
	said      bool
}

func newCapacity() *capacity {
	return &capacity{holders: map[string]bool{}, freed: make(chan struct{})}
}

// acquire waits until name may be created, then holds a slot for it. A
// name that already holds one keeps it.
func (c *capacity) acquire(ctx context.Context, name string) error {
	for {
		c.mu.Lock()
		if c.holders[name] || c.limit == 0 || len(c.holders) < c.limit {
			c.holders[name] = true
			c.mu.Unlock()
			return nil
		}
		freed := c.freed
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-freed:
		}
	}
}

// release gives name's slot back: its sandbox is deleted, or was never
// created. Waiters are woken.
func (c *capacity) release(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.holders[name] {
		return
	}
	delete(c.holders, name)
	c.lastFreed = time.Now()
	close(c.freed)
	c.freed = make(chan struct{})
}

// lagGrace is how long after one of this run's sandboxes was deleted a
// refusal may still be the service catching up with that deletion rather
// than a smaller capacity.
const lagGrace = 5 * time.Second

// refused records that the account refused to create name. Its slot goes
// (nothing was created) without waking anyone: nothing was freed. others
// is how many of this run's sandboxes exist or are being created; when it
// is 0 the account is full without this run. The limit comes down to
// others unless a deletion of this run was so recent that the refusal may
// be the service lagging behind it. wait is the channel to wait on for the
// next release; sinceFreed is the time since the last one (-1: never).
func (c *capacity) refused(name string, now time.Time) (others int, wait <-chan struct{}, sinceFreed time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.holders, name)
	others = len(c.holders)
	sinceFreed = -1
	if !c.lastFreed.IsZero() {
		sinceFreed = now.Sub(c.lastFreed)
	}
	recent := sinceFreed >= 0 && sinceFreed < lagGrace
	if others > 0 && !recent && (c.limit == 0 || others < c.limit) {
		c.limit = others
	}
	return others, c.freed, sinceFreed
}

// announce returns the limit the first time it is called after one was
// set, for the one line that tells the user; 0 otherwise.
func (c *capacity) announce() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.said || c.limit == 0 {
		return 0
	}
	c.said = true
	return c.limit
}

// quotaRefusal recognises the API's answer to a creation over the
// account's limits, by the first sentence of its message (the advice after
// it changes over time) whatever the status (400 in v0.170.0, 403 in later
// versions): "Total CPU limit exceeded. Maximum allowed: 4." and the same
// for memory and disk, or a sandbox-count quota. what names the limit for
// a person ("4 vCPU", "10GiB memory"). A per-sandbox maximum ("CPU request
// 8 exceeds maximum allowed per sandbox") is not one: no deletion clears
// it.
func quotaRefusal(status int, msg string) (what string, ok bool) {
	if status != 400 && status != 403 {
		return "", false
	}
	first, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	m := quotaRE.FindStringSubmatch(first)
	if m == nil {
		return "", false
	}
	resource, max := strings.ToLower(m[1]), strings.TrimRight(strings.TrimSpace(m[2]), ".")
	switch {
	case max == "":
		return strings.TrimSuffix(first, "."), true
	case resource == "cpu":
		return max + " vCPU", true
	case strings.HasPrefix(resource, "sandbox"):
		return max + " sandboxes", true
	}
	return max + " " + resource, true
}

var quotaRE = regexp.MustCompile(`(?i)^total (cpu|memory|disk|sandbox(?:es)?|sandbox count) (?:limit|quota) exceeded\.?\s*(?:maximum allowed:?\s*([0-9]+(?:\.[0-9]+)?\s*[a-z]*))?`)
