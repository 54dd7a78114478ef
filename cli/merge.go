package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/compare"
	"github.com/forge-run/forge/forge"
)

// mergeOptions are `forge merge`'s flags.
type mergeOptions struct {
	manifest     string
	out          string
	runID        string
	allowPartial bool
	format       string
	reports      []string
	matrix       bool
	failUnder    float64
	baseline     string
	maxDrop      float64
	quiet        bool
}

// Validate checks the flags before any run is read.
func (o *mergeOptions) Validate() error {
	if o.runID != "" && !forge.ValidID(o.runID) {
		return flagError{fmt.Errorf("--run-id %q: use letters, digits, '_', '.' and '-' only", o.runID)}
	}
	if err := checkGateFlags(o.failUnder, o.maxDrop); err != nil {
		return err
	}
	return checkReportFlags(o.format, o.reports)
}

func newMergeCmd(env *Env) *cobra.Command {
	o := &mergeOptions{}
	cmd := &cobra.Command{
		Use:   "merge RUN...",
		Short: "Make one run of the shards of a run (forge run --shard K/N)",
		Long: `Merge the shards of a run, played with forge run --shard 1/N … N/N (on as
many machines), into one run under <out>/<run-id>/: every job's result and
files, scored, ranked and reported exactly as the same jobs played in one
run, and held to the same gates. A RUN is a run id under --out, a run
directory, or a results.json path.

The shards must be of one run of this manifest: the same manifest (and the
files it names), tasks, trials and candidates, each shard once. A missing
shard is refused; with --allow-partial its jobs are recorded cancelled, the
run names the missing shards and gives no verdict (exit 3).`,
		Example: `  forge merge shard-1 shard-2 shard-3 --run-id nightly
  forge merge shards/*/ --report summary.md --fail-under 0.7`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return flagError{errors.New("merge takes the shards' runs (RUN...)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if cmd.Flags().Changed("max-drop") && o.baseline == "" {
				return flagError{errors.New("--max-drop needs --baseline")}
			}
			return runMerge(env, o, args, gateFlags{out: o.out, failUnder: o.failUnder, failUnderSet: cmd.Flags().Changed("fail-under"),
				baseline: o.baseline, maxDrop: o.maxDrop, maxDropSet: cmd.Flags().Changed("max-drop")})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.manifest, "file", "f", "forge.yaml", "the manifest the shards played")
	f.StringVar(&o.out, "out", "artifacts", "output root: run ids are looked up in it and the merged run writes to <out>/<run-id>/")
	f.StringVar(&o.runID, "run-id", "", "the merged run's id (default: <date>-<time>-<random>)")
	f.BoolVar(&o.allowPartial, "allow-partial", false, "merge without the missing shards: their jobs are recorded cancelled and the run gives no verdict")
	f.BoolVar(&o.matrix, "matrix", false, "a suite: print the per-task matrix in the table whatever its size")
	f.StringVar(&o.format, "format", "table", "stdout report: table, json, markdown, junit, csv or html")
	f.StringArrayVar(&o.reports, "report", nil, "also write a report to `FILE` (format from .json .md .xml .csv .html); repeatable")
	f.Float64Var(&o.failUnder, "fail-under", 0, "exit 1 when the winner's score is below this (0..1), or there is no winner")
	f.StringVar(&o.baseline, "baseline", "", "compare the merged run with `RUN` (a run id under --out, a run directory or a results.json)")
	f.Float64Var(&o.maxDrop, "max-drop", 0, "with --baseline: exit 1 when a candidate's score dropped significantly by more than this")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	return cmd
}

func runMerge(env *Env, o *mergeOptions, refs []string, g gateFlags) error {
	m, err := loadManifest(o.manifest)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if o.baseline != "" {
		if err := checkBaseline(o.out, o.baseline); err != nil {
			return err
		}
	}
	opts := forge.MergeOptions{Manifest: m, OutRoot: o.out, RunID: o.runID, AllowPartial: o.allowPartial}
	for _, ref := range refs {
		rec, path, err := compare.Open(ref, o.out)
		if err != nil {
			return withCode(ExitUsage, err)
		}
		opts.Shards = append(opts.Shards, rec)
		opts.Dirs = append(opts.Dirs, filepath.Dir(path))
	}
	now := time.Now
	if opts.RunID == "" {
		opts.RunID = forge.NewRunID(now())
	} else if _, err := os.Stat(filepath.Join(o.out, opts.RunID, forge.ResultsFile)); err == nil {
		return withCode(ExitUsage, fmt.Errorf("--run-id %s: %s already exists", opts.RunID, filepath.Join(o.out, opts.RunID)))
	}
	rec, err := forge.Merge(opts)
	var refused *forge.MergeRefusedError
	switch {
	case errors.As(err, &refused):
		return withCode(ExitUsage, err)
	case err != nil:
		return withCode(ExitInfra, err)
	}
	dir := filepath.Join(o.out, rec.RunID)
	if !o.quiet {
		fmt.Fprintf(env.Stderr, "forge: merged %d shards of %d into %s\n", len(opts.Shards), opts.Shards[0].Shard.Count, dir)
	}
	if err := writeReports(env, &runOptions{format: o.format, reports: o.reports, matrix: o.matrix}, rec, dir, now); err != nil {
		return withCode(ExitInfra, err)
	}
	return verdict(env, m, rec, g, finishShards(opts.Shards))
}

// finishShards says how to finish a merged run some of whose jobs did not
// run: resume the shards that have such jobs, then merge again.
func finishShards(shards []*forge.Record) string {
	var cmds []string
	for _, s := range shards {
		if slices.ContainsFunc(s.Results, forge.Resumable) {
			cmds = append(cmds, fmt.Sprintf("forge run --resume %s (shard %s)", s.RunID, s.Shard))
		}
	}
	return "finish the shards where they ran, then merge again:\n  " + strings.Join(cmds, "\n  ")
}
