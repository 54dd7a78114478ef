package report

import (
	"testing"

	"github.com/forge-run/forge/internal/text"
)

func TestNumbers(t *testing.T) {
	for x, want := range map[float64]string{0.87: "0.87", 0.8123: "0.81", 3.24: "3.2", 42.4: "42", 1234.5: "1234", 0.004: "0.0040", 0: "0.00", -0.5: "-0.50"} {
		if got := text.Num(x); got != want {
			t.Errorf("text.Num(%v) = %q; want %q", x, got, want)
		}
	}
	// The table's ± is scoring's: one significant digit of the half-width.
	if got := text.PM(0.812, 0.024); got != "0.81 ± 0.02" {
		t.Errorf("text.PM = %q", got)
	}
	if got := text.PM(0.81, 0.2); got != "0.81 ± 0.20" {
		t.Errorf("text.PM = %q", got)
	}
}

func TestSeconds(t *testing.T) {
	for s, want := range map[float64]string{
		0: "0s", 0.0045: "4.5ms", 0.31: "310ms", 3.2: "3.2s", 59.96: "1m00s", 65: "1m05s", 3599.4: "59m59s", 3599.6: "1h00m", 7325: "2h02m",
	} {
		if got := text.Seconds(s); got != want {
			t.Errorf("text.Seconds(%v) = %q; want %q", s, got, want)
		}
	}
	for _, c := range []struct {
		mean, sd float64
		want     string
	}{{3.24, 0.27, "3.2s ± 0.3s"}, {2.3, 0.05, "2.30s ± 0.05s"}, {0.45, 0.02, "450ms ± 20ms"}, {75, 12, "1m15s ± 12.0s"}} {
		if got := text.SecondsPM(c.mean, c.sd); got != c.want {
			t.Errorf("text.SecondsPM(%v, %v) = %q; want %q", c.mean, c.sd, got, c.want)
		}
	}
}

func TestBytesHuman(t *testing.T) {
	for n, want := range map[float64]string{0: "0 B", 512: "512 B", 1023: "1023 B", 1024: "1.0 KiB", 2150: "2.1 KiB", 10 * 1024: "10 KiB", 3 << 20: "3.0 MiB", 5 << 40: "5.0 TiB"} {
		if got := text.Bytes(n); got != want {
			t.Errorf("text.Bytes(%v) = %q; want %q", n, got, want)
		}
	}
}

func TestShortenAndOneLine(t *testing.T) {
	if got := text.Shorten("héllo wörld", 6); got != "héllo…" {
		t.Errorf("shorten = %q", got)
	}
	if got := text.Shorten("short", 50); got != "short" {
		t.Errorf("shorten = %q", got)
	}
	if got := text.OneLine("  a\n\tb \x1b[31mred\x1b[0m \x00\xff  "); got != `a b \x1b[31mred\x1b[0m \x00`+"\uFFFD" {
		t.Errorf("oneLine = %q", got)
	}
}

func TestNiceTicks(t *testing.T) {
	ts, lo, hi, dec := niceTicks(0, 1, 5)
	if lo != 0 || hi != 1 || len(ts) != 6 || dec != 1 {
		t.Errorf("niceTicks(0, 1) = %v, %v, %v, %d", ts, lo, hi, dec)
	}
	ts, lo, hi, dec = niceTicks(0, 10.4, 5)
	if lo != 0 || hi != 12.5 || dec != 1 || ts[1] != 2.5 {
		t.Errorf("niceTicks(0, 10.4) = %v, %v, %v, %d", ts, lo, hi, dec)
	}
	ts, _, _, dec = niceTicks(-0.2, 1, 5)
	if ts[0] != -0.4 && ts[0] != -0.25 && ts[0] != -0.2 || dec < 1 {
		t.Errorf("niceTicks(-0.2, 1) = %v, %d", ts, dec)
	}
}

func TestSafeRunPath(t *testing.T) {
	for p, want := range map[string]bool{
		"alpha/task-7/trial-2/stdout.log": true,
		"alpha/out put#1.md":              true,
		"":                                false,
		"/etc/passwd":                     false,
		"../x":                            false,
		"a/../../x":                       false,
		"a/..":                            false,
		"a//b":                            false,
		`a\b`:                             false,
		"javascript:alert(1)":             false,
		"C:/x":                            false,
		"a/\x00b":                         false,
		"a/\nb":                           false,
	} {
		if got := safeRunPath(p); got != want {
			t.Errorf("safeRunPath(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestLogHref(t *testing.T) {
	for _, c := range []struct{ dir, path, want string }{
		{".", "a/b.log", "a/b.log"},
		{"", "a/b.log", ""},
		{".", "../b.log", ""},
		{"../runs/r 1", "a/q#1?.log", "../runs/r%201/a/q%231%3F.log"},
		{"/home/me/artifacts/r1/", "a/b.log", "/home/me/artifacts/r1/a/b.log"},
		{`..\runs\r1`, "a/b.log", "../runs/r1/a/b.log"},
		{"C:/runs", "a/b.log", "./C:/runs/a/b.log"},
	} {
		if got := logHref(c.dir, c.path); got != c.want {
			t.Errorf("logHref(%q, %q) = %q, want %q", c.dir, c.path, got, c.want)
		}
	}
}
