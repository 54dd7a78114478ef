// Command emulator serves the offline Daytona emulator (daytonatest) until
// Ctrl-C, so that forge run --daytona can be tried without an account:
//
//	go run ./runner/daytona/daytonatest/emulator
//	# in another shell, the two lines it printed, then:
//	go run . run --daytona -f examples/harbor/forge.yaml
//
// Sandboxes are directories of this machine (each with a root file system
// of its own when the emulator runs as root), snapshots are built for real
// from their Dockerfiles, everything is gone when it stops.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

func main() {
	srv := daytonatest.NewServer(daytonatest.Options{})
	fmt.Printf("export DAYTONA_API_URL=%s\nexport DAYTONA_API_KEY=%s\n", srv.URL(), srv.APIKey())
	if !daytonatest.RootFS() {
		fmt.Fprintln(os.Stderr, "emulator: not root (or no overlayfs): sandboxes are plain directories; a task in its own image (/app, /tests) cannot run")
	}
	fmt.Fprintln(os.Stderr, "emulator: serving; Ctrl-C stops it and deletes everything")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	srv.Close()
}
