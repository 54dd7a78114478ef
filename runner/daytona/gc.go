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
	"sort"
	"syscall"
	"time"

	apiclient "github.com/daytonaio/daytona/libs/api-client-go"
	sdkerrors "github.com/daytonaio/daytona/libs/sdk-go/pkg/errors"
)

// GCOptions configure GC.
type GCOptions struct {
	// OlderThan spares sandboxes created more recently; zero spares none.
	OlderThan time.Duration
	// DryRun lists what would be deleted and deletes nothing.
	DryRun bool
	// OutRoot is where runs keep <run-id>/sandboxes.jsonl (the run's --out);
	// a run whose ledger is open and whose process is alive owns its
	// sandboxes. Empty means no run is known to be live.
	OutRoot string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// gcSandbox is one candidate for collection.
type gcSandbox struct {
	id, name, state, run string
	created              time.Time
}

// GC deletes the sandboxes labelled app=forge that no live run owns, and
// prints one line per sandbox to w. opts needs only the credentials.
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

	var all []gcSandbox
	labels, _ := json.Marshal(map[string]string{LabelApp: LabelAppValue})
	for page := 1; ; page++ {
		res, err := retried(actx, &opts, "list forge sandboxes", opts.calls(), func(ctx context.Context) (*apiclient.PaginatedSandboxes, error) {
			res, resp, err := api.SandboxAPI.ListSandboxesPaginated(ctx).Labels(string(labels)).
				Page(float32(page)).Limit(100).Execute()
			return res, sdkerrors.ConvertAPIError(err, resp)
		})
		if err != nil {
			return gcError(actx, "list forge's sandboxes", err)
		}
		for _, sb := range res.Items {
			c, _ := time.Parse(time.RFC3339Nano, sb.GetCreatedAt())
			all = append(all, gcSandbox{
				id: sb.GetId(), name: sb.GetName(), state: string(sb.GetState()),
				run: sb.GetLabels()[LabelRun], created: c,
			})
		}
		if float32(page) >= res.GetTotalPages() {
			break
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].created.Before(all[j].created) })

	owners := map[string]string{} // run ID -> why it is live ("" = not live)
	host, _ := os.Hostname()
	deleted, kept, failed := 0, 0, 0
	var errs []error
	for _, sb := range all {
		if sb.state == "destroying" || sb.state == "destroyed" {
			continue
		}
		age := now().Sub(sb.created)
		desc := fmt.Sprintf("%s (%s", sb.name, sb.id)
		if sb.run != "" {
			desc += ", run " + sb.run
		}
		if !sb.created.IsZero() {
			desc += ", created " + age.Round(time.Second).String() + " ago"
		}
		desc += ")"
		if g.OlderThan > 0 && (sb.created.IsZero() || age < g.OlderThan) {
			fmt.Fprintf(w, "keep    %s: younger than %s\n", desc, g.OlderThan)
			kept++
			continue
		}
		if sb.run != "" && g.OutRoot != "" {
			why, seen := owners[sb.run]
			if !seen {
				why = runLiveness(filepath.Join(g.OutRoot, sb.run, LedgerFile), host)
				owners[sb.run] = why
			}
			if why != "" {
				fmt.Fprintf(w, "keep    %s: %s\n", desc, why)
				kept++
				continue
			}
		}
		if g.DryRun {
			fmt.Fprintf(w, "would delete %s\n", desc)
			deleted++
			continue
		}
		id := sb.id
		err := opts.retry(actx, "delete "+sb.name, opts.calls(), func(ctx context.Context) error {
			_, resp, err := api.SandboxAPI.DeleteSandbox(ctx, id).Execute()
			err = sdkerrors.ConvertAPIError(err, resp)
			if classify(ctx, err).class == classNotFound {
				return nil
			}
			return err
		})
		if err != nil {
			if classify(actx, err).class == classAuth {
				return gcError(actx, "delete "+sb.name, err)
			}
			fmt.Fprintf(w, "FAILED  %s: %s\n", desc, describe(err))
			errs = append(errs, fmt.Errorf("delete sandbox %s: %w", sb.name, described(err)))
			failed++
			continue
		}
		fmt.Fprintf(w, "deleted %s\n", desc)
		deleted++
	}
	verb := "deleted"
	if g.DryRun {
		verb = "would delete"
	}
	fmt.Fprintf(w, "gc: %s %d, kept %d, failed %d\n", verb, deleted, kept, failed)
	return errors.Join(errs...)
}

func gcError(ctx context.Context, what string, err error) error {
	if classify(ctx, err).class == classAuth {
		return fmt.Errorf("%s: %w", what, errKeyRefused(err))
	}
	return fmt.Errorf("%s: %w", what, described(err))
}

// runLiveness says why the run owning a ledger is live, or "" when it is
// not: its ledger was closed, or the process that opened it on this machine
// is gone. A run opened on another machine is assumed live.
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
// expose (labels and creation times of listed sandboxes).
func newAPIClient(o Options) *apiclient.APIClient {
	cfg := apiclient.NewConfiguration()
	cfg.Servers = apiclient.ServerConfigurations{{URL: o.APIURL}}
	cfg.HTTPClient = &http.Client{Timeout: 60 * time.Second}
	cfg.UserAgent = "forge"
	cfg.AddDefaultHeader("X-Daytona-Source", "forge")
	return apiclient.NewAPIClient(cfg)
}
