package local

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/runner/local/localtest"
)

func TestOptionsValidate(t *testing.T) {
	if err := (Options{}).Validate(); err != nil {
		t.Errorf("zero Options: %v", err)
	}
	if err := (Options{Containment: ContainProcessGroup, KillGrace: time.Second, MaxProcs: 10}).Validate(); err != nil {
		t.Errorf("valid Options: %v", err)
	}
	err := Options{KillGrace: -time.Second, MaxProcs: -1, Containment: "chroot"}.Validate()
	for _, want := range []string{"kill grace -1s is negative", "max procs -1 is negative", `unknown containment "chroot"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v; want it to say %q", err, want)
		}
	}
}

func TestNewRefusesUnusableTempDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{file, filepath.Join(t.TempDir(), "missing")} {
		if _, err := New(Options{TempDir: dir}); err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("New(TempDir: %s) = %v; want an error naming it", dir, err)
		}
	}
	if _, err := New(Options{TempDir: localtest.TempDir(t), Containment: "nope"}); err == nil {
		t.Error("New accepted an unknown containment")
	}
}

func TestNewDefaults(t *testing.T) {
	r, err := New(Options{TempDir: localtest.TempDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	if r.opts.KillGrace != DefaultKillGrace || r.opts.MaxProcs != DefaultMaxProcs || r.opts.Getenv == nil {
		t.Errorf("defaults not applied: %+v", r.opts)
	}
	if r.Containment() == ContainAuto || r.Describe() == "" {
		t.Errorf("containment %q describe %q", r.Containment(), r.Describe())
	}
	if !filepath.IsAbs(r.opts.TempDir) {
		t.Errorf("TempDir %q not made absolute", r.opts.TempDir)
	}
}

func TestLookPath(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("executable bits")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	work := filepath.Join(dir, "work")
	for _, d := range []string{bin, work, filepath.Join(work, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(bin, "tool"), 0o755)
	write(filepath.Join(bin, "plain"), 0o644)
	write(filepath.Join(work, "sub", "run"), 0o755)
	write(filepath.Join(work, "tool"), 0o755) // a bare name never means the working directory

	pathList := "relative/dir" + string(os.PathListSeparator) + bin
	for _, tc := range []struct{ file, want string }{
		{"tool", filepath.Join(bin, "tool")},
		{"sub/run", filepath.Join(work, "sub", "run")},
		{"./sub/run", filepath.Join(work, "sub", "run")},
		{filepath.Join(bin, "tool"), filepath.Join(bin, "tool")},
	} {
		if got, err := (&Runner{}).lookPath(tc.file, pathList, work, nil); err != nil || got != tc.want {
			t.Errorf("lookPath(%q) = %q, %v; want %q", tc.file, got, err, tc.want)
		}
	}
	if _, err := (&Runner{}).lookPath("plain", pathList, work, nil); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("a non-executable file in PATH: %v, want ErrNotFound", err)
	}
	if _, err := (&Runner{}).lookPath("missing", pathList, work, nil); err == nil || err.Error() != "missing: executable file not found in $PATH" {
		t.Errorf("missing: %v", err)
	}
	if _, err := (&Runner{}).lookPath("sub", "", work, nil); err == nil {
		t.Error("a bare name was found in the working directory")
	}
	if _, err := (&Runner{}).lookPath("./sub", "", work, nil); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("a directory: %v", err)
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{
		"alpha":                  "alpha",
		"beta.v2_x-1":            "beta.v2_x-1",
		"a/b":                    "a_b",
		"../x":                   ".._x",
		"sp ace*":                "sp_ace_",
		strings.Repeat("x", 100): strings.Repeat("x", 64),
	} {
		if got := safeName(in); got != want {
			t.Errorf("safeName(%q) = %q, want %q", in, got, want)
		}
	}
}
