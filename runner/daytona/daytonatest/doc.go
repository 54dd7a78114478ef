// Package daytonatest is an offline stand-in for the Daytona service: an
// httptest server that answers the Daytona API (sandboxes, volumes) and the
// per-sandbox toolbox (files, commands, sessions) the way the real service
// does for the calls forge makes, so the real Daytona SDK can be driven
// against it in tests and benchmarks.
//
// Commands really run (through "sh -c", in a per-sandbox temporary directory
// that is the sandbox's home), files really upload and download, session
// commands really run asynchronously, and sandbox states follow the real
// ones (creating, started, destroying, destroyed). A session command's log
// is kept as the daemon keeps it (every line marked with its stream) and
// can be followed over a WebSocket (gorilla/websocket, as the daemon and
// the SDK use) until the command's exit code exists, as the daemon does,
// one-second quiet check included. Every request and every successful
// response is validated against the SDK modules' own api/openapi.yaml
// files (kin-openapi); Violations lists what drifted. (The spec describes
// the log stream's request but not its upgrade: the request is validated,
// the stream is not.)
//
// Creation is refused the way the real API refuses it, before any sandbox
// exists, with its messages and statuses: an unknown snapshot
// (Options.Snapshots), resources over the per-sandbox maximum
// (Options.MaxPerSandbox) and resources that would take the organization
// over its totals (Options.Quota), counted as the real API counts them
// (Server.Usage, Server.PeakUsage). Sandboxes can be made to fail to start
// (Options.FailStart) and their toolbox to answer 502 for a while after
// they start (Options.ToolboxWarmup).
//
// Snapshots are built for real (POST /snapshots, through the SDK's
// Snapshot.Create): in the background, each in its own root directory, the
// Dockerfile the SDK writes (FROM, ENV, WORKDIR, RUN; absolute paths of the
// image are paths under that root, RUN steps are processes run with
// "/bin/sh -c" in the mapped WORKDIR) goes pending, building, then active,
// or error with BuildKit's message for the failed step as its errorReason
// (as the real API marks a build its runner failed), or build_failed for
// what the emulator cannot build (other instructions); its log is served
// as plain text and followed until the build ends (build-logs with
// follow=true). Snapshots can be listed, fetched by name or ID and deleted
// by ID (sandboxes made from one keep working), with the real API's quota
// (Options.SnapshotQuota), duplicate-name and not-active refusals. A sandbox
// made from one starts with a copy of its root (files hard-linked), its
// image's environment under the request's, and its WORKDIR as work dir.
//
// Faults can be injected per route (status codes for the next N calls, with
// Retry-After headers, before the call is handled or after it had its
// effect; added latency; dropped responses after the server-side effect;
// hangs; for the log stream, a refused upgrade, a connection cut
// mid-stream or a silent one), or thrown at a share of the calls by seeded
// chaos (SetChaos, BadNight: the same seed picks the same calls whatever
// their interleaving, so a chaos run replays exactly), and the server can be
// inspected (live sandboxes, peak concurrent sandboxes, calls per route,
// the environment each sandbox saw).
//
// It must not import forge's own packages: it stands for the service, not
// for forge.
package daytonatest
