package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/runner/local"
)

// runOptions are `forge run`'s flags, and which of them were given where
// that is a fact of its own (seedSet, and the gates').
type runOptions struct {
	env         *Env
	manifest    string
	harbor      string
	out         string
	runID       string
	resume      string
	daytona     bool
	local       bool
	noFallback  bool
	containment string
	// over are the flags that shape the plan, as forge.Plan takes them;
	// --retries and --shard join them once parsed.
	over    forge.Overrides
	retries optionalInt
	shard   string
	seedSet bool
	// manifestSet: the manifest was named (-f or the argument); else
	// --resume plays the run's own.
	manifestSet bool
	passAt      int
	maxBuilds   int
	maxCost     float64
	quiet       bool
	verbose     bool
	// view serves the viewer beside the run on viewAddr (--view).
	view     bool
	viewAddr string
	noOpen   bool
	noToken  bool
	reportOptions
	gateOptions
}

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

func newRunCmd(env *Env, runF func(context.Context, *runOptions) error) *cobra.Command {
	o := &runOptions{env: env}
	cmd := &cobra.Command{
		Use:   "run [MANIFEST]",
		Short: "Play the tournament a manifest describes",
		Long: `Run every candidate of the manifest (× trials) in its own sandbox, score and
rank them, print the standings on stdout and write results under
<out>/<run-id>/. Progress goes to stderr.`,
		Args: manifestArg(&o.manifest),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			o.seedSet, o.failUnderSet, o.maxDropSet = f.Changed("seed"), f.Changed("fail-under"), f.Changed("max-drop")
			o.manifestSet = f.Changed("file") || len(args) > 0
			o.gateOptions.oracle = o.over.Oracle
			return o.Validate()
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
	o.addFlags(cmd)
	return cmd
}

func (o *runOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&o.manifest, "file", "f", "forge.yaml", "the manifest to play")
	f.StringVar(&o.harbor, "harbor", "", "a suite: play the Harbor tasks in `DIR` (a directory of task directories, or one), over the manifest's harbor:")
	f.BoolVar(&o.daytona, "daytona", false, "run candidates in Daytona sandboxes (needs DAYTONA_API_KEY)")
	f.BoolVar(&o.local, "local", false, "run candidates as local processes (the default)")
	f.BoolVar(&o.noFallback, "no-fallback", false, "with --daytona: fail (exit 3) instead of running locally when no API key is usable")
	f.StringVar(&o.containment, "containment", "auto", "local jobs: how each job's processes are held and ended: auto (the strongest here), pidns, cgroup, pgroup or process")
	f.IntVar(&o.over.Concurrency, "concurrency", 0, "jobs run at once (default: manifest, else 8)")
	f.IntVar(&o.over.Trials, "trials", 0, "runs of each candidate (default: manifest, else 1)")
	f.Var(&o.retries, "retries", "times a trial that hit an infrastructure error is played again in a fresh sandbox (default: manifest, else 2; 0: never)")
	f.DurationVar(&o.over.Timeout, "timeout", 0, "per-candidate execution timeout, e.g. 90s (default: manifest, else 60s)")
	f.StringVar(&o.out, "out", "artifacts", "output root; the run writes to <out>/<run-id>/")
	f.StringVar(&o.runID, "run-id", "", "the run's id (default: <date>-<time>-<random>)")
	f.StringSliceVar(&o.over.Only, "only", nil, "run only these candidate ids (comma separated)")
	f.StringSliceVar(&o.over.Tasks, "tasks", nil, "a suite: run only these task ids, or the tasks whose field=value (comma separated)")
	f.IntVar(&o.over.Sample, "sample", 0, "a suite: run `N` of its tasks, drawn at random (see --seed)")
	f.Int64Var(&o.over.Seed, "seed", 0, "with --sample: the seed of the draw (default: random, printed and recorded)")
	f.IntVar(&o.passAt, "pass-at", 1, "a suite: the k of the standings' pass@k (needs at least k trials)")
	f.IntVar(&o.maxBuilds, "max-builds", forge.DefaultMaxBuilds, "environments (a suite's task images) built at once")
	f.BoolVar(&o.over.Oracle, "oracle", false, "a Harbor suite: play each task's solution/solve.sh instead of the candidates; exit 1 naming the tasks it does not solve")
	f.Var(agentFlag{&o.over.Agents}, "agent", "play this agent (claude-code, codex, or one of the manifest's agents:) instead of the manifest's candidates; repeat it for several, each followed by its --model")
	f.Var(modelFlag{&o.over.Agents}, "model", "the model of the --agent before it, e.g. --agent claude-code --model claude-sonnet-4-5 --agent codex --model gpt-5")
	f.BoolVar(&o.over.AllowMissingSecrets, "allow-missing-secrets", false, "run without the candidates whose secrets are not set, instead of refusing the run")
	f.StringVar(&o.resume, "resume", "", "finish run `RUN_ID`: play again only its jobs that were cancelled or hit infrastructure errors")
	f.Float64Var(&o.maxCost, "max-cost", 0, "stop starting jobs once what this run spent, plus what the jobs under way are expected to cost, would pass `USD` (default: the manifest's budget.max_cost_usd); --resume goes on")
	f.StringVar(&o.shard, "shard", "", "play only shard `K/N` of the jobs (1 ≤ K ≤ N), e.g. on machine K of N; forge merge makes one run of the N shards")
	f.BoolVar(&o.view, "view", false, "serve the viewer (forge view) beside the run: its page shows trials as they finish; it serves on after the run until Ctrl-C")
	f.StringVar(&o.viewAddr, "view-addr", "127.0.0.1:8787", "with --view: the viewer's address")
	f.BoolVar(&o.noOpen, "no-open", false, "with --view: do not open a browser")
	f.BoolVar(&o.noToken, "no-token", false, "with --view: serve without the token the printed URL carries")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "progress includes every phase of every job and what candidates print ([id] | stdout, [id] ! stderr)")
	o.reportOptions.addFlags(cmd)
	o.gateOptions.addFlags(cmd, "finished")
}

// Validate checks the flags against each other before anything starts:
// the first rule broken is the error.
func (o *runOptions) Validate() error {
	_, shardErr := forge.ParseShard(o.shard)
	broken := firstBroken([]rule{
		{o.daytona && o.local, "--daytona and --local exclude each other"},
		{o.noFallback && !o.daytona, "--no-fallback only makes sense with --daytona"},
		{o.over.Concurrency < 0, fmt.Sprintf("--concurrency %d: must be at least 1", o.over.Concurrency)},
		{o.over.Trials < 0, fmt.Sprintf("--trials %d: must be at least 1", o.over.Trials)},
		{o.maxBuilds < 1, fmt.Sprintf("--max-builds %d: must be at least 1", o.maxBuilds)},
		{o.retries.set && o.retries.n < 0, fmt.Sprintf("--retries %d: must not be negative (0 plays no trial again)", o.retries.n)},
		{o.over.Timeout < 0, fmt.Sprintf("--timeout %s: must be positive", o.over.Timeout)},
		{o.runID != "" && !forge.ValidID(o.runID), fmt.Sprintf("--run-id %q: use letters, digits, '_', '.' and '-' only", o.runID)},
		{o.resume != "" && o.runID != "", "--resume names the run; drop --run-id"},
		{o.over.Oracle && len(o.over.Only) > 0, "--oracle plays the tasks' solutions, no candidate: drop --only"},
		{o.over.Oracle && len(o.over.Agents) > 0, "--oracle plays the tasks' solutions, no agent: drop --agent"},
		{len(o.over.Agents) > 0 && len(o.over.Only) > 0, "--agent chooses the candidates: drop --only"},
		{o.resume != "" && !forge.ValidID(o.resume), fmt.Sprintf("--resume %q: not a run id", o.resume)},
		{o.over.Sample < 0, fmt.Sprintf("--sample %d: must be at least 1", o.over.Sample)},
		{o.passAt < 1, fmt.Sprintf("--pass-at %d: must be at least 1", o.passAt)},
		{o.resume != "" && (len(o.over.Tasks) > 0 || o.over.Sample > 0), "--resume plays the run's own tasks; drop --tasks and --sample"},
		{o.containment == "" || o.localOptions().Validate() != nil,
			fmt.Sprintf("--containment %q: want auto, pidns, cgroup, pgroup or process", o.containment)},
		{o.quiet && o.verbose, "--quiet and --verbose exclude each other"},
		{o.shard != "" && o.baseline != "", "--baseline: a shard gives no verdict; give it to forge merge"},
		{o.maxCost < 0, fmt.Sprintf("--max-cost %v: want a number of dollars above 0", o.maxCost)},
		{o.seedSet && o.over.Sample == 0, "--seed needs --sample"},
		{o.shard != "" && o.over.Sample > 0 && !o.seedSet, "--shard with --sample needs --seed: every shard must draw the same tasks"},
		{o.failUnderSet && o.shard != "", "--fail-under: a shard gives no verdict; give it to forge merge"},
		{o.shard != "" && shardErr != nil, fmt.Sprintf("--shard %v", shardErr)},
	})
	return cmp.Or(broken, o.gateOptions.Validate(), o.reportOptions.Validate())
}

// localOptions are the local runner's options: forge's environment and
// --containment ("auto" is the local runner's default, the empty name).
func (o *runOptions) localOptions() local.Options {
	c := local.Containment(o.containment)
	if o.containment == "auto" {
		c = local.ContainAuto
	}
	return local.Options{Getenv: o.env.Getenv, Containment: c}
}
