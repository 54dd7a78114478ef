package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// dirShape is what a job may change of a directory it owns that forge can
// tell and put back (owner, mode) or not (size: ext4 never shrinks a
// directory; inode flags; extended attributes, ACLs among them; a mount
// over it).
type dirShape struct {
	uid, gid uint32
	mode     uint16
	size     uint64
	mount    uint64
	flags    uint32
	noFlags  bool // the file system keeps none
	xattrs   bool
}

func shapeOf(fd int) (dirShape, error) {
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS|unix.STATX_MNT_ID, &st); err != nil {
		return dirShape{}, err
	}
	s := dirShape{uid: st.Uid, gid: st.Gid, mode: st.Mode, size: st.Size, mount: st.Mnt_id}
	f, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	s.flags, s.noFlags = f, err != nil
	n, err := unix.Flistxattr(fd, nil)
	s.xattrs = n > 0 || err != nil && !errors.Is(err, unix.ENOTSUP)
	return s, nil
}

func openDir(dirfd int, name string) (int, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return fd, nil
}

// workdirShapes are the shapes of the working directory dir and its tmp/,
// and dir's identity.
func workdirShapes(dir string) (shapes [2]dirShape, id workdirID, err error) {
	fd, err := openDir(unix.AT_FDCWD, dir)
	if err != nil {
		return shapes, id, err
	}
	defer unix.Close(fd)
	tfd, err := openDir(fd, "tmp")
	if err != nil {
		return shapes, id, err
	}
	defer unix.Close(tfd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return shapes, id, err
	}
	id = workdirID{path: dir, dev: st.Dev, ino: st.Ino}
	for i, fd := range []int{fd, tfd} {
		if shapes[i], err = shapeOf(fd); err != nil {
			return shapes, id, err
		}
	}
	return shapes, id, nil
}

// emptyAsNew gives the working directory w and its tmp/ back to forge, as
// fresh says they were new, and empties them: an error when they are not
// w's, or not as new once empty.
func emptyAsNew(w workdirID, fresh [2]dirShape) error {
	fd, err := openDir(unix.AT_FDCWD, w.path)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Dev != w.dev || st.Ino != w.ino {
		return fmt.Errorf("%s is no longer the working directory made", w.path)
	}
	tfd, err := openDir(fd, "tmp")
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	// Forge's first: nothing may change them while they are emptied.
	for i, fd := range []int{fd, tfd} {
		if err := unix.Fchown(fd, int(fresh[i].uid), int(fresh[i].gid)); err != nil {
			return err
		}
		if err := unix.Fchmod(fd, uint32(fresh[i].mode)&0o7777); err != nil {
			return err
		}
	}
	tmp := filepath.Join(w.path, "tmp")
	if err := emptyEntries(w.path, "tmp"); err != nil {
		return err
	}
	if err := emptyEntries(tmp, ""); err != nil {
		return err
	}
	for i, fd := range []int{fd, tfd} {
		s, err := shapeOf(fd)
		if err != nil {
			return err
		}
		if s != fresh[i] || s.xattrs {
			return fmt.Errorf("%s is not as new: %+v, new %+v", w.path, s, fresh[i])
		}
	}
	return nil
}

// renameNoReplace renames old to new unless new exists.
func renameNoReplace(old, new string) error {
	if err := unix.Renameat2(unix.AT_FDCWD, old, unix.AT_FDCWD, new, unix.RENAME_NOREPLACE); err != nil {
		return &os.LinkError{Op: "rename", Old: old, New: new, Err: err}
	}
	return nil
}
