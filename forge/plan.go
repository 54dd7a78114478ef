package forge

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/forge-run/forge/runner"
)

// Built-in defaults, the bottom of defaults < manifest < flags.
const (
	DefaultConcurrency = 8
	DefaultTrials      = 1
)

// Overrides are the command line's say over the manifest. Zero values leave
// the manifest's (or the default) in force.
type Overrides struct {
	Concurrency int
	Trials      int
	Timeout     time.Duration
	// Only restricts the run to these candidate ids.
	Only []string
}

// Plan is what a run will play: every job, in a stable order (candidates in
// manifest order, trials ascending).
type Plan struct {
	Objective   string
	Concurrency int
	Trials      int
	// Candidates are the ids taking part, in manifest order.
	Candidates []string
	Jobs       []runner.Job
}

// Plan applies the overrides to the manifest and lays out the jobs. RunID is
// filled in by the run.
func (m *Manifest) Plan(o Overrides) (*Plan, error) {
	if o.Concurrency < 0 || o.Trials < 0 || o.Timeout < 0 {
		return nil, errors.New("concurrency, trials and timeout must be positive")
	}
	p := &Plan{
		Objective:   m.Objective,
		Concurrency: cmp.Or(o.Concurrency, m.Defaults.Concurrency, DefaultConcurrency),
		Trials:      cmp.Or(o.Trials, m.Defaults.Trials, DefaultTrials),
	}
	for _, id := range o.Only {
		if !slices.ContainsFunc(m.Candidates, func(c Candidate) bool { return c.ID == id }) {
			return nil, &UnknownCandidateError{ID: id, Manifest: m.Path, Have: m.ids()}
		}
	}
	d := m.Defaults
	for _, c := range m.Candidates {
		if len(o.Only) > 0 && !slices.Contains(o.Only, c.ID) {
			continue
		}
		p.Candidates = append(p.Candidates, c.ID)
		env := map[string]string{}
		for k, v := range d.Env {
			env[k] = v
		}
		for k, v := range c.Env {
			env[k] = v
		}
		files := make([]runner.File, len(c.files))
		for i, f := range c.files {
			files[i] = runner.File{Src: f.src, Dst: f.dst}
		}
		optional := false
		for _, b := range []*bool{d.ArtifactOptional, c.ArtifactOptional} {
			if b != nil {
				optional = *b
			}
		}
		timeout := cmp.Or(o.Timeout, time.Duration(c.Timeout), time.Duration(d.Timeout), runner.DefaultTimeout)
		for t := 1; t <= p.Trials; t++ {
			p.Jobs = append(p.Jobs, runner.Job{
				CandidateID:      c.ID,
				Trial:            t,
				Objective:        m.Objective,
				Command:          append([]string(nil), c.argv...),
				Files:            files,
				Env:              env,
				Setup:            append(append([]string(nil), d.Setup...), c.Setup...),
				SetupTimeout:     cmp.Or(time.Duration(d.SetupTimeout), runner.DefaultSetupTimeout),
				OutputFile:       cmp.Or(c.OutputFile, d.OutputFile, runner.DefaultOutputFile),
				ArtifactOptional: optional,
				Timeout:          timeout,
				Limits:           runner.Limits{MaxOutputBytes: int64(d.MaxOutput), MaxArtifactBytes: int64(d.MaxArtifact)},
			})
		}
	}
	return p, nil
}

func (m *Manifest) ids() []string {
	ids := make([]string, len(m.Candidates))
	for i, c := range m.Candidates {
		ids[i] = c.ID
	}
	return ids
}

// UnknownCandidateError is an override naming a candidate the manifest does
// not have.
type UnknownCandidateError struct {
	ID, Manifest string
	Have         []string
}

func (e *UnknownCandidateError) Error() string {
	return fmt.Sprintf("no candidate %q in %s (have: %s)", e.ID, e.Manifest, strings.Join(e.Have, ", "))
}
