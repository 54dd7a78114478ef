// Command fakemodel serves agenttest's fake model (the Anthropic Messages
// API and the OpenAI Responses API) until Ctrl-C, so that the real agent
// CLIs can be tried offline:
//
//	go run ./agent/agenttest/fakemodel -port 8765 -key K -script script.yaml
//
// It prints "fake model: http://127.0.0.1:PORT" once it listens; with -v,
// one line per request on stderr.
package main

import (
	"flag"
	"fmt"
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
	os.Exit(run())
}

func run() int {
	port := flag.Int("port", 0, "port to listen on, on 127.0.0.1 (0: any free one)")
	key := flag.String("key", agenttest.DefaultKey, "the API key it accepts")
	scriptFile := flag.String("script", "", "a script file (YAML: rules of when/turns, default, plain)")
	models := flag.String("models", strings.Join(agenttest.DefaultModels, ","), "the models it knows, comma-separated")
	verbose := flag.Bool("v", false, "print one line per request on stderr")
	dump := flag.String("dump", "", "write each request's body to a file in this directory")
	flag.Parse()

	opts := agenttest.Options{Key: *key, Models: strings.Split(*models, ",")}
	if *scriptFile != "" {
		s, err := agenttest.LoadScript(*scriptFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakemodel:", err)
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
			fmt.Fprintf(os.Stderr, "%d %s %s model=%q key_ok=%v tools=%d turn=%d %q\n",
				r.Status, r.Method, r.Path, r.Model, r.KeyOK, len(r.Tools), r.Turn, r.Answer)
		}
		if *dump != "" {
			name := fmt.Sprintf("%03d%s.json", n, strings.ReplaceAll(r.Path, "/", "_"))
			if err := os.WriteFile(filepath.Join(*dump, name), r.Body, 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "fakemodel:", err)
			}
		}
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakemodel:", err)
		return 1
	}
	srv := agenttest.Serve(l, opts)
	fmt.Printf("fake model: %s\n", srv.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	srv.Close()
	return 0
}
