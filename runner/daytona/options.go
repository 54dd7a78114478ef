package daytona

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/forge-run/forge/runner"
)

// DefaultAPIURL is Daytona's public API.
const DefaultAPIURL = "https://app.daytona.io/api"

// Defaults for Options.
const (
	DefaultCreateRate    = 5.0 // creations per second; Daytona allows 300-600 a minute per organisation
	DefaultCreateTimeout = 3 * time.Minute
	DefaultDeleteTimeout = 2 * time.Minute
	DefaultPollInterval  = time.Second
	DefaultVolumeMount   = "memory"
	// AutoStopMargin is added to a job's timeouts to derive the auto-stop
	// backstop of its sandbox.
	AutoStopMargin = 10 * time.Minute
)

// Options configure a Runner (and GC and Doctor). The CLI maps the
// manifest's daytona: block, the flags and the credentials onto it.
type Options struct {
	APIKey string
	// APIURL defaults to DefaultAPIURL.
	APIURL string
	// Target is the region ("us", "eu"); empty means the organisation's
	// default.
	Target string

	// Snapshot or Image (not both) is what sandboxes start from; neither:
	// the default snapshot. Resources apply only with an Image (the API
	// refuses them with a snapshot).
	Snapshot, Image       string
	CPU, MemoryGB, DiskGB int
	NetworkBlockAll       bool
	// NetworkAllowList, when not empty, limits outbound traffic to these
	// IPv4 CIDR ranges.
	NetworkAllowList []string

	// CreateRate caps sandbox creations per second (default 5). Rate-limit
	// answers lower it further for a while (AIMD).
	CreateRate float64
	// AutoStopMinutes is the auto-stop backstop of every sandbox; 0 derives
	// it from the job's timeouts plus AutoStopMargin. Sandboxes are created
	// with auto-delete 0, so a stopped sandbox deletes itself.
	AutoStopMinutes int
	// Volume, when set, is mounted into every sandbox (created if missing).
	Volume *Volume
	// Env is given to every sandbox (and so to every candidate). It must not
	// hold DAYTONA_* variables.
	Env map[string]string
	// Labels are added to every sandbox, besides forge's own.
	Labels map[string]string

	// RunID names the run in sandbox names and labels. Required by New.
	RunID string
	// LedgerPath is the run's sandboxes.jsonl (<out>/<run-id>/); empty
	// keeps no ledger.
	LedgerPath string
	// Warn gets one-line warnings (retries, undeletable sandboxes). It never
	// gets the API key. Nil discards them.
	Warn io.Writer

	// CreateTimeout bounds one creation attempt, start included.
	CreateTimeout time.Duration
	// DeleteTimeout bounds the deletion of one sandbox, retries included.
	DeleteTimeout time.Duration
	// SetupTimeout is used for jobs whose SetupTimeout is zero.
	SetupTimeout time.Duration
	// PollInterval is the longest wait between two polls of a command
	// whose log stream could not be followed, and of a snapshot's build.
	PollInterval time.Duration
	// Retry shapes the backoff for transient errors.
	Retry Retry
	// ToolboxHTTPClient carries the toolbox calls; by default a client with
	// the SDK's 60 s timeout and a pool sized for many sandboxes.
	ToolboxHTTPClient *http.Client
}

// Volume is a durable Daytona volume mounted into every sandbox.
type Volume struct {
	Name string `yaml:"name"`
	// Mount is where it appears: relative to the sandbox's home directory
	// (default "memory") or absolute.
	Mount string `yaml:"mount"`
}

// Retry shapes the jittered exponential backoff for transient errors
// (5xx, network errors, timeouts).
type Retry struct {
	Initial, Max time.Duration
	// Tries bounds the attempts at one call (rate-limited attempts are
	// counted separately, against RateLimitTries).
	Tries          int
	RateLimitTries int
}

// Validate checks the options and fills in the defaults.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.APIKey == "" || placeholder(o.APIKey) {
		bad("no usable Daytona API key (DAYTONA_API_KEY)")
	}
	o.APIURL = strings.TrimRight(cmp.Or(o.APIURL, DefaultAPIURL), "/")
	if u, err := url.Parse(o.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("DAYTONA_API_URL %q is not an http(s) URL", o.APIURL)
	}
	if o.Snapshot != "" && o.Image != "" {
		bad("daytona: give a snapshot or an image, not both")
	}
	if o.CPU < 0 || o.MemoryGB < 0 || o.DiskGB < 0 {
		bad("daytona: resources must not be negative")
	}
	if o.CreateRate < 0 {
		bad("daytona: create_rate must not be negative")
	}
	if o.CreateRate == 0 {
		o.CreateRate = DefaultCreateRate
	}
	if o.AutoStopMinutes < 0 {
		bad("daytona: auto-stop minutes must not be negative")
	}
	if v := o.Volume; v != nil {
		if v.Name == "" {
			bad("daytona: a volume needs a name")
		}
		v.Mount = cmp.Or(v.Mount, DefaultVolumeMount)
		clean := path.Clean(v.Mount)
		if clean != strings.TrimRight(v.Mount, "/") || strings.HasPrefix(clean, "../") || clean == ".." || clean == "." || clean == "/" {
			bad("daytona: volume mount %q must be a clean path", v.Mount)
		}
	}
	for k := range o.Env {
		if !runner.ValidEnvName(k) {
			bad("daytona: env name %q is not a valid variable name", k)
		}
		if strings.HasPrefix(strings.ToUpper(k), "DAYTONA_") {
			bad("daytona: env must not pass %s into sandboxes", k)
		}
	}
	if o.Warn == nil {
		o.Warn = io.Discard
	}
	orDefault(&o.CreateTimeout, DefaultCreateTimeout)
	orDefault(&o.DeleteTimeout, DefaultDeleteTimeout)
	orDefault(&o.SetupTimeout, runner.DefaultSetupTimeout)
	orDefault(&o.PollInterval, DefaultPollInterval)
	orDefault(&o.Retry.Initial, 250*time.Millisecond)
	orDefault(&o.Retry.Max, 10*time.Second)
	orDefault(&o.Retry.Tries, 5)
	orDefault(&o.Retry.RateLimitTries, 30)
	return errors.Join(errs...)
}

// orDefault sets *v to d unless it is positive.
func orDefault[T time.Duration | int](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
