package view

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/forge-run/forge/record"
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
	r.Checks = []record.CheckResult{{Name: "artifact", Passed: 0, Of: 1,
		Failed: []record.CheckFailure{{Check: "equals_task: expected", Want: "391", Got: "392"}}}}
	must(t, record.Write(filepath.Join(dir, record.ResultsFile), rec))
	must(t, os.MkdirAll(dir, 0o755))
	ts := serve(t, Options{Out: out})
	_, _, body := get(t, ts, "/run/w/trial/1")
	wantIn(t, body, `id="status">wrong<`, "wanted &#34;391&#34;, got &#34;392&#34; (equals_task: expected)",
		`<td><code>equals_task: expected</code></td><td><pre>391</pre></td><td><pre>392</pre></td>`)
	_, _, body = get(t, ts, "/run/w")
	wantIn(t, body, ">wrong<")
}
