// Package daytonatest is an offline stand-in for the Daytona service: an
// httptest server that answers the Daytona API (sandboxes, volumes,
// snapshots) and the per-sandbox toolbox (files, commands, sessions) as the
// real service does for the calls forge makes, so that tests and benchmarks
// drive the real SDK against it. Every request and successful response is
// validated against the SDK modules' own api/openapi.yaml (kin-openapi);
// Violations lists what drifted. The log stream's upgrade is not in the
// spec: its request is validated, the stream is not.
//
// Commands really run ("sh -c"), files really upload and download, session
// commands run asynchronously, one after another, and sandbox states follow
// the real ones. A session command's log is kept as the daemon keeps it
// (every line marked with its stream) and can be followed over a WebSocket
// until the command's exit code exists, one-second quiet check included.
//
// Where it can (RootFS: Linux, running as root, mount namespaces and
// overlayfs work; probed once per process, and DAYTONATEST_ROOTFS=off
// turns it off), every sandbox and every snapshot build has a root file
// system of its own, a directory on this machine its processes are
// chrooted into, as a container's: the image's absolute paths (/app,
// /tests, /logs, /usr/local/bin, /etc…) are real there. The host's tool
// directories (usr, etc, opt, var, root, home, srv; /bin and the like as
// the host links them) are overlays, the host's below and the root's own
// directory above, so a sandbox has the host's tools and what its image
// and it wrote, and its writes never reach the host; /dev and /sys are the
// host's; /tmp and every other top-level path are the sandbox's own. The
// host's /tmp, /work and the rest are not there, but for the directories
// Options.Shared names, bound at the same path, as a volume would be. The
// mounts live in one mount namespace per root, kept by a holder process
// (nothing is mounted on the host), which is also the init of the
// sandbox's own PID namespace (its /proc shows its processes only). Its
// processes live in that mount namespace, chrooted into the root, which is
// a mount point there as a container's root is: one running as root may
// make a mount namespace of its own (unshare -m) and mount in it, one
// running as another user may not. Every sandbox has a network namespace
// of its own, loopback only, so that two can serve on one port and none
// reaches this machine's servers, unless Options.HostNetwork (and not
// networkBlockAll) puts it on this machine's network. Its processes run as
// its image's USER (else as root, at home in /home/daytona, the default
// snapshot's user): its home is that user's, and its work dir its image's
// WORKDIR as the image sees it (else the home), where commands run unless
// the call names another directory; the file API takes the sandbox's
// absolute paths, resolved in its root (through its overlays; links never
// lead out of it). SandboxInfo.Home and Root are where its files are on
// this machine. An image's ENTRYPOINT starts in the background with each
// sandbox made from it.
//
// As in the real sandbox, what a command leaves running (a server started
// in the background, a daemon that called setsid) lives on after it,
// writing on into its log if it kept its output, until its session is
// deleted (which kills everything the session started: each session has
// a cgroup of its own where this machine has cgroup v2, else its processes
// carry a marker in their environment) or the sandbox is (which kills
// everything in its PID namespace). A synchronous command
// (/process/execute) answers once it has ended and its output is closed,
// as the daemon's CombinedOutput does; its timeout kills its process
// group. Once Close has returned, nothing a sandbox started is left.
//
// Without, the sandbox is a per-sandbox temporary directory on the host,
// its home inside it, and commands run on the host, on its network: image
// paths named in WORKDIR and ENV are mapped under that directory, and a
// RUN step or a file call that names another absolute path reaches the
// host's, or is refused. A command's process group is killed when it
// ends.
//
// Creation is refused as the real API refuses it, before any sandbox exists,
// with its messages and statuses: an unknown snapshot, resources over the
// per-sandbox maximum or over the organization's totals (counted as the real
// API counts them). Sandboxes can be made to fail to start, and their
// toolbox to answer 502 for a while after they start.
//
// Snapshots are built for real, in the background, each in its own root:
// the Dockerfile the SDK writes (FROM, ENV, WORKDIR, RUN, COPY and ADD
// from its build context, ENTRYPOINT and USER with RootFS; without, the image's
// absolute paths are mapped under that root) goes pending, building, then
// active, or error with BuildKit's message for a failed step, or
// build_failed for what the emulator cannot build. FROM names no image:
// the host's tools stand for it. Their log is served as plain text and
// followed until the build ends. A sandbox made from one starts with a
// copy of its root, its image's environment and its WORKDIR.
//
// Faults can be injected per route (statuses with Retry-After headers,
// before or after the call had its effect; latency; dropped answers; hangs;
// for the log stream, a refused upgrade, a cut or a silent connection), or
// thrown at a share of the calls by seeded chaos (SetChaos, BadNight: a seed
// picks the same calls whatever their interleaving). The server can be
// inspected: live sandboxes, peaks, calls per route, what each sandbox saw.
//
// It must not import forge's own packages: it stands for the service, not
// for forge.
package daytonatest
