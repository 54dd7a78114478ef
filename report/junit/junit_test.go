package junit_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/report/internal/fixture"
	"github.com/forge-run/forge/report/junit"
	"github.com/forge-run/forge/runner"
)

func write(t *testing.T, name string, cfg junit.Config) []byte {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = fixture.Now
	}
	var buf bytes.Buffer
	if err := junit.Write(&buf, fixture.Record(name), cfg); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestValidAgainstXSD holds every fixture's JUnit to testdata/junit.xsd
// with the Go validator in xsd_test.go.
func TestValidAgainstXSD(t *testing.T) {
	for _, name := range fixture.Names() {
		t.Run(name, func(t *testing.T) {
			doc := write(t, name, junit.Config{Summary: "standings\n"})
			for _, err := range validateJUnit(t, doc) {
				t.Error(err)
			}
		})
	}
}

// TestValidatorCatchesErrors feeds the validator documents that break the
// schema one way each, so a validator that accepts everything fails here.
func TestValidatorCatchesErrors(t *testing.T) {
	good := string(write(t, "five-trials-tie-timeout", junit.Config{}))
	cases := map[string]func(string) string{
		"missing required name": func(s string) string {
			return strings.Replace(s, `<testcase classname="alpha" name="alpha#1"`, `<testcase classname="alpha"`, 1)
		},
		"negative count":   func(s string) string { return strings.Replace(s, `tests="15"`, `tests="-1"`, 1) },
		"time not decimal": func(s string) string { return strings.Replace(s, `time="3.100"`, `time="3.1s"`, 1) },
		"bad timestamp": func(s string) string {
			return strings.Replace(s, `timestamp="2026-11-21T15:30:00Z"`, `timestamp="yesterday"`, 1)
		},
		"unknown attribute": func(s string) string {
			return strings.Replace(s, `<testsuite name="forge"`, `<testsuite colour="red" name="forge"`, 1)
		},
		"unknown element": func(s string) string {
			return strings.Replace(s, `</testcase>`, `<flaky/></testcase>`, 1)
		},
		"failure without type": func(s string) string { return strings.Replace(s, ` type="timeout"`, ``, 1) },
		"properties after testcase": func(s string) string {
			return strings.Replace(s, `</testsuite>`, `<properties></properties></testsuite>`, 1)
		},
		"two failures": func(s string) string {
			return strings.Replace(s, `<failure `, `<failure type="x"></failure><failure `, 1)
		},
	}
	if errs := validateJUnit(t, []byte(good)); len(errs) > 0 {
		t.Fatalf("the unbroken document is invalid: %v", errs)
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			bad := edit(good)
			if bad == good {
				t.Fatal("the edit changed nothing")
			}
			if errs := validateJUnit(t, []byte(bad)); len(errs) == 0 {
				t.Error("the validator accepted it")
			}
		})
	}
}

// TestXMLLint validates with libxml2's full XSD implementation too, when
// xmllint is installed (Debian: apt-get install -y libxml2-utils).
func TestXMLLint(t *testing.T) {
	bin, err := exec.LookPath("xmllint")
	if err != nil {
		t.Skip("xmllint not installed (apt-get install -y libxml2-utils)")
	}
	dir := t.TempDir()
	for _, name := range fixture.Names() {
		path := filepath.Join(dir, name+".xml")
		if err := os.WriteFile(path, write(t, name, junit.Config{Summary: "x"}), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, bin, "--noout", "--schema", "testdata/junit.xsd", path).CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("%s: xmllint: %v\n%s", name, err, out)
		}
	}
}

func TestCountsAndKinds(t *testing.T) {
	doc := junit.New(fixture.Record("nobody-succeeded"), junit.Config{Now: fixture.Now})
	s := doc.Suites[0]
	if doc.Tests != 3 || doc.Failures != 2 || doc.Skipped != 1 || doc.Errors != 0 {
		t.Errorf("tests=%d failures=%d skipped=%d errors=%d; want 3, 2, 1, 0", doc.Tests, doc.Failures, doc.Skipped, doc.Errors)
	}
	if s.Testcases[2].Skipped == nil || s.Testcases[2].Skipped.Message != "cancelled before it finished" {
		t.Errorf("cancelled trial: %+v", s.Testcases[2])
	}
	if f := s.Testcases[1].Failure; f == nil || f.Type != "timeout" || !strings.Contains(f.Contents, "exit code: none") {
		t.Errorf("timed-out trial: %+v", s.Testcases[1])
	}

	rec := fixture.Record("one-trial-winner")
	rec.Results[2].ErrorKind = runner.ErrInfra
	doc = junit.New(rec, junit.Config{Now: fixture.Now})
	if doc.Errors != 1 || doc.Failures != 0 || doc.Suites[0].Testcases[2].Error == nil {
		t.Errorf("an infrastructure failure is not a JUnit <error>: %+v", doc.Suites[0].Testcases[2])
	}
}

func TestNamesAndOrder(t *testing.T) {
	rec := fixture.Record("five-trials-tie-timeout")
	// Shuffle: the document lists candidates as they first appear, trials
	// in order.
	rs := rec.Results
	rs[0], rs[3] = rs[3], rs[0]
	doc := junit.New(rec, junit.Config{Now: fixture.Now})
	var names []string
	for _, c := range doc.Suites[0].Testcases[:6] {
		names = append(names, c.Classname+"/"+c.Name)
	}
	want := "alpha/alpha#1 alpha/alpha#2 alpha/alpha#3 alpha/alpha#4 alpha/alpha#5 beta/beta#1"
	if strings.Join(names, " ") != want {
		t.Errorf("testcases %v; want %s", names, want)
	}
	one := junit.New(fixture.Record("one-trial-winner"), junit.Config{Now: fixture.Now})
	if n := one.Suites[0].Testcases[0].Name; n != "alpha" {
		t.Errorf("single-trial testcase named %q; want alpha", n)
	}
}

// TestHostileBytes: NUL, escapes, invalid UTF-8 and "]]>" in output still
// give well-formed XML whose text reads back.
func TestHostileBytes(t *testing.T) {
	rec := fixture.Record("one-trial-winner")
	rec.Results[0].Output = "a\x00b\x1b[1mbold\x1b[0m ]]> <x> & \xff\xfe end"
	rec.Results[2].ErrorMessage = "bad\x00 \x07 \"quoted\" <tag>"
	var buf bytes.Buffer
	if err := junit.Write(&buf, rec, junit.Config{Now: fixture.Now}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suite struct {
			Cases []struct {
				Out     string `xml:"system-out"`
				Failure struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not well-formed: %v\n%s", err, buf.String())
	}
	if got, want := doc.Suite.Cases[0].Out, "a\uFFFDbbold ]]> <x> & \uFFFD end"; got != want {
		t.Errorf("system-out reads back as %q; want %q", got, want)
	}
	if got := doc.Suite.Cases[2].Failure.Message; got != "bad\uFFFD \uFFFD \"quoted\" <tag>" {
		t.Errorf("message reads back as %q", got)
	}
	for _, err := range validateJUnit(t, buf.Bytes()) {
		t.Error(err)
	}
}

func TestDefaultsAndCaps(t *testing.T) {
	rec := fixture.Record("one-trial-winner")
	rec.Results[0].Stderr = strings.Repeat("e", junit.DefaultMaxOutputBytes+10)
	doc := junit.New(rec, junit.Config{Now: fixture.Now})
	se := doc.Suites[0].Testcases[0].SystemErr.Contents
	if !strings.HasPrefix(se, strings.Repeat("e", junit.DefaultMaxOutputBytes)+"\n… [10 more bytes not shown]") {
		t.Errorf("stderr not capped at the default with a note: ends %q", se[len(se)-40:])
	}
}

// TestWriteIsEncodeOfNew: Write, which makes each testcase as it writes
// it, writes the bytes of the whole document built by New, for every
// fixture, with notes and a summary holding what looks like a testcase.
func TestWriteIsEncodeOfNew(t *testing.T) {
	cfg := junit.Config{Now: fixture.Now, Summary: "standings\n<testcase name=\"forge:testcases\">\n",
		Notes: func(r *record.Trial) (string, string) { return "out of " + r.CandidateID, "" }}
	for _, name := range fixture.Names() {
		t.Run(name, func(t *testing.T) {
			var whole bytes.Buffer
			if err := junit.Encode(&whole, junit.New(fixture.Record(name), cfg)); err != nil {
				t.Fatal(err)
			}
			if got := write(t, name, cfg); !bytes.Equal(got, whole.Bytes()) {
				t.Errorf("Write:\n%s\nEncode(New):\n%s", got, whole.Bytes())
			}
		})
	}
	rec := fixture.Record(fixture.Names()[0])
	rec.Results = nil
	var whole, streamed bytes.Buffer
	if err := junit.Encode(&whole, junit.New(rec, cfg)); err != nil {
		t.Fatal(err)
	}
	if err := junit.Write(&streamed, rec, cfg); err != nil || streamed.String() != whole.String() {
		t.Errorf("no results: Write %v:\n%s\nEncode(New):\n%s", err, streamed.String(), whole.String())
	}
}
