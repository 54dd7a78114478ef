package daytona

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
)

// capacity is the run's record of its sandboxes, from the start of each
// creation to its deletion, and back-pressure from the account's limits:
// each sandbox that exists or may exist holds a slot, and after a quota
// refusal at most as many slots are held as sandboxes were alive then. A
// refused creation gives its slot back while it waits.
type capacity struct {
	mu        sync.Mutex
	holders   map[string]*holder
	limit     int           // the most slots held at once; 0 until a refusal
	changed   chan struct{} // closed and replaced at every release, creation, refusal
	lastFreed time.Time
	announced bool
}

// holder is one sandbox of the run.
type holder struct {
	sb    *daytona.Sandbox // its handle, once it exists (alive)
	asked bool             // a creation was sent: it may exist without a handle
	slot  bool
}

func newCapacity() *capacity {
	return &capacity{holders: map[string]*holder{}, changed: make(chan struct{})}
}

// signal wakes whoever waits for a change. c.mu is held.
func (c *capacity) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// acquire waits until name may be created, then holds a slot for it.
func (c *capacity) acquire(ctx context.Context, name string) error {
	for {
		c.mu.Lock()
		h, held := c.holders[name], 0
		for _, h := range c.holders {
			if h.slot {
				held++
			}
		}
		if h != nil && h.slot || c.limit == 0 || held < c.limit {
			if h == nil {
				h = &holder{}
				c.holders[name] = h
			}
			h.slot = true
			c.mu.Unlock()
			return nil
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// asking records that a creation of name is about to be sent: it may exist.
func (c *capacity) asking(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holders[name] == nil {
		c.holders[name] = &holder{}
	}
	c.holders[name].asked = true
}

func (c *capacity) created(name string, sb *daytona.Sandbox) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holders[name] = &holder{sb: sb, slot: true}
	c.signal()
}

// release forgets name: its sandbox is deleted, or out of forge's hands.
func (c *capacity) release(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(name)
}

// drop forgets name, giving back its slot. c.mu is held.
func (c *capacity) drop(name string) {
	h := c.holders[name]
	delete(c.holders, name)
	if h != nil && h.slot {
		c.lastFreed = time.Now()
		c.signal()
	}
}

// notCreated forgets name unless it exists (no attempt can have created
// it), and says whether a creation had been sent.
func (c *capacity) notCreated(name string) (asked bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.holders[name]
	if h == nil || h.sb != nil {
		return false
	}
	c.drop(name)
	return h.asked
}

func (c *capacity) mayExist(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.holders[name]
	return h != nil && h.sb == nil && h.asked
}

// snapshot is what exists, by name, and the names that may exist without a
// handle, sorted.
func (c *capacity) snapshot() (alive map[string]*daytona.Sandbox, unknown []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	alive = map[string]*daytona.Sandbox{}
	for name, h := range c.holders {
		switch {
		case h.sb != nil:
			alive[name] = h.sb
		case h.asked:
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	return alive, unknown
}

// refused records that the account refused to create name: its slot goes.
func (c *capacity) refused(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.holders[name]; h != nil && h.asked {
		h.slot = false
	} else {
		delete(c.holders, name)
	}
	c.signal()
}

// state is what a refused job decides on: the run's sandboxes alive and
// being created, the next change, the time since the last deletion (-1:
// none).
func (c *capacity) state(now time.Time) (alive, pending int, changed <-chan struct{}, sinceFreed time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.holders {
		switch {
		case h.sb != nil:
			alive++
		case h.slot:
			pending++
		}
	}
	sinceFreed = -1
	if !c.lastFreed.IsZero() {
		sinceFreed = now.Sub(c.lastFreed)
	}
	return alive, pending, c.changed, sinceFreed
}

// lower brings the limit down to n, and returns it the first time one is
// set, to be announced; else 0.
func (c *capacity) lower(n int) (announce int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n > 0 && (c.limit == 0 || n < c.limit) {
		c.limit = n
	}
	if c.announced || c.limit == 0 {
		return 0
	}
	c.announced = true
	return c.limit
}

// quotaRefusal recognises a creation refused for the account's limits by
// its first sentence (400 or 403: "Total CPU limit exceeded. Maximum
// allowed: 4."); what names the limit ("4 vCPU"). A per-sandbox maximum is
// not one: no deletion clears it.
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
