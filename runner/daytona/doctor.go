package daytona

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"

	"github.com/forge-run/forge/runner"
)

// Doctor runs a tiny job on the account (create, upload, execute, read its
// report, verify, delete) and prints each phase's latency to w, how the
// sandbox keeps a verifier from what a candidate leaves running
// (isolateText), then the account's snapshots. An unusable key is a *runner.UnusableError.
func Doctor(ctx context.Context, opts Options, w io.Writer) error {
	if opts.RunID == "" {
		opts.RunID = fmt.Sprintf("doctor-%d", time.Now().Unix())
	}
	opts.LedgerPath = ""
	opts.Volume = nil
	labels := map[string]string{"forge-doctor": "1"}
	maps.Copy(labels, opts.Labels)
	opts.Labels = labels
	if err := opts.Validate(); err != nil {
		return err
	}
	fmt.Fprintf(w, "daytona: API %s, API key set\n", opts.APIURL)

	dir, err := os.MkdirTemp("", "forge-doctor-")
	if err != nil {
		return fmt.Errorf("doctor: %w", err)
	}
	defer os.RemoveAll(dir)
	script := dir + "/doctor.sh"
	if err := os.WriteFile(script, []byte("printf 'forge doctor: %s\\n' \"$1\" > \"$2\"\necho ok\n"), 0o644); err != nil {
		return fmt.Errorf("doctor: %w", err)
	}
	r, err := New(ctx, opts)
	if err != nil {
		return err
	}
	job := runner.Job{
		RunID: opts.RunID, CandidateID: "doctor", Trial: 1, Objective: "reach Daytona",
		Command: []string{"sh", "doctor.sh"}, Files: []runner.File{{Src: script, Dst: "doctor.sh"}},
		OutputFile: "doctor.md", Timeout: 2 * time.Minute,
		Verify: &runner.Verify{Command: doctorVerifier, Timeout: time.Minute},
	}
	res, runErr := r.Run(ctx, job)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.DeleteTimeout)
	defer cancel()
	closeErr := r.Close(cctx)

	ph, names := res.Phases, []string{"create", "upload", "execute", "download", "verify", "delete", "total"}
	for i, s := range []float64{ph.Create, ph.Upload, ph.Execute, ph.Download, ph.Verify, ph.Cleanup, res.JobSeconds} {
		fmt.Fprintf(w, "  %-9s %7.3fs", names[i], s)
		if names[i] == "execute" && res.RuntimeSeconds > 0 {
			fmt.Fprintf(w, " (the command itself %.3fs)", res.RuntimeSeconds)
		}
		fmt.Fprintln(w)
	}
	switch {
	case runErr != nil:
		return runErr
	case !res.Success:
		return fmt.Errorf("doctor: the test job failed (%s): %s", res.ErrorKind, res.ErrorMessage)
	case !strings.Contains(string(res.Artifact), "reach Daytona"):
		return fmt.Errorf("doctor: the test job's output came back wrong: %q", res.Artifact)
	case len(r.Undeleted()) > 0:
		return fmt.Errorf("doctor: could not delete sandbox %s: %w", strings.Join(r.Undeleted(), ", "), closeErr)
	}
	snaps, err := listSnapshots(ctx, opts, r.client)
	if err != nil {
		return fmt.Errorf("doctor: cannot list the account's snapshots (environments are built as snapshots): %w", described(err))
	}
	fmt.Fprintln(w, isolationLine(res.Metrics))
	fmt.Fprintf(w, "daytona: snapshots: %s\n", snapshotSummary(snaps))
	fmt.Fprintf(w, "daytona: ok (sandbox %s created, used and deleted)\n", res.SandboxID)
	return nil
}

// snapshotSummary is e.g. "5 in the account, 2 of them forge's
// environments (forge-env-*): 1 active, 1 error".
func snapshotSummary(snaps []*types.Snapshot) string {
	states := map[string]int{}
	forge := 0
	for _, sn := range snaps {
		if strings.HasPrefix(sn.Name, runner.SnapshotPrefix) {
			forge++
			states[sn.State]++
		}
	}
	s := fmt.Sprintf("%d in the account, %d of them forge's environments (%s*)", len(snaps), forge, runner.SnapshotPrefix)
	sep := ": "
	for _, st := range slices.Sorted(maps.Keys(states)) {
		s += fmt.Sprintf("%s%d %s", sep, states[st], st)
		sep = ", "
	}
	return s
}

// doctorVerifier is the doctor job's verifier: reward 1, and the metric
// "private" 1 when its reward directory is a mount of its own (a private
// mount namespace's tmpfs: isolateText), else 0.
const doctorVerifier = `if grep -q " $` + runner.VerifierLogsVar + ` " /proc/self/mountinfo 2>/dev/null; then p=1; else p=0; fi
printf '{"reward": 1, "private": %s}\n' "$p" > "$` + runner.VerifierLogsVar + `/` + runner.RewardJSON + `"`

// isolationLine says how the doctor's verifier was kept from what a
// candidate leaves running, in the runner's snapshot or image.
func isolationLine(metrics map[string]float64) string {
	if metrics["private"] == 1 {
		return "daytona: verifier: a reward directory of its own, in a private mount namespace (what a candidate leaves running goes on, and cannot write the reward)"
	}
	return "daytona: verifier: this sandbox allows no private mount namespace (unshare -m as root, or with sudo -n): what a candidate leaves running is ended before its verifier runs"
}
