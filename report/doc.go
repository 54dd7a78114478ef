// Package report renders a finished run (a forge.Record, the contents of
// results.json) in every format forge offers: a table for the terminal,
// results.json itself, GitHub-flavoured Markdown for PR comments and
// GITHUB_STEP_SUMMARY, JUnit XML for CI test views (package junit), CSV for
// spreadsheets and one self-contained HTML page with charts.
//
// Each format has one function over an io.Writer (Table, JSON, Markdown,
// JUnit, CSV, HTML) and Write picks one by Format. ParseFormat reads a
// --format value and FormatFromPath a --report file name. forge view gets
// the same words from here (Summarise, MatrixCell, KindLabel) and the HTML
// report's charts and stylesheet (Charts, StyleSheet): it derives none.
//
// It owns presentation only: it never runs candidates, scores or ranks them,
// reads manifests or decides exit codes, and it reaches for no terminal or
// environment itself (the caller says whether stdout is a TTY and whether
// colour is wanted). Its tables are drawn by internal/text, the only
// importer of tablewriter.
package report
