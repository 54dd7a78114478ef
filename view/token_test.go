package view

import (
	"net/http"
	"testing"
)

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
