package local

// What a job's user leaves in the shared temporary directories goes with
// the job, as systemd does for its dynamic users.

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sharedTemps are the world-writable directories a job may leave files in.
var sharedTemps = []string{"/tmp", "/var/tmp", "/dev/shm", "/run/lock"}

// removeLeftovers removes what j left at the top of the shared temporary
// directories but keep (the job's own directories, which cleanup removes);
// its processes are gone, so nothing adds more meanwhile. With a watch it
// looks only at what appeared there since the job took its uid.
func (u *users) removeLeftovers(j *jobUser, keep ...string) error {
	var appeared []string
	unwatched := sharedTemps
	if u.watch != nil && j.mark >= 0 {
		appeared, unwatched = u.watch.since(j.mark)
	}
	var errs []error
	for _, p := range appeared {
		var st unix.Stat_t
		if !slices.Contains(keep, p) && unix.Lstat(p, &st) == nil && st.Uid == j.uid {
			errs = append(errs, removeLeftover(p, keep))
		}
	}
	return errors.Join(append(errs, scanLeftovers(j, keep, unwatched))...)
}

// scanLeftovers removes what j left at the top of dirs but keep, looking at
// every entry.
func scanLeftovers(j *jobUser, keep, dirs []string) error {
	var errs []error
	for _, dir := range dirs {
		d, err := os.Open(dir)
		if err != nil {
			continue
		}
		// Unsorted names, each stat'ed from the directory: a busy /tmp has
		// hundreds of entries.
		names, _ := d.Readdirnames(-1)
		var left []string
		for _, name := range names {
			var st unix.Stat_t
			if unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Uid == j.uid {
				left = append(left, filepath.Join(dir, name))
			}
		}
		d.Close()
		for _, p := range left {
			errs = append(errs, removeLeftover(p, keep))
		}
	}
	return errors.Join(errs...)
}

func removeLeftover(p string, keep []string) error {
	if slices.Contains(keep, p) {
		return nil
	}
	if err := removeAll(p); err != nil {
		return fmt.Errorf("remove %s, left by the job: %w", p, err)
	}
	return nil
}

// tempWatch is told by inotify of every entry made or moved into the top of
// the shared temporary directories, by any process: a job's end then looks
// at what appeared since it began instead of at every entry there. An entry
// a job's user owns can only appear there so (it cannot take another's).
type tempWatch struct {
	mu   sync.Mutex
	fd   int
	all  []string         // the directories to watch
	dirs map[int32]string // by watch descriptor: the first name of each
	// watched are the names watched: two may name one directory (a link).
	watched map[string]int32
	count   int64 // entries read so far
	// lost is count when events were last lost (the queue overflowed, a
	// directory is no longer watched, or the watch held too many): a job
	// marked before it looks at everything.
	lost    int64
	entries []tempEntry // appeared, oldest first
	buf     []byte
}

// tempEntry is an entry that appeared: the count at its reading.
type tempEntry struct {
	n    int64
	path string
}

// maxTempEntries bounds what the watch holds: beyond it, the jobs under way
// look at every entry, once.
const maxTempEntries = 1 << 14

// newTempWatch watches dirs, those there are; nil when inotify cannot.
func newTempWatch(dirs []string) *tempWatch {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	w := &tempWatch{fd: fd, all: dirs, dirs: map[int32]string{}, watched: map[string]int32{}, lost: -1, buf: make([]byte, 64<<10)}
	for _, d := range dirs {
		wd, err := unix.InotifyAddWatch(fd, d, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_ONLYDIR|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF)
		if err != nil {
			continue
		}
		if _, ok := w.dirs[int32(wd)]; !ok {
			w.dirs[int32(wd)] = d
		}
		w.watched[d] = int32(wd)
	}
	return w
}

// mark is where a job begins: call it before any of its processes starts.
func (w *tempWatch) mark() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.read()
	return w.count
}

// since returns the paths that appeared since mark m (some may be gone), and
// the directories it cannot tell of, to be looked at whole.
func (w *tempWatch) since(m int64) (appeared, unwatched []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.read()
	if m < w.lost {
		return nil, w.all
	}
	for _, d := range w.all {
		if _, ok := w.watched[d]; !ok {
			unwatched = append(unwatched, d)
		}
	}
	i := sort.Search(len(w.entries), func(i int) bool { return w.entries[i].n > m })
	seen := map[string]bool{}
	for _, e := range w.entries[i:] {
		if !seen[e.path] {
			seen[e.path] = true
			appeared = append(appeared, e.path)
		}
	}
	return appeared, unwatched
}

// read takes in the events queued, without waiting for more. Every entry a
// finished job made is among them: its system calls returned before it ended.
func (w *tempWatch) read() {
	for {
		n, err := unix.Read(w.fd, w.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			return // EAGAIN: nothing more queued
		}
		for b := w.buf[:n]; len(b) >= unix.SizeofInotifyEvent; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
			end := unix.SizeofInotifyEvent + int(ev.Len)
			if end > len(b) {
				break
			}
			name := string(bytes.TrimRight(b[unix.SizeofInotifyEvent:end], "\x00"))
			b = b[end:]
			dir, ok := w.dirs[ev.Wd]
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				w.lose()
			case !ok:
			case ev.Mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_UNMOUNT) != 0:
				// No longer watched: looked at whole from now on; what it
				// held since the last mark may be lost.
				delete(w.dirs, ev.Wd)
				maps.DeleteFunc(w.watched, func(_ string, wd int32) bool { return wd == ev.Wd })
				w.lose()
			case ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 && name != "":
				w.count++
				w.entries = append(w.entries, tempEntry{w.count, filepath.Join(dir, name)})
				if len(w.entries) > maxTempEntries {
					w.lose()
				}
			}
		}
	}
}

// lose forgets the entries: the jobs marked before look at everything.
func (w *tempWatch) lose() {
	w.count++
	w.lost = w.count
	w.entries = w.entries[:0]
}
