// Command emulator serves the offline Daytona emulator (daytonatest) until
// Ctrl-C, so that forge run --daytona can be tried without an account:
//
//	go run ./runner/daytona/daytonatest/emulator
//	# in another shell, the two lines it printed, then:
//	go run . run --daytona -f examples/harbor/forge.yaml
//
// Sandboxes are directories of this machine (each with a root file system
// and a network of its own when the emulator runs as root: loopback only),
// snapshots are built for real from their Dockerfiles, everything is gone
// when it stops. -host-network lets sandboxes reach servers running on
// this machine (a model server), sharing its ports.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

func main() {
	hostNetwork := flag.Bool("host-network", false, "sandboxes share this machine's network (to reach a server running here, such as a model); their ports then collide")
	flag.Parse()
	srv := daytonatest.NewServer(daytonatest.Options{HostNetwork: *hostNetwork})
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
