// Package local is the local backend: it runs each job as processes on this
// machine, in a fresh working directory, and makes sure nothing a job starts
// outlives it.
//
// It owns the working directory (files copied in; artifact, FORGE_RESULT and
// transcript read back without following symlinks; removed once the job's
// processes are gone, or, where none can outlive it, emptied and kept for a
// later job as a new one would be), the candidate's exact environment
// (nothing of forge's but PATH and LANG, so no DAYTONA_* and no secrets), the
// process lifecycle (no shell, capped output, SIGTERM then SIGKILL) and
// containment. It must not know about manifests, scoring or reports:
// runner.Result.Settle decides success and the error kind, as for every
// backend.
//
// A plain job (runner.Job.Dir set: forge's judges) runs in its existing
// directory, which Run neither fills nor removes; nothing is read back.
//
// # Containment
//
// A job's setup and candidate share one box, ended before the artifact is
// read. New picks the strongest tier the machine allows:
//
//   - pidns (Linux, CAP_SYS_ADMIN): a PID namespace per job; ending its init
//     ends everything in it, setsid daemons included, and the init reads a
//     pipe only forge holds, so the namespace ends with forge too. Not for
//     non-root users: a multithreaded process cannot setns into a user
//     namespace.
//   - cgroup (writable cgroup v2 with cgroup.kill): a cgroup per job, processes
//     cloned straight into it. If forge is killed the job's processes are not.
//   - pgroup (any Unix): a process group per process; on Linux also a sweep for
//     processes carrying the job's FORGE_* marker, since a child subreaper
//     would be process-wide. Best effort.
//   - process (e.g. Windows): only what forge started.
//
// With pidns and cgroup a writable pids cgroup caps each job at
// Options.MaxProcs tasks. The tiers are about lifetime, not security.
//
// # Users
//
// When forge is root (Linux), each job's processes run as a uid of their
// own, locked for the job's life across forges (users_linux.go), owning the
// working directory and nothing else; its PATH is what that uid may search;
// where forge may mount, an /etc/passwd and /etc/group of the job's own name
// it (bound in a mount namespace kept for later jobs, where one can be).
// Environments are built by another uid of the range, which no job is. When
// the job ends, what its uid left at the top of /tmp, /var/tmp, /dev/shm and
// /run/lock is removed, and the pgroup tier's sweep also ends every process
// running as it. Options.User = UserRoot, or forge not being root, runs jobs as
// forge's user. Plain jobs (judges) always run as forge's user.
//
// # Environments
//
// An environment is built once per content hash by BuildEnvironment, in
// place in the cache, and reused by later jobs and runs. A flock per
// environment is held shared by users and exclusive by a builder; a done
// marker written last holds a fingerprint of the tree, so a build cut short
// or an environment a job changed is built again. Where forge may mount, jobs
// see the cache read-only.
package local
