package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/forge-run/forge/forge"
)

// csvHeader names the CSV columns, one row per result.
func csvHeader() []string {
	return []string{"candidate_id", "trial", "success", "exit_code", "error_kind", "runtime_seconds",
		"score", "artifact_bytes", "sandbox_id", "error_message"}
}

// CSV writes one row per result (candidate × trial) under a header row, in
// the record's order. Empty cells mean null (no exit code, no score, no
// sandbox, no error); invalid UTF-8 becomes U+FFFD.
func CSV(w io.Writer, rec *forge.Record, opts Options) error {
	if _, err := prepare(rec, opts); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader()); err != nil {
		return fmt.Errorf("write CSV report: %w", err)
	}
	for _, r := range rec.Results {
		exit, score := "", ""
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
