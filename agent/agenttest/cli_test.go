package agenttest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestPin(t *testing.T) {
	for _, name := range []string{"claude-code", "claude", "codex"} {
		if _, ok := Pin(name); !ok {
			t.Errorf("Pin(%q) found nothing", name)
		}
	}
	if _, ok := Pin("aider"); ok {
		t.Error("Pin(aider) found a CLI")
	}
	p, _ := Pin("claude")
	if got := p.dirName(); got != "anthropic-ai+claude-code@"+p.Version {
		t.Errorf("dirName %q", got)
	}
}

func TestCacheDirFromEnv(t *testing.T) {
	t.Setenv(CacheEnv, "relative/cache")
	d, err := CacheDir()
	if err != nil || !filepath.IsAbs(d) || !strings.HasSuffix(d, "relative/cache") {
		t.Errorf("CacheDir() = %q, %v; want $%s made absolute", d, err, CacheEnv)
	}
}

// The lock holds across opens of the file, as across processes.
// CLI installs (or finds) the pinned CLIs, which run and say their version.
func TestCLI(t *testing.T) {
	for _, p := range Pins {
		bin := CLI(t, p.Name)
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), p.Version) {
			t.Errorf("%s --version: %s, %v", bin, out, err)
		}
		if again := CLI(t, p.Bin); again != bin {
			t.Errorf("CLI(%s) = %s, then %s", p.Bin, bin, again)
		}
	}
}
