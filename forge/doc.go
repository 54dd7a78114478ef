// Package forge is the core of forge: it loads and validates a tournament
// manifest (forge.yaml), plans the jobs (candidates × trials, with defaults <
// manifest < flags), plays them concurrently through a runner.Runner and
// keeps the record under <out>/<run-id>/: each job's files and its line in
// trials.jsonl as it ends, then results.json, what is derived from the
// trials (standings, scores, matrix). Every reader of a record (resume,
// merge, compare, history, the viewer) reads it through ReadRecord,
// ReadRecordSummary or ReadTrials, as JSON, never by its layout. It also
// reads Harbor task directories (ReadHarborTasks).
//
// It knows nothing of any backend technology (local processes, Daytona),
// command-line flags, exit codes or report formats: the cli package wires
// those to it. A backend's own block of the manifest (daytona:) is
// decoded and checked by the backend, through the Block the cli passes to
// Load.
package forge
