package daytona

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdkerrors "github.com/daytonaio/daytona/libs/sdk-go/pkg/errors"
	"github.com/forge-run/forge/runner"
)

func TestLoadCredentials(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ".env"), []byte("DAYTONA_API_KEY=dtn_from_file\nDAYTONA_BASE_URL=https://base.example/api\nDAYTONA_TARGET=eu\n"), 0o600)
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	c := LoadCredentials(getenv, dir)
	if c.APIKey != "dtn_from_file" || c.APIURL != "https://base.example/api" || c.Target != "eu" || !c.Usable() || c.KeySource != filepath.Join(dir, ".env") {
		t.Errorf(".env only: %+v", c)
	}
	env["DAYTONA_API_KEY"] = "dtn_from_env"
	env["DAYTONA_API_URL"] = "https://env.example/api"
	c = LoadCredentials(getenv, dir)
	if c.APIKey != "dtn_from_env" || c.APIURL != "https://env.example/api" || c.KeySource != "environment" {
		t.Errorf("environment wins: %+v", c)
	}
	if s := c.String(); strings.Contains(s, "dtn_") || !strings.Contains(s, "environment") {
		t.Errorf("String shows the key or hides its source: %s", s)
	}
	env["DAYTONA_API_KEY"] = "your_api_key_here"
	os.WriteFile(filepath.Join(dir, ".env"), []byte("DAYTONA_API_KEY=your_daytona_key\n"), 0o600)
	c = LoadCredentials(getenv, dir)
	if c.Usable() || c.APIKey != "" || c.Problem != "DAYTONA_API_KEY is a placeholder" {
		t.Errorf("placeholders: %+v", c)
	}
	c = LoadCredentials(func(string) string { return "" }, t.TempDir())
	if c.Usable() || c.Problem != "DAYTONA_API_KEY is not set" || !strings.Contains(c.String(), DefaultAPIURL) {
		t.Errorf("nothing: %+v %s", c, c)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no key", Options{}, "no usable Daytona API key"},
		{"placeholder", Options{APIKey: "your_key"}, "no usable Daytona API key"},
		{"both", Options{APIKey: "k", Snapshot: "s", Image: "i"}, "not both"},
		{"url", Options{APIKey: "k", APIURL: "ftp://x"}, "not an http(s) URL"},
		{"mount", Options{APIKey: "k", Volume: &Volume{Name: "v", Mount: "../x"}}, "clean path"},
		{"env", Options{APIKey: "k", Env: map[string]string{"1X": "y"}}, "not a valid variable name"},
	} {
		err := tc.o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	o := Options{APIKey: "k", APIURL: "http://x/api/", Volume: &Volume{Name: "v"}}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.APIURL != "http://x/api" || o.CreateRate != DefaultCreateRate || o.Volume.Mount != "memory" || o.Warn == nil {
		t.Errorf("defaults: %+v", o)
	}
}

func TestClassify(t *testing.T) {
	ctx := context.Background()
	done, cancel := context.WithCancel(ctx)
	cancel()
	h := http.Header{}
	h.Set("Retry-After-sandbox-create", "7")
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want class
	}{
		{"401", ctx, sdkerrors.NewDaytonaError("Invalid credentials", 401, nil), classAuth},
		{"403", ctx, sdkerrors.NewDaytonaError("Forbidden", 403, nil), classAuth},
		{"404", ctx, sdkerrors.NewDaytonaNotFoundError("x", nil), classNotFound},
		{"409", ctx, sdkerrors.NewDaytonaError("exists", 409, nil), classConflict},
		{"429", ctx, sdkerrors.NewDaytonaRateLimitError("slow", h), classRateLimited},
		{"500", ctx, sdkerrors.NewDaytonaError("boom", 500, nil), classTransient},
		{"502", ctx, sdkerrors.NewDaytonaError("bad gateway", 502, nil), classTransient},
		{"network", ctx, sdkerrors.NewDaytonaError("connection refused", 0, nil), classTransient},
		{"timeout", ctx, sdkerrors.NewDaytonaTimeoutError("did not start"), classTransient},
		{"cancelled", done, sdkerrors.NewDaytonaError("context canceled", 0, nil), classCancelled},
		{"400", ctx, sdkerrors.NewDaytonaError("bad", 400, nil), classPermanent},
		{"ctx", done, context.Canceled, classCancelled},
		{"other", ctx, errors.New("x"), classPermanent},
	} {
		if got := classify(tc.ctx, tc.err); got.class != tc.want {
			t.Errorf("%s: class %d, want %d", tc.name, got.class, tc.want)
		}
	}
	if f := classify(ctx, sdkerrors.NewDaytonaRateLimitError("slow", h)); f.retryAfter != 7*time.Second {
		t.Errorf("Retry-After-sandbox-create: %s", f.retryAfter)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h2 := http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}, "X-Ratelimit-Reset-Sandbox-Create": {"3"}}
	if d := retryAfter(h2, now); d != 90*time.Second {
		t.Errorf("HTTP date: %s", d)
	}
	if d := retryAfter(http.Header{"Retry-After": {"99999"}}, now); d != maxRetryAfter {
		t.Errorf("cap: %s", d)
	}
}

func TestPacerHalvesAndRecovers(t *testing.T) {
	p := newPacer(8)
	p.throttled(0)
	p.throttled(0)
	if p.limit() != 2 {
		t.Fatalf("after two 429s: %.2f/s", p.limit())
	}
	for i := 0; i < 100; i++ {
		p.throttled(0)
	}
	if p.limit() != 8.0/64 {
		t.Fatalf("floor: %.4f/s", p.limit())
	}
	for i := 0; i < 20; i++ {
		p.succeeded()
	}
	if p.limit() != 8 {
		t.Fatalf("recovery: %.2f/s", p.limit())
	}
	p.throttled(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a creation went through during a Retry-After pause: %v", err)
	}
}

func TestSandboxName(t *testing.T) {
	if n := sandboxName("20261121-153000-ab12", "alpha", "", 2); n != "forge-20261121-153000-ab12-alpha-2" {
		t.Errorf("name %q", n)
	}
	if n := sandboxName("r", "alpha", "q7", 2); n != "forge-r-alpha-q7-2" {
		t.Errorf("a suite's job: %q", n)
	}
	if n := sandboxName("r", "a b/c", "", 1); n != "forge-r-a-b-c-1" {
		t.Errorf("sanitised %q", n)
	}
	long := sandboxName(strings.Repeat("r", 80), "c", "", 1)
	if len(long) != 63 || long == sandboxName(strings.Repeat("r", 81), "c", "", 1) {
		t.Errorf("long names: %q", long)
	}
}

func TestFailingSetupOutput(t *testing.T) {
	lines := []string{"echo a", "echo b >&2; exit 3", "echo c"}
	for _, tc := range []struct{ log, want string }{
		{"+ echo a\na\n+ echo b >&2; exit 3\nb\n", "b\n"},
		{"+ echo a\na\n+ echo b >&2; exit 3\n", ""},
		{"+ echo a\n", ""},
		{"+ echo a\n+ echo a\n", "+ echo a\n"}, // the first line printed its own trace
		{"cut off", "cut off"},
		{"", ""},
	} {
		if got := failingSetupOutput(tc.log, lines); got != tc.want {
			t.Errorf("failingSetupOutput(%q) = %q, want %q", tc.log, got, tc.want)
		}
	}
}

func TestPreambleDropsDaytonaVariables(t *testing.T) {
	work := t.TempDir()
	l := layout{home: work, work: work + "/w", ctl: work + "/c"}
	script := l.preamble(map[string]string{"FORGE_OBJECTIVE": "a\nDAYTONA_FAKE=1 *"}, nil) + "env\n"
	for _, shell := range []string{"dash", "bash", "sh"} {
		if _, err := exec.LookPath(shell); err != nil {
			continue
		}
		cmd := exec.Command(shell, "-c", script)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "DAYTONA_SANDBOX_ID=sb", "DAYTONA_API_KEY=secret",
			"KEEP=multi\nDAYTONA_NOT_A_VAR=x", "STAR=*"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", shell, err, out)
		}
		got := string(out)
		if strings.Contains(got, "DAYTONA_SANDBOX_ID") || strings.Contains(got, "secret") {
			t.Errorf("%s kept a DAYTONA_ variable:\n%s", shell, got)
		}
		for _, want := range []string{"KEEP=multi\nDAYTONA_NOT_A_VAR=x", "STAR=*", "FORGE_OBJECTIVE=a\nDAYTONA_FAKE=1 *"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s lost %q:\n%s", shell, want, got)
			}
		}
	}
}

// A plain job (runner.Job.Dir) names a directory of this machine: the
// backend refuses it before touching the API.
func TestPlainJobIsRefused(t *testing.T) {
	r := &Runner{}
	res, err := r.Run(context.Background(), runner.Job{CandidateID: "judge", Trial: 1, Dir: t.TempDir(), Command: []string{"true"}})
	if err != nil || res.ErrorKind != runner.ErrInfra || !strings.Contains(res.ErrorMessage, "Job.Dir") {
		t.Errorf("%v %s %q", err, res.ErrorKind, res.ErrorMessage)
	}
}
