package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
)

// The command serves the example script until it is told to stop.
func TestRun(t *testing.T) {
	out, w := io.Pipe()
	stop := make(chan os.Signal)
	done := make(chan int)
	go func() {
		done <- run([]string{"-key", "K", "-script", "example.yaml"}, w, io.Discard, stop)
		w.Close()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "fake model: http://127.0.0.1:")
	if err != nil || !ok {
		t.Fatalf("it said %q, %v", line, err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:"+url+"/v1/messages", strings.NewReader(
		`{"model":"claude-sonnet-4-5","max_tokens":9,"messages":[{"role":"user","content":"make hello.txt"}],"tools":[{"name":"Bash"}]}`))
	req.Header.Set("x-api-key", "K")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"command":"echo hi > hello.txt && cat hello.txt"`) {
		t.Errorf("%d %s; want the example's first turn", resp.StatusCode, body)
	}
	stop <- syscall.SIGTERM
	if code := <-done; code != 0 {
		t.Errorf("exit code %d", code)
	}
}

func TestRunBadScript(t *testing.T) {
	if code := run([]string{"-script", "nonexistent.yaml"}, io.Discard, io.Discard, nil); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
}
