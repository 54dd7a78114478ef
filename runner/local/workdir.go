package local

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/forge-run/forge/runner"
)

// upload copies files into wd, keeping their executable bit.
func upload(wd string, files []runner.File) error {
	root, err := os.OpenRoot(wd)
	if err != nil {
		return fmt.Errorf("open working directory: %w", err)
	}
	defer root.Close()
	for _, f := range files {
		dst, err := runner.RelPath(f.Dst)
		if err != nil {
			return fmt.Errorf("copy %s: destination %w", cmp.Or(f.Src, f.Dst), err)
		}
		dst = filepath.FromSlash(dst)
		if dir := filepath.Dir(dst); dir != "." {
			err = root.MkdirAll(dir, 0o755)
		}
		if err == nil && f.Data != nil {
			err = root.WriteFile(dst, f.Data, 0o644)
		} else if err == nil {
			err = copyInto(root, f.Src, dst)
		}
		if err != nil {
			return fmt.Errorf("copy %s to %s: %w", cmp.Or(f.Src, "data"), f.Dst, err)
		}
	}
	return nil
}

func copyInto(root *os.Root, src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	mode := os.FileMode(0o644)
	if fi.Mode()&0o111 != 0 {
		mode = 0o755
	}
	out, err := root.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Chmod(mode) // the umask must not take the executable bit away
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// errMissing is a file the candidate did not write.
var errMissing = errors.New("missing")

// readBack reads at most limit bytes of the regular file rel in root, and its
// full size. It refuses symlinks, non-regular files and paths leading outside;
// the error completes "artifact <rel> ...".
func readBack(root *os.Root, rel string, limit int64) ([]byte, int64, error) {
	fi, err := root.Lstat(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, 0, errMissing
		}
		return nil, 0, fmt.Errorf("cannot be read inside the working directory (%w)", err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, 0, errors.New("is a symlink")
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("is not a regular file but %s", typeName(fi.Mode()))
	}
	// O_NONBLOCK: should the path become a fifo meanwhile, open must not hang.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot be opened (%w)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("cannot be read (%w)", err)
	}
	if !os.SameFile(fi, st) || !st.Mode().IsRegular() {
		return nil, 0, errors.New("was replaced while being read")
	}
	b, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, 0, fmt.Errorf("cannot be read (%w)", err)
	}
	return b, max(st.Size(), int64(len(b))), nil
}

func typeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file (" + m.Type().String() + ")"
}

// removeAll removes dir, even one the candidate made read-only.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove working directory: %w", err)
	}
	return nil
}
