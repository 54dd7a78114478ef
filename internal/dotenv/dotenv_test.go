package dotenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("A=from-file\nB=from-file\nC=\"  \"\nD=your_key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"A": "from-env", "B": "   ", "D": "your_other", "E": "e"}
	e := Load(func(k string) string { return env[k] }, dir)
	if e.Err != nil {
		t.Fatal(e.Err)
	}
	notYour := func(v string) bool { return !strings.HasPrefix(v, "your_") }
	for _, c := range []struct {
		name          string
		usable        func(string) bool
		value, source string
		ok            bool
	}{
		{"A", nil, "from-env", Source, true},   // the environment wins
		{"B", nil, "from-file", e.Path, true},  // a blank value is unset
		{"C", nil, "", "", false},              // blank in the file too
		{"D", nil, "your_other", Source, true}, // usable: anything not blank
		{"D", notYour, "", "", false},          // neither is usable
		{"E", notYour, "e", Source, true},      // only in the environment
		{"F", nil, "", "", false},              // nowhere
	} {
		v, src, ok := e.Lookup(c.name, c.usable)
		if v != c.value || src != c.source || ok != c.ok {
			t.Errorf("Lookup(%s) = %q, %q, %v; want %q, %q, %v", c.name, v, src, ok, c.value, c.source, c.ok)
		}
	}
}

func TestNoFileAndUnreadableFile(t *testing.T) {
	getenv := func(k string) string {
		if k == "A" {
			return "a"
		}
		return ""
	}
	e := Load(getenv, t.TempDir())
	if e.Err != nil {
		t.Fatalf("a missing .env is not an error: %v", e.Err)
	}
	if v, _, ok := e.Lookup("A", nil); !ok || v != "a" {
		t.Fatalf("without a file: %q %v", v, ok)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".env"), 0o700); err != nil {
		t.Fatal(err)
	}
	e = Load(getenv, dir)
	if e.Err == nil {
		t.Fatal("a .env that cannot be read (a directory) gave no error")
	}
	if v, _, ok := e.Lookup("A", nil); !ok || v != "a" {
		t.Fatalf("with an unreadable file, the environment still answers: %q %v", v, ok)
	}
}
