package forge

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

func TestParseShard(t *testing.T) {
	for in, want := range map[string]record.Shard{"1/3": {Index: 1, Count: 3}, "3/3": {Index: 3, Count: 3}, "1/1": {Index: 1, Count: 1}, " 2/5 ": {Index: 2, Count: 5}} {
		got, err := ParseShard(in)
		if err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"":     "want K/N",
		"3":    "want K/N",
		"a/3":  "whole numbers",
		"1/b":  "whole numbers",
		"0/3":  "0/3: K must be between 1 and N (3)",
		"4/3":  "4/3: K must be between 1 and N (3)",
		"-1/3": "K must be between 1 and N (3)",
		"1/0":  "1/0: N, the number of shards, must be at least 1",
		"0/0":  "at least 1",
	} {
		if _, err := ParseShard(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseShard(%q): %v, want an error saying %q", in, err, msg)
		}
	}
}

// shardSuite is a suite of three candidates and seven tasks, its lists in
// the order given.
func shardSuite(t *testing.T, cands, tasks []string, extra string) *Manifest {
	t.Helper()
	var b strings.Builder
	b.WriteString("objective: x\ncandidates:\n")
	for _, c := range cands {
		fmt.Fprintf(&b, "  - {id: %s, script: %s.py}\n", c, c)
	}
	b.WriteString("tasks:\n")
	for _, task := range tasks {
		fmt.Fprintf(&b, "  - {id: %s, expected: \"%s\"}\n", task, task)
	}
	b.WriteString(extra)
	m, err := loadSuite(t, b.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func reversed(s []string) []string {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

var (
	shardCands = []string{"a", "b", "c"}
	shardTasks = []string{"q1", "q2", "q3", "q4", "q5", "q6", "q7"}
)

// TestShardsAreBalancedAndOrderFree: every job is in exactly one shard,
// shards differ in size by at most one, and reordering the manifest's
// candidates and tasks changes no job's shard.
func TestShardsAreBalancedAndOrderFree(t *testing.T) {
	m := shardSuite(t, shardCands, shardTasks, "")
	rev := shardSuite(t, reversed(shardCands), reversed(shardTasks), "")
	whole, err := m.Plan(Overrides{Trials: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Jobs) != 42 {
		t.Fatalf("%d jobs", len(whole.Jobs))
	}
	for n := 1; n <= 5; n++ {
		shardOf := map[string]int{}
		var sizes []int
		for k := 1; k <= n; k++ {
			for _, mm := range []*Manifest{m, rev} {
				p, err := mm.Plan(Overrides{Trials: 2, Shard: &record.Shard{Index: k, Count: n}})
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Candidates) != 3 || len(p.Tasks) != 7 || p.Shard.Of != 42 || p.Shard.Jobs != len(p.Jobs) {
					t.Errorf("shard %d/%d: %d candidates, %d tasks, shard %+v", k, n, len(p.Candidates), len(p.Tasks), p.Shard)
				}
				for _, j := range p.Jobs {
					name := j.Name()
					if had, ok := shardOf[name]; ok && (mm == m || had != k) {
						t.Errorf("%d shards: %s in shard %d and %d", n, name, had, k)
					}
					shardOf[name] = k
				}
				if mm == m {
					sizes = append(sizes, len(p.Jobs))
				}
			}
		}
		if len(shardOf) != 42 {
			t.Errorf("%d shards: %d jobs of 42", n, len(shardOf))
		}
		if slices.Max(sizes)-slices.Min(sizes) > 1 {
			t.Errorf("%d shards: sizes %v", n, sizes)
		}
	}
	// A shard of one is the whole run.
	one, _ := m.Plan(Overrides{Trials: 2, Shard: &record.Shard{Index: 1, Count: 1}})
	if !slices.EqualFunc(one.Jobs, whole.Jobs, func(a, b runner.Job) bool { return a.Name() == b.Name() }) {
		t.Error("shard 1/1 is not the whole plan in its order")
	}
	if _, err := m.Plan(Overrides{Shard: &record.Shard{Index: 4, Count: 3}}); err == nil {
		t.Error("shard 4/3 planned")
	}
}

// shardJob plays a job deterministically: a good at everything, b right on
// odd trials, c on tasks q1..q3; runtimes differ by job, so that scores
// are normalised within each task across the candidates.
func shardJob(ctx context.Context, job runner.Job) (runner.Result, error) {
	h := fnv.New32a()
	h.Write([]byte(job.Name()))
	res := runner.Result{RuntimeSeconds: 1 + float64(h.Sum32()%1000)/100}
	answer := job.TaskID
	if (job.CandidateID == "b" && job.Trial%2 == 0) || (job.CandidateID == "c" && job.TaskID > "q3") {
		answer = "wrong"
	}
	res.SetArtifact([]byte(answer), int64(len(answer)))
	res.Settle(job, runner.Outcome{ExitCode: new(int), ArtifactFound: true})
	return res, nil
}

const shardScoring = `scoring:
  - {type: artifact, checks: [{equals_task: expected}]}
  - {type: runtime, weight: 0.2}
`

// playShards plays the suite once whole and once as n shards, and returns
// the whole run's record and the shards' (with their directories).
func playShards(t *testing.T, m *Manifest, out string, n int) (*record.Record, []*record.Record, []string) {
	t.Helper()
	run := func(id string, s *record.Shard) *record.Record {
		p, err := m.Plan(Overrides{Trials: 2, Shard: s})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: fakeRunner{run: shardJob},
			OutRoot: out, RunID: id})
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	whole := run("whole", nil)
	var shards []*record.Record
	var dirs []string
	for k := 1; k <= n; k++ {
		id := fmt.Sprintf("shard%d", k)
		shards = append(shards, run(id, &record.Shard{Index: k, Count: n}))
		dirs = append(dirs, filepath.Join(out, id))
	}
	return whole, shards, dirs
}

// TestMergeIsOneRun: the merged shards are the whole run: the same
// results in the same order, the same standings, statistics, winner and
// matrix, except for the run's id and times; each job's files are in the
// merged run's directory where its record says.
func TestMergeIsOneRun(t *testing.T) {
	m := shardSuite(t, shardCands, shardTasks, shardScoring)
	out := t.TempDir()
	whole, shards, dirs := playShards(t, m, out, 3)
	for _, s := range shards {
		if s.Winner != nil || !strings.HasPrefix(s.WinnerLine, "shard "+s.Shard.String()+": ") || len(s.Incomplete) != 0 {
			t.Errorf("shard %s: winner %v, line %q, incomplete %+v", s.Shard, s.Winner, s.WinnerLine, s.Incomplete)
		}
	}
	if whole.Winner == nil || *whole.Winner != "a" {
		t.Fatalf("the whole run: %s", whole.WinnerLine)
	}
	slices.Reverse(shards) // the order they are given in does not matter
	slices.Reverse(dirs)
	merged, err := Merge(MergeOptions{Manifest: m, Shards: shards, Dirs: dirs, OutRoot: out, RunID: "merged"})
	if err != nil {
		t.Fatal(err)
	}
	onDisk := readRecord(t, filepath.Join(out, "merged", record.ResultsFile))
	for _, rec := range []*record.Record{merged, &onDisk} {
		got, want := comparable(rec), comparable(whole)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("merged record differs from the whole run's:\n%+v\nwant\n%+v", got, want)
		}
	}
	if merged.StartedAt.After(shards[2].StartedAt) || merged.FinishedAt.Before(shards[0].FinishedAt) {
		t.Errorf("merged run from %v to %v", merged.StartedAt, merged.FinishedAt)
	}
	for _, r := range merged.Results {
		b, err := os.ReadFile(filepath.Join(out, "merged", filepath.FromSlash(r.ArtifactPath)))
		want, _ := shardJob(context.Background(), runner.Job{CandidateID: r.CandidateID, TaskID: r.TaskID, Trial: r.Trial})
		if err != nil || string(b) != string(want.Artifact) {
			t.Errorf("%s: artifact %q, %v", r.ArtifactPath, b, err)
		}
		dir := filepath.Join(out, "merged", filepath.Dir(filepath.FromSlash(r.ArtifactPath)))
		if _, err := os.Stat(filepath.Join(dir, "task.json")); err != nil {
			t.Error(err)
		}
	}
	// The shards keep their own files.
	if _, err := os.Stat(filepath.Join(dirs[0], shards[0].Results[0].ArtifactPath)); err != nil {
		t.Error(err)
	}
}

// comparable is a record without what differs between two plays of the
// same jobs: the run's id and times.
func comparable(rec *record.Record) record.Record {
	c := *rec
	c.RunID, c.StartedAt, c.FinishedAt = "", time.Time{}, time.Time{}
	c.Results = slices.Clone(rec.Results)
	for i := range c.Results {
		r := &c.Results[i]
		r.StartedAt, r.FinishedAt, r.JobSeconds, r.Phases = time.Time{}, time.Time{}, 0, runner.Phases{}
		r.Artifact = nil
	}
	return c
}

func TestMergeRefuses(t *testing.T) {
	m := shardSuite(t, shardCands, shardTasks, shardScoring)
	out := t.TempDir()
	_, shards, dirs := playShards(t, m, out, 3)
	merge := func(id string, idx []int, partial bool, mm *Manifest) (*record.Record, error) {
		var ss []*record.Record
		var ds []string
		for _, i := range idx {
			ss = append(ss, shards[i])
			ds = append(ds, dirs[i])
		}
		return Merge(MergeOptions{Manifest: mm, Shards: ss, Dirs: ds, OutRoot: out, RunID: id, AllowPartial: partial})
	}
	refused := func(what string, err error, msg string) {
		t.Helper()
		var re *MergeRefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v; want a refusal saying %q", what, err, msg)
		}
	}
	_, err := merge("m1", []int{0, 2}, false, m)
	refused("missing", err, "shard 2/3 is missing")
	if re := (*MergeRefusedError)(nil); !errors.As(err, &re) || re.Why != ShardsMissing {
		t.Errorf("missing: why %v", err)
	}
	_, err = merge("m1", []int{0}, false, m)
	refused("missing two", err, "shards 2/3, 3/3 are missing")
	_, err = merge("m1", []int{0, 1, 1, 2}, false, m)
	refused("twice", err, "shard 2/3 is given twice: "+dirs[1]+" and "+dirs[1])

	other := shardSuite(t, shardCands, shardTasks, shardScoring+"defaults: {timeout: 9s}\n")
	_, err = merge("m1", []int{0, 1, 2}, false, other)
	refused("changed manifest", err, "is not the manifest the shards played")
	o := *shards[1]
	o.ManifestHash = "sha256:other"
	_, err = Merge(MergeOptions{Manifest: m, Shards: []*record.Record{shards[0], &o, shards[2]}, Dirs: dirs, OutRoot: out, RunID: "m1"})
	refused("different manifests", err, dirs[0]+" and "+dirs[1]+" played different manifests")
	o = *shards[1]
	o.Shard = &record.Shard{Index: 2, Count: 4, Jobs: 1, Of: 42}
	_, err = Merge(MergeOptions{Manifest: m, Shards: []*record.Record{shards[0], &o, shards[2]}, Dirs: dirs, OutRoot: out, RunID: "m1"})
	refused("other split", err, "is shard 1/3, "+dirs[1]+" is shard 2/4")
	o = *shards[1]
	o.Shard = &record.Shard{Index: 3, Count: 3, Jobs: 14, Of: 42}
	_, err = Merge(MergeOptions{Manifest: m, Shards: []*record.Record{shards[0], &o}, Dirs: dirs[:2], OutRoot: out, RunID: "m1", AllowPartial: true})
	refused("jobs of another shard", err, "belongs to shard 2/3, not 3/3")
	o = *shards[1]
	o.Shard = nil
	_, err = Merge(MergeOptions{Manifest: m, Shards: []*record.Record{shards[0], &o}, Dirs: dirs[:2], OutRoot: out, RunID: "m1"})
	refused("not a shard", err, dirs[1]+" is not a shard")
	if _, err := os.Stat(filepath.Join(out, "m1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused merge wrote %s: %v", filepath.Join(out, "m1"), err)
	}

	// --allow-partial: the missing shard's jobs are cancelled, no winner.
	rec, err := merge("m2", []int{0, 2}, true, m)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Winner != nil || rec.WinnerLine != "incomplete: shard 2/3 not merged" ||
		!reflect.DeepEqual(rec.MissingShards, []record.Shard{{Index: 2, Count: 3}}) || len(rec.Results) != 42 {
		t.Errorf("partial merge: winner %v, line %q, missing %+v, %d results", rec.Winner, rec.WinnerLine, rec.MissingShards, len(rec.Results))
	}
	cancelled := 0
	for _, r := range rec.Results {
		if r.ErrorKind == runner.ErrCancelled && r.ErrorMessage == "shard 2/3 not merged" {
			cancelled++
		}
	}
	if cancelled != shards[1].Shard.Jobs {
		t.Errorf("%d jobs cancelled, shard 2/3 has %d", cancelled, shards[1].Shard.Jobs)
	}
	_, err = merge("m2", []int{0, 1, 2}, false, m)
	refused("existing run", err, "run m2 already has results")
}

// TestShardResume: a shard is resumed as itself, never as another share.
func TestShardResume(t *testing.T) {
	m := shardSuite(t, shardCands, shardTasks, shardScoring)
	out := t.TempDir()
	_, shards, _ := playShards(t, m, out, 3)
	p, _ := m.Plan(Overrides{Trials: 2, Shard: &record.Shard{Index: 2, Count: 3}})
	opts := Options{Manifest: m, Plan: p, Runner: fakeRunner{run: shardJob}, OutRoot: out, RunID: "shard1", Resume: shards[0]}
	var sd *ShardDiffersError
	if _, err := Run(context.Background(), opts); !errors.As(err, &sd) || !strings.Contains(err.Error(), "played shard 1/3, not shard 2/3") {
		t.Errorf("resume shard 1/3 as 2/3: %v", err)
	}
	opts.Plan, _ = m.Plan(Overrides{Trials: 2})
	if _, err := Run(context.Background(), opts); !errors.As(err, &sd) || !strings.Contains(err.Error(), "not all the jobs") {
		t.Errorf("resume shard 1/3 as a whole run: %v", err)
	}
	opts.Plan, _ = m.Plan(Overrides{Trials: 2, Shard: &record.Shard{Index: 1, Count: 3}})
	if rec, err := Run(context.Background(), opts); err != nil || !rec.Shard.Same(shards[0].Shard) {
		t.Errorf("resume shard 1/3: %v", err)
	}
}

// TestShardIncomplete: a shard whose own job did not run to an end is
// incomplete (forge run exits 3 and prints the resume command); the other
// shards' jobs are not its concern.
func TestShardIncomplete(t *testing.T) {
	m := shardSuite(t, shardCands, shardTasks, shardScoring)
	p, _ := m.Plan(Overrides{Trials: 2, Shard: &record.Shard{Index: 1, Count: 3}})
	victim := p.Jobs[0]
	fr := fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
		if job.Name() == victim.Name() {
			res := runner.Result{}
			res.Failed(runner.ErrAuth, "key refused")
			return res, nil
		}
		return shardJob(ctx, job)
	}}
	rec, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: fr, OutRoot: t.TempDir(), RunID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	// The same task's other trial, if the shard has it, ran: then the
	// candidate is judged on that task.
	other := slices.ContainsFunc(p.Jobs, func(j runner.Job) bool {
		return j.CandidateID == victim.CandidateID && j.TaskID == victim.TaskID && j.Trial != victim.Trial
	})
	if other {
		if len(rec.Incomplete) != 0 {
			t.Errorf("incomplete %+v", rec.Incomplete)
		}
		return
	}
	want := "[{" + victim.CandidateID + " [" + victim.TaskID + "] " + victim.TaskID + ": auth: key refused}]"
	if got := fmt.Sprint(rec.Incomplete); got != want || !strings.Contains(rec.WinnerLine, "incomplete: "+victim.CandidateID+" did not run") {
		t.Errorf("incomplete %s, want %s; line %q", got, want, rec.WinnerLine)
	}
}
