// Package forge is the core of forge: it loads and validates a manifest
// (forge.yaml), plans the jobs (defaults < manifest < flags), plays them
// through a runner.Runner and keeps the run's record under
// <out>/<run-id>/: each trial's line in trials.jsonl as it ends, then
// results.json, what is derived from the trials. Every reader of a record
// goes through ReadRecord, ReadRecordSummary or ReadTrials: JSON, never a
// layout. It also reads Harbor task directories (ReadHarborTasks).
//
// It knows nothing of backends (local, Daytona: their manifest blocks come
// through Block), flags, exit codes or report formats: the cli wires those.
package forge
