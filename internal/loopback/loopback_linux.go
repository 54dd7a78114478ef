// Package loopback brings up a network namespace's loopback interface,
// which a new namespace has down: the local runner's jobs with no network,
// and the emulator's sandboxes, each in a namespace of its own.
package loopback

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Up brings up lo in the calling thread's network namespace, as "ip link
// set lo up" does. Its errors say what failed without wrapping the errno:
// a caller's failure is its own, never the process it was about to start.
func Up() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("a socket for the loopback: %v", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback flags: %v", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring the loopback up: %v", err)
	}
	return nil
}
