// Package daytona is forge's Daytona backend: it runs each job (one
// candidate, one trial) in its own Daytona sandbox through the official Go
// SDK, behind the same runner.Runner interface as the local backend.
//
// Per job it creates a sandbox (deterministic name, forge labels, an
// auto-stop/auto-delete backstop), uploads the candidate's files and runs
// forge.sh, sent whole as an asynchronous session command, for the setup
// and for the candidate (nothing depends on the SDK's 60 s HTTP timeout).
// forge.sh runs its work once however often it is started, then prints on
// its stdout, the command's log, a report (the outputs' sizes and kinds and
// their capped content in base64) and a done line with the status it exits
// with. forge follows that log over its stream (a WebSocket); only where
// the stream cannot open, breaks or stalls to the timeout does it poll the
// command and read its log. After a timeout, "forge.sh collect" reports.
// The sandbox is always deleted on a fresh context; a ledger
// (sandboxes.jsonl) records every intended creation and every deletion so
// nothing is orphaned; GC and Doctor serve "forge gc" and "forge doctor".
//
// It owns credentials (DAYTONA_* from the environment or a .env file), error
// classification (auth stops the run, 429 slows creation down, 5xx and
// network errors are retried with jittered backoff, quota refusals wait for
// capacity) and the creation rate. It is the only package that imports the
// Daytona SDK. Of the manifest it knows only its own block, daytona:
// (Spec, DecodeSpec); the CLI maps the Spec, the flags and the credentials
// onto Options.
package daytona
