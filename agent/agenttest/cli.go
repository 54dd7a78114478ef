package agenttest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Pinned is an agent CLI the tests run: its npm package at the version this
// project tests (agent.Builtin's Version; agent's tests check they agree).
type Pinned struct {
	Name    string // the agent's name, "claude-code"
	Package string // "@anthropic-ai/claude-code"
	Version string
	Bin     string // "claude"
}

// Pins are the agent CLIs the tests install.
var Pins = []Pinned{
	{Name: "claude-code", Package: "@anthropic-ai/claude-code", Version: "2.1.328", Bin: "claude"},
	{Name: "codex", Package: "@openai/codex", Version: "0.171.0", Bin: "codex"},
}

// Pin finds a pinned CLI by the agent's name or its binary's.
func Pin(name string) (Pinned, bool) {
	for _, p := range Pins {
		if p.Name == name || p.Bin == name {
			return p, true
		}
	}
	return Pinned{}, false
}

// CacheEnv names the directory the CLIs are installed in, one
// subdirectory per package and version; unset, it is forge-test/agents in
// the user's cache directory.
const CacheEnv = "FORGE_AGENT_CACHE"

// CacheDir is where the CLIs are installed.
func CacheDir() (string, error) {
	if d := os.Getenv(CacheEnv); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the agent CLIs (set %s): %w", CacheEnv, err)
	}
	return filepath.Join(d, "forge-test", "agents"), nil
}

// dirName is p's directory in the cache: "anthropic-ai+claude-code@2.1.328".
func (p Pinned) dirName() string {
	return strings.ReplaceAll(strings.TrimPrefix(p.Package, "@"), "/", "+") + "@" + p.Version
}

// installed remembers, per binary, what this process installed or found.
var installed sync.Map // Bin → *installation

type installation struct {
	once sync.Once
	path string
	err  error
}

// installTimeout bounds one npm install (about 10 s here; 400 MB each).
const installTimeout = 10 * time.Minute

// CLI returns the path of the installed binary of the named agent CLI
// ("claude-code" or "claude", "codex") at its pinned version, installing it
// first if no test did: once per machine, in CacheDir, under a file lock, so
// that test binaries running in parallel install it once. Without npm the
// test fails: the tests need the real CLIs.
func CLI(t testing.TB, name string) string {
	t.Helper()
	p, ok := Pin(name)
	if !ok {
		t.Fatalf("agenttest: no agent CLI named %q", name)
	}
	v, _ := installed.LoadOrStore(p.Bin, &installation{})
	in := v.(*installation)
	in.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
		defer cancel()
		var log bytes.Buffer
		in.path, in.err = Install(ctx, p, &log)
		if in.err != nil && log.Len() > 0 {
			in.err = fmt.Errorf("%w\n%s", in.err, log.Bytes())
		}
	})
	if in.err != nil {
		t.Fatalf("agenttest: %v", in.err)
	}
	return in.path
}

// Install installs p into CacheDir unless it is there, and returns the path
// of its binary; npm's output goes to log.
func Install(ctx context.Context, p Pinned, log io.Writer) (string, error) {
	root, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, p.dirName())
	bin := filepath.Join(dir, "node_modules", ".bin", p.Bin)
	marker := filepath.Join(dir, ".installed")
	if _, err := os.Stat(marker); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(root, p.dirName()+".lock"))
	if err != nil {
		return "", fmt.Errorf("lock the agent cache: %w", err)
	}
	defer unlock()
	if _, err := os.Stat(marker); err == nil {
		return bin, nil // another process installed it while we waited
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("npm is not on PATH: the agent tests install %s@%s with it (install Node.js and npm)", p.Package, p.Version)
	}
	// A partial install (an interrupted one) is removed; the new one is
	// made beside and renamed into place whole.
	tmp := dir + ".tmp"
	for _, d := range []string{dir, tmp} {
		if err := os.RemoveAll(d); err != nil {
			return "", err
		}
	}
	spec := p.Package + "@" + p.Version
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", tmp, "--no-audit", "--no-fund", "--loglevel=error", spec)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm install %s: %w", spec, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	if err := checkVersion(ctx, bin, p, dir); err != nil {
		return "", err
	}
	if err := os.WriteFile(marker, []byte(spec+"\n"), 0o644); err != nil {
		return "", err
	}
	return bin, nil
}

// checkVersion runs bin --version, which must name p's version. When npm
// did not run the package's postinstall script (claude-code's puts its
// native binary in place), it is run once by hand.
func checkVersion(ctx context.Context, bin string, p Pinned, dir string) error {
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		script := filepath.Join(dir, "node_modules", filepath.FromSlash(p.Package), "install.cjs")
		if _, statErr := os.Stat(script); statErr == nil {
			fix := exec.CommandContext(ctx, "node", script)
			fix.Dir = filepath.Dir(script)
			if fixOut, fixErr := fix.CombinedOutput(); fixErr != nil {
				return fmt.Errorf("%s --version: %v: %s; its postinstall: %v: %s", bin, err, out, fixErr, fixOut)
			}
			out, err = exec.CommandContext(ctx, bin, "--version").CombinedOutput()
		}
	}
	if err != nil {
		return fmt.Errorf("%s --version: %v: %s", bin, err, bytes.TrimSpace(out))
	}
	if !bytes.Contains(out, []byte(p.Version)) {
		return fmt.Errorf("%s --version says %q, want %s", bin, bytes.TrimSpace(out), p.Version)
	}
	return nil
}
