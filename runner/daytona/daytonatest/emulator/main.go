// Command emulator serves the offline Daytona emulator (daytonatest) until
// Ctrl-C (or SIGTERM, or the end of the process that started it), so that
// forge run --daytona can be tried without an account:
//
//	go run ./runner/daytona/daytonatest/emulator -port 3986
//	# in another shell, the two lines it printed, then:
//	go run . run --daytona -f examples/harbor/forge.yaml
//
// Sandboxes are directories of this machine (each with a root file system
// and a network of its own when the emulator runs as root: loopback only),
// snapshots are built for real from their Dockerfiles, everything is gone
// when it stops. -host-network lets sandboxes reach servers running on
// this machine (a model server), sharing its ports. docs/command-line.md
// says which Dockerfile instructions it builds and what FROM stands for.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

func main() {
	os.Exit(run())
}

func run() int {
	hostNetwork := flag.Bool("host-network", false, "sandboxes share this machine's network (to reach a server running here, such as a model); their ports then collide")
	port := flag.Int("port", 0, "serve on 127.0.0.1:`PORT` (0: a free one), so that the printed lines stay the same from one start to the next")
	flag.Parse()
	// Started by go run, whose end (kill $!) leaves its child behind: the
	// emulator ends with it, as with Ctrl-C.
	endWithParent()
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			fmt.Fprintf(os.Stderr, "emulator: -port %d: 127.0.0.1:%d is in use (another emulator?); choose another -port, or 0 for a free one\n", *port, *port)
		} else {
			fmt.Fprintf(os.Stderr, "emulator: -port %d: %v\n", *port, err)
		}
		return 2
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	srv := daytonatest.NewServer(daytonatest.Options{HostNetwork: *hostNetwork, Listener: l})
	fmt.Printf("export DAYTONA_API_URL=%s\nexport DAYTONA_API_KEY=%s\n", srv.URL(), srv.APIKey())
	if !daytonatest.RootFS() {
		fmt.Fprintln(os.Stderr, "emulator: not root (or no overlayfs): sandboxes are plain directories; a task in its own image (/app, /tests) cannot run")
	}
	fmt.Fprintln(os.Stderr, "emulator: serving; Ctrl-C stops it and deletes everything")
	<-sig
	srv.Close()
	return 0
}
