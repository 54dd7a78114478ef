package linux

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// HaveBuiltinInit reports whether the built-in init can work: it needs
// close_range (Linux 5.9), which seccomp may refuse; else it would exit at once.
var HaveBuiltinInit = sync.OnceValue(func() bool {
	return unix.CloseRange(math.MaxUint32, math.MaxUint32, 0) == nil
})

// cloneInit starts the built-in init (init_linux_amd64.s).
func cloneInit(flags uintptr, rfd int32, page uintptr) (pid int, errno uintptr)

// initPage is the one page the built-in inits touch, outside Go's heap and
// never unmapped since they share this process's memory.
var initPage = sync.OnceValues(func() (uintptr, error) {
	b, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return 0, fmt.Errorf("memory for the PID namespace's init: %w", err)
	}
	b[32] = 1 // SIG_IGN
	copy(b[72:], BuiltinName+"\x00")
	return uintptr(unsafe.Pointer(&b[0])), nil
})

// startBuiltinInit starts the init of a new PID namespace reading r, sharing
// this process's memory: about a thread's cost, where an exec costs most of
// a millisecond.
func startBuiltinInit(r *os.File, flags uintptr) (*os.Process, error) {
	page, err := initPage()
	if err != nil {
		return nil, err
	}
	pid, errno := cloneInit(unix.CLONE_VM|unix.CLONE_NEWPID|flags|uintptr(unix.SIGCHLD), int32(r.Fd()), page)
	runtime.KeepAlive(r)
	if errno != 0 {
		return nil, fmt.Errorf("start a PID namespace with %s: %w", BuiltinName, syscall.Errno(errno))
	}
	return os.FindProcess(pid)
}
