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
// exists: a snapshot the organization does not have (Options.Snapshots;
// 400 "Snapshot X not found. Did you add it through the Daytona
// Dashboard?"), resources over the per-sandbox maximum (Options.
// MaxPerSandbox, default 4 vCPU, 8 GiB, 10 GiB; a permanent 400 "CPU
// request 8 exceeds maximum allowed per sandbox (4)."), and resources that
// would take the organization over its totals (Options.Quota; 400, or
// Options.QuotaStatus, "Total CPU limit exceeded. Maximum allowed: 4.",
// then memory, then disk). Quota is counted as the real API counts it:
// creating, started and destroying sandboxes hold their CPU, memory and
// disk until they are destroyed; failed ones hold nothing (Server.Usage,
// Server.PeakUsage). Sandboxes of a snapshot or image named in
// Options.FailStart end in "error" or "build_failed" with the real
// errorReason, at once or after "creating" (Options.StartDelay): they
// exist, are listed and must be deleted, and the SDK's Create fails with
// "Sandbox failed to start". For Options.ToolboxWarmup after a sandbox
// starts, its toolbox answers 502 with no body, as the proxy does while
// the sandbox's daemon is not yet reachable.
//
// Faults can be injected per route (status codes for the next N calls, with
// Retry-After headers; added latency; dropped responses after the
// server-side effect; hangs; for the log stream, a refused upgrade, a
// connection cut mid-stream or a silent one), and the server can be
// inspected (live sandboxes, peak concurrent sandboxes, calls per route,
// the environment each sandbox saw).
//
// It must not import forge's own packages: it stands for the service, not
// for forge.
package daytonatest
