package daytona

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	apiclient "github.com/daytonaio/daytona/libs/api-client-go"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	sdkerrors "github.com/daytonaio/daytona/libs/sdk-go/pkg/errors"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"

	"github.com/forge-run/forge/runner"
)

// GCOptions configure GC.
type GCOptions struct {
	OlderThan time.Duration // spares sandboxes created more recently; zero spares none
	DryRun    bool          // lists what would be deleted and deletes nothing
	// OutRoot is where runs keep <run-id>/sandboxes.jsonl: a run whose
	// ledger is open and whose process is alive owns its sandboxes. Empty:
	// no run is known to be live.
	OutRoot string
	Now     func() time.Time // nil means time.Now
}

// gcSandbox is one candidate for collection.
type gcSandbox struct {
	id, name, state, run string
	snapshot             string // "" for an image or the default snapshot
	created              time.Time
}

// GC deletes the sandboxes labelled app=forge that no live run owns, then
// forge's environment snapshots that no sandbox it keeps was created from,
// one line each to w. opts needs only the credentials.
func GC(ctx context.Context, opts Options, g GCOptions, w io.Writer) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	api := newAPIClient(opts)
	actx := context.WithValue(ctx, apiclient.ContextAccessToken, opts.APIKey)

	all, err := listSandboxes(actx, &opts, api)
	if err != nil {
		return gcError(actx, "list forge's sandboxes", err)
	}
	slices.SortFunc(all, func(a, b gcSandbox) int { return a.created.Compare(b.created) })

	owners := map[string]string{} // run ID -> why it is live ("" = not live)
	host, _ := os.Hostname()
	tally := runner.GCTally{W: w, DryRun: g.DryRun}
	var errs []error
	users := map[string]string{} // snapshot -> a sandbox left that was created from it
	for _, sb := range all {
		if sb.state == "destroying" || sb.state == "destroyed" {
			continue
		}
		age := now().Sub(sb.created)
		desc, of := sb.describe(age)
		why, seen := "", false
		switch {
		case g.OlderThan > 0 && (sb.created.IsZero() || age < g.OlderThan):
			why = "younger than " + g.OlderThan.String()
		case sb.run != "" && g.OutRoot != "":
			if why, seen = owners[sb.run]; !seen {
				why = runLiveness(filepath.Join(g.OutRoot, sb.run, LedgerFile), host)
				owners[sb.run] = why
			}
		}
		if why != "" {
			tally.Keep(desc, why)
		} else {
			err := gcDelete(actx, &opts, opts.calls(), &tally, desc, "sandbox "+sb.name, func(ctx context.Context) error {
				_, resp, err := api.SandboxAPI.DeleteSandbox(ctx, sb.id).Execute()
				return sdkerrors.ConvertAPIError(err, resp)
			})
			switch {
			case err == nil:
				continue // deleted, or in a dry run would be
			case classify(actx, err).class == classAuth:
				return gcError(actx, "delete "+sb.name, err)
			}
			errs = append(errs, err)
		}
		if _, seen := users[sb.snapshot]; sb.snapshot != "" && !seen {
			users[sb.snapshot] = "sandbox " + sb.name + of + " was created from it"
		}
	}
	tally.Summary("")
	errs = append(errs, gcSnapshots(actx, opts, g, now(), users, w))
	return errors.Join(errs...)
}

// listSandboxes lists the sandboxes labelled app=forge.
func listSandboxes(ctx context.Context, opts *Options, api *apiclient.APIClient) ([]gcSandbox, error) {
	labels, _ := json.Marshal(map[string]string{LabelApp: LabelAppValue})
	return allPages(ctx, opts, "list forge sandboxes", func(ctx context.Context, page, limit int) ([]gcSandbox, int, error) {
		res, resp, err := api.SandboxAPI.ListSandboxesPaginated(ctx).Labels(string(labels)).
			Page(float32(page)).Limit(float32(limit)).Execute()
		if err != nil {
			return nil, 0, sdkerrors.ConvertAPIError(err, resp)
		}
		var items []gcSandbox
		for _, sb := range res.Items {
			c, _ := time.Parse(time.RFC3339Nano, sb.GetCreatedAt())
			items = append(items, gcSandbox{
				id: sb.GetId(), name: sb.GetName(), state: string(sb.GetState()),
				run: sb.GetLabels()[LabelRun], snapshot: sb.GetSnapshot(), created: c,
			})
		}
		return items, int(res.GetTotalPages()), nil
	})
}

// describe names sb for GC's lines, with its run and age; of is " of run
// <id>" when it has one.
func (sb gcSandbox) describe(age time.Duration) (desc, of string) {
	desc = fmt.Sprintf("%s (%s", sb.name, sb.id)
	if sb.run != "" {
		desc, of = desc+", run "+sb.run, " of run "+sb.run
	}
	if !sb.created.IsZero() {
		desc += ", created " + age.Round(time.Second).String() + " ago"
	}
	return desc + ")", of
}

// gcSnapshots deletes forge's environment snapshots that no sandbox in
// users was created from, last used (or created) before g.OlderThan.
func gcSnapshots(ctx context.Context, opts Options, g GCOptions, now time.Time, users map[string]string, w io.Writer) error {
	client, err := newClient(opts)
	if err != nil {
		return err
	}
	all, err := listSnapshots(ctx, opts, client)
	if err != nil {
		return gcError(ctx, "list snapshots", err)
	}
	lastUsed := func(sn *types.Snapshot) time.Time { // or created
		if sn.LastUsedAt != nil && sn.LastUsedAt.After(sn.CreatedAt) {
			return *sn.LastUsedAt
		}
		return sn.CreatedAt
	}
	forge := slices.DeleteFunc(all, func(sn *types.Snapshot) bool {
		return !strings.HasPrefix(sn.Name, runner.SnapshotPrefix) || sn.State == snapRemoving
	})
	slices.SortStableFunc(forge, func(a, b *types.Snapshot) int { return lastUsed(a).Compare(lastUsed(b)) })
	tally := runner.GCTally{W: w, DryRun: g.DryRun}
	var errs []error
	for _, sn := range forge {
		desc := fmt.Sprintf("snapshot %s (%s, %s", sn.Name, sn.ID, sn.State)
		if !sn.CreatedAt.IsZero() {
			desc += ", created " + now.Sub(sn.CreatedAt).Round(time.Second).String() + " ago"
		}
		if sn.LastUsedAt != nil && !sn.LastUsedAt.IsZero() {
			desc += ", last used " + now.Sub(*sn.LastUsedAt).Round(time.Second).String() + " ago"
		}
		desc += ")"
		switch why, used := users[sn.Name]; {
		case used:
			tally.Keep(desc, why)
			continue
		case g.OlderThan > 0 && (lastUsed(sn).IsZero() || now.Sub(lastUsed(sn)) < g.OlderThan):
			tally.Keep(desc, "used more recently than "+g.OlderThan.String())
			continue
		}
		err := gcDelete(ctx, &opts, opts.deletions(), &tally, desc, "snapshot "+sn.Name, func(ctx context.Context) error {
			return client.Snapshot.Delete(ctx, sn)
		})
		if classify(ctx, err).class == classAuth {
			return gcError(ctx, "delete snapshot "+sn.Name, err)
		}
		errs = append(errs, err)
	}
	tally.Summary("snapshots")
	return errors.Join(errs...)
}

// gcDelete deletes what desc names with del (unless a dry run; gone counts
// as deleted) and tallies it; a refused key is returned as it came.
func gcDelete(ctx context.Context, opts *Options, b budget, tally *runner.GCTally, desc, what string, del func(context.Context) error) error {
	var err error
	if !tally.DryRun {
		err = opts.retry(ctx, "delete "+what, b, func(ctx context.Context) error { return gone(del(ctx)) })
	}
	switch {
	case err == nil:
		tally.Delete(desc)
		return nil
	case classify(ctx, err).class == classAuth:
		return err
	}
	tally.Fail(desc, describe(err))
	return fmt.Errorf("delete %s: %w", what, described(err))
}

func listSnapshots(ctx context.Context, opts Options, client *daytona.Client) ([]*types.Snapshot, error) {
	return allPages(ctx, &opts, "list snapshots", func(ctx context.Context, page, limit int) ([]*types.Snapshot, int, error) {
		res, err := client.Snapshot.List(ctx, &page, &limit)
		if err != nil {
			return nil, 0, err
		}
		return res.Items, res.TotalPages, nil
	})
}

func newClient(opts Options) (*daytona.Client, error) {
	c, err := daytona.NewClientWithConfig(&types.DaytonaConfig{APIKey: opts.APIKey, APIUrl: opts.APIURL, Target: opts.Target})
	if err != nil {
		return nil, fmt.Errorf("daytona: set up the SDK client: %w", described(err))
	}
	return c, nil
}

func gcError(ctx context.Context, what string, err error) error {
	if classify(ctx, err).class == classAuth {
		return fmt.Errorf("%s: %w", what, errKeyRefused(err))
	}
	return fmt.Errorf("%s: %w", what, described(err))
}

// runLiveness says why the run owning a ledger is live, or "" when its
// ledger is closed or its process on this machine gone. A run opened on
// another machine is assumed live.
func runLiveness(ledgerPath, host string) string {
	entries, err := ReadLedger(ledgerPath)
	if err != nil {
		return ""
	}
	st := Summarise(entries)
	if !st.Open {
		return ""
	}
	if st.Host != host {
		return fmt.Sprintf("its run is open on host %s (its ledger %s is not closed)", st.Host, ledgerPath)
	}
	if processAlive(st.PID) {
		return fmt.Sprintf("its run is live (pid %d)", st.PID)
	}
	return ""
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// newAPIClient is the generated API client, for what the SDK does not
// expose (listed sandboxes' labels and creation times, build logs).
func newAPIClient(o Options) *apiclient.APIClient {
	cfg := apiclient.NewConfiguration()
	cfg.Servers = apiclient.ServerConfigurations{{URL: o.APIURL}}
	cfg.HTTPClient = &http.Client{Timeout: 60 * time.Second}
	cfg.UserAgent = "forge"
	cfg.AddDefaultHeader("X-Daytona-Source", "forge")
	return apiclient.NewAPIClient(cfg)
}
