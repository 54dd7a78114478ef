package report_test

import (
	"bytes"
	"testing"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/report"
	"github.com/forge-run/forge/report/internal/fixture"
)

// The JSON report of a record of many results (encoded in parallel chunks)
// is byte for byte what forge.MarshalRecord writes, whatever its strings
// hold.
func TestJSONOfManyResultsIsTheRecord(t *testing.T) {
	for _, spec := range []fixture.LargeSpec{
		{Candidates: 3, Tasks: 700, Trials: 2, StdoutBytes: 3000, Excerpts: true},
		{Candidates: 2, Tasks: 1100, Trials: 1, StdoutBytes: 200},
	} {
		rec := fixture.Large(spec)
		rec.Objective = "<b>\"results\": [],</b>\n & more"
		// What encoding/json escapes or replaces, in a result.
		rec.Results[5].Output = "a\xff<b>&\u2028\u2029 \x1b[31mred\x00"
		rec.Results[7].Submitted = map[string]any{"z": 1e21, "a": []any{0.1, "<&>", nil}, "m": map[string]any{"k": true}}
		want, err := forge.MarshalRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := report.JSON(&got, rec, report.Options{}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			i := 0
			for i < min(got.Len(), len(want)) && got.Bytes()[i] == want[i] {
				i++
			}
			t.Fatalf("%d results: the JSON report differs from forge.MarshalRecord at byte %d of %d: got %q, want %q",
				len(rec.Results), i, len(want), got.Bytes()[max(0, i-40):min(got.Len(), i+40)], want[max(0, i-40):min(len(want), i+40)])
		}
	}
}
