// Package view is forge view: a local web server over an output root's
// runs — the runs list, a run's standings, matrix and trials (live while
// the run goes on, from its trials.jsonl), a trial's logs, artifact and
// transcript, and two runs compared — with its pages and assets embedded.
//
// It reads records only through package record (ReadSummary, Decode,
// the trials' Index, ReadRunning), a finished run's trials from their
// index, never through the engine (forge). It borrows report's and
// compare's summaries so the pages say what the table says. It writes
// nothing into a run but that index (record.IndexFile), when missing or
// out of date and the directory allows, runs nothing, and knows nothing
// of the command line: flags and opening a browser live in cli.
package view
