package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/internal/linux"
	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona"
	"github.com/forge-run/forge/scoring"
)

// tournament is a run forge run has planned: the manifest, the plan and
// where the run writes.
type tournament struct {
	o      *runOptions
	m      *forge.Manifest
	plan   *forge.Plan
	id     string         // the run's id
	resume *record.Record // the run --resume finishes
	// viewer serves page, the run's page, with --view; it outlives the run.
	viewer *http.Server
	page   string
}

// runTournament is forge run: load and plan, choose the backend, play,
// report and give the verdict. With --view the viewer then serves on
// until Ctrl-C, unless Ctrl-C is what ended the run.
func runTournament(ctx context.Context, o *runOptions) error {
	defer collectSooner(o.env.Getenv)()
	linux.EaseMonitor() // a run starts many short processes
	t, err := o.prepare()
	if err != nil {
		return err
	}
	err = t.play(ctx)
	if t.viewer != nil {
		if !errors.Is(err, errInterrupted) {
			fmt.Fprintf(o.env.Stderr, "forge: the run is over; the viewer still serves %s (Ctrl-C stops it)\n", t.page)
			waitSignal(ctx, o.env)
		}
		t.viewer.Shutdown(context.Background()) //nolint:errcheck // the process ends
	}
	return err
}

// prepare loads the manifest and plans the run the flags ask for: a
// resumed run's own tasks, a sample drawn with a seed, the run's id.
func (o *runOptions) prepare() (*tournament, error) {
	t := &tournament{o: o}
	over := o.over
	if o.resume != "" {
		var err error
		if t.resume, err = o.resumed(&over); err != nil {
			return nil, err
		}
	}
	m, err := loadSuite(o.manifest, o.harbor, o.over.Agents)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	if err := checkBaseline(o.out, o.baseline); err != nil {
		return nil, err
	}
	look, err := lookup(o.env, m)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	t.m = m
	over.Lookup = look
	if o.retries.set {
		over.Retries = &o.retries.n
	}
	if o.shard != "" {
		s, _ := forge.ParseShard(o.shard) // validated
		over.Shard = &s
	}
	if o.resume != "" {
		t.id = o.resume
		over.Tasks = t.resume.TaskIDs()
		// A shard is resumed as itself; another --shard is refused by the
		// run, which says why.
		over.Shard = cmp.Or(over.Shard, t.resume.Shard)
	} else if over.Sample > 0 && !o.seedSet {
		over.Seed = time.Now().UnixNano() % 1_000_000
	}
	if t.plan, err = m.Plan(over); err != nil {
		return nil, withCode(ExitUsage, explain(err, t, nil))
	}
	if o.resume == "" {
		t.id, err = newRunID(o.out, o.runID)
	}
	return t, err
}

// resumed reads the run --resume names and takes from it what the flags
// leave out: its manifest, trials and candidates. Candidates the run did
// not play are refused: --resume finishes a run, it adds to none.
func (o *runOptions) resumed(over *forge.Overrides) (*record.Record, error) {
	rec, err := record.Read(filepath.Join(o.out, o.resume, record.ResultsFile))
	if err != nil {
		return nil, withCode(ExitUsage, fmt.Errorf("--resume %s: %w", o.resume, err))
	}
	if !o.manifestSet && rec.ManifestPath != "" {
		o.manifest = rec.ManifestPath
	}
	over.Trials = cmp.Or(over.Trials, rec.TrialsPerCandidate())
	if len(over.Agents) > 0 {
		return rec, nil
	}
	if len(over.Only) == 0 {
		over.Only = rec.Candidates
	} else if extra := slices.DeleteFunc(slices.Clone(over.Only), func(id string) bool { return slices.Contains(rec.Candidates, id) }); len(extra) > 0 && len(rec.Candidates) > 0 {
		return nil, withCode(ExitUsage, fmt.Errorf("--resume %s: --only names %s, which the run did not play (it played %s): --resume finishes a run and adds to none; start a new run for them",
			o.resume, text.AndList(extra), text.AndList(rec.Candidates)))
	}
	return rec, nil
}

// resumeLine says what a resumed run keeps and plays again.
func resumeLine(id string, rec *record.Record, jobs int) string {
	kept := 0
	for i := range rec.Results {
		if !forge.Resumable(rec.Results[i]) {
			kept++
		}
	}
	if kept >= jobs {
		return fmt.Sprintf("forge: run %s is finished: its %s are kept, nothing to play", id, text.Count(kept, "trial", "trials"))
	}
	return fmt.Sprintf("forge: resuming %s: %s kept, %d to play", id, text.Count(kept, "trial", "trials"), jobs-kept)
}

// play plays the planned jobs on the backend the flags choose (a first
// SIGINT or SIGTERM cancels them), reports the run and gives its verdict.
func (t *tournament) play(ctx context.Context) error {
	env := t.o.env
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	interrupted := watchSignals(ctx, env, cancel)
	progress := newProgress(env.Stderr, t.o.quiet, t.o.verbose)
	be, err := chooseBackend(ctx, t.o, t.m, t.id, progress.warnings())
	if err != nil {
		if interrupted.Load() {
			return errInterrupted
		}
		return err
	}
	// forge.Run releases the backend before its last write; this is for a
	// run refused before it starts.
	defer be.Release()
	if ids := t.plan.ImageTasks(); len(ids) > 0 && be.name == "local" {
		return withCode(ExitUsage, fmt.Errorf("%s %s %s in %s own image (environment/Dockerfile), which local processes cannot honour: play %s with --daytona",
			text.Plural(len(ids), "task", "tasks"), text.Shorten(strings.Join(ids, ", "), 200),
			text.Plural(len(ids), "runs", "run"), text.Plural(len(ids), "its", "their"), text.Plural(len(ids), "it", "them")))
	}
	for _, n := range t.m.Notes {
		fmt.Fprintf(env.Stderr, "forge: note: %s\n", text.Inert(n))
	}
	for _, n := range t.plan.NotRun { // a warning: printed with --quiet too
		fmt.Fprintf(env.Stderr, "forge: %s does not run: %s\n", n.CandidateID, text.Inert(n.Reason))
	}
	events, err := t.events(progress)
	if err != nil {
		return err
	}
	progress.header(t.m, t.plan, be.name)
	if t.resume != nil {
		progress.printf("%s\n", resumeLine(t.id, t.resume, len(t.plan.Jobs)))
	}
	if env.StderrTTY && env.Getenv("TERM") != "dumb" {
		progress.startLive(len(t.plan.Jobs))
	}
	opts := t.options(be, events, progress)
	// The run has the plan now, and lets go of its jobs once all have
	// started: at 100,000 jobs, tens of MB not held to the end.
	t.plan = nil
	rec, runErr := forge.Run(ctx, opts)
	progress.stopLive()
	if rec == nil {
		if t.resume != nil { // refused before anything ran
			return withCode(ExitUsage, explain(runErr, t, nil))
		}
		return withCode(ExitInfra, runErr)
	}
	if err := t.report(rec, progress); err != nil && runErr == nil {
		runErr = withCode(ExitInfra, err)
	}
	return t.end(rec, runErr, interrupted.Load())
}

// events is where the run's events go: the progress, and with --view the
// viewer, started here, which a browser opens once the run's page exists.
func (t *tournament) events(p *progress) (func(forge.Event), error) {
	if !t.o.view {
		return p.event, nil
	}
	srv, url, err := startView(t.o.env, viewSpec{out: t.o.out, addr: t.o.viewAddr, flag: "--view-addr", page: "run/" + t.id,
		secrets: t.plan.SecretValues(), noToken: t.o.noToken})
	if err != nil {
		return nil, err
	}
	t.viewer, t.page = srv, url
	fmt.Fprintf(t.o.env.Stderr, "forge: viewer at %s\n", t.page)
	var once sync.Once
	return func(e forge.Event) {
		p.event(e)
		if !t.o.noOpen { // the run's page exists once a job starts
			once.Do(func() { openBrowser(t.o.env, t.page) })
		}
	}, nil
}

// options are forge.Run's options for the tournament on backend be.
func (t *tournament) options(be *backend, events func(forge.Event), p *progress) forge.Options {
	var echo func(job, stream, line string)
	if t.o.verbose {
		echo = p.echo
	}
	maxCost := t.o.maxCost // the flag, else the manifest's budget
	if b := t.m.Budget.MaxCostUSD; maxCost == 0 && b != nil {
		maxCost = *b
	}
	return forge.Options{Manifest: t.m, Plan: t.plan, Runner: be.runner, Judges: be.judges, Backend: be.name,
		OutRoot: t.o.out, RunID: t.id, Events: events, Echo: echo, Now: time.Now, Resume: t.resume, Release: be,
		PassAtK: t.o.passAt, MaxCostUSD: maxCost, MaxBuilds: t.o.maxBuilds,
		// The Daytona key never reaches a candidate; should its value show
		// up all the same, it is masked like a secret.
		Mask: []string{daytona.LoadCredentials(t.o.env.Getenv, t.m.Dir).APIKey},
	}
}

// report prints and writes the run's reports, says where its results are
// and warns of each artifact that holds a secret's value.
func (t *tournament) report(rec *record.Record, p *progress) error {
	err := t.o.reportOptions.write(t.o.env, rec, t.dir())
	p.printf("forge: results in %s\n", t.dir())
	if note := unusedPrices(t.m.Pricing, rec.Results); note != "" {
		p.printf("forge: note: %s\n", note)
	}
	for _, r := range rec.Results {
		if r.SecretInArtifact {
			fmt.Fprintf(t.o.env.Stderr, "forge: warning: the artifact of %s holds a secret's value; it is stored as written in %s\n",
				runner.TrialName(r.CandidateID, r.TaskID, r.Trial, r.Trial > 1), filepath.Join(t.dir(), filepath.FromSlash(r.ArtifactPath)))
		}
	}
	return err
}

// unusedPrices notes the models pricing: prices that no trial reported
// (a misspelt name prices nothing), with the names the trials did report.
func unusedPrices(p *scoring.Pricing, results []record.Trial) string {
	if p == nil || len(p.Models) == 0 {
		return ""
	}
	seen := map[string]bool{}
	for _, r := range results {
		if r.Usage != nil {
			for _, m := range r.Usage.Models {
				seen[m.Model] = true
			}
		}
	}
	if len(seen) == 0 {
		return "" // no trial reported usage: nothing to tell apart
	}
	unused := slices.DeleteFunc(slices.Sorted(maps.Keys(p.Models)), func(name string) bool { return seen[name] })
	if len(unused) == 0 {
		return ""
	}
	return fmt.Sprintf("pricing: no trial reported %s (its price went unused); the trials reported %s",
		text.AndList(unused), text.AndList(slices.Sorted(maps.Keys(seen))))
}

// end says how a run that ran ended: interrupted, out of budget, stopped
// by an error, else its verdict.
func (t *tournament) end(rec *record.Record, runErr error, interrupted bool) error {
	results := filepath.Join(t.dir(), record.ResultsFile)
	switch {
	case interrupted:
		fmt.Fprintf(t.o.env.Stderr, "forge: interrupted; partial results in %s; finish the run with:\n  %s\n",
			results, t.resumeCommand(rec.Backend))
		return errInterrupted
	case rec.BudgetReached != nil && runErr == nil:
		return withCode(ExitInfra, fmt.Errorf("%s; partial results in %s; go on with:\n  %s",
			rec.BudgetReached, results, t.resumeCommand(rec.Backend)))
	case runErr != nil:
		return withCode(ExitInfra, explain(runErr, t, rec))
	}
	return t.o.verdict(t.o.env, t.o.out, t.m, rec, "finish the run with:\n  "+t.resumeCommand(rec.Backend))
}

// dir is the run's directory.
func (t *tournament) dir() string { return filepath.Join(t.o.out, t.id) }

// resumeCommand is the command line that finishes the run: --resume with
// the flags that shape it and where it writes (the run's backend, not the
// one asked for, which may have fallen back).
func (t *tournament) resumeCommand(backend string) string {
	o := t.o
	args := []string{"forge", "run", "--resume", t.id}
	add := func(given bool, flag string, value ...any) {
		if given {
			args = append(args, flag)
			for _, v := range value {
				args = append(args, fmt.Sprint(v))
			}
		}
	}
	add(o.manifest != "forge.yaml", "-f", o.manifest)
	add(o.harbor != "", "--harbor", o.harbor)
	add(o.out != "artifacts", "--out", o.out)
	add(backend == "daytona", "--daytona")
	add(o.over.Trials > 0, "--trials", o.over.Trials)
	add(o.over.Oracle, "--oracle")
	add(len(o.over.Only) > 0, "--only", strings.Join(o.over.Only, ","))
	add(o.over.Concurrency > 0, "--concurrency", o.over.Concurrency)
	add(o.over.Timeout > 0, "--timeout", o.over.Timeout)
	add(o.retries.set, "--retries", o.retries.n)
	add(o.format != "table", "--format", o.format)
	add(o.matrix, "--matrix")
	add(o.passAt != 1, "--pass-at", o.passAt)
	for _, r := range o.reports {
		args = append(args, "--report", r)
	}
	for i, a := range args {
		args[i] = text.ShellWord(a)
	}
	return strings.Join(args, " ")
}

// buildLog prints the last lines of a failed build, which say why it
// failed, and names its log in the record.
func (t *tournament) buildLog(build *runner.BuildError, rec *record.Record) string {
	if len(build.Tail) > 0 {
		fmt.Fprintf(t.o.env.Stderr, "forge: the last lines of the build of environment %s:\n", build.Name)
		for _, l := range build.Tail {
			fmt.Fprintf(t.o.env.Stderr, "  | %s\n", text.Inert(l))
		}
	}
	where := ""
	for _, b := range rec.Environments {
		if b.Hash == build.Hash && b.Log != "" {
			where = " (its log: " + filepath.Join(t.dir(), filepath.FromSlash(b.Log)) + ")"
		}
	}
	return where
}

// watchSignals cancels the run on the first SIGINT/SIGTERM and restores the
// default behaviour, so a second one ends forge at once. The returned flag
// is set (before cancel is called) when a signal arrived.
func watchSignals(ctx context.Context, env *Env, cancel context.CancelFunc) *atomic.Bool {
	interrupted := new(atomic.Bool)
	if env.Signals == nil {
		return interrupted
	}
	go func() {
		select {
		case sig := <-env.Signals:
			interrupted.Store(true)
			// The default first: once the message says so, a second signal
			// quits at once.
			if env.StopSignals != nil {
				env.StopSignals()
			}
			fmt.Fprintf(env.Stderr, "forge: %s: stopping jobs and cleaning up (again to quit at once)\n", sig)
			cancel()
		case <-ctx.Done():
		}
	}()
	return interrupted
}
