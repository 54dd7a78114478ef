// Package daytonatest is an offline stand-in for the Daytona service: an
// httptest server that answers the Daytona API (sandboxes, volumes) and the
// per-sandbox toolbox (files, commands, sessions) the way the real service
// does for the calls forge makes, so the real Daytona SDK can be driven
// against it in tests and benchmarks.
//
// Commands really run (through "sh -c", in a per-sandbox temporary directory
// that is the sandbox's home), files really upload and download, session
// commands really run asynchronously, and sandbox states follow the real
// ones (creating, started, destroying, destroyed). Every request and every
// successful response is validated against the SDK modules' own
// api/openapi.yaml files (kin-openapi); Violations lists what drifted.
//
// Faults can be injected per route (status codes for the next N calls, with
// Retry-After headers; added latency; dropped responses after the
// server-side effect; hangs), and the server can be inspected (live
// sandboxes, peak concurrent sandboxes, calls per route, the environment
// each sandbox saw).
//
// It must not import forge's own packages: it stands for the service, not
// for forge.
package daytonatest
