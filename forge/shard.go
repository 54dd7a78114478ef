package forge

// One benchmark, several machines: `forge run --shard K/N` plays a share of
// the jobs, `forge merge` makes one run of the shards' records (merge.go).

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// checkShard checks that s is a share of a run: K in 1..N.
func checkShard(s record.Shard) error {
	switch {
	case s.Count < 1:
		return fmt.Errorf("%s: N, the number of shards, must be at least 1", s)
	case s.Index < 1 || s.Index > s.Count:
		return fmt.Errorf("%s: K must be between 1 and N (%d)", s, s.Count)
	}
	return nil
}

// ParseShard reads "K/N": shard K of N, K in 1..N. Its errors start with
// the value given.
func ParseShard(v string) (record.Shard, error) {
	k, n, ok := strings.Cut(strings.TrimSpace(v), "/")
	if !ok {
		return record.Shard{}, fmt.Errorf("%q: want K/N, e.g. 1/3 (shard 1 of 3)", v)
	}
	ki, kerr := strconv.Atoi(k)
	ni, nerr := strconv.Atoi(n)
	if kerr != nil || nerr != nil {
		return record.Shard{}, fmt.Errorf("%q: want K/N with whole numbers, e.g. 1/3", v)
	}
	s := record.Shard{Index: ki, Count: ni}
	if err := checkShard(s); err != nil {
		return record.Shard{}, err
	}
	return s, nil
}

// jobKey is what decides a job's shard: its candidate, task and trial,
// never its place in the manifest.
func jobKey(candidate, task string, trial int) string {
	return candidate + "\x00" + task + "\x00" + strconv.Itoa(trial)
}

// ShardsOf says which shard of count each job belongs to (1..count): the
// jobs sorted by the FNV-64a hash of their key are dealt out in turn, so
// shares differ by at most one and do not depend on the manifest's order.
func ShardsOf(jobs []runner.Job, count int) []int {
	type keyed struct {
		hash uint64
		key  string
		i    int
	}
	ks := make([]keyed, len(jobs))
	for i, j := range jobs {
		key := jobKey(j.CandidateID, j.TaskID, j.Trial)
		h := fnv.New64a()
		h.Write([]byte(key))
		ks[i] = keyed{h.Sum64(), key, i}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.hash, b.hash), strings.Compare(a.key, b.key))
	})
	out := make([]int, len(jobs))
	for pos, k := range ks {
		out[k.i] = pos%count + 1
	}
	return out
}

// shard keeps the plan's jobs of shard s (nil: all of them). The plan's
// candidates and tasks stay whole: the shard is a share of the whole suite,
// scored and merged as such.
func (p *Plan) shard(s *record.Shard) (*Plan, error) {
	if s == nil {
		return p, nil
	}
	if err := checkShard(*s); err != nil {
		return nil, fmt.Errorf("shard %w", err)
	}
	of := ShardsOf(p.Jobs, s.Count)
	var jobs []runner.Job
	for i, j := range p.Jobs {
		if of[i] == s.Index {
			jobs = append(jobs, j)
		}
	}
	p.Shard = &record.Shard{Index: s.Index, Count: s.Count, Jobs: len(jobs), Of: len(p.Jobs)}
	p.Jobs = jobs
	return p, nil
}

// partial makes the outcome of a record that is not a whole run say so,
// after scoring: a shard or a merge missing shards has no winner, and a
// shard's incomplete candidates are those whose own jobs did not end.
func partial(rec *record.Record, trials iter.Seq[*record.Trial]) {
	switch {
	case rec.Shard != nil:
		rec.Winner, rec.Comparison = nil, nil
		rec.Incomplete = unfinished(trials)
		rec.WinnerLine = fmt.Sprintf("shard %s: %d of %d jobs; merge the shards for the verdict",
			rec.Shard, rec.Shard.Jobs, rec.Shard.Of)
		if len(rec.Incomplete) > 0 {
			ids := make([]string, len(rec.Incomplete))
			for i, u := range rec.Incomplete {
				ids[i] = u.CandidateID
			}
			rec.WinnerLine += "; incomplete: " + strings.Join(ids, ", ") + " did not run"
		}
	case len(rec.MissingShards) > 0:
		rec.Winner, rec.Comparison = nil, nil
		rec.WinnerLine = "incomplete: " + ShardsText(rec.MissingShards) + " not merged"
	}
}

// ShardsText is "shard 2/3" or "shards 1/4, 3/4".
func ShardsText(shards []record.Shard) string {
	parts := make([]string, len(shards))
	for i, s := range shards {
		parts[i] = s.String()
	}
	if len(parts) == 1 {
		return "shard " + parts[0]
	}
	return "shards " + strings.Join(parts, ", ")
}

// unfinished lists, by candidate, the tasks of a shard's jobs on which no
// trial ran to an end the candidate answers for (as scoring's incomplete
// does for a whole run, but only over the jobs the shard played).
func unfinished(trials iter.Seq[*record.Trial]) []record.Unjudged {
	type group struct {
		scored bool
		first  *record.Trial // its first trial: the reason, when none is scored
	}
	groups := map[[2]string]*group{} // by candidate and task
	order := map[string][]string{}   // each candidate's tasks, as first seen
	for r := range trials {
		key := [2]string{r.CandidateID, r.TaskID}
		g := groups[key]
		if g == nil {
			g = &group{first: r}
			groups[key] = g
			order[r.CandidateID] = append(order[r.CandidateID], r.TaskID)
		}
		g.scored = g.scored || r.ErrorKind.Scored()
	}
	var out []record.Unjudged
	for _, id := range slices.Sorted(maps.Keys(order)) {
		var tasks []string
		var first *record.Trial
		for _, t := range order[id] {
			if g := groups[[2]string{id, t}]; !g.scored {
				tasks = append(tasks, t)
				first = cmp.Or(first, g.first)
			}
		}
		if len(tasks) == 0 {
			continue
		}
		u := record.Unjudged{CandidateID: id, Reason: fmt.Sprintf("%s: %s", first.ErrorKind, first.ErrorMessage)}
		if tasks[0] != "" {
			u.TaskIDs = tasks
			u.Reason = strings.Join(tasks, ", ") + ": " + u.Reason
		}
		out = append(out, u)
	}
	return out
}

// sameShare reports whether a run that played share had can be resumed
// as want: the same shard of a plan of as many jobs (other --only or
// --trials would cut other shares).
func sameShare(had, want *record.Shard) bool {
	return had.Same(want) && (had == nil || had.Of == 0 || had.Of == want.Of)
}

// ShardDiffersError refuses to resume a run as another share of the jobs.
type ShardDiffersError struct {
	RunID     string
	Had, Want *record.Shard
}

func (e *ShardDiffersError) Error() string {
	what := func(s *record.Shard) string {
		switch {
		case s == nil:
			return "all the jobs"
		case e.Had.Same(e.Want):
			return fmt.Sprintf("shard %s of %d jobs", s, s.Of)
		}
		return "shard " + s.String()
	}
	return fmt.Sprintf("resume %s: the run played %s, not %s", e.RunID, what(e.Had), what(e.Want))
}
