// Command fakemodel serves agenttest's fake model (the Anthropic Messages
// API and the OpenAI Responses API) until Ctrl-C, so that the real agent
// CLIs can be tried offline:
//
//	go run ./agent/agenttest/fakemodel -port 8765 -key K -script agent/agenttest/fakemodel/example.yaml
//
// It prints "fake model: http://127.0.0.1:PORT" once it listens: that is
// ANTHROPIC_BASE_URL, and with /v1 the OpenAI base URL. A script (YAML)
// says what it answers: rules of when (a text in the user's messages) and
// turns (a shell command, a text), a default and a plain answer for calls
// without tools; example.yaml is one. -v prints one line per request.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/forge-run/forge/agent/agenttest"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, stop))
}

// run serves until stop, and returns the exit code.
func run(args []string, stdout, stderr io.Writer, stop <-chan os.Signal) int {
	fs := flag.NewFlagSet("fakemodel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("port", 0, "port to listen on, on 127.0.0.1 (0: any free one)")
	key := fs.String("key", agenttest.DefaultKey, "the API key it accepts")
	scriptFile := fs.String("script", "", "the script file (YAML): what it answers")
	models := fs.String("models", strings.Join(agenttest.DefaultModels, ","), "the models it knows, comma-separated")
	verbose := fs.Bool("v", false, "print one line per request on stderr")
	dump := fs.String("dump", "", "write each request's body to a file in this directory")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	opts := agenttest.Options{Key: *key, Models: strings.Split(*models, ",")}
	if *scriptFile != "" {
		s, err := agenttest.LoadScript(*scriptFile)
		if err != nil {
			fmt.Fprintln(stderr, "fakemodel:", err)
			return 2
		}
		opts.Script = s
	}
	var mu sync.Mutex
	n := 0
	opts.OnRequest = func(r agenttest.Request) {
		mu.Lock()
		defer mu.Unlock()
		n++
		if *verbose {
			fmt.Fprintf(stderr, "%d %s %s model=%q key_ok=%v tools=%d turn=%d %q\n",
				r.Status, r.Method, r.Path, r.Model, r.KeyOK, len(r.Tools), r.Turn, r.Answer)
		}
		if *dump != "" {
			name := fmt.Sprintf("%03d%s.json", n, strings.ReplaceAll(r.Path, "/", "_"))
			if err := os.WriteFile(filepath.Join(*dump, name), r.Body, 0o644); err != nil {
				fmt.Fprintln(stderr, "fakemodel:", err)
			}
		}
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(stderr, "fakemodel:", err)
		return 1
	}
	srv := agenttest.Serve(l, opts)
	fmt.Fprintf(stdout, "fake model: %s\n", srv.URL)
	<-stop
	srv.Close()
	return 0
}
