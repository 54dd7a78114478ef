//go:build linux

package local

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
)

// TestRemoveEnvironmentRefusesWhileHeld: ListEnvironments reports a built
// environment; RemoveEnvironment refuses it while a Runner holds it and
// removes it after Close; the Runner then builds it anew.
func TestRemoveEnvironmentRefusesWhileHeld(t *testing.T) {
	t.Parallel()
	r := envRunner(t, Options{})
	cache := r.opts.EnvCache
	c := counter(t)
	env := hashed(t, runner.Environment{Name: "agent", Build: []string{`echo ran >> "$COUNTER"; echo 0123456789 > data`}, Env: map[string]string{"COUNTER": c}})
	short := runner.ShortHash(env.Hash)
	dir := filepath.Join(cache, short)
	if _, err := r.BuildEnvironment(context.Background(), env, nil); err != nil {
		t.Fatal(err)
	}
	list, err := ListEnvironments(cache)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListEnvironments: %+v, %v; want one", list, err)
	}
	e := list[0]
	if e.Short != short || e.Hash != env.Hash || e.Name != "agent" || e.Dir != dir || e.Bytes < 11 ||
		e.BuiltAt.IsZero() || e.LastUsed.IsZero() || e.BuildSeconds <= 0 || !e.InUse || e.Leftover || e.FailedLog != "" {
		t.Errorf("ListEnvironments: %+v", e)
	}

	err = RemoveEnvironment(cache, short)
	if !errors.Is(err, ErrEnvironmentInUse) || !strings.Contains(err.Error(), short) {
		t.Fatalf("RemoveEnvironment while held: %v; want ErrEnvironmentInUse", err)
	}
	assertMarker(t, dir, env)

	r.Close()
	if list, _ := ListEnvironments(cache); len(list) != 1 || list[0].InUse {
		t.Errorf("after Close: %+v; want it not in use", list)
	}
	if err := RemoveEnvironment(cache, env.Hash); err != nil {
		t.Fatalf("RemoveEnvironment after Close: %v", err)
	}
	assertNoDir(t, dir)
	assertNoDir(t, dir+lockSuffix)
	if list, err := ListEnvironments(cache); err != nil || len(list) != 0 {
		t.Errorf("after RemoveEnvironment: %+v, %v", list, err)
	}
	if err := RemoveEnvironment(cache, short); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("removing it twice: %v; want fs.ErrNotExist", err)
	}
	if err := RemoveEnvironment(cache, "../../etc"); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a name that is no short hash: %v", err)
	}

	b, err := r.BuildEnvironment(context.Background(), env, nil)
	if err != nil || b.Reused {
		t.Errorf("after its removal: %+v, %v; want it built anew", b, err)
	}
	if n := count(t, c); n != 2 {
		t.Errorf("the steps ran %d times, want 2", n)
	}
}

// TestListEnvironmentsFlagsLeftovers: an interrupted build's directory
// and a failed build's log are listed as leftovers, and removable.
func TestListEnvironmentsFlagsLeftovers(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	half, failed := "0123456789abcdef", "fedcba9876543210"
	if err := os.MkdirAll(filepath.Join(cache, half, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, content := range map[string]string{
		filepath.Join(cache, half, "bin", "x"):         "12345",
		filepath.Join(cache, half+buildingLogSuffix):   "+ x",
		filepath.Join(cache, failed+failedLogSuffix):   "boom\n",
		filepath.Join(cache, "not-an-environment.txt"): "",
	} {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	list, err := ListEnvironments(cache)
	if err != nil || len(list) != 2 {
		t.Fatalf("%+v, %v; want two leftovers", list, err)
	}
	if e := list[0]; e.Short != half || !e.Leftover || e.Dir != filepath.Join(cache, half) || e.Bytes != 8 || e.Hash != "" || e.InUse {
		t.Errorf("interrupted build: %+v", e)
	}
	if e := list[1]; e.Short != failed || !e.Leftover || e.Dir != "" || e.FailedLog != filepath.Join(cache, failed+failedLogSuffix) || e.Bytes != 5 {
		t.Errorf("failed build: %+v", e)
	}
	for _, short := range []string{half, failed} {
		if err := RemoveEnvironment(cache, short); err != nil {
			t.Errorf("remove %s: %v", short, err)
		}
	}
	if left := leftovers(t, cache); len(left) != 1 || left[0] != "not-an-environment.txt" {
		t.Errorf("left: %v", left)
	}
	if list, err := ListEnvironments(filepath.Join(cache, "missing")); err != nil || list != nil {
		t.Errorf("a missing cache: %+v, %v", list, err)
	}
}

// TestGCEnvironments: gc keeps an environment a live Runner holds and one
// used within OlderThan, removes the others and what builds left, and a
// dry run removes nothing.
func TestGCEnvironments(t *testing.T) {
	t.Parallel()
	held := envRunner(t, Options{})
	cache := held.opts.EnvCache
	build := func(r *Runner, name string) *runner.Environment {
		env := hashed(t, runner.Environment{Name: name, Build: []string{"echo " + name + " > data"}})
		if _, err := r.BuildEnvironment(context.Background(), env, nil); err != nil {
			t.Fatal(err)
		}
		return env
	}
	heldEnv := build(held, "held")
	other := envRunner(t, Options{EnvCache: cache})
	oldEnv := build(other, "old")
	other.Close()
	if err := os.MkdirAll(filepath.Join(cache, "0123456789abcdef"), 0o755); err != nil { // an interrupted build
		t.Fatal(err)
	}
	later := time.Now().Add(2 * time.Hour)
	var out strings.Builder
	if err := GCEnvironments(cache, GCOptions{OlderThan: time.Hour, DryRun: true, Now: func() time.Time { return later }}, &out); err != nil {
		t.Fatal(err)
	}
	if list, _ := ListEnvironments(cache); len(list) != 3 {
		t.Fatalf("a dry run removed something: %+v", list)
	}
	for _, want := range []string{
		"keep    environment " + runner.ShortHash(heldEnv.Hash) + " (held, ",
		"would delete environment " + runner.ShortHash(oldEnv.Hash) + " (old, last used 2h",
		"would delete environment 0123456789abcdef (left by an unfinished or failed build",
		": would delete 2, kept 1, failed 0",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run: no %q in\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := GCEnvironments(cache, GCOptions{OlderThan: 3 * time.Hour, Now: func() time.Time { return later }}, &out); err != nil {
		t.Fatal(err)
	}
	list, _ := ListEnvironments(cache)
	if len(list) != 2 || !strings.Contains(out.String(), "deleted 1, kept 2") ||
		!strings.Contains(out.String(), "used more recently than 3h0m0s") {
		t.Errorf("young ones must stay, the leftover go: %+v\n%s", list, out.String())
	}
	out.Reset()
	if err := GCEnvironments(cache, GCOptions{}, &out); err != nil {
		t.Fatal(err)
	}
	if list, _ := ListEnvironments(cache); len(list) != 1 || list[0].Hash != heldEnv.Hash {
		t.Errorf("after gc with no age: %+v; want only the held one\n%s", list, out.String())
	}
}
