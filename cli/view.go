package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/compare"
	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner/daytona"
	"github.com/forge-run/forge/view"
)

// viewOptions are `forge view`'s flags.
type viewOptions struct {
	env    *Env
	run    string // RUN, whose page opens
	out    string
	addr   string
	noOpen bool
	// noToken serves without the token (--no-token).
	noToken bool
}

func newViewCmd(env *Env, runF func(context.Context, *viewOptions) error) *cobra.Command {
	o := &viewOptions{env: env}
	cmd := &cobra.Command{
		Use:   "view [RUN]",
		Short: "Browse runs in a local web viewer",
		Long: `Serve a web viewer of the runs under --out on this machine (127.0.0.1 by
default), print its URL and open it in the browser when there is one: the
runs, newest first; a run's standings, task matrix, trials and charts; a
trial's logs, artifact and transcript; two runs compared; a run in progress
gaining trials as they finish. RUN (a run id under --out, a run directory or
a results.json) opens that run's page. Everything is served from the forge
binary; nothing is fetched from the network. Ctrl-C stops it.`,
		Example: `  forge view
  forge view --no-open 20261121-153000-ab12`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.run = args[0]
			}
			return runF(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "artifacts", "output root whose runs the viewer lists")
	f.StringVar(&o.addr, "addr", "127.0.0.1:8787", "address to listen on; another interface than loopback serves any Host")
	f.BoolVar(&o.noOpen, "no-open", false, "do not open a browser")
	f.BoolVar(&o.noToken, "no-token", false, "serve without the token the printed URL carries (anyone who can reach the address sees every run)")
	return cmd
}

func runView(ctx context.Context, o *viewOptions) error {
	defer collectSooner(o.env.Getenv)() // its runs' indexes are long-lived too
	srv, url, err := startView(o.env, viewSpec{out: o.out, addr: o.addr, flag: "--addr", ref: o.run, noToken: o.noToken})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.env.Stdout, "forge view: %s (Ctrl-C stops it)\n", url)
	if !o.noOpen {
		openBrowser(o.env, url)
	}
	waitSignal(ctx, o.env)
	return srv.Shutdown(context.Background())
}

// viewSpec is what a viewer serves: the runs under out, on addr; ref's
// page (a run) or page to open; secrets masked in what the pages show;
// without its token with noToken.
type viewSpec struct {
	out, addr, ref, page string
	// flag is the flag that gave addr (--addr, --view-addr), for errors.
	flag    string
	secrets []string
	noToken bool
}

// startView starts the viewer v says and returns the server and the URL
// to open, which carries the viewer's token: a random one per start.
func startView(env *Env, v viewSpec) (*http.Server, string, error) {
	opts := view.Options{Out: v.out, Gates: gatesVerdict,
		Secrets: append(v.secrets, daytona.LoadCredentials(env.Getenv, ".").APIKey)}
	if v.ref != "" {
		p, err := compare.Resolve(v.ref, v.out)
		if err != nil {
			return nil, "", withCode(ExitUsage, err)
		}
		dir, _ := filepath.Abs(filepath.Dir(p))
		id := filepath.Base(dir)
		if abs, _ := filepath.Abs(filepath.Join(v.out, id)); abs != dir {
			opts.Runs = map[string]string{id: dir}
		}
		v.page = "run/" + id
	}
	host, _, err := net.SplitHostPort(v.addr)
	if err != nil {
		return nil, "", withCode(ExitUsage, fmt.Errorf("%s %s: %w", v.flag, v.addr, err))
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		opts.AnyHost = true // another interface, on purpose
		if v.noToken {
			fmt.Fprintf(env.Stderr, "forge view: warning: --no-token on %s: anyone who can reach it sees every run's logs and artifacts\n", v.addr)
		}
	}
	if !v.noToken {
		var b [16]byte
		_, _ = rand.Read(b[:]) // crypto/rand's Read never fails
		opts.Token = hex.EncodeToString(b[:])
	}
	s, err := view.New(opts)
	if err != nil {
		return nil, "", err
	}
	ln, url, err := s.Listen(v.addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, "", withCode(ExitInfra, fmt.Errorf("forge view: %s is taken (another viewer?): choose another with %s, e.g. %s 127.0.0.1:0 for any free port", v.addr, v.flag, v.flag))
	}
	if err != nil {
		return nil, "", withCode(ExitInfra, fmt.Errorf("forge view: %w", err))
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Shutdown
	url += v.page
	if opts.Token != "" {
		url += "?token=" + opts.Token
	}
	return srv, url, nil
}

// gatesVerdict says whether a finished run passes the gates of the
// manifest it played, when that manifest is where the run says and
// unchanged.
func gatesVerdict(rec *record.Record) string {
	if rec.ManifestPath == "" {
		return ""
	}
	m, err := loadManifest(rec.ManifestPath)
	switch {
	case err != nil:
		return ""
	case rec.ManifestHash != "" && m.Hash != rec.ManifestHash:
		return "unknown: the manifest changed since"
	case m.Gates == (forge.Gates{}):
		return "none set"
	}
	if failed := m.Gates.Failed(rec); len(failed) > 0 {
		return "failed: " + strings.Join(failed, "; ")
	}
	return "passed"
}

// openBrowser opens url where this machine has a browser to open it in.
func openBrowser(env *Env, url string) {
	argv := view.Opener(runtime.GOOS, env.Getenv, exec.LookPath)
	if argv == nil {
		return
	}
	cmd := exec.Command(argv[0], append(argv[1:], url)...)
	if err := cmd.Start(); err == nil {
		go cmd.Wait() //nolint:errcheck // the opener's own business
	}
}

// waitSignal returns on SIGINT/SIGTERM or when ctx ends.
func waitSignal(ctx context.Context, env *Env) {
	select {
	case <-env.Signals:
	case <-ctx.Done():
	}
}
