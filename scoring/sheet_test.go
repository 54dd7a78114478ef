package scoring

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// TestSheetAsTrialsEnd: a sheet named in plan order and filled as trials
// end, from many goroutines in any order, scores as ScoreSuite does over
// the whole trials, and gives back each trial's names and scores.
func TestSheetAsTrialsEnd(t *testing.T) {
	cfg := Config{Scorers: []Scorer{{Type: TypeSuccess}, {Type: TypeRuntime, Weight: new(0.5)}}}
	s := Suite{Candidates: []string{"a", "b"}, Tasks: []Task{{ID: "t1"}, {ID: "t2", Weight: 2}}, PassAtK: 1}
	var trials []record.Trial
	for _, task := range []string{"t1", "t2"} {
		for n, c := range []string{"a", "b"} {
			for trial := 1; trial <= 3; trial++ {
				r := record.Trial{Result: runner.Result{CandidateID: c, TaskID: task, Trial: trial, Success: (trial+n)%3 != 0, RuntimeSeconds: float64(trial + n)}}
				if !r.Success {
					r.Failed(runner.ErrCandidateFailed, "exit 1")
				}
				if trial == 2 && c == "b" {
					r.Success = false
					r.Failed(runner.ErrInfra, "sandbox gone")
				}
				trials = append(trials, r)
			}
		}
	}
	want := ScoreSuite(cfg, s, trials)

	sh := NewSheet(cfg, s, len(trials))
	for i, r := range trials {
		sh.Name(i, r.CandidateID, r.TaskID, r.Trial)
	}
	var wg sync.WaitGroup
	for i := len(trials) - 1; i >= 0; i-- {
		wg.Go(func() { sh.Set(i, &trials[i]) })
	}
	wg.Wait()
	got := sh.Outcome()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the sheet scores otherwise:\n got %+v\nwant %+v", got, want)
	}
	for i, r := range trials {
		c, task, n := sh.Names(i)
		if c != r.CandidateID || task != r.TaskID || n != r.Trial {
			t.Errorf("trial %d is named %s/%s#%d, want %s/%s#%d", i, c, task, n, r.CandidateID, r.TaskID, r.Trial)
		}
	}
	i := 0
	for kept := range sh.Trials(got.Scores) {
		if r := trials[i]; kept.CandidateID != r.CandidateID || kept.ErrorKind != r.ErrorKind || kept.Score != got.Scores[i] {
			t.Errorf("trial %d kept as %+v", i, kept)
		}
		i++
	}
	if i != len(trials) {
		t.Errorf("%d trials kept of %d", i, len(trials))
	}
	scores := sh.TrialScores(got.Scores)
	for _, ts := range scores {
		if ts.CandidateID == "b" && ts.Trial == 2 {
			t.Errorf("an infra failure has a score: %+v", ts)
		}
	}
	if n := len(scores); n != len(trials)-2 {
		t.Errorf("%d trial scores of %d trials, two of them infra failures: %s", n, len(trials), fmt.Sprint(scores))
	}
}
