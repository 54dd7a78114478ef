//go:build unix && !aix

package local

// Lock files (flock): a builder holds one exclusive, a user one shared.

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes a flock on path (made if need be), shared or exclusive,
// waiting as long as ctx lets it; held until the file is closed. A lock file
// removed meanwhile (RemoveEnvironment does) is opened again.
func lockFile(ctx context.Context, path string, exclusive bool) (*os.File, error) {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("open lock file: %w", err)
		}
		err = flock(f, how|unix.LOCK_NB)
		if errors.Is(err, unix.EWOULDBLOCK) {
			var abandoned bool
			if abandoned, err = flockWait(ctx, f, how); abandoned {
				return nil, err
			}
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if held, err := keepIfNamed(path, f); held != nil || err != nil {
			return held, err
		}
	}
}

// flockWait waits for the lock on f. When ctx is done first, f is left to a
// goroutine that closes it once the wait is over, and abandoned is true.
func flockWait(ctx context.Context, f *os.File, how int) (abandoned bool, err error) {
	done := make(chan error, 1)
	go func() { done <- flock(f, how) }()
	select {
	case err := <-done:
		return false, err
	case <-ctx.Done():
		go func() {
			<-done
			f.Close()
		}()
		return true, ctx.Err()
	}
}

// tryLockFile takes an exclusive flock on path without waiting (errLocked when
// held). Without create a missing lock file is an fs.ErrNotExist error.
func tryLockFile(path string, create bool) (*os.File, error) {
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	for {
		f, err := os.OpenFile(path, flags, 0o644)
		if err != nil {
			return nil, err
		}
		if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, errLocked
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if held, err := keepIfNamed(path, f); held != nil || err != nil {
			return held, err
		}
		if !create {
			return nil, errLocked // removed by the holder of the lock meanwhile
		}
	}
}

// flock is flock(2) on f, restarted when a signal interrupts it.
func flock(f *os.File, how int) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	err = sc.Control(func(fd uintptr) {
		for {
			ferr = unix.Flock(int(fd), how)
			if ferr != unix.EINTR {
				return
			}
		}
	})
	return errors.Join(err, ferr)
}

// keepIfNamed returns f when path still names it (a missing path does not);
// otherwise it closes f and returns nil, and the caller opens path again.
func keepIfNamed(path string, f *os.File) (*os.File, error) {
	fi, err := f.Stat()
	if err == nil {
		var pi os.FileInfo
		if pi, err = os.Stat(path); err == nil && os.SameFile(fi, pi) {
			return f, nil
		}
		if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
	}
	f.Close()
	return nil, err
}
