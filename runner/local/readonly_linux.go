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
// namespace where each of v.etc's files is bound over its path (by path: a
// bind from a file forge holds open, which is in forge's own namespace, is
// refused), v.hide's covers are made (cover), each of v.hidden is covered
// by an empty read-only tmpfs and v.readOnly is bind-mounted read-only;
// and, with v.noNetwork, into a network
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
	for _, f := range v.etc {
		if err := unix.Mount(f.src, f.path, "", unix.MS_BIND, ""); err != nil {
			return true, fmt.Errorf("bind %s: %v", f.path, err)
		}
	}
	if v.hide != nil {
		if err := cover(v.hide); err != nil {
			return true, err
		}
	}
	for _, dir := range v.hidden {
		if _, err := os.Stat(dir); err != nil {
			continue // nothing there to hide
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0555"); err != nil {
			return true, fmt.Errorf("hide %s: %v", dir, err)
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
// already, which setns into a mount namespace needs. With v.proc, the
// namespace's /proc is then the job's (PID namespace pidns, if >= 0).
func enterSlotView(v view, kept bool, pidns int) (changed bool, err error) {
	s := v.slot
	switch {
	case s == nil:
		if changed, err = enterView(v); err == nil && v.proc {
			err = mountProc(pidns)
		}
		return changed, err
	case s.fd >= 0:
		if !kept {
			if err := unix.Unshare(unix.CLONE_FS); err != nil {
				return true, fmt.Errorf("unshare the file system context: %v", err)
			}
		}
		if err := unix.Setns(s.fd, unix.CLONE_NEWNS); err != nil {
			return true, fmt.Errorf("enter the job's mount namespace: %v", err)
		}
		return true, s.ownProc(v, pidns)
	}
	changed, err = enterView(v)
	if err == nil {
		if fd, err := unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			s.fd = fd
		}
		err = s.ownProc(v, pidns)
	}
	return changed, err
}

// ownProc mounts the job's /proc in s's namespace, entered, unless the one
// there is its already.
func (s *nsSlot) ownProc(v view, pidns int) error {
	if !v.proc {
		return nil
	}
	var id linux.Namespace
	if pidns >= 0 {
		var err error
		if id, err = linux.NamespaceOf(pidns); err != nil {
			return fmt.Errorf("the job's PID namespace: %v", err)
		}
	}
	if s.hasProc && s.proc == [2]uint64{id.Dev, id.Ino} {
		return nil
	}
	s.hasProc = false
	if err := mountProc(pidns); err != nil {
		return err
	}
	s.proc, s.hasProc = [2]uint64{id.Dev, id.Ino}, true
	return nil
}

// dropProc unmounts the ended job's /proc from s's namespace, from a kept
// thread, which goes back home after.
func (p *platform) dropProc(s *nsSlot) error {
	h, err := home()
	if err != nil {
		return err
	}
	return p.threads.run(func(kept bool) (bool, error) {
		if !kept {
			if err := unix.Unshare(unix.CLONE_FS); err != nil {
				return false, fmt.Errorf("unshare the file system context: %v", err)
			}
		}
		if err := unix.Setns(s.fd, unix.CLONE_NEWNS); err != nil {
			return false, fmt.Errorf("enter the job's mount namespace: %v", err)
		}
		err := unix.Unmount("/proc", unix.MNT_DETACH)
		if err == nil {
			s.hasProc = false
		}
		back := kept && setnsKeepsRoot() && h.mnt >= 0 && unix.Setns(h.mnt, unix.CLONE_NEWNS) == nil
		return back, err
	})
}

// mountProc puts a fresh proc on /proc in place of what is there: one of
// PID namespace pidns (Linux 6.15's pidns option) when given and the kernel
// can, else one showing only the caller's user's processes (hidepid).
func mountProc(pidns int) error {
	fs, err := unix.Fsopen("proc", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("a /proc of the job's own: %v", err)
	}
	defer unix.Close(fs)
	if pidns < 0 || unix.FsconfigSetFd(fs, "pidns", pidns) != nil {
		if err := unix.FsconfigSetString(fs, "hidepid", "invisible"); err != nil {
			return fmt.Errorf("a /proc showing only the job's processes: %v", err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return fmt.Errorf("a /proc of the job's own: %v", err)
	}
	m, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return fmt.Errorf("mount the job's /proc: %v", err)
	}
	defer unix.Close(m)
	// The /proc there goes, with what is mounted under it: nothing shows
	// below the new one.
	if err := unix.Unmount("/proc", unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unmount /proc: %v", err)
	}
	if err := unix.MoveMount(m, "", unix.AT_FDCWD, "/proc", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("mount the job's /proc: %v", err)
	}
	return nil
}

// cover covers h's directories by an empty tmpfs, read-only once what h
// keeps under them is bound back: each kept directory is cloned first
// (open_tree), while it can still be reached.
func cover(h *hiding) error {
	type tree struct {
		path string
		fd   int
	}
	var kept []tree
	defer func() {
		for _, t := range kept {
			unix.Close(t.fd)
		}
	}()
	for _, k := range h.keep {
		fd, err := unix.OpenTree(unix.AT_FDCWD, k, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("clone %s: %v", k, err)
		}
		kept = append(kept, tree{k, fd})
	}
	var covered []string
	for _, c := range h.covers {
		if _, err := os.Stat(c); err != nil {
			continue // nothing there to hide
		}
		if err := unix.Mount("tmpfs", c, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0755"); err != nil {
			return fmt.Errorf("cover %s: %v", c, err)
		}
		covered = append(covered, c)
	}
	for _, t := range kept {
		if err := os.MkdirAll(t.path, 0o755); err != nil {
			return fmt.Errorf("keep %s: %v", t.path, err)
		}
		if err := unix.MoveMount(t.fd, "", unix.AT_FDCWD, t.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("keep %s: %v", t.path, err)
		}
	}
	for _, c := range covered {
		if err := unix.Mount("none", c, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("make %s read-only: %v", c, err)
		}
	}
	return nil
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
