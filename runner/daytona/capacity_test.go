package daytona

import (
	"context"
	"errors"
	"testing"
	"time"
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
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		if err := c.acquire(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	// e is refused while a..d exist: at most 4 at once from now on.
	others, freed, since := c.refused("e", time.Now())
	if others != 4 || since != -1 {
		t.Fatalf("others %d since %v", others, since)
	}
	if !blocked(t, c, "e") {
		t.Fatal("a fifth sandbox was let through at a limit of 4")
	}
	if n := c.announce(); n != 4 {
		t.Fatalf("announce = %d, want 4", n)
	}
	if n := c.announce(); n != 0 {
		t.Fatalf("announced twice (%d)", n)
	}
	c.release("a")
	select {
	case <-freed:
	default:
		t.Fatal("a release did not wake the refused job")
	}
	if err := c.acquire(ctx, "e"); err != nil {
		t.Fatal(err)
	}
	if !blocked(t, c, "f") {
		t.Fatal("over the limit after a release")
	}
	// Right after a deletion a refusal may be the service lagging behind:
	// the limit stays.
	c.release("b")
	if err := c.acquire(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	if others, _, since := c.refused("f", time.Now()); others != 3 || since < 0 || since >= lagGrace {
		t.Fatalf("others %d since %v", others, since)
	}
	if err := c.acquire(ctx, "f"); err != nil {
		t.Fatalf("the limit came down on a refusal just after a deletion: %v", err)
	}
	// Refused with nothing of this run alive and no recent deletion: the
	// account is full without this run.
	c2 := newCapacity()
	c2.acquire(ctx, "x")
	if others, _, since := c2.refused("x", time.Now()); others != 0 || since != -1 {
		t.Fatalf("others %d since %v", others, since)
	}
}
