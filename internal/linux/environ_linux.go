package linux

import (
	"bytes"
	"slices"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// EnvironHas reports whether pid's environment carries every one of
// entries ("NAME=value"), as a marker its processes inherit.
func EnvironHas(pid int, entries []string) bool {
	buf := environBuffers.Get().(*[]byte)
	defer environBuffers.Put(buf)
	env, ok := readEnviron(pid, buf)
	if !ok {
		return false
	}
	have := make([]bool, len(entries))
	n := 0
	for entry := range bytes.SplitSeq(env, []byte{0}) {
		if i := slices.Index(entries, string(entry)); i >= 0 && !have[i] {
			have[i] = true
			n++
		}
	}
	return n == len(entries)
}

// readEnviron reads /proc/PID/environ into *buf with plain system calls: a
// sweep reads every process's.
func readEnviron(pid int, buf *[]byte) ([]byte, bool) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/environ", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	b := (*buf)[:0]
	for {
		b = slices.Grow(b, 1)
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err != nil {
			return nil, false
		}
		if n == 0 {
			*buf = b
			return b, true
		}
		b = b[:len(b)+n]
	}
}

// environBuffers are readEnviron's buffers, reused across sweeps.
var environBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}
