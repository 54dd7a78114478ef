// Command forge runs a tournament between candidate programs and picks the
// best. See README.md.
package main

import (
	"os"
	"runtime"

	"github.com/forge-run/forge/cli"
)

func main() {
	// forge orchestrates: the work is in the candidates' processes, and a Go
	// side with fewer Ps wakes fewer threads to look for work (on 2 cores, one
	// P instead of two: 10% less of forge's own CPU, 2.5% less wall; see
	// bench/local.sh). A quarter of the CPUs, at least one; GOMAXPROCS in the
	// environment wins. Setting it turns off the runtime's own updates when
	// a cgroup's CPU limit changes; forge needs no more Ps for a larger one.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(max(1, runtime.GOMAXPROCS(0)/4))
	}
	os.Exit(cli.Main())
}
