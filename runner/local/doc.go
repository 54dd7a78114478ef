// Package local is the local backend: it runs each job as processes on this
// machine, in a fresh working directory, and makes sure nothing a job starts
// outlives it.
//
// It owns the working directory's life (the job's files copied in with their
// executable bit; the artifact, the FORGE_RESULT file and the transcript read
// back without following symlinks or leaving the directory; the directory
// removed in the background, at most two at a time, once the job's processes
// are gone, even when the candidate made it read-only: Runner.Close waits for
// those), the candidate's exact environment (PATH and LANG from forge, HOME
// the working directory, TMPDIR its tmp/, PYTHONUNBUFFERED=1, the manifest's
// env and the FORGE_* variables; nothing else of forge's, so no DAYTONA_* and
// no secrets), the process lifecycle (argv never through a shell, output
// drained into capped buffers, SIGTERM then SIGKILL on timeout or
// cancellation) and containment. It must not know about manifests, scoring or
// reports: success and the error kind are decided by runner.Result.Settle, as
// for every backend.
//
// A plain job (runner.Job.Dir set: forge's judges) runs in that existing
// directory, which Run neither fills nor removes: its Command as it is, with
// its Env, forge's PATH, HOME, LANG and TMPDIR and the FORGE_* variables that
// name it; nothing is read back, so exit 0 is success and the verdict is its
// stdout. It is contained as a candidate is.
//
// runtime_seconds is the candidate's process alone, from just before it is
// started to its exit (its timeout when the timeout ended it, as on Daytona);
// job_seconds is the whole Run.
//
// # Containment
//
// A job's setup commands and its candidate share one box, and every process
// they start, however it detaches, is in it; the whole box is ended before
// the artifact is read and Run returns only after that. New picks the
// strongest tier the machine allows; Options.Containment can name one.
//
//   - pidns (Linux, CAP_SYS_ADMIN): a PID namespace per job whose init (PID 1,
//     which nothing inside can signal) reads a pipe only forge holds and
//     ignores SIGCHLD, so the kernel reaps orphans at once. On amd64 the init is built in (holder_linux_amd64.s: a clone
//     sharing forge's memory, about the cost of a thread, named forge-init);
//     elsewhere bash's read builtin, or cat. The job's processes are started
//     in the namespace (setns on a locked thread) as ordinary children of
//     forge. On timeout or cancel each gets SIGTERM once; after KillGrace the
//     init gets SIGKILL and the kernel ends the namespace, setsid daemons
//     included. If forge dies, the pipe closes and the namespace ends too.
//     Not for non-root users: a multithreaded process cannot setns into a
//     user namespace.
//   - cgroup (a writable cgroup v2 with cgroup.kill, Linux 5.14+): a cgroup per
//     job that processes are cloned straight into (CLONE_INTO_CGROUP). SIGTERM
//     to every process in cgroup.procs, once; then cgroup.kill, and Run waits
//     until it is empty. If forge is killed the job's processes are not.
//   - pgroup (any Unix): each process in its own process group; on Linux forge
//     also kills, until none is left, the processes whose environment carries
//     the job's FORGE_RUN_ID, FORGE_CANDIDATE_ID and FORGE_TRIAL. Best effort:
//     a process that leaves its group and replaces its environment escapes.
//     forge is no child subreaper (that is process-wide and would surprise
//     other os/exec users); the sweep finds orphans instead.
//   - process (no process groups, e.g. Windows): only what forge started.
//
// With pidns and cgroup, where a pids cgroup is writable (v2, else v1) each
// job may hold at most Options.MaxProcs tasks; a fork beyond that fails with
// EAGAIN. Runner.Describe says which tier and cap this machine got.
//
// Job cgroups and working directories are named forge-<pid>-*; New removes
// those whose forge is gone (killed before it could clean up).
//
// # Environments
//
// An environment (runner.Environment) is built once per content hash by
// BuildEnvironment, in place (a virtualenv writes its own path into its
// scripts), in the cache (Options.EnvCache, else DefaultEnvCache), and reused
// by every job run in it, in this run and later ones. Per environment, by the
// first 16 hex digits of its hash:
//
//   - <short>/: the environment. It is finished only once its done marker
//     <short>/.forge-env.json is there, written last by rename; a build cut
//     short leaves a directory without it, which the next build removes.
//     <short>/build.log is the build's log, and the modification time of
//     <short>/.forge-env-used the last time a forge built or reused it.
//   - <short>.lock: a flock, held shared by a forge that runs jobs in it (a
//     Runner from BuildEnvironment until Close), exclusive by one building
//     it, so concurrent forges build it once. RemoveEnvironment takes it
//     exclusive without waiting, so it never removes what a live forge uses.
//     Without flock (Windows, AIX) environments are refused.
//   - <short>.build.log, the build under way's log; <short>.failed.log, the
//     last failed build's.
//
// The build steps run with /bin/sh -c in a box of the Runner's tier, with a
// HOME of their own (removed afterwards, so that pip's cache stays out) and
// nothing else of forge's environment but PATH and LANG. A job run in an
// environment gets FORGE_ENV_DIR and its bin/ first on PATH, which its env
// cannot override, and is refused (infra) unless this Runner made it ready.
//
// Where forge may mount (CAP_SYS_ADMIN; Runner.ReadOnlyEnvironments), every
// process of a job of a Runner that holds environments sees the cache
// read-only: it is started from a locked thread that unshares its mount
// namespace, makes it private and bind-mounts the cache read-only; the thread
// is never unlocked, so the runtime ends it. Writing into an environment then
// fails with EROFS where it is made, rather than vanishing with the trial as
// in an overlay (which also cannot sit on overlayfs and costs a mount per
// job). A job whose working directory is inside the cache gets its
// environment alone read-only. Builds are never read-only. This keeps careless
// writes out, not hostile ones: a root candidate can remount.
//
// Where forge may not mount, a job can change the environment for every job
// after it. What forge does in every case is notice: the done marker holds a
// fingerprint of what the build left (treeFingerprint: each entry's path,
// type, permissions, size, modification time and link target, Python's
// __pycache__ left out), and an environment that changed is built again from
// scratch under the exclusive lock, the build's log saying why. So a job's
// changes never reach a later run.
//
// # Cost
//
// Per job: a working directory, the tier's box, the candidate's process and
// its output drained through pooled buffers. bench/local.sh compares forge
// with xargs -P on the same candidates: on a 2-core machine, 500 trivial
// python3 candidates at concurrency 2 take 1.03 to 1.10 times xargs's wall
// and CPU time on every tier; forge's own CPU per trivial job is 2.4 to 3.1
// ms, against 1.4 to 1.8 ms for a bare Go launcher (bench/launch), mostly the
// file system. A read-only environment adds a mount namespace per process:
// 0.2 to 1.7 ms of wall time per job (BenchmarkRunInEnvironment).
//
// None of this is a security sandbox: candidates run as forge's user and see
// its file system and other processes. It is about lifetime: a job ends
// completely.
package local
