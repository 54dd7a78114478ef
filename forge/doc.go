// Package forge is the core of forge: it loads and validates a manifest
// (forge.yaml), plans the jobs (defaults < manifest < flags), plays them
// through a runner.Runner, scores them and gates the outcome. It writes
// the run's record under <out>/<run-id>/ through package record: each
// trial's line in trials.jsonl as it ends, running.json while the run
// plays, then results.json, what is derived from the trials. It merges
// shards' records (Merge) and reads Harbor task directories
// (ReadHarborTasks).
//
// It knows nothing of backends (local, Daytona: their manifest blocks come
// through Block), flags, exit codes or report formats: the cli wires those.
// The record's types and files are package record's; readers of a run
// (report, compare, view) never import forge.
package forge
