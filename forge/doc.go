// Package forge is the core of forge: it loads and validates a manifest
// (forge.yaml), plans the jobs (defaults < manifest < flags), plays them
// through a runner.Runner, scores them and writes the run's record and
// files under <out>/<run-id>/.
//
// It knows nothing of backends (local, Daytona: their manifest blocks come
// through Block), flags, exit codes or report formats: the cli wires those.
package forge
