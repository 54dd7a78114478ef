package cli

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/compare"
	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/record"
)

// mergeOptions are `forge merge`'s flags and the shards' runs it merges.
type mergeOptions struct {
	env          *Env
	shards       []string
	manifest     string
	out          string
	runID        string
	allowPartial bool
	quiet        bool
	reportOptions
	gateOptions
}

// Validate checks the arguments and flags before any run is read.
func (o *mergeOptions) Validate() error {
	broken := firstBroken([]rule{
		{len(o.shards) == 0, "merge takes the shards' runs (RUN...)"},
		{o.runID != "" && !forge.ValidID(o.runID), fmt.Sprintf("--run-id %q: use letters, digits, '_', '.' and '-' only", o.runID)},
	})
	return cmp.Or(broken, o.gateOptions.Validate(), o.reportOptions.Validate())
}

func newMergeCmd(env *Env, runF func(*mergeOptions) error) *cobra.Command {
	o := &mergeOptions{env: env}
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
		PreRunE: func(cmd *cobra.Command, args []string) error {
			o.shards = args
			o.failUnderSet, o.maxDropSet = cmd.Flags().Changed("fail-under"), cmd.Flags().Changed("max-drop")
			return o.Validate()
		},
		RunE: func(*cobra.Command, []string) error { return runF(o) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.manifest, "file", "f", "forge.yaml", "the manifest the shards played")
	f.StringVar(&o.out, "out", "artifacts", "output root: run ids are looked up in it and the merged run writes to <out>/<run-id>/")
	f.StringVar(&o.runID, "run-id", "", "the merged run's id (default: <date>-<time>-<random>)")
	f.BoolVar(&o.allowPartial, "allow-partial", false, "merge without the missing shards: their jobs are recorded cancelled and the run gives no verdict")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	o.reportOptions.addFlags(cmd)
	o.gateOptions.addFlags(cmd, "merged")
	return cmd
}

func runMerge(o *mergeOptions) error {
	m, err := loadManifest(o.manifest)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if err := checkBaseline(o.out, o.baseline); err != nil {
		return err
	}
	opts := forge.MergeOptions{Manifest: m, OutRoot: o.out, AllowPartial: o.allowPartial}
	for _, ref := range o.shards {
		rec, path, err := compare.Open(ref, o.out)
		if err != nil {
			return withCode(ExitUsage, err)
		}
		opts.Shards = append(opts.Shards, rec)
		opts.Dirs = append(opts.Dirs, filepath.Dir(path))
	}
	if opts.RunID, err = newRunID(o.out, o.runID); err != nil {
		return err
	}
	rec, err := forge.Merge(opts)
	if err != nil {
		return withCode(ExitInfra, explain(err, nil, nil)) // a refused merge is a usage error (exitCode)
	}
	dir := filepath.Join(o.out, rec.RunID)
	if !o.quiet {
		fmt.Fprintf(o.env.Stderr, "forge: merged %d shards of %d into %s\n", len(opts.Shards), opts.Shards[0].Shard.Count, dir)
	}
	if err := o.reportOptions.write(o.env, rec, dir); err != nil {
		return withCode(ExitInfra, err)
	}
	return o.verdict(o.env, o.out, m, rec, finishShards(opts.Shards))
}

// newRunID is the id of a new run under out: id when given, which must
// not have results yet, else a fresh one.
func newRunID(out, id string) (string, error) {
	if id == "" {
		return forge.NewRunID(time.Now()), nil
	}
	if _, err := os.Stat(filepath.Join(out, id, record.ResultsFile)); err == nil {
		return "", withCode(ExitUsage, fmt.Errorf("--run-id %s: %s already exists", id, filepath.Join(out, id)))
	}
	return id, nil
}

// finishShards says how to finish a merged run some of whose jobs did not
// run: resume the shards that have such jobs, then merge again.
func finishShards(shards []*record.Record) string {
	var cmds []string
	for _, s := range shards {
		if slices.ContainsFunc(s.Results, forge.Resumable) {
			cmds = append(cmds, fmt.Sprintf("forge run --resume %s (shard %s)", s.RunID, s.Shard))
		}
	}
	return "finish the shards where they ran, then merge again:\n  " + strings.Join(cmds, "\n  ")
}
