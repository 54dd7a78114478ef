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
	AutoStopMargin       = 10 * time.Minute // added to a job's timeouts for its sandbox's auto-stop
)

// Options configure a Runner (and GC and Doctor): the manifest's daytona:
// block, the flags and the credentials, as the CLI maps them.
type Options struct {
	APIKey string
	APIURL string // default DefaultAPIURL
	Target string // the region ("us", "eu"); empty: the organisation's default

	// Snapshot or Image (not both) is what sandboxes start from; neither:
	// the default snapshot. The API takes resources only with an image.
	Snapshot, Image       string
	CPU, MemoryGB, DiskGB int
	NetworkBlockAll       bool
	NetworkAllowList      []string // IPv4 CIDR ranges outbound traffic is limited to

	// CreateRate caps creations per second; 429s lower it for a while (AIMD).
	CreateRate float64
	// AutoStopMinutes is every sandbox's auto-stop; 0 derives it from the
	// job's timeouts. With auto-delete 0, a stopped sandbox deletes itself.
	AutoStopMinutes int
	Volume          *Volume           // mounted into every sandbox, created if missing
	Env             map[string]string // given to every sandbox; no DAYTONA_* variables
	Labels          map[string]string // added to forge's own

	RunID      string    // names the run in sandbox names and labels; required by New
	LedgerPath string    // the run's sandboxes.jsonl; empty keeps no ledger
	Warn       io.Writer // one-line warnings, never with the key; nil discards them

	CreateTimeout time.Duration // one creation attempt, start included
	DeleteTimeout time.Duration // one sandbox's deletion, retries included
	SetupTimeout  time.Duration // for jobs whose SetupTimeout is zero
	// PollInterval is the longest wait between polls of a command whose log
	// stream could not be followed, and of a snapshot's build.
	PollInterval time.Duration
	Retry        Retry
	// ToolboxHTTPClient carries the toolbox calls; by default one with the
	// SDK's 60 s timeout and a pool sized for many sandboxes.
	ToolboxHTTPClient *http.Client
}

// Volume is a durable Daytona volume mounted into every sandbox, at Mount:
// absolute, or relative to the sandbox's home (default "memory").
type Volume struct {
	Name  string `yaml:"name"`
	Mount string `yaml:"mount"`
}

// Retry shapes the jittered exponential backoff for transient errors (5xx,
// network errors, timeouts): Tries attempts at one call, and apart from
// them RateLimitTries rate-limited ones.
type Retry struct {
	Initial, Max          time.Duration
	Tries, RateLimitTries int
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
	for _, c := range []struct {
		wrong bool
		msg   string
	}{
		{o.Snapshot != "" && o.Image != "", "daytona: give a snapshot or an image, not both"},
		{o.CPU < 0 || o.MemoryGB < 0 || o.DiskGB < 0, "daytona: resources must not be negative"},
		{o.CreateRate < 0, "daytona: create_rate must not be negative"},
		{o.AutoStopMinutes < 0, "daytona: auto-stop minutes must not be negative"},
	} {
		if c.wrong {
			bad("%s", c.msg)
		}
	}
	o.CreateRate = cmp.Or(o.CreateRate, DefaultCreateRate)
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

// ptrOr is *p, or d when p is nil.
func ptrOr[T any](p *T, d T) T {
	if p == nil {
		return d
	}
	return *p
}

// orDefault sets *v to d unless it is positive.
func orDefault[T time.Duration | int](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
