package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona"
	"github.com/forge-run/forge/runner/local"
)

// runOptions are `forge run`'s flags.
type runOptions struct {
	manifest     string
	daytona      bool
	local        bool
	noFallback   bool
	containment  string
	concurrency  int
	trials       int
	retries      optionalInt
	timeout      time.Duration
	out          string
	runID        string
	only         []string
	tasks        []string
	sample       int
	seed         int64
	passAt       int
	matrix       bool
	allowMissing bool
	format       string
	reports      []string
	failUnder    float64
	quiet        bool
	verbose      bool
	resume       string
	baseline     string
	maxDrop      float64
	maxCost      float64
	shard        string
	// view starts the viewer beside the run (--view) on viewAddr;
	// viewer is then the server, which outlives runTournament.
	view     bool
	viewAddr string
	noOpen   bool
	viewer   *http.Server
	viewPage string
}

func (o *runOptions) viewURL() string { return o.viewPage }

// optionalInt is an int flag that knows whether it was given (0 is a
// value of its own).
type optionalInt struct {
	n   int
	set bool
}

func (v *optionalInt) String() string {
	if !v.set {
		return ""
	}
	return strconv.Itoa(v.n)
}

func (v *optionalInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not a whole number")
	}
	v.n, v.set = n, true
	return nil
}

func (v *optionalInt) Type() string { return "int" }

// Validate checks the flags against each other before anything starts.
func (o *runOptions) Validate() error {
	switch {
	case o.daytona && o.local:
		return flagError{errors.New("--daytona and --local exclude each other")}
	case o.noFallback && !o.daytona:
		return flagError{errors.New("--no-fallback only makes sense with --daytona")}
	case o.concurrency < 0:
		return flagError{fmt.Errorf("--concurrency %d: must be at least 1", o.concurrency)}
	case o.trials < 0:
		return flagError{fmt.Errorf("--trials %d: must be at least 1", o.trials)}
	case o.retries.set && o.retries.n < 0:
		return flagError{fmt.Errorf("--retries %d: must not be negative (0 plays no trial again)", o.retries.n)}
	case o.timeout < 0:
		return flagError{fmt.Errorf("--timeout %s: must be positive", o.timeout)}
	case o.runID != "" && !forge.ValidID(o.runID):
		return flagError{fmt.Errorf("--run-id %q: use letters, digits, '_', '.' and '-' only", o.runID)}
	case o.resume != "" && o.runID != "":
		return flagError{errors.New("--resume names the run; drop --run-id")}
	case o.resume != "" && !forge.ValidID(o.resume):
		return flagError{fmt.Errorf("--resume %q: not a run id", o.resume)}
	case o.sample < 0:
		return flagError{fmt.Errorf("--sample %d: must be at least 1", o.sample)}
	case o.passAt < 1:
		return flagError{fmt.Errorf("--pass-at %d: must be at least 1", o.passAt)}
	case o.resume != "" && (len(o.tasks) > 0 || o.sample > 0):
		return flagError{errors.New("--resume plays the run's own tasks; drop --tasks and --sample")}
	case o.containment == "" || (local.Options{Containment: o.tier()}).Validate() != nil:
		return flagError{fmt.Errorf("--containment %q: want auto, pidns, cgroup, pgroup or process", o.containment)}
	case o.quiet && o.verbose:
		return flagError{errors.New("--quiet and --verbose exclude each other")}
	case o.shard != "" && o.baseline != "":
		return flagError{errors.New("--baseline: a shard gives no verdict; give it to forge merge")}
	}
	if o.maxCost < 0 {
		return flagError{fmt.Errorf("--max-cost %v: want a number of dollars above 0", o.maxCost)}
	}
	if err := checkGateFlags(o.failUnder, o.maxDrop); err != nil {
		return err
	}
	if o.shard != "" {
		if _, err := forge.ParseShard(o.shard); err != nil {
			return flagError{fmt.Errorf("--shard %w", err)}
		}
	}
	return checkReportFlags(o.format, o.reports)
}

// tier is --containment as the local runner names it ("auto" is its
// default, the empty name).
func (o *runOptions) tier() local.Containment {
	if o.containment == "auto" {
		return local.ContainAuto
	}
	return local.Containment(o.containment)
}

// localOptions are the local runner's options: forge's environment and
// --containment.
func (o *runOptions) localOptions(env *Env) local.Options {
	return local.Options{Getenv: env.Getenv, Containment: o.tier()}
}

func newRunCmd(env *Env) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Play the tournament a manifest describes",
		Long: `Run every candidate of the manifest (× trials) in its own sandbox, score and
rank them, print the standings on stdout and write results under
<out>/<run-id>/. Progress goes to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if cmd.Flags().Changed("max-drop") && o.baseline == "" {
				return flagError{errors.New("--max-drop needs --baseline")}
			}
			if cmd.Flags().Changed("seed") && o.sample == 0 {
				return flagError{errors.New("--seed needs --sample")}
			}
			if o.shard != "" && o.sample > 0 && !cmd.Flags().Changed("seed") {
				return flagError{errors.New("--shard with --sample needs --seed: every shard must draw the same tasks")}
			}
			if cmd.Flags().Changed("fail-under") && o.shard != "" {
				return flagError{errors.New("--fail-under: a shard gives no verdict; give it to forge merge")}
			}
			err := runTournament(cmd.Context(), env, o, cmd.Flags().Changed("fail-under"), cmd.Flags().Changed("max-drop"), cmd.Flags().Changed("seed"))
			if o.viewer != nil {
				// The run is over: the viewer serves on until Ctrl-C, unless
				// Ctrl-C is what ended the run.
				if !errors.Is(err, errInterrupted) {
					fmt.Fprintf(env.Stderr, "forge: the run is over; the viewer still serves %s (Ctrl-C stops it)\n", o.viewURL())
					waitSignal(cmd.Context(), env)
				}
				o.viewer.Shutdown(context.Background()) //nolint:errcheck // the process ends
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.manifest, "file", "f", "forge.yaml", "the manifest to play")
	f.BoolVar(&o.daytona, "daytona", false, "run candidates in Daytona sandboxes (needs DAYTONA_API_KEY)")
	f.BoolVar(&o.local, "local", false, "run candidates as local processes (the default)")
	f.BoolVar(&o.noFallback, "no-fallback", false, "with --daytona: fail (exit 3) instead of running locally when no API key is usable")
	f.StringVar(&o.containment, "containment", "auto", "local jobs: how each job's processes are held and ended: auto (the strongest here), pidns, cgroup, pgroup or process")
	f.IntVar(&o.concurrency, "concurrency", 0, "jobs run at once (default: manifest, else 8)")
	f.IntVar(&o.trials, "trials", 0, "runs of each candidate (default: manifest, else 1)")
	f.Var(&o.retries, "retries", "times a trial that hit an infrastructure error is played again in a fresh sandbox (default: manifest, else 2; 0: never)")
	f.DurationVar(&o.timeout, "timeout", 0, "per-candidate execution timeout, e.g. 90s (default: manifest, else 60s)")
	f.StringVar(&o.out, "out", "artifacts", "output root; the run writes to <out>/<run-id>/")
	f.StringVar(&o.runID, "run-id", "", "the run's id (default: <date>-<time>-<random>)")
	f.StringSliceVar(&o.only, "only", nil, "run only these candidate ids (comma separated)")
	f.StringSliceVar(&o.tasks, "tasks", nil, "a suite: run only these task ids (comma separated)")
	f.IntVar(&o.sample, "sample", 0, "a suite: run `N` of its tasks, drawn at random (see --seed)")
	f.Int64Var(&o.seed, "seed", 0, "with --sample: the seed of the draw (default: random, printed and recorded)")
	f.IntVar(&o.passAt, "pass-at", 1, "a suite: the k of the standings' pass@k (needs at least k trials)")
	f.BoolVar(&o.allowMissing, "allow-missing-secrets", false, "run without the candidates whose secrets are not set, instead of refusing the run")
	f.BoolVar(&o.matrix, "matrix", false, "a suite: print the per-task matrix in the table whatever its size")
	f.StringVar(&o.format, "format", "table", "stdout report: table, json, markdown, junit, csv or html")
	f.StringArrayVar(&o.reports, "report", nil, "also write a report to `FILE` (format from .json .md .xml .csv .html); repeatable")
	f.Float64Var(&o.failUnder, "fail-under", 0, "exit 1 when the winner's score is below this (0..1), or there is no winner")
	f.StringVar(&o.resume, "resume", "", "finish run `RUN_ID`: play again only its jobs that were cancelled or hit infrastructure errors")
	f.StringVar(&o.baseline, "baseline", "", "compare the finished run with `RUN` (a run id under --out, a run directory or a results.json)")
	f.Float64Var(&o.maxDrop, "max-drop", 0, "with --baseline: exit 1 when a candidate's score dropped significantly by more than this")
	f.Float64Var(&o.maxCost, "max-cost", 0, "stop starting jobs once what this run spent, plus what the jobs under way are expected to cost, would pass `USD` (default: the manifest's budget.max_cost_usd); --resume goes on")
	f.StringVar(&o.shard, "shard", "", "play only shard `K/N` of the jobs (1 ≤ K ≤ N), e.g. on machine K of N; forge merge makes one run of the N shards")
	f.BoolVar(&o.view, "view", false, "serve the viewer (forge view) beside the run: its page shows trials as they finish; it serves on after the run until Ctrl-C")
	f.StringVar(&o.viewAddr, "view-addr", "127.0.0.1:8787", "with --view: the viewer's address")
	f.BoolVar(&o.noOpen, "no-open", false, "with --view: do not open a browser")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "progress includes every phase of every job and what candidates print ([id] | stdout, [id] ! stderr)")
	return cmd
}

func runTournament(ctx context.Context, env *Env, o *runOptions, failUnderSet, maxDropSet, seedSet bool) error {
	defer collectSooner(env.Getenv)()
	m, err := loadManifest(o.manifest)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if o.baseline != "" {
		if err := checkBaseline(o.out, o.baseline); err != nil {
			return err
		}
	}
	now := time.Now
	runID := o.runID
	var resume *forge.Record
	look, err := lookup(env, m)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	over := forge.Overrides{Concurrency: o.concurrency, Trials: o.trials, Timeout: o.timeout, Only: o.only,
		Tasks: o.tasks, Sample: o.sample, Seed: o.seed, Lookup: look, AllowMissingSecrets: o.allowMissing}
	if o.retries.set {
		over.Retries = &o.retries.n
	}
	if o.shard != "" {
		s, _ := forge.ParseShard(o.shard) // validated
		over.Shard = &s
	}
	if o.resume != "" {
		runID = o.resume
		if resume, err = forge.ReadRecord(filepath.Join(o.out, runID, forge.ResultsFile)); err != nil {
			return withCode(ExitUsage, fmt.Errorf("--resume %s: %w", runID, err))
		}
		over.Tasks = resume.TaskIDs()
		if over.Shard == nil {
			over.Shard = resume.Shard // a shard is resumed as itself
		} // another --shard is refused by the run, which says why
	} else if o.sample > 0 && !seedSet {
		over.Seed = time.Now().UnixNano() % 1_000_000
	}
	plan, err := m.Plan(over)
	var uc *forge.UnknownCandidateError
	var ut *forge.UnknownTaskError
	var nt *forge.NoTasksError
	var ms *forge.MissingSecretsError
	switch {
	case errors.As(err, &uc):
		err = fmt.Errorf("--only %s: %w", uc.ID, err)
	case errors.As(err, &ut):
		err = fmt.Errorf("--tasks %s: %w", ut.ID, err)
	case errors.As(err, &nt):
		err = fmt.Errorf("--tasks/--sample: %w", err)
	case errors.As(err, &ms):
		err = fmt.Errorf("%w (--allow-missing-secrets leaves out the candidates that need them)", err)
	}
	if err != nil {
		return withCode(ExitUsage, err)
	}
	switch {
	case o.resume != "":
	case runID == "":
		runID = forge.NewRunID(now())
	default:
		if _, err := os.Stat(filepath.Join(o.out, runID, forge.ResultsFile)); err == nil {
			return withCode(ExitUsage, fmt.Errorf("--run-id %s: %s already exists", runID, filepath.Join(o.out, runID)))
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	interrupted := watchSignals(ctx, env, cancel)

	progress := newProgress(env.Stderr, o.quiet, o.verbose)
	be, err := chooseBackend(ctx, env, o, m, runID, progress.warnings())
	if err != nil {
		if interrupted.Load() {
			return errInterrupted
		}
		return err
	}
	defer be.close() //nolint:errcheck // closed again below, where errors are reported
	judges, closeJudges, err := judgeRunner(env, o, m, be)
	if err != nil {
		return err
	}
	defer closeJudges() //nolint:errcheck // a local runner's Close only waits

	for _, n := range plan.NotRun { // a warning: printed with --quiet too
		fmt.Fprintf(env.Stderr, "forge: %s does not run: %s\n", n.CandidateID, n.Reason)
	}
	events := progress.event
	if o.view {
		srv, url, err := startView(env, o.out, o.viewAddr, "", plan.SecretValues())
		if err != nil {
			return err
		}
		o.viewer, o.viewPage = srv, url+"run/"+runID
		fmt.Fprintf(env.Stderr, "forge: viewer at %s\n", o.viewPage)
		var once sync.Once
		events = func(e forge.Event) {
			progress.event(e)
			if !o.noOpen { // the run's page exists once a job starts
				once.Do(func() { openBrowser(env, o.viewPage) })
			}
		}
	}
	progress.header(m, plan, be.name)
	if env.StderrTTY && env.Getenv("TERM") != "dumb" {
		progress.startLive(len(plan.Jobs))
	}
	resuming := resume != nil
	rec, runErr := forge.Run(ctx, forge.Options{
		Manifest: m,
		Plan:     plan,
		Runner:   be.runner,
		Judges:   judges,
		Backend:  be.name,
		OutRoot:  o.out,
		RunID:    runID,
		Events:   events,
		Echo:     echoFor(o.verbose, progress),
		Now:      now,
		Resume:   resume,
		Release:  be,
		PassAtK:  o.passAt,
		// The flag, else the manifest's budget.
		MaxCostUSD: maxCost(o.maxCost, m),
		// The Daytona key never reaches a candidate; should its value show
		// up all the same, it is masked like a secret.
		Mask: []string{daytona.LoadCredentials(env.Getenv, m.Dir).APIKey},
	})
	progress.stopLive()
	be.Release() // after a run refused before it started; once however often
	if rec == nil {
		if resuming { // refused before anything ran
			if td := (*forge.TrialsDifferError)(nil); errors.As(runErr, &td) {
				runErr = fmt.Errorf("%w; use the same --trials", runErr)
			}
			if sd := (*forge.ShardDiffersError)(nil); errors.As(runErr, &sd) {
				runErr = fmt.Errorf("%w; drop --shard: --resume plays the run's own jobs", runErr)
			}
			return withCode(ExitUsage, runErr)
		}
		return withCode(ExitInfra, runErr)
	}
	if err := writeReports(env, o, rec, filepath.Join(o.out, runID), now); err != nil && runErr == nil {
		runErr = withCode(ExitInfra, err)
	}
	progress.footer(filepath.Join(o.out, runID))
	for _, r := range rec.Results {
		if r.SecretInArtifact {
			fmt.Fprintf(env.Stderr, "forge: warning: the artifact of %s holds a secret's value; it is stored as written in %s\n",
				runner.TrialName(r.CandidateID, r.TaskID, r.Trial, r.Trial > 1), filepath.Join(o.out, runID, filepath.FromSlash(r.ArtifactPath)))
		}
	}

	switch {
	case interrupted.Load():
		fmt.Fprintf(env.Stderr, "forge: interrupted; partial results in %s; finish the run with:\n  %s\n",
			filepath.Join(o.out, runID, forge.ResultsFile), resumeCommand(o, rec.Backend, runID))
		return errInterrupted
	case rec.BudgetReached != nil && runErr == nil:
		// Standings of what ran are in the reports; no verdict.
		return withCode(ExitInfra, fmt.Errorf("%s; partial results in %s; go on with:\n  %s",
			rec.BudgetReached, filepath.Join(o.out, runID, forge.ResultsFile), resumeCommand(o, rec.Backend, runID)))
	case runErr != nil:
		var unusable *runner.UnusableError
		var build *runner.BuildError
		if errors.As(runErr, &build) {
			// What the build said last is why it failed.
			if len(build.Tail) > 0 {
				fmt.Fprintf(env.Stderr, "forge: the last lines of the build of environment %s:\n", build.Name)
				for _, l := range build.Tail {
					fmt.Fprintf(env.Stderr, "  | %s\n", l)
				}
			}
			where := ""
			for _, b := range rec.Environments {
				if b.Hash == build.Hash && b.Log != "" {
					where = " (its log: " + filepath.Join(o.out, runID, filepath.FromSlash(b.Log)) + ")"
				}
			}
			return fmt.Errorf("%w%s; no trial was played in it and everything started has been cleaned up", runErr, where)
		}
		if errors.As(runErr, &unusable) {
			var failing *forge.FailingInfraError
			if errors.As(runErr, &failing) {
				// Nothing is wrong with the run: it can go on once the
				// infrastructure does.
				return fmt.Errorf("%w; everything started has been cleaned up; once it works again, finish the run with: %s",
					runErr, resumeCommand(o, rec.Backend, runID))
			}
			return fmt.Errorf("%w; everything started has been cleaned up, partial results in %s", runErr,
				filepath.Join(o.out, runID, forge.ResultsFile))
		}
		return withCode(ExitInfra, runErr)
	}
	return verdict(env, m, rec, gateFlags{out: o.out, failUnder: o.failUnder, failUnderSet: failUnderSet,
		baseline: o.baseline, maxDrop: o.maxDrop, maxDropSet: maxDropSet},
		"finish the run with:\n  "+resumeCommand(o, rec.Backend, runID))
}

// collectSooner has the garbage collector run when the heap has grown by
// a quarter since the last collection, not doubled (Go's default), until
// the function it returns is called; GOGC in forge's environment wins. A
// run's heap is mostly long-lived: the manifest and the plan while it
// plays, then the record it reads back, scores and reports, about 1 KB a
// trial; collecting at a doubling would let a 100,000-trial run's peak
// memory be twice that (docs/command-line.md, README "At benchmark size").
func collectSooner(getenv func(string) string) (restore func()) {
	if getenv("GOGC") != "" {
		return func() {}
	}
	was := debug.SetGCPercent(25)
	return func() { debug.SetGCPercent(was) }
}

// echoFor streams candidates' output with --verbose.
func echoFor(verbose bool, p *progress) func(job, stream, line string) {
	if !verbose {
		return nil
	}
	return p.echo
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
			fmt.Fprintf(env.Stderr, "forge: %s: stopping jobs and cleaning up (again to quit at once)\n", sig)
			if env.StopSignals != nil {
				env.StopSignals()
			}
			cancel()
		case <-ctx.Done():
		}
	}()
	return interrupted
}

// maxCost is the run's budget: the --max-cost flag, else the manifest's
// budget.max_cost_usd, else none (0).
func maxCost(flag float64, m *forge.Manifest) float64 {
	if flag > 0 {
		return flag
	}
	if b := m.Budget.MaxCostUSD; b != nil {
		return *b
	}
	return 0
}
