// Package forge is the core of forge: it loads and validates a tournament
// manifest (forge.yaml), plans the jobs (candidates × trials, with defaults <
// manifest < flags), plays them concurrently through a runner.Runner, scores
// the results and writes results.json and each job's files under
// <out>/<run-id>/.
//
// It knows nothing of any backend technology (local processes, Daytona),
// command-line flags, exit codes or report formats: the cli package wires
// those to it. A backend's own block of the manifest (daytona:) is
// decoded and checked by the backend, through the Block the cli passes to
// Load.
package forge
