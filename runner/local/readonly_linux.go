package local

// How a job sees the file system (environments read-only, a verifier's
// files hidden), by a mount namespace per spawning thread.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/forge-run/forge/internal/linux"
	"github.com/forge-run/forge/internal/loopback"
	"golang.org/x/sys/unix"
)

// enterView moves the locked calling thread into a new private mount
// namespace where v.readOnly is bind-mounted read-only, each of v.hidden
// is covered by an empty read-only tmpfs and each of v.etc's files is bound
// over its path (by path: a bind from a file forge holds open, which is in
// forge's own namespace, is refused); and, with v.noNetwork, into a network
// namespace of its own with only lo up. unshare(CLONE_FS) is what lets one
// thread do it, and why it can never run Go code again (changed, even on error).
// Its errors never wrap the errno: a failed mount is forge's, not the candidate's.
func enterView(v view) (changed bool, err error) {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return false, fmt.Errorf("unshare the mount namespace: %v", err)
	}
	// Recursively private, as unshare(1) and Go's Unshareflags do: on a
	// system whose / is shared (systemd), the bind mount below would
	// otherwise appear in forge's own namespace too.
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return true, fmt.Errorf("make the mount namespace private: %v", err)
	}
	for _, dir := range v.hidden {
		if _, err := os.Stat(dir); err != nil {
			continue // nothing there to hide
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0555"); err != nil {
			return true, fmt.Errorf("hide %s: %v", dir, err)
		}
	}
	for _, f := range v.etc {
		if err := unix.Mount(f.src, f.path, "", unix.MS_BIND, ""); err != nil {
			return true, fmt.Errorf("bind %s: %v", f.path, err)
		}
	}
	if v.noNetwork {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return true, fmt.Errorf("unshare the network namespace: %v", err)
		}
		if err := loopback.Up(); err != nil {
			return true, err
		}
	}
	dir := v.readOnly
	if dir == "" {
		return true, nil
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return true, fmt.Errorf("bind-mount %s: %v", dir, err)
	}
	// mount_setattr (Linux 5.12) sets read-only and nothing else, on every
	// mount under dir; before it, a remount that keeps the flags the mount
	// had (nosuid, noexec...): the bind copied them, a remount without them
	// would clear them.
	err = unix.MountSetattr(-1, dir, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	if errors.Is(err, unix.ENOSYS) {
		var st unix.Statfs_t
		if err = unix.Statfs(dir, &st); err == nil {
			keep := uintptr(st.Flags) & (unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME)
			err = unix.Mount("none", dir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|keep, "")
		}
	}
	if err != nil {
		return true, fmt.Errorf("make %s read-only: %v", dir, err)
	}
	return true, nil
}

// enterSlotView is enterView, but in v.slot's mount namespace when it has
// one: entered, its files already written for the job; else made by
// enterView and kept in the slot for the job's later processes and later
// jobs. A kept thread (spawnThreads) has a file system context of its own
// already, which setns into a mount namespace needs.
func enterSlotView(v view, kept bool) (changed bool, err error) {
	s := v.slot
	switch {
	case s == nil:
		return enterView(v)
	case s.fd >= 0:
		if !kept {
			if err := unix.Unshare(unix.CLONE_FS); err != nil {
				return true, fmt.Errorf("unshare the file system context: %v", err)
			}
		}
		if err := unix.Setns(s.fd, unix.CLONE_NEWNS); err != nil {
			return true, fmt.Errorf("enter the job's mount namespace: %v", err)
		}
		return true, nil
	}
	changed, err = enterView(v)
	if err == nil {
		if fd, err := unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			s.fd = fd
		}
	}
	return changed, err
}

// closeNamespace closes a kept namespace's fd, if any.
func closeNamespace(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}

// setnsKeepsRoot reports whether entering a mount namespace by setns keeps
// forge's root, as making one by unshare does: it does unless forge runs
// chrooted below its namespace's root. Found once for the process.
var setnsKeepsRoot = sync.OnceValue(func() bool {
	same := false
	_ = linux.OnLockedThread(func() (bool, error) {
		if unix.Unshare(unix.CLONE_FS) != nil {
			return false, nil
		}
		fd, err := unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, nil
		}
		defer unix.Close(fd)
		var before, after unix.Stat_t
		if unix.Stat("/", &before) == nil && unix.Setns(fd, unix.CLONE_NEWNS) == nil && unix.Stat("/", &after) == nil {
			same = before.Dev == after.Dev && before.Ino == after.Ino
		}
		return false, nil // its root and working directory are the namespace's now
	})
	return same
})

// probeReadOnly checks that a read-only bind mount works here.
func probeReadOnly(tempDir string) error {
	dir, err := os.MkdirTemp(tempDir, fmt.Sprintf("forge-%d-probe-", os.Getpid()))
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	return linux.OnLockedThread(func() (bool, error) {
		changed, err := enterView(view{readOnly: dir})
		if err == nil {
			f, werr := os.Create(filepath.Join(dir, "w"))
			if werr == nil {
				f.Close()
				err = errors.New("the read-only bind mount can be written")
			} else if !errors.Is(werr, unix.EROFS) {
				err = fmt.Errorf("writing into the read-only bind mount: %w, not EROFS", werr)
			}
		}
		return !changed, err
	})
}
