// Package daytonatest is an offline stand-in for the Daytona service: an
// httptest server that answers the Daytona API (sandboxes, volumes,
// snapshots) and the per-sandbox toolbox (files, commands, sessions) as the
// real service does for the calls forge makes, so that tests and benchmarks
// drive the real SDK against it. Every request and successful response is
// validated against the SDK modules' own api/openapi.yaml (kin-openapi);
// Violations lists what drifted. The log stream's upgrade is not in the
// spec: its request is validated, the stream is not.
//
// Commands really run ("sh -c", in a per-sandbox temporary directory that is
// the sandbox's home), files really upload and download, session commands
// run asynchronously, one after another, and sandbox states follow the real
// ones. A session command's log is kept as the daemon keeps it (every line
// marked with its stream) and can be followed over a WebSocket until the
// command's exit code exists, one-second quiet check included.
//
// Creation is refused as the real API refuses it, before any sandbox exists,
// with its messages and statuses: an unknown snapshot, resources over the
// per-sandbox maximum or over the organization's totals (counted as the real
// API counts them). Sandboxes can be made to fail to start, and their
// toolbox to answer 502 for a while after they start.
//
// Snapshots are built for real, in the background, each in its own root:
// the Dockerfile the SDK writes (FROM, ENV, WORKDIR, RUN; the image's
// absolute paths are paths under that root) goes pending, building, then
// active, or error with BuildKit's message for a failed step, or
// build_failed for what the emulator cannot build. Their log is served as
// plain text and followed until the build ends. A sandbox made from one
// starts with a copy of its root, its image's environment and its WORKDIR.
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
