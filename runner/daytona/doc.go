// Package daytona is forge's Daytona backend: each job (one candidate, one
// trial) runs in its own sandbox through the official Go SDK, behind the
// same runner.Runner interface as the local backend. It is the only package
// that imports the SDK.
//
// Per job it creates a sandbox (deterministic name, forge labels, an
// auto-stop/auto-delete backstop), uploads the candidate's files and runs
// forge.sh as asynchronous session commands, for the setup and for the
// candidate (so the SDK's 60 s HTTP timeout never matters). forge.sh runs
// its work once however often it is started, then prints on the command's
// log a report (the outputs' sizes, kinds and capped content in base64) and
// a done line. forge follows that log over its WebSocket stream, and polls
// only where the stream cannot open, breaks or stalls. The sandbox is always
// deleted on a fresh context; a ledger (sandboxes.jsonl) records every
// intended creation and every deletion; GC and Doctor serve "forge gc" and
// "forge doctor".
//
// It owns credentials (DAYTONA_* from the environment or a .env file), error
// classification (auth stops the run, 429 slows creation down, 5xx and
// network errors are retried with jittered backoff, quota refusals wait for
// capacity) and the creation rate. Of the manifest it knows only its own
// block, daytona: (Spec, DecodeSpec).
package daytona
