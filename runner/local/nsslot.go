package local

// Mount namespaces kept for later jobs: a job's processes see the file
// system as forge does but for an /etc/passwd and /etc/group that name the
// job's user. A mount namespace made for each process (a copy of every
// mount, torn down at its exit) cost a job more than its own start; a kept
// one costs rewriting those two files.

// nsSlot is a mount namespace where forge's files etc are bound over the
// system's; each job that takes it rewrites them in place. The first
// process started in it makes it: fd is -1 until then.
type nsSlot struct {
	fd  int
	etc []etcFile
	// proc is the PID namespace (device, inode) whose /proc is mounted
	// there, when hasProc: a job's own (enterSlotView).
	proc    [2]uint64
	hasProc bool
}

// maxNsSlots bounds the mount namespaces kept.
const maxNsSlots = 16

// keepsNamespaces reports whether mount namespaces may be kept: where
// nothing a job started outlives it, and where entering one keeps forge's
// root (forge chrooted below its namespace's root would not).
func (r *Runner) keepsNamespaces() bool {
	return r.endsWhole() && setnsKeepsRoot()
}

// takeSlot gives a job whose user is u, at home in home, a kept mount
// namespace, its files written for it; nil when none is free.
func (r *Runner) takeSlot(u *jobUser, home string) *nsSlot {
	if !r.keepsNamespaces() {
		return nil
	}
	s, ok := r.slots.take(nil)
	if !ok {
		return nil
	}
	if err := r.systemEtc.rewriteEtc(s.etc, u, home); err != nil {
		r.dropSlot(s)
		return nil
	}
	return s
}

// putSlot keeps s, whose job's processes are all gone, for a later job,
// once the job's /proc is unmounted there (dropProc): the unmount waits for
// an RCU grace period, which the next job's start then need not.
func (r *Runner) putSlot(s *nsSlot) {
	if !r.keepsNamespaces() || (s.hasProc && r.platform.dropProc(s) != nil) || !r.slots.put(s) {
		r.dropSlot(s)
	}
}

// dropSlot lets go of s's namespace and removes its files.
func (r *Runner) dropSlot(s *nsSlot) {
	closeNamespace(s.fd)
	s.fd = -1
	removeEtc(s.etc)
}

// dropSlots lets go of the kept namespaces.
func (r *Runner) dropSlots() {
	for _, s := range r.slots.takeAll() {
		r.dropSlot(s)
	}
}
