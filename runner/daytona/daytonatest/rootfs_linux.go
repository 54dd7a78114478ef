//go:build linux

package daytonatest

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/forge-run/forge/internal/linux"
	"github.com/forge-run/forge/internal/loopback"
	"golang.org/x/sys/unix"
)

// The root file systems: every sandbox, and every snapshot build, has its
// own root directory on this machine, which its processes are chrooted
// into. A holder per root (the toolkit's init, internal/linux) keeps a
// mount namespace, made private, where:
//   - each of the host's top-level directories that carry its tools (usr,
//     etc, opt, var, root, home, srv, and bin, lib… when they are
//     directories) is an overlay: the host's directory below, the root's
//     directory of that name above, so the sandbox sees the host's tools
//     and what its image and it wrote, and its writes stay in its root;
//   - the symbolic links among them (/bin -> usr/bin) are remade in the
//     root;
//   - /dev and /sys are the host's, /dev/shm a tmpfs of its own, /proc
//     the root's PID namespace's own;
//   - a home under /home is the root's plain directory, bound over the
//     overlay, so that a test writing there from the host is seen at once
//     (an overlay caches what it looked up and misses what changed in its
//     upper layer behind its back);
//   - everything else (/tmp, /app, /tests, /logs…) is simply the root's.
//
// One namespace per root, not per process: overlayfs leaves two live
// mounts over one upper directory undefined, and processes of one sandbox
// must see each other's writes. The root's processes join it, chrooted
// into the root (a mount point: see fsRoot.dir), and the holder's PID
// namespace (forked from a thread that entered the namespaces, inNS), and
// its network namespace, loopback only, unless it shares this machine's:
// what a command leaves running, daemons that called setsid included,
// lives on until the holder ends, and then the kernel kills it all. The
// mounts live only in the holder's namespace (inMountNS): nothing is
// mounted on the host, and they go when the holder and the processes
// using them end.

// bindMount is a host directory bound at a path of a root.
type bindMount struct{ src, dst string }

// fsRoot is a live root: its holder, and the way in for processes and
// for the toolbox's files.
type fsRoot struct {
	// dir is the root as its processes, in the holder's mount namespace,
	// chroot into it: a mount point (bound onto itself), as a container's
	// root is. way is the way in from this machine's mount namespace
	// (/proc/<holder>/root/<dir>), for the toolbox's files.
	dir, way string
	// holder is the init of the root's namespaces (linux.Init): its PID
	// namespace, its mount namespace and, unless it shares this
	// machine's, its network namespace.
	holder *os.Process
	pipe   *os.File      // closing it ends the holder
	done   chan struct{} // closed when the holder has ended
	once   sync.Once

	// pidNSID names the root's PID namespace, to find its processes
	// among this machine's, even once the holder has ended.
	pidNSID linux.Namespace
	// The namespaces the root's processes join: its PID and mount
	// namespaces, and its network namespace (nil when it shares this
	// machine's). Closed, and nil, once the holder has ended.
	nsMu                sync.RWMutex
	pidNS, mntNS, netNS *os.File
}

// startRoot starts the holder of the root dir (made if need be): overlay
// work directories under work, home (a path under /home, or "") bound as
// the root's plain directory, binds bound, a network namespace of its own
// if ownNet. wg counts the holder until it has ended and its work
// directories are removed.
func startRoot(dir, work, home string, binds []bindMount, ownNet bool, wg *sync.WaitGroup) (*fsRoot, error) {
	if err := rootFSUnavailable(); err != nil {
		return nil, err
	}
	// The work directories go on every return but the last, whose holder's
	// waiter removes them once the holder has ended.
	dir, err := makeRootDirs(dir, work, home)
	var r *fsRoot
	if err == nil {
		r, err = holdRoot(dir, ownNet)
	}
	if err != nil {
		os.RemoveAll(work)
		return nil, err
	}
	if err := inMountNS(r.holder.Pid, func() error { return mountRoot(dir, work, home, binds) }); err != nil {
		r.abort(work)
		return nil, fmt.Errorf("could not mount the root %s: %w", dir, err)
	}
	err = r.openNamespaces(ownNet)
	if err == nil {
		err = r.mountProc(dir)
	}
	if err != nil {
		r.abort(work)
		return nil, fmt.Errorf("could not start the root %s: %w", dir, err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.holder.Wait()
		r.closeNamespaces()
		os.RemoveAll(work)
		close(r.done)
	}()
	return r, nil
}

// makeRootDirs makes the root dir, its skeleton and the overlays' work
// directories under work; it answers dir with no link on the way:
// processes reach the root through the holder's /proc/<pid>/root, and a
// link would be followed from theirs.
func makeRootDirs(dir, work, home string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(dir+work, ",:\n") {
		return "", fmt.Errorf("the emulator's directory %s cannot hold a root: overlay options cannot name paths with , or :", dir)
	}
	if err := makeSkeleton(dir); err != nil {
		return "", err
	}
	for _, d := range rootFSProbe.lay.overlays {
		if err := os.MkdirAll(filepath.Join(work, d), 0o700); err != nil {
			return "", err
		}
	}
	if home != "" {
		return dir, os.MkdirAll(filepath.Join(work, homeStage), 0o700)
	}
	return dir, nil
}

// homeStage is where, under the work directory, a root's home is bound
// aside while /home is overlaid (not an overlay's work directory).
const homeStage = ".home"

// holdRoot starts the holder of the root dir: the init of new PID and
// mount namespaces, and of a network namespace if ownNet.
func holdRoot(dir string, ownNet bool) (*fsRoot, error) {
	flags := uintptr(unix.CLONE_NEWNS)
	if ownNet {
		flags |= unix.CLONE_NEWNET
	}
	holder, pipe, err := rootFSProbe.init.Hold(flags)
	if err != nil {
		return nil, fmt.Errorf("could not start the root %s: %w", dir, err)
	}
	return &fsRoot{
		holder: holder, pipe: pipe, done: make(chan struct{}),
		dir: dir, way: fmt.Sprintf("/proc/%d/root%s", holder.Pid, dir),
	}, nil
}

// abort ends a holder that never served, and removes work.
func (r *fsRoot) abort(work string) {
	r.pipe.Close()
	r.holder.Kill()
	r.holder.Wait()
	r.closeNamespaces()
	os.RemoveAll(work)
}

// inMountNS runs f on a thread of its own that has joined the mount
// namespace of the process pid, made private first: what f mounts stays
// there, never propagated to this machine's. The thread ends with f.
func inMountNS(pid int, f func() error) error {
	return linux.OnLockedThread(func() (bool, error) {
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			return false, fmt.Errorf("unshare the file system context: %w", err)
		}
		fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/mnt", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWNS)
			unix.Close(fd)
		}
		if err != nil {
			return false, fmt.Errorf("join the root's mount namespace: %w", err)
		}
		// Recursively private, as unshare(1) makes it: on a system whose /
		// is shared (systemd), the root's mounts would appear on the host.
		if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return false, fmt.Errorf("make the mount namespace private: %w", err)
		}
		return false, f()
	})
}

// mountRoot makes the root dir's mounts (see the top of this file), in
// the calling thread's mount namespace; /proc is mountProc's.
func mountRoot(dir, work, home string, binds []bindMount) error {
	type mnt struct {
		src, dst, fstype string
		flags            uintptr
		data             string
	}
	var ms []mnt
	stage := filepath.Join(work, homeStage)
	if home != "" {
		// Bound aside first: once /home is overlaid, the root's own
		// directory is no longer reachable by its path.
		ms = append(ms, mnt{filepath.Join(dir, home), stage, "", unix.MS_BIND, ""})
	}
	for _, d := range rootFSProbe.lay.overlays {
		opts := "lowerdir=/" + d + ",upperdir=" + filepath.Join(dir, d) + ",workdir=" + filepath.Join(work, d)
		ms = append(ms, mnt{"overlay", filepath.Join(dir, d), "overlay", 0, opts})
	}
	if home != "" {
		ms = append(ms, mnt{stage, filepath.Join(dir, home), "", unix.MS_MOVE, ""})
	}
	ms = append(ms, mnt{"/dev", filepath.Join(dir, "dev"), "", unix.MS_BIND | unix.MS_REC, ""})
	if _, err := os.Stat("/dev/shm"); err == nil {
		ms = append(ms, mnt{"shm", filepath.Join(dir, "dev", "shm"), "tmpfs", 0, "mode=1777"})
	}
	ms = append(ms, mnt{"/sys", filepath.Join(dir, "sys"), "", unix.MS_BIND | unix.MS_REC, ""})
	for _, b := range binds {
		ms = append(ms, mnt{b.src, filepath.Join(dir, b.dst), "", unix.MS_BIND, ""})
	}
	// Last, the root bound onto itself with all of the above: its
	// processes' / is a mount point (a container's is), which unshare(1)
	// expects. Not first: an overlay's upper and work directories must be
	// on one mount.
	ms = append(ms, mnt{dir, dir, "", unix.MS_BIND | unix.MS_REC, ""})
	for _, m := range ms {
		if err := mount(m.src, m.dst, m.fstype, m.flags, m.data); err != nil {
			return err
		}
	}
	return nil
}

// mount is mount(2), its error naming what failed.
func mount(src, dst, fstype string, flags uintptr, data string) error {
	if err := unix.Mount(src, dst, fstype, flags, data); err != nil {
		return fmt.Errorf("mount %s on %s (%s %s): %w", src, dst, fstype, data, err)
	}
	return nil
}

// openNamespaces opens the namespaces the root's processes join: the
// holder's PID namespace, and its network namespace when it has one of
// its own, brought up.
func (r *fsRoot) openNamespaces(ownNet bool) error {
	ns := fmt.Sprintf("/proc/%d/ns/", r.holder.Pid)
	var err error
	if r.pidNS, err = os.Open(ns + "pid"); err != nil {
		return err
	}
	if r.pidNSID, err = linux.NamespaceOf(int(r.pidNS.Fd())); err != nil {
		return err
	}
	if r.mntNS, err = os.Open(ns + "mnt"); err != nil {
		return err
	}
	if ownNet {
		if r.netNS, err = os.Open(ns + "net"); err != nil {
			return err
		}
		// A new network namespace has its loopback down.
		return r.inNS(loopback.Up)
	}
	return nil
}

// mountProc mounts the root dir's /proc, which only a process of its PID
// namespace can: mount(8), started in the root's namespaces (not chrooted).
// It shows the root's processes only, with the numbers they know each
// other by.
func (r *fsRoot) mountProc(dir string) error {
	cmd := exec.Command(rootFSProbe.mount, "-t", "proc", "proc", filepath.Join(dir, "proc"))
	cmd.Env = []string{"PATH=" + hostPath(), "LANG=C"}
	out := &capBuf{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	err := r.start(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		return fmt.Errorf("mount the root's /proc: %v: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

func (r *fsRoot) closeNamespaces() {
	r.nsMu.Lock()
	defer r.nsMu.Unlock()
	for _, f := range []**os.File{&r.pidNS, &r.mntNS, &r.netNS} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
}

// inNS runs f on a thread of its own that has joined the root's PID
// namespace (for the processes it forks), mount namespace and network
// namespace. The thread is never handed back to other goroutines: it
// ends with f.
func (r *fsRoot) inNS(f func() error) error {
	r.nsMu.RLock()
	defer r.nsMu.RUnlock()
	if r.pidNS == nil {
		return errors.New("the sandbox's root is gone")
	}
	return linux.OnLockedThread(func() (bool, error) {
		if err := unix.Setns(int(r.pidNS.Fd()), unix.CLONE_NEWPID); err != nil {
			return false, fmt.Errorf("join the root's PID namespace: %w", err)
		}
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			return false, fmt.Errorf("unshare the file system context: %w", err)
		}
		if err := unix.Setns(int(r.mntNS.Fd()), unix.CLONE_NEWNS); err != nil {
			return false, fmt.Errorf("join the root's mount namespace: %w", err)
		}
		if r.netNS != nil {
			if err := unix.Setns(int(r.netNS.Fd()), unix.CLONE_NEWNET); err != nil {
				return false, fmt.Errorf("join the root's network namespace: %w", err)
			}
		}
		return false, f()
	})
}

// stop ends the holder; its mounts go with the last process using them.
// It does not wait: done is closed once the holder has ended.
//
// The holder is the namespace's init: killed, the kernel kills every
// process of the namespace, and the holder is reaped only once they have
// all ended. So once done is closed nothing of the root is left running,
// but for what the emulator itself has still to reap.
func (r *fsRoot) stop() {
	r.once.Do(func() {
		r.pipe.Close()
		r.holder.Kill()
	})
}

// command is command run with "/bin/sh -c" in the root as the account a
// (nil is root), in cwd (a path in the root), in its own process group;
// start starts it.
func (r *fsRoot) command(a *account, command, cwd string, env []string) *exec.Cmd {
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir, cmd.Env = cwd, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Chroot: r.dir}
	if a != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: []uint32{}}
	}
	return cmd
}

// as runs f, a file operation of the toolbox, as the account (its file
// system uid and gid, on a thread of its own): what the account may not
// do fails, and what it makes is its own. A nil account (root), or a nil
// root, runs f as it is.
func (r *fsRoot) as(a *account, f func() error) error {
	if a == nil || r == nil {
		return f()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// setfsuid answers the previous id whatever happens: set, then check
	// (-1 changes nothing).
	gid, _ := unix.SetfsgidRetGid(int(a.gid))
	uid, _ := unix.SetfsuidRetUid(int(a.uid))
	defer func() {
		unix.Setfsuid(uid)
		unix.Setfsgid(gid)
	}()
	if got, _ := unix.SetfsuidRetUid(-1); got != int(a.uid) {
		return fmt.Errorf("act as uid %d: setfsuid did not take", a.uid)
	}
	return f()
}

// start starts cmd, made by command, in the root's namespaces.
func (r *fsRoot) start(cmd *exec.Cmd) error { return r.inNS(cmd.Start) }

// alive says whether the root's PID namespace has a process pid (a
// zombie included), as its processes number it.
func (r *fsRoot) alive(pid int) bool {
	found := false
	r.pidNSID.EachPid(func(p int) { found = found || linux.NSPid(p) == pid })
	return found
}

// The toolbox's files and the builder's COPY are reached through the
// holder, so that they go through the overlays as the sandbox's own
// writes do, with every path resolved in the root (symbolic links
// included, absolute ones too): nothing escapes to the host's files.

func openat2(dirfd int, p string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, p, &unix.OpenHow{
			Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode),
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err != unix.EINTR && err != unix.EAGAIN {
			return fd, err
		}
	}
}

// rel is p, an absolute path in the root, relative to the root.
func rel(p string) string { return cmp.Or(strings.TrimPrefix(path.Clean("/"+p), "/"), ".") }

// at opens p in the root with flags.
func (r *fsRoot) at(op, p string, flags int, mode uint32) (int, error) {
	// The way in is the holder's, which only root may take: under as, the
	// thread's file system uid is root's for that open alone.
	uid, _ := unix.SetfsuidRetUid(0)
	root, err := unix.Open(r.way, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	unix.Setfsuid(uid)
	if err != nil {
		return -1, &fs.PathError{Op: op, Path: p, Err: fmt.Errorf("the sandbox's root is gone: %w", err)}
	}
	defer unix.Close(root)
	fd, err := openat2(root, rel(p), flags, mode)
	if err != nil {
		return -1, &fs.PathError{Op: op, Path: p, Err: err}
	}
	return fd, nil
}

// open opens the file p of the root for reading.
func (r *fsRoot) open(p string) (*os.File, error) { return r.file("open", p, unix.O_RDONLY, 0) }

// create creates or truncates the file p of the root, with perm if new.
func (r *fsRoot) create(p string, perm fs.FileMode) (*os.File, error) {
	return r.file("create", p, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, perm)
}

// file opens the file p of the root with flags, as at does.
func (r *fsRoot) file(op, p string, flags int, perm fs.FileMode) (*os.File, error) {
	fd, err := r.at(op, p, flags, uint32(perm.Perm()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), p), nil
}

// mkdirAll makes the directory p of the root and its missing parents.
func (r *fsRoot) mkdirAll(p string, perm fs.FileMode) error {
	parts := strings.Split(rel(p), "/")
	if parts[0] == "." {
		return nil
	}
	parent, err := r.at("mkdir", "/", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer func() { unix.Close(parent) }()
	for i, name := range parts {
		sub := "/" + strings.Join(parts[:i+1], "/")
		fd, err := r.at("mkdir", sub, unix.O_PATH|unix.O_DIRECTORY, 0)
		if errors.Is(err, unix.ENOENT) {
			// Made in the parent as resolved: a link on the way is
			// followed in the root.
			if err := unix.Mkdirat(parent, name, uint32(perm.Perm())); err != nil && err != unix.EEXIST {
				return &fs.PathError{Op: "mkdir", Path: sub, Err: err}
			}
			fd, err = r.at("mkdir", sub, unix.O_PATH|unix.O_DIRECTORY, 0)
		}
		if err != nil {
			return err
		}
		unix.Close(parent)
		parent = fd
	}
	return nil
}

// parentOf opens the directory p is in, resolved in the root.
func (r *fsRoot) parentOf(op, p string) (int, string, error) {
	p = path.Clean("/" + p)
	fd, err := r.at(op, path.Dir(p), unix.O_PATH|unix.O_DIRECTORY, 0)
	return fd, path.Base(p), err
}

// symlink makes p a symbolic link to target.
func (r *fsRoot) symlink(target, p string) error {
	dir, name, err := r.parentOf("symlink", p)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if err := unix.Symlinkat(target, dir, name); err != nil {
		return &fs.PathError{Op: "symlink", Path: p, Err: err}
	}
	return nil
}

// remove removes the file or empty directory p, if any.
func (r *fsRoot) remove(p string) {
	dir, name, err := r.parentOf("remove", p)
	if err != nil {
		return
	}
	defer unix.Close(dir)
	if unix.Unlinkat(dir, name, 0) != nil {
		unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
	}
}
