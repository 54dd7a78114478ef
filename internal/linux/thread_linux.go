package linux

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// OnLockedThread runs f on a locked OS thread, ended with its goroutine
// unless f reports it clean: a thread that joined another namespace, or
// left its file system context, can never run other Go code. Never the
// main thread, which the runtime cannot end: a goroutine holds the main
// thread while another one calls f.
func OnLockedThread(f func() (clean bool, err error)) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			err := OnLockedThread(f)
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		clean, err := f()
		if clean {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}
