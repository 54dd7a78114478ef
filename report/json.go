package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/runner"
)

// JSON writes results.json exactly as the run writes it to disk
// (forge.MarshalRecord: indented, trailing newline), so `--format json` and
// the file never differ. A record of many results has them encoded on
// every core, in chunks written in order.
func JSON(w io.Writer, rec *forge.Record, opts Options) error {
	if _, err := prepare(rec, opts); err != nil {
		return err
	}
	if rec.Results == nil {
		// The run writes an empty list, never null; say the same.
		cp := *rec
		cp.Results = []runner.Result{}
		rec = &cp
	}
	if len(rec.Results) < jsonChunk*2 {
		b, err := forge.MarshalRecord(rec)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("write JSON report: %w", err)
		}
		return nil
	}
	return jsonParallel(w, rec)
}

// jsonChunk is how many results one goroutine encodes at a time.
const jsonChunk = 512

// resultsKey is how forge.MarshalRecord writes an empty list of results:
// the record's own key, at the top level (a newline cannot occur inside
// a JSON string, so nothing else reads the same).
const resultsKey = "\n  \"results\": [],\n"

// jsonParallel writes what forge.MarshalRecord writes for rec: the record
// without its results, then each result indented as MarshalIndent indents
// an element of the top level's "results" (prefix of two levels).
func jsonParallel(w io.Writer, rec *forge.Record) error {
	cp := *rec
	cp.Results = []runner.Result{}
	outer, err := forge.MarshalRecord(&cp)
	if err != nil {
		return err
	}
	at := bytes.Index(outer, []byte(resultsKey))
	if at < 0 {
		// Not the layout this function knows: write it the plain way.
		b, err := forge.MarshalRecord(rec)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	n := (len(rec.Results) + jsonChunk - 1) / jsonChunk
	chunks := make([][]byte, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				var b bytes.Buffer
				rs := rec.Results[c*jsonChunk : min(len(rec.Results), (c+1)*jsonChunk)]
				for i := range rs {
					if c > 0 || i > 0 {
						b.WriteString(",\n")
					}
					// What json.Marshal would call: Result's own
					// MarshalJSON (its output is already compact and
					// HTML-escaped, as encoding/json's own is).
					r, err := rs[i].MarshalJSON()
					if err == nil {
						b.WriteString("    ")
						err = json.Indent(&b, r, "    ", "  ")
					}
					if err != nil {
						errs[c] = fmt.Errorf("encode results: %w", err)
						break
					}
				}
				chunks[c] = b.Bytes()
			}
		}()
	}
	for c := range n {
		next <- c
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	bufs := [][]byte{outer[:at], []byte("\n  \"results\": [\n")}
	bufs = append(bufs, chunks...)
	bufs = append(bufs, []byte("\n  ],\n"), outer[at+len(resultsKey):])
	for _, b := range bufs {
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("write JSON report: %w", err)
		}
	}
	return nil
}
