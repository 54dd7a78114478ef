// Package runner owns the vocabulary shared by every backend: a Job (one
// candidate, one trial, one sandbox), the Result record it produces, and the
// small Runner interface the run fans jobs out to. A Job with Dir set is a
// plain command in an existing directory instead (forge's judges; only the
// local backend runs those). Environments (Environment, Builder) are built
// once and reused by the jobs that name them.
//
// Both backends run a job through one pipeline (Pipeline): named steps
// timed as phases, cancellation, and a step's error made the Result's
// failure in one place.
//
// It also holds the pieces of the candidate protocol that every backend must
// apply the same way (argv, FORGE_* variables, how a finished process becomes
// a success or an error kind, the FORGE_RESULT file, its usage and the
// transcript), so the local and Daytona backends cannot drift.
//
// It must not know about manifests, scoring, reports or any particular
// backend technology.
package runner
