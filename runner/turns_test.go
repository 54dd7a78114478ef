package runner

import (
	"context"
	"errors"
	"testing"
)

// One goroutine at a time has a key's turn: another waits (and says so)
// until it ends, or gives up when its context ends; another key is free.
func TestTurnsOneAtATime(t *testing.T) {
	var turns Turns
	ctx := context.Background()
	done, err := turns.Take(ctx, "a", func() { t.Error("the first Take waited") })
	if err != nil {
		t.Fatal(err)
	}
	other, err := turns.Take(ctx, "b", func() { t.Error("another key's Take waited") })
	if err != nil {
		t.Fatal(err)
	}
	other()

	waiting := make(chan struct{})
	got := make(chan error)
	go func() {
		d, err := turns.Take(ctx, "a", func() { close(waiting) })
		if err == nil {
			d()
		}
		got <- err
	}()
	<-waiting // the second Take found the turn taken
	select {
	case err := <-got:
		t.Fatalf("the second Take returned (%v) while the first held the turn", err)
	default:
	}
	done()
	if err := <-got; err != nil {
		t.Fatal(err)
	}

	done, _ = turns.Take(ctx, "a", nil)
	defer done()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := turns.Take(cancelled, "a", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a Take whose context ended: %v", err)
	}
}
