// Command install installs the agent CLIs the tests run (agenttest.Pins)
// into the shared cache, unless they are there, and prints their paths, so
// that CI installs them once before go test:
//
//	go run ./agent/agenttest/install
//
// The cache is $FORGE_AGENT_CACHE, else forge-test/agents in the user's
// cache directory; npm must be on PATH.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/forge-run/forge/agent/agenttest"
)

func main() {
	os.Exit(run())
}

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, p := range agenttest.Pins {
		start := time.Now()
		bin, err := agenttest.Install(ctx, p, os.Stderr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "install: %s: %v\n", p.Name, err)
			return 1
		}
		fmt.Printf("%s %s: %s (%.1fs)\n", p.Name, p.Version, bin, time.Since(start).Seconds())
	}
	return 0
}
