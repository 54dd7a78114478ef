// Package local is the local backend: it runs each job as processes on this
// machine, in a fresh working directory, and makes sure nothing a job starts
// outlives it.
//
// It owns the working directory's life (copy the job's files in with their
// executable bit, read the artifact, the FORGE_RESULT file and the
// transcript (FORGE_TRANSCRIPT) back without following symlinks or
// leaving the directory, remove it even when the
// candidate made it read-only, once the job's processes are all gone: in
// the background, at most two at a time, so that the next job need not wait
// for it, and Runner.Close waits for those), the candidate's exact
// environment (PATH and
// LANG from forge, HOME the working directory, TMPDIR its tmp/,
// PYTHONUNBUFFERED=1, the manifest's env and the FORGE_* variables; nothing
// else of forge's, so no DAYTONA_* and no secrets), the process lifecycle
// (argv never through a shell, stdout and stderr drained into capped buffers
// so memory stays flat whatever a candidate prints, SIGTERM then SIGKILL on
// timeout or cancellation) and the containment described below. It must not
// know about manifests, scoring or reports; success and the error kind are
// decided by runner.Result.Settle (a failed setup by Result.SetupFailed), the
// same as for every backend.
//
// A plain job (runner.Job.Dir set: forge's judges) runs in that existing
// directory instead of a fresh one, which Run neither fills nor removes:
// its Command as it is, with its Env, forge's PATH, HOME, LANG and TMPDIR
// (which win over Env) and FORGE_OBJECTIVE, FORGE_CANDIDATE_ID, FORGE_TRIAL
// and FORGE_RUN_ID; nothing is read back, so exit 0 is success and the
// verdict is its stdout. It is contained exactly as a candidate is.
//
// runtime_seconds is the candidate's process alone, from just before it is
// started to its exit (its timeout when the timeout ended it, as on
// Daytona): not the working directory, the box, the setup or the reading
// back. job_seconds is the whole Run.
//
// # Containment
//
// A job's setup commands and its candidate share one box; every process
// they start, however it detaches, is in it. When the candidate exits (or
// times out, or the run is cancelled) the whole box is ended before the
// artifact is read, and Run returns only after that. New picks the strongest
// tier the machine allows; Options.Containment can name one.
//
//   - pidns (Linux, needs CAP_SYS_ADMIN, e.g. root): each job gets its own
//     PID namespace whose init reads a pipe only forge holds and ignores
//     SIGCHLD, so that the kernel reaps the orphans it inherits at once. On
//     amd64 the init is built in (holder_linux_amd64.s): a process that
//     shares forge's memory (clone with CLONE_VM), so that starting it
//     loads no program and copies no address space, about the cost of
//     starting a thread; it closes every descriptor but its pipe, sets
//     every signal to its default action, and never touches forge's memory
//     but one page of its own. Sharing the memory, ps shows it with forge's
//     command line and RSS (its name, in pstree and ps -o comm, is
//     forge-init). Elsewhere it is bash's read builtin (bash's SIGCHLD
//     handler reaps), or cat, which leaves orphans zombies until the job
//     ends, when there is no bash. The setup commands and the
//     candidate are started in that namespace (setns on a locked thread,
//     restored afterwards) as ordinary children of forge, so they are not
//     PID 1 and keep normal signal semantics. On timeout or cancel every
//     process of the namespace gets SIGTERM, once; after KillGrace the init
//     gets SIGKILL, upon which the kernel kills every process in the
//     namespace, double-forked setsid daemons included, and the init is
//     reaped only once they are all gone. If forge itself dies, the pipe
//     closes, the init exits, and the namespace ends just the same.
//     Guarantee: nothing started by the job survives Run, nor forge's death.
//     Not done for non-root users: a user namespace would be needed, and a
//     multithreaded Go process cannot setns into one.
//   - cgroup (Linux with a writable cgroup v2 that has cgroup.kill, kernel
//     5.14+): each job gets its own cgroup; processes are started directly
//     into it (clone3 CLONE_INTO_CGROUP), so none can escape before it is
//     placed. SIGTERM goes to every process listed in cgroup.procs, once; then
//     cgroup.kill, and Run waits until the cgroup is empty. Guarantee:
//     nothing started by the job survives Run; if forge is killed the job's
//     processes are not (the cgroup stays until removed).
//   - pgroup (any Unix): each process is started in its own process group,
//     which gets the signals. On Linux forge also scans /proc for processes
//     whose environment carries the job's FORGE_RUN_ID, FORGE_CANDIDATE_ID
//     and FORGE_TRIAL and kills those, until none is left. Best effort: a
//     process that leaves its group (setsid) and replaces its environment
//     (exec with a new env) escapes; elsewhere than Linux, any process that
//     leaves its group escapes. forge does not become a child subreaper
//     (PR_SET_CHILD_SUBREAPER is process-wide and would make forge reap
//     orphans other packages' os/exec calls do not expect); the environment
//     sweep finds those orphans instead.
//   - process (platforms without process groups, e.g. Windows): only the
//     processes forge started itself are signalled and killed.
//
// Fork bombs: with pidns and cgroup, where a pids cgroup is writable (v2
// with the pids controller, else the v1 pids hierarchy, the setns thread
// being placed in it before it starts the job's processes) each job may hold
// at most Options.MaxProcs tasks; forks beyond that fail with EAGAIN.
// Without one (and always with pgroup and process) there is no such cap.
// Runner.Describe says which tier and cap this machine got.
//
// Job cgroups and working directories are named forge-<pid>-*; New removes
// those whose forge process is gone (killed before it could clean up: a
// SIGKILL, a second Ctrl-C), empty cgroups and working directories alike.
//
// # Environments
//
// An environment (runner.Environment) is built once per content hash by
// BuildEnvironment, in place, in the cache (Options.EnvCache, else
// $XDG_CACHE_HOME/forge/env or ~/.cache/forge/env), and reused by every
// job run in it, in this run and later ones. The cache holds, per
// environment, by the first 16 hex digits of its hash (<short>):
//
//   - <short>/: the environment, its build steps' work. It is finished
//     only when its done marker <short>/.forge-env.json (hash, name, build
//     time and seconds) is there: it is written last, whole or not at all
//     (a synced temporary file renamed), so a build cut short by a crash,
//     kill -9 or Ctrl-C leaves a directory without it, which the next
//     build removes and builds again. It is built at its final path, not
//     moved there afterwards: a Python virtualenv writes its own absolute
//     path into its scripts. Until it is finished it holds only what the
//     environment's files and build steps put there. <short>/build.log is
//     the build's log, and the modification time of
//     <short>/.forge-env-used the last time a forge built or reused it.
//   - <short>.lock: the lock file (flock). A forge checking whether the
//     environment is finished, or running jobs in it, holds it shared (a
//     Runner holds it from BuildEnvironment until Close); a forge building
//     it holds it exclusive, so that concurrent forges build it once and
//     the others wait, then reuse it; RemoveEnvironment takes it exclusive
//     without waiting, and so never removes what a live forge uses. Inside
//     one Runner, one goroutine per environment does this; the others wait
//     for it. Where there is no flock (Windows, AIX), BuildEnvironment and
//     RemoveEnvironment fail saying so.
//   - <short>.build.log: the log of the build under way, moved into the
//     directory when it is finished.
//   - <short>.failed.log: the log of the last failed build, whose
//     directory was removed; the next successful build removes it.
//
// The build steps run with /bin/sh -c, by the code that runs a job's setup
// lines, in a box of the Runner's tier like a job's: every process they
// start is ended when the build ends, fails, times out or is cancelled.
// Their HOME is a fresh directory of the build's own (forge-<pid>-env-…
// in TempDir, removed afterwards, so that caches such as pip's do not end
// up in the environment); nothing else of forge's environment reaches
// them but PATH and LANG.
//
// A job run in an environment gets FORGE_ENV_DIR and the environment's
// bin/ first on PATH, which its env cannot override, and Run refuses it
// (infra) unless this Runner made the environment ready.
//
// Where forge may mount (CAP_SYS_ADMIN, e.g. root; New checks it, and
// Runner.Describe and forge doctor say which), every process of a job of
// a Runner that holds environments, setup lines and candidate, sees the
// whole environment cache read-only: it is started from a locked thread
// that unshares its mount namespace (with it the thread's root and working
// directory, CLONE_FS: that is what lets one thread of a multithreaded
// process do it), makes it private (nothing mounted in it reaches any
// other namespace) and bind-mounts the cache read-only there; the child
// inherits that namespace, the thread is never unlocked, so the runtime
// ends it (never the main thread: onLockedThread), and the namespace goes
// with the last process in it. Writing, removing, renaming or chmodding
// anything in an environment, the job's own or another candidate's, fails
// with EROFS; its bin/ runs and its files read as before, and Python skips
// the bytecode caches it cannot write. No program is started in between,
// and argv and the environment reach the process as they are. It is read-
// only rather than an overlay (where each job could write into a view of
// its own): it works on every file system (an overlay's upper directory
// cannot be on overlayfs, as in many containers), costs no per-job mount
// and teardown of an overlay, and a write fails where it is made instead
// of vanishing with the trial. What a job should write belongs in its
// working directory (HOME, TMPDIR). A job whose working directory is
// inside the cache gets its environment alone read-only. As root that is
// the pidns tier (the one New picks) and the cgroup and pgroup tiers when
// named; never the process tier. Builds are never read-only. It keeps careless
// writes out (pip install in a setup line, a tool that writes next to
// itself), not hostile ones: a candidate running as root may umount the
// view or remount it read-write in its own namespace, and so write the
// cache.
//
// Where forge may not mount (not root, so the cgroup or pgroup tier; the
// process tier; other systems) the environment is not protected from the
// jobs run in it: a user namespace would be needed, which a multithreaded
// process cannot enter, and a mount would need a helper program started
// before every process. Nor is the directory made read-only by its
// permissions: a candidate running as forge's user could change them
// back. So a job, hostile or careless, can change the environment for
// every job after it, of every candidate, in this run, in concurrent
// forges and in later runs until it is removed: install or remove
// packages (pip install in a setup line), replace the interpreter or a
// tool in bin/ with a wrapper, add a .pth file or sitecustomize.py that
// runs code at every Python start, or slow down or sabotage the other
// candidates' trials. Removing the done marker makes the next jobs of
// this run fail as infra and the next run build the environment again.
//
// What forge does in every case is notice: the done marker holds a
// fingerprint of what the build left (every entry's path, type,
// permissions, size, modification time and link target;
// treeFingerprint), and a Runner that
// finds a finished environment compares it before taking it. One that
// changed is built again from scratch (under the exclusive lock: once no
// other forge runs jobs in it), and the build's log says why. So a job's
// changes reach at most the jobs of the runs that held the environment
// when it made them, never a later run. Python's __pycache__ directories,
// written as jobs import from the environment, are left out of the
// fingerprint (harmless: written whole, by rename).
//
// # Cost
//
// Per job: a working directory (made and filled; removed in the
// background), the tier's box (pidns: a namespace and its init, one clone
// sharing forge's memory, plus a v1 pids cgroup here; cgroup: a cgroup v2;
// pgroup: a /proc sweep at the end), the candidate's process, and its
// output drained through pooled buffers. bench/local.sh measures it against xargs -P on the same
// candidates, per tier. On a 2-core machine, 500 trivial python3 candidates
// at concurrency 2, forge ÷ xargs in wall and in whole-tree CPU (medians of
// 5 pairs, the range of the last runs): pidns 1.05 to 1.10 and 1.04 to
// 1.09, cgroup 1.04 to 1.07 and 1.03 to 1.05, pgroup 1.06 to 1.09 and 1.05
// to 1.08. forge's own CPU per trivial .sh job: 2.4 to 3.1 ms on every
// tier, where a bare Go program that only starts and waits for the same
// processes (bench/launch) spends 1.4 to 1.8 ms; most of the difference is
// the file system (8 inodes made per job, and on ext4 without a journal
// each new one skips every inode freed in the last minutes).
//
// Where environments are read-only to jobs, each process of a job of a
// Runner that holds environments also costs a mount namespace: the mount
// table copied (20 mounts here), made private, two mounts, a thread ended
// and another made, and the namespace torn down when its last process
// exits. BenchmarkRunInEnvironment, one read-only and one writable job in
// turn (trivial .sh, this 2-core machine shared with other work, 3 runs of
// 400 pairs per tier): the median pair differs by 0.2 to 1.7 ms of wall
// time on every tier, the more the busier the machine, forge's own CPU
// by 0.1 to 0.5 ms, its children's by nothing measurable; such a job
// takes 5 to 24 ms there, by load.
//
// None of this is a security sandbox: candidates run as forge's user and see
// its file system and other processes. It is about lifetime: a job ends
// completely.
package local
