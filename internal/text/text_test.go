package text

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestStripANSI(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                                    "plain",
		"\x1b[31mred\x1b[0m":                       "red",
		"\x1b[1;38;5;208mbold\x1b[m!":              "bold!",
		"\x1b]0;title\x07after":                    "after",
		"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\": "link",
		"lone \x1b at end\x1b":                     "lone \x1b at end\x1b",
		"cut \x1b[12":                              "cut \x1b[12",
	} {
		if got := StripANSI(in); got != want {
			t.Errorf("StripANSI(%q) = %q; want %q", in, got, want)
		}
	}
}

// attack is what a candidate printed to set the terminal's title and clear
// its screen (issue 41).
const attack = "\033]0;TITLE\007\033[2J"

func TestInert(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\n\tindented":    "plain text\n\tindented",
		"failed: " + attack:         `failed: \x1b]0;TITLE\x07\x1b[2J`,
		"50%\r100%":                 `50%\x0d100%`,
		"nul\x00 bs\b del\x7f vt\v": `nul\x00 bs\x08 del\x7f vt\x0b`,
		"csi\u009b2J nel\u0085":     `csi\u009b2J nel\u0085`,
		"bad \xff\xfe utf-8":        "bad \uFFFD utf-8",
		"é€😀 ünïcode":               "é€😀 ünïcode",
	} {
		if got := Inert(in); got != want {
			t.Errorf("Inert(%q) = %q; want %q", in, got, want)
		}
	}
	// Whatever the bytes, nothing a terminal acts on is left but tab and
	// newline.
	var all []byte
	for c := range 256 {
		all = append(all, byte(c))
	}
	for r := rune(0x80); r < 0xa0; r++ {
		all = utf8.AppendRune(all, r)
	}
	got := Inert(string(all))
	if !utf8.ValidString(got) || strings.ContainsFunc(got, func(r rune) bool { return unicode.IsControl(r) && r != '\t' && r != '\n' }) {
		t.Errorf("Inert left a control character: %q", got)
	}
}

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"  a\n\tb \x1b[31mred\x1b[0m \x00\xff  ": `a b \x1b[31mred\x1b[0m \x00` + "\uFFFD",
		attack + "\r\n":                          `\x1b]0;TITLE\x07\x1b[2J`,
		"zero\u200bwidth\r\nCRLF\u0085NEL":       "zerowidth CRLF NEL",
	} {
		if got := OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestCap(t *testing.T) {
	s := "aé€😀" // 1 + 2 + 3 + 4 bytes
	for max, want := range map[int]string{0: "", 1: "a", 2: "a", 3: "aé", 5: "aé", 6: "aé€", 9: "aé€", 10: s, 99: s, -1: ""} {
		got, dropped := Cap(s, max)
		if got != want || dropped != len(s)-len(want) {
			t.Errorf("Cap(%q, %d) = %q, %d; want %q, %d", s, max, got, dropped, want, len(s)-len(want))
		}
	}
}

func TestOutput(t *testing.T) {
	got := Output("\x1b[32mok\x1b[0m \xff"+strings.Repeat("x", 100), 10)
	if !strings.HasPrefix(got, "ok \uFFFDxxxxxx\n… [") || !utf8.ValidString(got) {
		t.Errorf("Output = %q", got)
	}
	if Output("short", 10) != "short" {
		t.Error("Output changed text under the cap")
	}
}

func TestXML(t *testing.T) {
	if got := XML("a\x00b\x1bc\td\ne\uFFFEf\xffg"); got != "a\uFFFDb\uFFFDc\td\ne\uFFFDf\uFFFDg" {
		t.Errorf("XML = %q", got)
	}
	if s := "plain <text> & more"; XML(s) != s {
		t.Error("XML changed text that was already fine")
	}
}

func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"":              "''",
		"forge.yaml":    "forge.yaml",
		"--only":        "--only",
		"a,b":           "a,b",
		"my dir/f.yaml": "'my dir/f.yaml'",
		"it's":          `'it'\''s'`,
		"$(rm -rf ~)":   "'$(rm -rf ~)'",
		"x\ny":          "'x\ny'",
		"~/runs":        "'~/runs'",
	} {
		if got := ShellWord(in); got != want {
			t.Errorf("ShellWord(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestPM: one significant digit of the half-width, two to four decimals,
// the same for the mean.
func TestPM(t *testing.T) {
	for _, c := range []struct {
		x, hw float64
		want  string
	}{
		{0.923, 0.013, "0.92 ± 0.01"}, {0.8478, 0.0006, "0.8478 ± 0.0006"}, {0.31, 0.36, "0.31 ± 0.36"},
		{0.812, 0.024, "0.81 ± 0.02"}, {0.5, 0.00001, "0.5000 ± 0.0000"}, {0.8, 0, "0.80 ± 0.00"}, {0.9, 2.5, "0.90 ± 2.50"},
	} {
		if got := PM(c.x, c.hw); got != c.want {
			t.Errorf("PM(%v, %v) = %q, want %q", c.x, c.hw, got, c.want)
		}
	}
	if got := Score(1); got != "1.00" {
		t.Errorf("Score(1) = %q", got)
	}
}

func TestP(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want string
	}{
		{0.0004, "p < 0.001"}, {0.003, "p = 0.003"}, {0.31, "p = 0.31"}, {0.0496, "p = 0.0496"}, {0.0503, "p = 0.05"}, {1, "p = 1"},
	} {
		if got := P(c.p, 0.05); got != c.want {
			t.Errorf("P(%v) = %q, want %q", c.p, got, c.want)
		}
	}
}

func TestTable(t *testing.T) {
	var plain, tty strings.Builder
	rows := [][]string{{"alpha", "0.92", ""}, {"b", "1.00", ""}}
	if err := Table(&plain, []string{"NAME", "SCORE", "NOTES"}, rows, []Align{Left, Right, Left}, false); err != nil {
		t.Fatal(err)
	}
	if got, want := string(TrimLines([]byte(plain.String()))), "NAME   SCORE\nalpha   0.92\nb       1.00\n"; got != want {
		t.Errorf("plain table:\n%s\nwant:\n%s", got, want)
	}
	if err := Table(&tty, []string{"NAME", "SCORE"}, [][]string{{"a", "1"}}, []Align{Left, Right}, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tty.String(), "┌") || !strings.Contains(tty.String(), "│ a    │     1 │") {
		t.Errorf("terminal table:\n%s", tty.String())
	}
}

// tricky are strings a shell would mangle if quoting were wrong.
var tricky = []string{
	"", "plain", "it's", `"double"`, "$(touch x)", "`id`", "$HOME", "a\nb", "\t tab ", `back\slash`,
	"'", "''", `'\''`, "*", "~", "-n", "ünï", "a;b|c&d>e<f", "\x01\x7f", "--out", "a,b", "x=y",
}

func TestShellQuoteAndWordArriveVerbatim(t *testing.T) {
	for _, s := range tricky {
		checkShell(t, s)
	}
}

// The tricky words quoted together reach a command as those words, one an
// argument, empty ones included.
func TestShellQuotedSplitsBack(t *testing.T) {
	out, err := exec.Command("sh", "-c", `printf '%s\0' `+ShellQuoted(tricky)).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"); !slices.Equal(got, tricky) {
		t.Errorf("ShellQuoted(tricky) arrived as %q", got)
	}
}

// checkShell runs sh on s quoted both ways and checks it arrives as s.
func checkShell(t *testing.T, s string) {
	for name, q := range map[string]func(string) string{"ShellQuote": ShellQuote, "ShellWord": ShellWord} {
		out, err := exec.Command("sh", "-c", "printf '%s' "+q(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("%s(%q) = %s arrived as %q (%v)", name, s, q(s), out, err)
		}
	}
}

func FuzzShellQuote(f *testing.F) {
	for _, s := range tricky {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, 0) {
			return
		}
		checkShell(t, s)
	})
}

func TestUSD(t *testing.T) {
	for x, want := range map[float64]string{0: "$0", 0.5: "$0.50", 0.042: "$0.042", 0.00314: "$0.0031", 1: "$1.00", 12.345: "$12.35", 1234.5: "$1235", -0.5: "-$0.50", 0.999: "$1.00"} {
		if got := USD(x); got != want {
			t.Errorf("USD(%v) = %q, want %q", x, got, want)
		}
	}
}

func TestInterval(t *testing.T) {
	for _, tc := range []struct {
		x, lo, hi float64
		want      string
	}{
		{0.62, 0.29, 0.95, "0.62 ± 0.33"},
		{0.62, 0.24, 0.90, "0.62 ± 0.33"},
		{0.81, 0.7894, 0.8288, "0.81 ± 0.02"},
		{0, 0, 0.43, "0.00 [0.00–0.43]"},
		{1, 0.79, 1, "1.00 [0.79–1.00]"},
		{0.5, 0.4991, 0.5009, "0.5000 ± 0.0009"},
		{0.5, 0.499, 0.503, "0.500 [0.499–0.503]"},
	} {
		if got := Interval(tc.x, tc.lo, tc.hi); got != tc.want {
			t.Errorf("Interval(%v, %v, %v) = %q, want %q", tc.x, tc.lo, tc.hi, got, tc.want)
		}
	}
}
