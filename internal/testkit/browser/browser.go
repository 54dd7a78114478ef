// Package browser finds a headless-capable Chromium for the tests that
// render pages in a real browser (the HTML report's, forge view's).
package browser

import (
	"os"
	"os/exec"
	"testing"
)

// Find returns the path of Chromium (or Chrome) on PATH, or "".
func Find() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Require returns Find's browser, skipping the test without one unless
// FORGE_BROWSER_TESTS=1 says browser tests must run (CI installs Chromium).
func Require(t testing.TB) string {
	t.Helper()
	bin := Find()
	switch {
	case bin != "":
	case os.Getenv("FORGE_BROWSER_TESTS") == "1":
		t.Fatal("FORGE_BROWSER_TESTS=1 but no Chromium on PATH (chromium, chromium-browser, google-chrome): apt-get install -y chromium")
	default:
		t.Skip("no Chromium on PATH (apt-get install -y chromium; FORGE_BROWSER_TESTS=1 makes this a failure)")
	}
	return bin
}
