package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/scoring"
)

// csvHeader names the CSV columns, a suite's with task and passed.
func csvHeader(suite bool) []string {
	h := []string{"candidate_id", "trial", "success", "exit_code", "error_kind", "runtime_seconds",
		"score", "artifact_bytes", "sandbox_id", "error_message", "stdout_path", "stderr_path", "artifact_path",
		"tokens", "cost_usd", "cost_unpriced"}
	if suite {
		h = slices.Insert(h, 1, "task_id")
		h = slices.Insert(h, 4, "passed")
	}
	return h
}

// CSV writes one row per result in the record's order (the long format) under
// a header row. Empty cells mean null; invalid UTF-8 becomes U+FFFD.
func CSV(w io.Writer, rec *record.Record, opts Options) error {
	if _, err := prepare(rec, opts); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader(suite(rec))); err != nil {
		return fmt.Errorf("write CSV report: %w", err)
	}
	for _, r := range rec.Results {
		exit, score, tokens, usd, unpriced := "", "", "", "", ""
		if c := r.Cost; c != nil {
			tokens = strconv.FormatInt(c.Tokens, 10)
			usd = strconv.FormatFloat(c.USD, 'f', -1, 64)
			unpriced = c.Unpriced
		} else if r.Usage != nil {
			tokens = strconv.FormatInt(r.Usage.Tokens(), 10)
		}
		if r.ExitCode != nil {
			exit = strconv.Itoa(*r.ExitCode)
		}
		if r.Score != nil {
			score = strconv.FormatFloat(*r.Score, 'f', -1, 64)
		}
		row := []string{
			validText(r.CandidateID),
			strconv.Itoa(r.Trial),
			strconv.FormatBool(r.Success),
			exit,
			string(r.ErrorKind),
			strconv.FormatFloat(r.RuntimeSeconds, 'f', -1, 64),
			score,
			strconv.FormatInt(r.ArtifactBytes, 10),
			validText(r.SandboxID),
			validText(r.ErrorMessage),
			stdoutFile(&r).Path,
			stderrFile(&r).Path,
			artifactFile(&r).Path,
			tokens, usd, validText(unpriced),
		}
		if suite(rec) {
			row = slices.Insert(row, 1, validText(r.TaskID))
			row = slices.Insert(row, 4, strconv.FormatBool(scoring.Passed(r)))
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("write CSV report: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write CSV report: %w", err)
	}
	return nil
}

// validText replaces invalid UTF-8 with U+FFFD.
func validText(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
