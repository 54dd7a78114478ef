package view

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/runner"
)

// TestWrongAnswerIsShownWithExpectedAndGot: a trial that ran to its end
// with a failed check is "wrong", never "ok", in the trials list and on its
// page, which shows each failed check's expected and got.
func TestWrongAnswerIsShownWithExpectedAndGot(t *testing.T) {
	out := t.TempDir()
	rec, dir := makeRun(t, out, spec{id: "w", candidates: []string{"alpha"}, tasks: 2, trials: 1, files: true, start: t0})
	r := &rec.Results[0]
	r.Success, r.ErrorKind = true, runner.ErrNone
	r.Checks = []runner.CheckResult{{Name: "artifact", Passed: 0, Of: 1,
		Failed: []runner.CheckFailure{{Check: "equals_task: expected", Want: "391", Got: "392"}}}}
	must(t, forge.WriteRecord(filepath.Join(dir, forge.ResultsFile), rec))
	must(t, os.MkdirAll(dir, 0o755))
	ts := serve(t, Options{Out: out})
	_, _, body := get(t, ts, "/run/w/trial/1")
	wantIn(t, body, `id="status">wrong<`, "wanted &#34;391&#34;, got &#34;392&#34; (equals_task: expected)",
		`<td><code>equals_task: expected</code></td><td><pre>391</pre></td><td><pre>392</pre></td>`)
	_, _, body = get(t, ts, "/run/w")
	wantIn(t, body, ">wrong<")
}

// TestTokenGuardsEveryPage: with a token, every route answers 401 without
// it; the URL with it sets an HttpOnly, SameSite=Strict cookie and
// redirects to the page without it; the cookie alone then opens pages.
func TestTokenGuardsEveryPage(t *testing.T) {
	out := t.TempDir()
	makeRun(t, out, spec{id: "r", candidates: []string{"alpha"}, trials: 1, files: true, start: t0})
	ts := serve(t, Options{Out: out, Token: "s3cret-token"})
	for _, p := range []string{"/", "/run/r", "/run/r/trial/1", "/run/r/file/alpha/stdout.log", "/static/view.css", "/run/r?token=wrong"} {
		if code, _, _ := get(t, ts, p); code != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d, want 401", p, code)
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(ts.URL + "/run/r?token=s3cret-token")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/run/r" || len(c) != 1 || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("with the token: %d to %q, cookies %+v", resp.StatusCode, resp.Header.Get("Location"), c)
	}
	for _, p := range []string{"/", "/run/r", "/run/r/trial/1", "/run/r/file/alpha/stdout.log"} {
		req, _ := http.NewRequest("GET", ts.URL+p, nil)
		req.AddCookie(c[0])
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s with the cookie: %d", p, resp.StatusCode)
		}
	}
}
