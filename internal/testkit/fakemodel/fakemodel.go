// Package fakemodel starts the sample agent's offline model server
// (examples/agent/fake_model.py) for tests, as a user would start it.
package fakemodel

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Start runs python3 script on a free port, accepting only key, and returns
// its base URL; it stops at the test's end.
func Start(t testing.TB, script, key string) string {
	t.Helper()
	cmd := exec.Command("python3", script, "--port", "0", "--key", key)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "fake model: ")
	if err != nil || !ok {
		t.Fatalf("fake_model.py said %q, %v", line, err)
	}
	return url
}
