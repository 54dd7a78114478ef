// Package record is a run's record, the contract between forge run and
// everything that reads a run (docs/results.md): the Record type and what
// it holds (its trials, each a sandbox's runner.Result with what judging
// added, and the standings scoring made of them), results.json (Read,
// ReadSummary, Decode, Write, Encode) and its schema versions, the trials file trials.jsonl (TrialsWriter,
// ReadTrials, ReadLines), a finished run's index of its trials,
// trials.index (WriteIndex, LoadIndex, BuildIndex: a cache, stamped with
// the files it stands for), and the state of a run under way,
// running.json (RunningWriter, ReadRunning, Stopped). Every reader goes
// through it: JSON, never a layout (the index's offsets are its own, and
// checked).
//
// It knows nothing of manifests, plans, runners' work or how a run is
// played and scored: forge fills a Record and writes it through this
// package; report, compare and view read it without the engine.
package record
