// Package linux is the Linux sandbox toolkit that the local runner's boxes
// and the Daytona emulator's sandboxes both stand on: mountinfo and where
// this process sits among the cgroups; cgroups made, killed, waited for
// (cgroup.events) and removed; /proc walked, a process's PID namespace
// told and signals sent under a pidfd; code run on a locked OS thread that
// may join namespaces; and the init that holds a PID namespace open (the
// holder: built in on amd64, else bash or cat).
//
// It holds no policy: which tier contains a job, which uid it runs as,
// which mounts a sandbox gets are its callers'. It is on internal/ alone,
// so that the emulator, which must not import forge's engine, can use it.
// Off Linux it holds only what every platform calls (AwaitExit,
// EaseMonitor), doing nothing.
package linux
