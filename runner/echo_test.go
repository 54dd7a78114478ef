package runner

import (
	"strings"
	"testing"
)

func TestEchoWriterSplitsLinesAndStopsAtTheCap(t *testing.T) {
	var got []string
	w := &EchoWriter{Stream: "stdout", Max: 20, Echo: func(s, l string) { got = append(got, s+": "+l) }}
	for _, chunk := range []string{"one\ntw", "o\r\n", "", "three\nfour is too long for the cap\nfive\n"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	w.Close()
	want := []string{"stdout: one", "stdout: two", "stdout: three", "stdout: four ", "stdout: … (output cap reached; the rest is not shown)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("echoed %q\nwant    %q", got, want)
	}
}

func TestEchoWriterFlushesLastLineAndCutsLongOnes(t *testing.T) {
	var got []string
	w := &EchoWriter{Stream: "stderr", Echo: func(_, l string) { got = append(got, l) }}
	w.Write([]byte(strings.Repeat("x", 10000) + "\nbad \xff tail"))
	w.Close()
	if len(got) != 2 || len(got[0]) != maxEchoLine || got[1] != "bad \uFFFD tail" {
		t.Errorf("got %d lines: %q…", len(got), got[len(got)-1])
	}
}
