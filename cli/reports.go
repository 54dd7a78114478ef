package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/report"
)

// reportOptions are the flags of the reports of a finished run (forge run,
// forge merge).
type reportOptions struct {
	format  string
	reports []string
	matrix  bool
	wide    bool
	// noStepSummary: the run's Markdown report is not added to
	// $GITHUB_STEP_SUMMARY (forge report: the run added it).
	noStepSummary bool
}

func (o *reportOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&o.matrix, "matrix", false, "a suite: print the per-task matrix in the table whatever its size")
	f.BoolVar(&o.wide, "wide", false, "the table as wide as it comes, every note whole, whatever the terminal's width")
	f.StringVar(&o.format, "format", "table", "stdout report: table, json, markdown, junit, csv or html")
	f.StringArrayVar(&o.reports, "report", nil, "also write a report to `FILE` (format from .json .md .xml .csv .html); repeatable")
}

// Validate checks --format and each --report's extension.
func (o *reportOptions) Validate() error {
	if _, err := report.ParseFormat(o.format); err != nil {
		return flagError{fmt.Errorf("--format: %w", err)}
	}
	for _, r := range o.reports {
		if _, err := report.FormatFromPath(r); err != nil {
			return flagError{fmt.Errorf("--report %s: %w", r, err)}
		}
	}
	return nil
}

// write prints the --format report on stdout and writes each --report
// file, linking the logs in runDir relative to where each is read.
func (o *reportOptions) write(env *Env, rec *record.Record, runDir string) error {
	f, _ := report.ParseFormat(o.format) // validated
	color := env.StdoutTTY && env.Getenv("NO_COLOR") == "" && env.Getenv("TERM") != "dumb"
	opts := report.Options{TTY: env.StdoutTTY, Color: color, Now: time.Now, Matrix: o.matrix, Width: env.StdoutWidth, Wide: o.wide, RunDir: runDir}
	if err := report.Write(f, env.Stdout, rec, opts); err != nil {
		return fmt.Errorf("print %s report: %w", f, err)
	}
	var errs []error // errors.Join drops the nil ones
	for _, path := range o.reports {
		rf, _ := report.FormatFromPath(path)
		errs = append(errs, writeReportFile(path, rf, rec, relativeTo(filepath.Dir(path), runDir)))
	}
	if summary := env.Getenv("GITHUB_STEP_SUMMARY"); summary != "" && !o.noStepSummary {
		errs = append(errs, appendStepSummary(summary, rec))
	}
	return errors.Join(errs...)
}

// relativeTo is the path of target as seen from dir, "" when there is none.
func relativeTo(dir, target string) string {
	from, err1 := filepath.Abs(dir)
	to, err2 := filepath.Abs(target)
	rel, err := filepath.Rel(from, to)
	if err1 != nil || err2 != nil || err != nil {
		return ""
	}
	return rel
}

func writeReportFile(path string, f report.Format, rec *record.Record, runDir string) error {
	err := os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		// Written as it is rendered: the JUnit report of 100,000 trials is
		// tens of MB that need not be held in memory, twice.
		err = record.WriteAtomic(path, func(w io.Writer) error {
			bw := bufio.NewWriterSize(w, 64<<10)
			if err := report.Write(f, bw, rec, report.Options{Now: time.Now, RunDir: runDir}); err != nil {
				return err
			}
			return bw.Flush()
		})
	}
	if err != nil {
		return fmt.Errorf("--report %s: %w", path, err)
	}
	return nil
}

// appendStepSummary adds the run's Markdown report to $GITHUB_STEP_SUMMARY, path.
func appendStepSummary(path string, rec *record.Record) error {
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	werr := report.Write(report.FormatMarkdown, fh, rec, report.Options{Now: time.Now})
	return errors.Join(werr, fh.Close())
}
