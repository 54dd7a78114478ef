package local

// When forge is root, each job runs as a uid of its own (docs/manifest.md#local).

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The uids (and gids, the same numbers) forge gives jobs when it is root:
// 65536 from 0x70000000, a range systemd leaves unused (systemd.io/UIDS-GIDS);
// inside a user namespace that does not map it, systemd's dynamic-user
// range. The first of the range builds environments; each job gets one of
// the rest, locked for its life across every forge on the machine.
var uidRanges = []struct{ base, count uint32 }{
	{0x70000000, 1 << 16},
	{61184, 65519 - 61184 + 1},
}

// usersLockFiles are where forges on this machine lock the uids their jobs
// hold, one byte per uid (open file description locks): the first that opens.
var usersLockFiles = []string{"/run/forge-users.lock", filepath.Join(os.TempDir(), "forge-users.lock")}

// users hands out the job uids.
type users struct {
	base, count uint32
	// lock holds a byte per uid: locked while a job holds the uid, and 1
	// from then until what it left in the shared temporary directories
	// is gone (a forge killed before leaves it 1).
	lock *os.File
	mu   sync.Mutex
	next uint32          // the offset tried first, advancing: a uid is reused last
	held map[uint32]bool // by this process (its own locks never conflict)
	// watch tells what appeared in the shared temporary directories; nil:
	// a job's end looks at every entry there.
	watch *tempWatch
}

// newUsers returns the job users when forge is root and jobs are not to run
// as root (mode), else nil: jobs run as forge's user. Every Runner of the
// process shares them (one lock file open, one probe).
func newUsers(mode string) (*users, error) {
	if mode == UserRoot || os.Geteuid() != 0 {
		return nil, nil
	}
	return processUsers()
}

var processUsers = sync.OnceValues(openUsers)

// openUsers finds the range, opens the lock file and checks a process can
// start as the builder.
func openUsers() (*users, error) {
	u := &users{held: map[uint32]bool{}}
	for _, r := range uidRanges {
		if mapped("/proc/self/uid_map", r.base, r.count) && mapped("/proc/self/gid_map", r.base, r.count) {
			u.base, u.count = r.base, r.count
			break
		}
	}
	if u.count == 0 {
		return nil, errors.New("no range of uids to run jobs as is mapped in this user namespace")
	}
	var errs []error
	for _, p := range usersLockFiles {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err == nil {
			u.lock = f
			break
		}
		errs = append(errs, err)
	}
	if u.lock == nil {
		return nil, fmt.Errorf("open a lock file for the job uids: %w", errors.Join(errs...))
	}
	u.next = 1 + rand.Uint32N(u.count-1) // forges started together start apart
	if err := u.probe(); err != nil {
		u.lock.Close()
		return nil, err
	}
	u.watch = newTempWatch(sharedTemps)
	return u, nil
}

// mapped reports whether ids [base, base+count) are all in the map file.
func mapped(file string, base, count uint32) bool {
	f, err := os.Open(file)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) // no user namespaces: all are
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		var inside, outside, n uint64
		if _, err := fmt.Sscan(s.Text(), &inside, &outside, &n); err == nil &&
			inside <= uint64(base) && uint64(base)+uint64(count) <= inside+n {
			return true
		}
	}
	return false
}

// probe starts a process as the builder, which must work for any job to.
func (u *users) probe() error {
	cmd := &exec.Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "exit 0"}, Dir: "/"}
	runAs(cmd, u.builder())
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("jobs cannot run as an unprivileged user here (uid %d: %v); local: {user: root} runs them as root", u.base, err)
	}
	return nil
}

// jobUser is a uid and gid a job's processes run as.
type jobUser struct {
	uid, gid uint32
	// mark is where the job began in users.watch; -1: its end looks at
	// every entry of the shared temporary directories.
	mark int64
}

// builder is who builds environments: no job is it, so none can change one.
func (u *users) builder() *jobUser { return &jobUser{u.base, u.base, -1} }

// acquire gives a job a uid no process of any forge holds.
func (u *users) acquire() (*jobUser, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for range u.count - 1 {
		off := u.next
		u.next++
		if u.next == u.count {
			u.next = 1
		}
		if u.held[off] {
			continue
		}
		err := u.setLock(off, unix.F_WRLCK)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			continue // another forge's job
		}
		if err != nil {
			return nil, fmt.Errorf("lock a job uid: %w", err)
		}
		u.held[off] = true
		id := u.base + off
		j := &jobUser{id, id, -1}
		// A uid whose byte is set may hold what a killed forge's job left:
		// its end looks at everything.
		var was [1]byte
		if n, _ := u.lock.ReadAt(was[:], int64(off)); (n == 0 || was[0] == 0) && u.watch != nil {
			j.mark = u.watch.mark()
		}
		if _, err := u.lock.WriteAt([]byte{1}, int64(off)); err != nil {
			j.mark = -1
		}
		return j, nil
	}
	return nil, fmt.Errorf("all %d job uids are in use", u.count-1)
}

// release lets another job have j's uid: call it only once nothing of the
// job is left (end), in the shared temporary directories too.
func (u *users) release(j *jobUser) {
	off := j.uid - u.base
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.held[off] {
		_, _ = u.lock.WriteAt([]byte{0}, int64(off))
		_ = u.setLock(off, unix.F_UNLCK)
		delete(u.held, off)
	}
}

func (u *users) setLock(off uint32, typ int16) error {
	lk := unix.Flock_t{Type: typ, Whence: 0, Start: int64(off), Len: 1}
	for {
		err := unix.FcntlFlock(u.lock.Fd(), unix.F_OFD_SETLK, &lk)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// describe says who jobs run as.
func (u *users) describe() string {
	return fmt.Sprintf("jobs run as uids %d–%d, one each, none root (environments built as uid %d)", u.base+1, u.base+u.count-1, u.base)
}

// runAs has cmd start as j, with no supplementary groups.
func runAs(cmd *exec.Cmd, j *jobUser) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: j.uid, Gid: j.gid, Groups: []uint32{}}
}

// give makes dir and everything in it j's (symlinks themselves, never
// their targets).
func give(dir string, j *jobUser) error {
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(j.uid), int(j.gid))
	})
}

// ownedBy reports whether process pid runs as uid (its effective uid) and
// has not ended: a zombie waits for its parent, and no signal ends it more.
func ownedBy(pid int, uid uint32) bool {
	var st unix.Stat_t
	dir := "/proc/" + strconv.Itoa(pid)
	if unix.Stat(dir, &st) != nil || st.Uid != uid {
		return false
	}
	b, err := os.ReadFile(dir + "/stat")
	i := bytes.LastIndexByte(b, ')') // the name may hold anything
	return err == nil && i >= 0 && !bytes.HasPrefix(b[i:], []byte(") Z"))
}

// searchable reports why uid cannot reach dir (nil when it can): every
// directory from / to dir must let it search, by its mode bits.
func searchable(dir string, j *jobUser) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	p := "/"
	for _, part := range append([]string{""}, strings.Split(strings.Trim(real, "/"), "/")...) {
		p = filepath.Join(p, part)
		if err := may(p, j, 0o1); err != nil {
			return err
		}
	}
	return nil
}

// may reports why j lacks the permission bits want (0o1 search/execute,
// 0o4 read) on p, by its owner, group and mode (ACLs are not read).
func may(p string, j *jobUser, want uint32) error {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	mode := st.Mode & 0o7
	switch {
	case st.Uid == j.uid:
		mode = st.Mode >> 6 & 0o7
	case st.Gid == j.gid:
		mode = st.Mode >> 3 & 0o7
	}
	if mode&want != want {
		what := map[uint32]string{0o1: "search", 0o4: "read"}[want]
		if want == 0o1 && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			what = "execute"
		}
		m := fs.FileMode(st.Mode & 0o777)
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			m |= fs.ModeDir
		}
		return fmt.Errorf("the job's user (uid %d) may not %s %s (%s, owned by uid %d)", j.uid, what, p, m, st.Uid)
	}
	return nil
}

// reachablePath is pathList without the directories j cannot search.
func reachablePath(pathList string, j *jobUser) string {
	keep := slices.DeleteFunc(filepath.SplitList(pathList), func(d string) bool { return filepath.IsAbs(d) && searchable(d, j) != nil })
	return strings.Join(keep, string(os.PathListSeparator))
}

// etcFiles are an /etc/passwd and /etc/group that also name j ("forge", at
// home in its working directory), written into dir (root's alone, which no
// job can change or move) and bound over the system's in the job's mount
// namespace: whoami, getpass and git's default identity work as for an
// account of the machine. (A memory file or an unlinked one cannot be
// bound; nor, from a namespace of its own, one forge holds open.)
func (s *systemEtc) etcFiles(j *jobUser, home, dir string) ([]etcFile, error) {
	var out []etcFile
	for _, f := range etcEntries(j, home) {
		b, err := s.content(f.path, f.entry)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var m *os.File
		if err == nil {
			m, err = os.CreateTemp(dir, filepath.Base(f.path)+"-")
		}
		if err == nil {
			out = append(out, etcFile{path: f.path, src: m.Name()})
			if _, err = m.Write(b); err == nil {
				err = m.Chmod(0o644)
			}
			if cerr := m.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			removeEtc(out)
			return nil, fmt.Errorf("the job's %s: %w", f.path, err)
		}
	}
	return out, nil
}

// rewriteEtc writes files, made by etcFiles for another job, again for j:
// in place, where a kept mount namespace binds them.
func (s *systemEtc) rewriteEtc(files []etcFile, j *jobUser, home string) error {
	entries := etcEntries(j, home)
	for _, f := range files {
		i := slices.IndexFunc(entries, func(e etcEntry) bool { return e.path == f.path })
		if i < 0 {
			return fmt.Errorf("the job's %s: not one of forge's", f.path)
		}
		b, err := s.content(f.path, entries[i].entry)
		if err == nil {
			err = os.WriteFile(f.src, b, 0o644)
		}
		if err != nil {
			return fmt.Errorf("the job's %s: %w", f.path, err)
		}
	}
	return nil
}

// etcEntry is what a job's file path adds to the system's.
type etcEntry struct{ path, entry string }

func etcEntries(j *jobUser, home string) []etcEntry {
	return []etcEntry{
		{"/etc/passwd", fmt.Sprintf("forge:x:%d:%d:forge job:%s:/bin/sh\n", j.uid, j.gid, home)},
		{"/etc/group", fmt.Sprintf("forge:x:%d:\n", j.gid)},
	}
}

// systemEtc is the system's /etc/passwd and /etc/group as last read, read
// again only once changed: every job's files start with them.
type systemEtc struct {
	mu   sync.Mutex
	read map[string]etcRead
}

type etcRead struct {
	dev, ino, size uint64
	mtime, ctime   unix.Timespec
	b              []byte // ending in a newline, when not empty
}

// content is the system's file at path with entry added.
func (s *systemEtc) content(path, entry string) ([]byte, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.read[path]
	if !ok || r.dev != st.Dev || r.ino != st.Ino || r.size != uint64(st.Size) || r.mtime != st.Mtim || r.ctime != st.Ctim {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			b = append(b, '\n')
		}
		r = etcRead{dev: st.Dev, ino: st.Ino, size: uint64(st.Size), mtime: st.Mtim, ctime: st.Ctim, b: b}
		if s.read == nil {
			s.read = map[string]etcRead{}
		}
		s.read[path] = r
	}
	return append(append(make([]byte, 0, len(r.b)+len(entry)), r.b...), entry...), nil
}

// etcPlaces are where the jobs' /etc files go when one is a tmpfs: on disk
// each job's pair would cost an inode made and freed, and ext4 without a
// journal then skips every inode freed in the last seconds at each new one.
var etcPlaces = []string{"/run", "/dev/shm"}

// etcParent is the first of etcPlaces that is a tmpfs, else fallback.
func etcParent(fallback string) string {
	for _, p := range etcPlaces {
		var st unix.Statfs_t
		if unix.Statfs(p, &st) == nil && st.Type == unix.TMPFS_MAGIC {
			return p
		}
	}
	return fallback
}

// removeEtc removes the files etcFiles made.
func removeEtc(fs []etcFile) {
	for _, f := range fs {
		os.Remove(f.src)
	}
}
