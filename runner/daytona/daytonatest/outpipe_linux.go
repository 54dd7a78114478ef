//go:build linux

package daytonatest

import (
	"io"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// outPipe is the read end of a command's stdout or stderr in a root,
// copied to w until every writer has closed it.
type outPipe struct {
	r  *os.File
	rc syscall.RawConn
	w  io.Writer
	// mu makes a read and the copy of what it read one step, so that
	// catchUp knows that what the pipe held is copied.
	mu  sync.Mutex
	buf []byte
}

func newOutPipe(w io.Writer) (*outPipe, *os.File, error) {
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	rc, err := r.SyscallConn()
	if err != nil {
		r.Close()
		pw.Close()
		return nil, nil, err
	}
	return &outPipe{r: r, rc: rc, w: w, buf: make([]byte, 32<<10)}, pw, nil
}

// readChunk copies one read's worth of the pipe and says how many bytes:
// 0 when it is empty now, or, ended, when every writer is gone (or the
// read failed).
func (o *outPipe) readChunk(fd uintptr) (int, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		n, err := syscall.Read(int(fd), o.buf)
		switch {
		case n > 0:
			o.w.Write(o.buf[:n])
			return n, false
		case err == syscall.EINTR:
		case err == syscall.EAGAIN:
			return 0, false
		default:
			return 0, true
		}
	}
}

// copy copies the pipe until its end, then closes it.
func (o *outPipe) copy() {
	o.rc.Read(func(fd uintptr) bool {
		// Until the pipe is empty: the poller wakes the next read only
		// when something new comes.
		for {
			if n, ended := o.readChunk(fd); n == 0 {
				return ended
			}
		}
	})
	o.r.Close()
}

// catchUp copies what the pipe holds now (no more than it can hold: a
// process left running may keep writing); true if it has ended.
func (o *outPipe) catchUp() bool {
	ended := true // closed by copy: it has
	o.rc.Control(func(fd uintptr) {
		size, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0)
		if err != nil {
			size = 1 << 20
		}
		for read := 0; read <= size; {
			n, end := o.readChunk(fd)
			if n == 0 {
				ended = end
				return
			}
			read += n
		}
		ended = false
	})
	return ended
}
