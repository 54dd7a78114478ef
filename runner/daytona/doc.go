// Package daytona is forge's Daytona backend: it runs each job (one
// candidate, one trial) in its own Daytona sandbox through the official Go
// SDK, behind the same runner.Runner interface as the local backend.
//
// Per job it creates a sandbox (deterministic name, forge labels, an
// auto-stop/auto-delete backstop), uploads the candidate's files and
// forge.sh, and runs the setup lines and the candidate as asynchronous
// session commands (so nothing depends on the SDK's 60 s HTTP timeout).
// forge.sh runs the candidate with its outputs in files, then prints a
// report on its own stdout: the sizes and kinds of the outputs, in base64
// the capped content of the small ones, and the exit status it then exits
// with. forge follows that output over the command's log stream (a
// WebSocket), so it learns at once that the candidate ended, how, and what
// it left, with a slow safety poll alongside; where the stream cannot be
// opened it polls the command's state. What the report does not carry is
// measured ("forge.sh collect") and downloaded.
// The sandbox is always deleted on a fresh context. A ledger (sandboxes.jsonl) records every
// intended creation and every deletion so nothing is orphaned; GC and Doctor
// serve "forge gc" and "forge doctor --daytona".
//
// It owns credentials (DAYTONA_* from the environment or a .env file), error
// classification (auth stops the run, 429 slows creation down, 5xx and
// network errors are retried with jittered backoff) and the creation rate.
// It is the only package that imports the Daytona SDK. Of the manifest it
// knows only its own block, daytona:, which it decodes and checks (Spec,
// DecodeSpec); it must not know about the rest, scoring or reports: the
// CLI maps the Spec, the flags and the credentials onto Options.
package daytona
