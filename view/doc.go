// Package view is forge view: a local web server over an output root's
// runs — the runs list, a run's standings, matrix and trials (live while
// the run goes on, from its trials.jsonl), a trial's logs, artifact and
// transcript, and two runs compared — with its pages and assets embedded.
//
// It reads records only through package record (ReadSummary, Decode,
// Record.Arrange, ReadLines, ReadRunning), indexing each run's trials by
// line, never through the engine (forge). It borrows report's and
// compare's summaries so the pages say what the table says. It never
// writes into a run, runs nothing, and knows nothing of the command line:
// flags and opening a browser live in cli.
package view
