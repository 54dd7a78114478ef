package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// waitWriter collects what is written and tells when it holds a pattern.
type waitWriter struct {
	mu   sync.Mutex
	b    strings.Builder
	re   *regexp.Regexp
	seen chan string
}

func (w *waitWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if m := w.re.FindStringSubmatch(w.b.String()); m != nil && w.seen != nil {
		w.seen <- m[1]
		w.seen = nil
	}
	return len(p), nil
}

func (w *waitWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestRunView: forge run --view serves the run's page, and once the run
// is over serves on until a signal, then exits with the run's code.
func TestRunView(t *testing.T) {
	root, _ := filepath.Abs("..")
	out := t.TempDir()
	seen := make(chan string, 1)
	stderr := &waitWriter{re: regexp.MustCompile(`the run is over; the viewer still serves (\S+)`), seen: seen}
	sigs := make(chan os.Signal, 1)
	done := make(chan int, 1)
	go func() {
		done <- Run(context.Background(), []string{"run", "-f", filepath.Join(root, "forge.yaml"), "--out", out, "--run-id", "viewed",
			"--view", "--view-addr", "127.0.0.1:0", "--no-open", "--quiet"}, Env{Getenv: os.Getenv, Stderr: stderr, Stdout: io.Discard, Signals: sigs})
	}()
	var url string
	select {
	case url = <-seen:
	case code := <-done:
		t.Fatalf("forge run --view ended (exit %d) without serving on:\n%s", code, stderr.String())
	}
	if !regexp.MustCompile(`/run/viewed\?token=[0-9a-f]{32}$`).MatchString(url) {
		t.Errorf("viewer URL %s: want the run's page, with the viewer's token", url)
	}
	// Without the token, nothing; the URL's token sets the cookie the
	// pages then take.
	if resp, err := http.Get(strings.Split(url, "?")[0]); err != nil {
		t.Errorf("the run's page without the token: %v", err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the run's page without the token: %s, want 401", resp.Status)
	}
	jar, _ := cookiejar.New(nil)
	resp, err := (&http.Client{Jar: jar}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "winner: alpha") {
		t.Errorf("run page: %d\n%.500s", resp.StatusCode, body)
	}
	sigs <- os.Interrupt
	if code := <-done; code != ExitOK {
		t.Errorf("exit %d after the viewer stopped:\n%s", code, stderr.String())
	}
}

// TestViewTokenAndNoToken: forge view prints a URL with a fresh token;
// --no-token on an address other than loopback warns that anyone who can
// reach it sees every run.
func TestViewTokenAndNoToken(t *testing.T) {
	for _, c := range []struct {
		args []string
		url  *regexp.Regexp
		warn bool
	}{
		{[]string{"--addr", "127.0.0.1:0"}, regexp.MustCompile(`forge view: (http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{32}) `), false},
		{[]string{"--addr", "0.0.0.0:0", "--no-token"}, regexp.MustCompile(`forge view: (http://127\.0\.0\.1:\d+/) `), true},
	} {
		seen := make(chan string, 1)
		stdout := &waitWriter{re: c.url, seen: seen}
		var stderr bytes.Buffer
		sigs := make(chan os.Signal, 1)
		done := make(chan int, 1)
		go func() {
			done <- Run(context.Background(), append([]string{"view", "--out", t.TempDir(), "--no-open"}, c.args...),
				Env{Getenv: os.Getenv, Stdout: stdout, Stderr: &stderr, Signals: sigs})
		}()
		select {
		case <-seen:
		case code := <-done:
			t.Fatalf("%v: forge view ended (exit %d): %s%s", c.args, code, stdout.String(), stderr.String())
		}
		sigs <- os.Interrupt
		<-done
		if got := strings.Contains(stderr.String(), "warning: --no-token on 0.0.0.0:0: anyone who can reach it sees every run"); got != c.warn {
			t.Errorf("%v: warning %v, want %v: %q", c.args, got, c.warn, stderr.String())
		}
	}
}

// TestViewAddressTaken: a taken address ends forge view (exit 3) and forge
// run --view (before any job) with the flag that chooses another.
func TestViewAddressTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	root, _ := filepath.Abs("..")
	out := t.TempDir()
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"view", "--no-open", "--out", out, "--addr", addr}, "--addr"},
		{[]string{"run", "-f", filepath.Join(root, "forge.yaml"), "--out", out, "--run-id", "taken", "--quiet", "--view", "--no-open", "--view-addr", addr}, "--view-addr"},
	} {
		var stderr bytes.Buffer
		code := Run(context.Background(), tc.args, Env{Getenv: os.Getenv, Stderr: &stderr, Stdout: io.Discard})
		want := "forge: forge view: " + addr + " is taken (another viewer?): choose another with " + tc.flag + ", e.g. " + tc.flag + " 127.0.0.1:0 for any free port\n"
		if code != ExitInfra || stderr.String() != want {
			t.Errorf("%s: exit %d, stderr %q; want exit 3 and %q", tc.args[0], code, stderr.String(), want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "taken", "results.json")); err == nil {
		t.Error("forge run --view played its jobs on a taken address")
	}
}
