package daytona

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"

	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

func TestGC(t *testing.T) {
	srv := daytonatest.Start(t, daytonatest.Options{Specs: specs})
	out := t.TempDir()
	c, err := sdk.NewClientWithConfig(&types.DaytonaConfig{APIKey: srv.APIKey(), APIUrl: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string, labels map[string]string) {
		if _, err := c.Create(context.Background(), types.SnapshotParams{SandboxBaseParams: types.SandboxBaseParams{Name: name, Labels: labels}}); err != nil {
			t.Fatal(err)
		}
	}
	ledger := func(run string, entries ...LedgerEntry) {
		l, err := openLedger(filepath.Join(out, run, LedgerFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			l.append(e)
		}
		l.close()
	}
	host, _ := os.Hostname()
	forge := func(run string) map[string]string { return map[string]string{LabelApp: LabelAppValue, LabelRun: run} }
	mk("forge-live-a-1", forge("live"))           // its run is open in this (live) process
	mk("forge-done-a-1", forge("done"))           // its run closed
	mk("forge-crashed-a-1", forge("crashed"))     // its run's process is gone
	mk("forge-unknown-a-1", forge("unknown"))     // no ledger here
	mk("forge-elsewhere-a-1", forge("elsewhere")) // open on another machine
	mk("not-forge", map[string]string{"app": "other"})
	ledger("live", LedgerEntry{Event: eventOpen, PID: os.Getpid(), Host: host})
	ledger("done", LedgerEntry{Event: eventOpen, PID: os.Getpid(), Host: host}, LedgerEntry{Event: eventClose})
	ledger("crashed", LedgerEntry{Event: eventOpen, PID: 1 << 30, Host: host})
	ledger("elsewhere", LedgerEntry{Event: eventOpen, PID: os.Getpid(), Host: host + "-other"})

	opts := Options{APIKey: srv.APIKey(), APIURL: srv.URL()}
	var w strings.Builder
	if err := GC(context.Background(), opts, GCOptions{OlderThan: time.Hour, OutRoot: out}, &w); err != nil {
		t.Fatal(err)
	}
	if srv.LiveCount() != 6 || !strings.Contains(w.String(), "gc: deleted 0, kept 5") {
		t.Fatalf("young sandboxes were touched: %d live\n%s", srv.LiveCount(), w.String())
	}

	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	w.Reset()
	if err := GC(context.Background(), opts, GCOptions{OlderThan: time.Hour, OutRoot: out, DryRun: true, Now: later}, &w); err != nil {
		t.Fatal(err)
	}
	if srv.LiveCount() != 6 || !strings.Contains(w.String(), "gc: would delete 3, kept 2") {
		t.Fatalf("dry run: %d live\n%s", srv.LiveCount(), w.String())
	}

	w.Reset()
	if err := GC(context.Background(), opts, GCOptions{OlderThan: time.Hour, OutRoot: out, Now: later}, &w); err != nil {
		t.Fatal(err)
	}
	var alive []string
	for _, sb := range srv.Live() {
		alive = append(alive, sb.Name)
	}
	if got := strings.Join(alive, " "); got != "forge-live-a-1 forge-elsewhere-a-1 not-forge" {
		t.Fatalf("alive after gc: %s\n%s", got, w.String())
	}
	for _, want := range []string{"deleted forge-done-a-1", "deleted forge-crashed-a-1", "deleted forge-unknown-a-1", "keep    forge-live-a-1", "run is live (pid"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("gc output lacks %q:\n%s", want, w.String())
		}
	}
	// Leave the emulator clean.
	for _, sb := range srv.Live() {
		s, _ := c.Get(context.Background(), sb.ID)
		s.Delete(context.Background())
	}

	srv.SetAPIKey("rotated")
	if err := GC(context.Background(), opts, GCOptions{}, &w); err == nil || !strings.Contains(err.Error(), "refused the API key") {
		t.Fatalf("bad key: %v", err)
	}
}

// TestGCSnapshots: forge's environment snapshots no sandbox uses any more
// are deleted once unused for --older-than; one a live run's sandbox was
// created from is kept; one whose only sandbox gc deletes goes with it;
// other snapshots are not forge's to touch.
func TestGCSnapshots(t *testing.T) {
	srv := daytonatest.Start(t, daytonatest.Options{Specs: specs})
	out := t.TempDir()
	c, err := sdk.NewClientWithConfig(&types.DaytonaConfig{APIKey: srv.APIKey(), APIUrl: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const (
		unused = "forge-env-00000000000000aa"
		inUse  = "forge-env-00000000000000bb"
		ofDead = "forge-env-00000000000000cc"
		other  = "someone-elses"
	)
	for _, name := range []string{unused, inUse, ofDead, other} {
		_, logs, err := c.Snapshot.Create(ctx, &types.CreateSnapshotParams{Name: name, Image: sdk.Base("python:3.12-slim").Run("echo " + name)})
		if err != nil {
			t.Fatal(err)
		}
		for range logs {
		}
	}
	host, _ := os.Hostname()
	for run, snap := range map[string]string{"live": inUse, "done": ofDead} {
		labels := map[string]string{LabelApp: LabelAppValue, LabelRun: run}
		if _, err := c.Create(ctx, types.SnapshotParams{Snapshot: snap, SandboxBaseParams: types.SandboxBaseParams{Name: "forge-" + run + "-a-1", Labels: labels}}); err != nil {
			t.Fatal(err)
		}
		l, err := openLedger(filepath.Join(out, run, LedgerFile))
		if err != nil {
			t.Fatal(err)
		}
		l.append(LedgerEntry{Event: eventOpen, PID: os.Getpid(), Host: host})
		if run == "done" {
			l.append(LedgerEntry{Event: eventClose})
		}
		l.close()
	}
	opts := Options{APIKey: srv.APIKey(), APIURL: srv.URL()}
	var w strings.Builder
	if err := GC(ctx, opts, GCOptions{OlderThan: time.Hour, OutRoot: out}, &w); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.String(), "gc: snapshots: deleted 0, kept 3, failed 0") || len(liveSnapshots(t, srv)) != 4 {
		t.Fatalf("young snapshots were touched:\n%s", w.String())
	}

	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	w.Reset()
	if err := GC(ctx, opts, GCOptions{OlderThan: time.Hour, OutRoot: out, DryRun: true, Now: later}, &w); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.String(), "gc: snapshots: would delete 2, kept 1, failed 0") || len(liveSnapshots(t, srv)) != 4 {
		t.Fatalf("dry run:\n%s", w.String())
	}

	w.Reset()
	if err := GC(ctx, opts, GCOptions{OlderThan: time.Hour, OutRoot: out, Now: later}, &w); err != nil {
		t.Fatal(err)
	}
	left := liveSnapshots(t, srv)
	if _, ok := left[unused]; ok || len(left) != 2 || left[inUse] == "" || left[other] == "" {
		t.Fatalf("snapshots left: %v\n%s", left, w.String())
	}
	for _, want := range []string{"deleted snapshot " + unused, "deleted snapshot " + ofDead,
		"keep    snapshot " + inUse, "sandbox forge-live-a-1 of run live was created from it", "deleted forge-done-a-1"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("gc output lacks %q:\n%s", want, w.String())
		}
	}
	for _, sb := range srv.Live() {
		s, _ := c.Get(ctx, sb.ID)
		s.Delete(ctx)
	}
}
