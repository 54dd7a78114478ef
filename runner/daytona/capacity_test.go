package daytona

import (
	"context"
	"errors"
	"testing"
	"time"

	sdk "github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
)

func TestQuotaRefusalRecognisesTheAPIsMessages(t *testing.T) {
	const advice = "\nTo increase concurrency limits, upgrade your organization's Tier by visiting https://app.daytona.io/dashboard/limits."
	cases := []struct {
		status int
		msg    string
		what   string
		ok     bool
	}{
		{400, "Total CPU limit exceeded. Maximum allowed: 4." + advice, "4 vCPU", true},
		{403, "Total CPU limit exceeded. Maximum allowed: 10." + advice, "10 vCPU", true},
		{400, "Total memory limit exceeded. Maximum allowed: 10GiB.", "10GiB memory", true},
		{400, "Total disk limit exceeded. Maximum allowed: 30GiB.\nArchive sandboxes to free disk." + advice, "30GiB disk", true},
		{400, "Total sandbox count limit exceeded", "Total sandbox count limit exceeded", true},
		// Not limits that a deletion clears.
		{400, "CPU request 8 exceeds maximum allowed per sandbox (4).", "", false},
		{400, "Snapshot my-agent-snap not found. Did you add it through the Daytona Dashboard?", "", false},
		{401, "Total CPU limit exceeded. Maximum allowed: 4.", "", false},
		{429, "Rate limit exceeded", "", false},
	}
	for _, c := range cases {
		what, ok := quotaRefusal(c.status, c.msg)
		if what != c.what || ok != c.ok {
			t.Errorf("quotaRefusal(%d, %q) = %q, %v; want %q, %v", c.status, c.msg, what, ok, c.what, c.ok)
		}
	}
}

// blocked reports whether acquire is still waiting after a short while;
// it must return ctx's error then, never succeed.
func blocked(t *testing.T, c *capacity, name string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := c.acquire(ctx, name)
	if err == nil {
		c.release(name)
		return false
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire: %v", err)
	}
	return true
}

func TestCapacityComesDownToWhatTheAccountAdmits(t *testing.T) {
	c := newCapacity()
	ctx := context.Background()
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		if err := c.acquire(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		c.created(n, &sdk.Sandbox{})
	}
	// e is refused while a..d exist and f is still being created: what
	// exists is what the account admits, not what is under way.
	c.refused("e")
	alive, pending, changed, since := c.state(time.Now())
	if alive != 4 || pending != 1 || since != -1 {
		t.Fatalf("alive %d pending %d since %v", alive, pending, since)
	}
	if n := c.lower(alive); n != 4 {
		t.Fatalf("lower = %d, want 4 to announce", n)
	}
	if n := c.lower(6); n != 0 {
		t.Fatalf("announced twice (%d)", n)
	}
	c.refused("f")
	select {
	case <-changed:
	default:
		t.Fatal("a refusal did not wake the waiters")
	}
	if !blocked(t, c, "e") {
		t.Fatal("a fifth sandbox was let through at a limit of 4")
	}
	_, _, changed, _ = c.state(time.Now())
	c.release("a")
	select {
	case <-changed:
	default:
		t.Fatal("a release did not wake the refused job")
	}
	if err := c.acquire(ctx, "e"); err != nil {
		t.Fatal(err)
	}
	if !blocked(t, c, "f") {
		t.Fatal("over the limit after a release")
	}
	// A limit never goes up.
	if c.lower(10); !blocked(t, c, "f") {
		t.Fatal("the limit went up")
	}
	// Right after a deletion the caller sees it as recent.
	c.release("b")
	if _, _, _, since := c.state(time.Now()); since < 0 || since >= lagGrace {
		t.Fatalf("since %v", since)
	}
}
