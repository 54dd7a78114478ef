// Package report renders a finished run (a record.Record) in every format
// forge offers: a terminal table, results.json, Markdown, JUnit XML (package
// junit), CSV and one self-contained HTML page. Each format is one function
// over an io.Writer; Write picks one by Format. forge view takes its words
// and charts from here and derives none.
//
// It owns presentation only: it never runs, scores or ranks candidates,
// reads manifests, decides exit codes or looks at the terminal or
// environment itself, and reads a run through package record, never the
// engine (forge). Its tables are drawn by internal/text, the only
// importer of tablewriter.
package report
