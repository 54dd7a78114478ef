package view

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/internal/testkit/relaid"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/report"
	"github.com/forge-run/forge/runner"
)

var t0 = time.Date(2026, 11, 21, 15, 30, 0, 0, time.UTC)

// serve starts a viewer of out.
func serve(t *testing.T, opts Options) *httptest.Server {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// get fetches path and returns the status, headers and body.
func get(t *testing.T, ts *httptest.Server, path string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest("GET", ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque, _, _ = strings.Cut(path, "?") // as sent: no cleaning of .. or %2e
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func wantIn(t *testing.T, body string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(body, s) {
			t.Errorf("page lacks %q", s)
		}
	}
}

func twoRuns(t *testing.T) (out string, suite, plain *record.Record) {
	out = t.TempDir()
	suite, _ = makeRun(t, out, spec{id: "suite-run", candidates: []string{"careful", "flaky", "quick"}, tasks: 120, trials: 1, files: true, start: t0.Add(time.Hour)})
	plain, _ = makeRun(t, out, spec{id: "plain-run", candidates: []string{"alpha", "beta"}, trials: 3, files: true, start: t0})
	return out, suite, plain
}

func TestRunsPageListsNewestFirst(t *testing.T) {
	out, suite, plain := twoRuns(t)
	ts := serve(t, Options{Out: out, Gates: func(*record.Record) string { return "passed" }})
	code, _, body := get(t, ts, "/")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	i, j := strings.Index(body, "suite-run"), strings.Index(body, "plain-run")
	if i < 0 || j < 0 || i > j {
		t.Errorf("want suite-run (newer) before plain-run: %d, %d", i, j)
	}
	wantIn(t, body, suite.WinnerLine, plain.WinnerLine, "local · 120 tasks", "forge.yaml", `action="/compare"`, "passed")
}

func TestRunPageStandingsAreTheReports(t *testing.T) {
	out, _, plain := twoRuns(t)
	ts := serve(t, Options{Out: out})
	code, _, body := get(t, ts, "/run/plain-run")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	sum := report.Summarise(plain)
	for _, row := range sum.Rows {
		for _, c := range row.Cells {
			wantIn(t, body, escaped(c))
		}
	}
	wantIn(t, body, escaped(sum.WinnerLine), `<svg class="chart"`)
	if strings.Contains(body, "style=") || strings.Contains(body, "<script>") {
		t.Error("the page has an inline style or script")
	}
}

// escaped is s as html/template escapes it in text.
func escaped(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;").Replace(s)
}

func TestMatrixFiltersAndPages(t *testing.T) {
	out, suite, _ := twoRuns(t)
	ts := serve(t, Options{Out: out})
	rows := func(body string) int { return strings.Count(body, `<td class="task">`) }
	_, _, body := get(t, ts, "/run/suite-run")
	if n := rows(body); n != matrixPage {
		t.Errorf("first page: %d tasks, want %d", n, matrixPage)
	}
	wantIn(t, body, "120 of 120 tasks", "page 1 of 3")
	_, _, body = get(t, ts, "/run/suite-run?mpage=3")
	if n := rows(body); n != 20 {
		t.Errorf("page 3: %d tasks, want 20", n)
	}
	_, _, body = get(t, ts, "/run/suite-run?task=task-0001")
	if n := rows(body); n != 10 { // task-00010 … task-00019
		t.Errorf("task filter: %d tasks, want 10", n)
	}
	// Failed by flaky, passed by careful: exactly those rows of the matrix.
	want := 0
	col := map[string]int{}
	for i, c := range suite.TaskMatrix[0].Cells {
		col[c.CandidateID] = i
	}
	for _, row := range suite.TaskMatrix {
		if !row.Cells[col["flaky"]].Solved && row.Cells[col["careful"]].Solved {
			want++
		}
	}
	if want == 0 || want == len(suite.TaskMatrix) {
		t.Fatalf("fixture: %d tasks failed by flaky and passed by careful", want)
	}
	_, _, body = get(t, ts, "/run/suite-run?failed=flaky&passed=careful")
	if n := rows(body); n != min(want, matrixPage) {
		t.Errorf("failed by flaky and passed by careful: %d tasks, want %d", n, want)
	}
	wantIn(t, body, fmt.Sprintf("%d of 120 tasks", want))
}

func TestTrialsListFiltersAndPages(t *testing.T) {
	out, _, _ := twoRuns(t)
	ts := serve(t, Options{Out: out})
	_, _, body := get(t, ts, "/run/suite-run?cand=flaky&status=failed")
	trials := strings.Count(body[strings.Index(body, `id="trials"`):], `/trial/`)
	if trials == 0 || trials > trialsPage {
		t.Errorf("flaky's failed trials: %d links", trials)
	}
	if strings.Contains(body[strings.Index(body, `id="trials"`):], `pill ok`) {
		t.Error("a successful trial among the failed ones")
	}
	_, _, body = get(t, ts, "/run/suite-run?tpage=8")
	wantIn(t, body, "page 8 of 8") // 360 trials, 50 a page
}

func TestTrialPage(t *testing.T) {
	out := t.TempDir()
	rec, dir := makeRun(t, out, spec{id: "r", candidates: []string{"alpha", "beta"}, trials: 1, files: true, start: t0})
	// beta's trial: a long stderr with ANSI colour and a secret, Markdown,
	// judges, submitted metrics, usage, a transcript.
	i := 1
	r := &rec.Results[i]
	r.Success, r.ErrorKind, r.ErrorMessage = false, runner.ErrCandidateFailed, "exit status 3: <b>bad</b>"
	score := 0.25
	r.Judges = []record.JudgeResult{{Name: "quality", Score: &score, Reason: "too short"}}
	r.Submitted = map[string]any{"items": 3}
	r.Usage = &runner.Usage{Models: []runner.ModelUsage{{Model: "gpt-x", Calls: 1, InputTokens: 100, OutputTokens: 20, TotalTokens: 120}}}
	stderr := strings.Repeat("x", 100<<10) + "\n\x1b[31mError: hunter2-secret went wrong\x1b[0m\n"
	must(t, os.WriteFile(filepath.Join(dir, "beta", "stderr.log"), []byte(stderr), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "beta", "out.md"), []byte("# Title\n\n[x](javascript:alert(1)) <img src=x onerror=alert(1)>\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "beta", "transcript.jsonl"), []byte(
		`{"role":"assistant","type":"tool_call","tool":{"name":"search","arguments":{"q":"events"}},"tool_call_id":"c1"}`+"\n"+
			"not json\n"+
			`{"role":"tool","type":"tool_result","content":"<script>x</script> found 3","tool_call_id":"c1","exit_code":2}`+"\n"), 0o644))
	must(t, record.Write(filepath.Join(dir, record.ResultsFile), rec))
	ts := serve(t, Options{Out: out, Secrets: []string{"hunter2-secret"}})

	code, h, body := get(t, ts, "/run/r/trial/2")
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	wantIn(t, body, "exit status 3: &lt;b&gt;bad&lt;/b&gt;", "candidate_failed", "Error: *** went wrong", "page 2 of 2",
		"too short", "&#34;items&#34;: 3", "gpt-x", "1 call · 100 input tokens", "search", "&lt;script&gt;x&lt;/script&gt; found 3", "exit 2", `<h1>Title</h1>`,
		"1 line is not a JSON object (the first: line 2")
	for _, bad := range []string{"hunter2-secret", "\x1b[31m", "javascript:", "onerror", "<img"} {
		if strings.Contains(body, bad) {
			t.Errorf("trial page holds %q", bad)
		}
	}
	if h.Get("Content-Security-Policy") != CSP {
		t.Errorf("CSP %q", h.Get("Content-Security-Policy"))
	}
	// The first page of stderr, asked for.
	_, _, body = get(t, ts, "/run/r/trial/2?err=1")
	wantIn(t, body, "page 1 of 2", "bytes 0–65536")

	// The artifact's download is an attachment.
	code, h, _ = get(t, ts, "/run/r/file/beta/out.md")
	if code != 200 || !strings.HasPrefix(h.Get("Content-Disposition"), "attachment") || h.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("download: %d %q %q", code, h.Get("Content-Disposition"), h.Get("Content-Type"))
	}
	if code, _, _ := get(t, ts, "/run/r/trial/3"); code != 404 {
		t.Errorf("trial 3 of 2: status %d", code)
	}
}

func TestPathsCannotLeaveTheRun(t *testing.T) {
	out := t.TempDir()
	_, dir := makeRun(t, out, spec{id: "r", candidates: []string{"alpha"}, trials: 1, files: true, start: t0})
	secret := filepath.Join(t.TempDir(), "secret.txt")
	must(t, os.WriteFile(secret, []byte("top secret"), 0o644))
	must(t, os.Symlink(secret, filepath.Join(dir, "alpha", "link.txt")))
	must(t, os.Symlink(filepath.Dir(secret), filepath.Join(dir, "alpha", "linkdir")))
	ts := serve(t, Options{Out: out})
	for _, p := range []string{
		"/run/r/file/../../etc/passwd",
		"/run/r/file/alpha/../../r/results.json",
		"/run/r/file/%2e%2e/%2e%2e/etc/passwd",
		"/run/r/file/%2E%2E%2Fsecret",
		"/run/r/file/..%2f..%2fetc%2fpasswd",
		"/run/r/file/%2fetc%2fpasswd",
		"/run/r/file//etc/passwd",
		"/run/r/file/" + strings.TrimPrefix(secret, "/"),
		"/run/r/file/alpha/link.txt",
		"/run/r/file/alpha/linkdir/secret.txt",
		"/run/..%2f..%2fetc/trial/1",
		"/run/r/file/alpha\\..\\..\\x",
	} {
		code, h, body := get(t, ts, p)
		if code != 404 || strings.Contains(body, "top secret") || strings.Contains(body, "root:") {
			t.Errorf("%s: status %d, want 404", p, code)
		}
		if h.Get("Content-Security-Policy") != CSP {
			t.Errorf("%s: no CSP", p)
		}
	}
	if code, _, body := get(t, ts, "/run/r/file/alpha/out.md"); code != 200 || body != "# done\n" {
		t.Errorf("a file inside the run: %d %q", code, body)
	}
}

func TestHostCheck(t *testing.T) {
	s, err := New(Options{Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ln, url, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndex(port, ":")+1:]
	for host, want := range map[string]int{
		"127.0.0.1:" + port: 200, "localhost:" + port: 200, "[::1]:" + port: 200, "LOCALHOST:" + port: 200,
		"evil.example:" + port: 403, "127.0.0.1:1": 403, "evil.example": 403, "127.0.0.1.evil.example:" + port: 403,
	} {
		req, _ := http.NewRequest("GET", url, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: status %d, want %d", host, resp.StatusCode, want)
		}
		if resp.Header.Get("Content-Security-Policy") != CSP || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("Host %s: security headers missing", host)
		}
	}
	// On purpose on another interface: any Host.
	s2, _ := New(Options{Out: t.TempDir(), AnyHost: true})
	if !s2.hostAllowed("box.lan:8787") {
		t.Error("AnyHost refuses a Host")
	}
}

func TestCSPOnEveryResponse(t *testing.T) {
	out, _, _ := twoRuns(t)
	ts := serve(t, Options{Out: out})
	for _, p := range []string{"/", "/run/suite-run", "/run/suite-run/trial/1", "/compare?a=plain-run&b=suite-run",
		"/static/view.js", "/static/report.css", "/static/view.css", "/nope", "/run/nope", "/run/plain-run/file/alpha/trial-1/out.md"} {
		code, h, _ := get(t, ts, p)
		if h.Get("Content-Security-Policy") != CSP || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s (%d): CSP %q, nosniff %q", p, code, h.Get("Content-Security-Policy"), h.Get("X-Content-Type-Options"))
		}
		if !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("%s: frames allowed", p)
		}
	}
}

func TestComparePage(t *testing.T) {
	out, _, _ := twoRuns(t)
	makeRun(t, out, spec{id: "suite-two", candidates: []string{"careful", "flaky", "quick"}, tasks: 120, trials: 1, files: false, start: t0.Add(2 * time.Hour)})
	// A different suite outcome: make careful fail a task it passed.
	ts := serve(t, Options{Out: out})
	code, _, body := get(t, ts, "/compare?a=suite-run&b=suite-two")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	wantIn(t, body, "careful", "flaky", `href="/run/suite-run?cand=careful#trials"`, `href="/run/suite-two?cand=careful#trials"`)
	if code, _, _ := get(t, ts, "/compare?a=suite-run&b=nope"); code != 404 {
		t.Errorf("compare with a missing run: %d", code)
	}
}

func TestLiveRunGainsTrials(t *testing.T) {
	out := t.TempDir()
	dir := filepath.Join(out, "live")
	must(t, os.MkdirAll(dir, 0o755))
	head := &record.Record{SchemaVersion: record.SchemaVersion, RunID: "live", Backend: "local", StartedAt: t0, Trials: 1}
	must(t, record.Write(filepath.Join(dir, record.ResultsFile), head))
	line := func(c string, ok bool) []byte {
		r := record.Trial{Result: runner.Result{CandidateID: c, Trial: 1, Success: ok, RuntimeSeconds: 1}}
		if !ok {
			r.ErrorKind, r.ErrorMessage = runner.ErrTimeout, "timed out"
		}
		b, _ := json.Marshal(&r)
		return append(b, '\n')
	}
	journal := filepath.Join(dir, record.TrialsFile)
	must(t, os.WriteFile(journal, line("alpha", true), 0o644))
	// A job under way, as forge run lists it.
	now := time.Now().UTC() // a sign of life: the run is played
	running, _ := json.Marshal(record.Running{UpdatedAt: now,
		Jobs: []record.RunningJob{{Job: "gamma", Phase: runner.PhaseExecute, StartedAt: now.Add(-3 * time.Second)}}})
	must(t, os.WriteFile(filepath.Join(dir, record.RunningFile), running, 0o644))
	ts := serve(t, Options{Out: out})
	_, _, body := get(t, ts, "/run/live")
	wantIn(t, body, `data-events="/run/live/events?from=1"`, "alpha", `id="running"`)

	resp, err := ts.Client().Get(ts.URL + "/run/live/events?from=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// A trial ends while the page listens: its event arrives.
	f, err := os.OpenFile(journal, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	f.Write(line("beta", false))
	f.Close()
	sc := bufio.NewScanner(resp.Body)
	var data, jobs, event string
	for (data == "" || jobs == "") && sc.Scan() {
		if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			event = e
		}
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && event == "trial" {
			data = d
		} else if ok && event == "running" {
			jobs = d
		}
	}
	if jobs != `[{"job":"gamma","phase":"execute","elapsed":"3s"}]` {
		t.Errorf("running event %q", jobs)
	}
	var got liveTrial
	if err := json.Unmarshal([]byte(data), &got); err != nil {
		t.Fatalf("event %q: %v", data, err)
	}
	if got.N != 2 || got.Name != "beta#1" || got.Status != "timeout" || got.Href != "/run/live/trial/2" {
		t.Errorf("event %+v", got)
	}
	// The run ends: results.json written whole; the stream says so.
	head.FinishedAt = t0.Add(time.Minute)
	head.Results = []record.Trial{{Result: runner.Result{CandidateID: "alpha", Trial: 1, Success: true}}, {Result: runner.Result{CandidateID: "beta", Trial: 1}}}
	head.WinnerLine = "winner: alpha"
	must(t, record.Write(filepath.Join(dir, record.ResultsFile), head))
	for sc.Scan() {
		if sc.Text() == "event: finished" {
			return
		}
	}
	t.Error("no finished event")
}

func TestIndexFollowsARewrittenRecord(t *testing.T) {
	out := t.TempDir()
	makeRun(t, out, spec{id: "r", candidates: []string{"alpha"}, trials: 1, start: t0})
	ts := serve(t, Options{Out: out})
	_, _, body := get(t, ts, "/run/r")
	wantIn(t, body, "alpha")
	makeRun(t, out, spec{id: "r", candidates: []string{"alpha", "omega"}, trials: 1, start: t0})
	_, _, body = get(t, ts, "/run/r")
	wantIn(t, body, "omega")
}

func TestOpener(t *testing.T) {
	look := func(name string) (string, error) { return "/usr/bin/" + name, nil }
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	if got := Opener("linux", env(nil), look); got != nil {
		t.Errorf("linux without a display: %v", got)
	}
	if got := Opener("linux", env(map[string]string{"DISPLAY": ":0"}), look); len(got) != 1 || got[0] != "/usr/bin/xdg-open" {
		t.Errorf("linux with a display: %v", got)
	}
	if got := Opener("darwin", env(nil), look); len(got) != 1 || got[0] != "/usr/bin/open" {
		t.Errorf("macOS: %v", got)
	}
}

// A record an older forge wrote indented whole (each result over many
// lines) is read whole: its run and trial pages show it.
func TestIndentedRecordIsShown(t *testing.T) {
	out := t.TempDir()
	rec, dir := makeRun(t, out, spec{id: "old", candidates: []string{"alpha", "beta"}, trials: 2, files: true, start: t0})
	b, err := json.MarshalIndent(rec, "", "  ")
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, record.ResultsFile), b, 0o644))
	ts := serve(t, Options{Out: out})
	code, _, body := get(t, ts, "/run/old")
	if code != 200 {
		t.Fatalf("run page: %d %s", code, body)
	}
	wantIn(t, body, "alpha", "beta", "alpha#2", "beta#2")
	if code, _, body := get(t, ts, "/run/old/trial/4"); code != 200 || !strings.Contains(body, "beta") {
		t.Errorf("trial page: %d %.300s", code, body)
	}
}

// A record laid out by another writer (re-indented, its keys sorted, as
// jq -S makes it) shows its trials, and each trial's page: a record of
// schema 4 with its trials beside it, and one of schema 3 holding them.
func TestRelaidRecordIsShown(t *testing.T) {
	out := t.TempDir()
	_, dir := makeRun(t, out, spec{id: "now", candidates: []string{"alpha", "beta"}, trials: 2, files: true, start: t0})
	must(t, relaid.Document(filepath.Join(dir, record.ResultsFile), "\t"))
	must(t, relaid.Lines(filepath.Join(dir, record.TrialsFile)))
	old, dir := makeRun(t, out, spec{id: "old", candidates: []string{"alpha", "beta"}, trials: 2, files: true, start: t0})
	old.SchemaVersion = 3
	b, err := record.Marshal(old)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, record.ResultsFile), b, 0o644))
	must(t, relaid.Document(filepath.Join(dir, record.ResultsFile), " "))
	ts := serve(t, Options{Out: out})
	for _, id := range []string{"now", "old"} {
		code, _, body := get(t, ts, "/run/"+id)
		if code != 200 || strings.Count(body, "/run/"+id+"/trial/") != 4 {
			t.Fatalf("%s: run page %d, %d trials: %.300s", id, code, strings.Count(body, "/run/"+id+"/trial/"), body)
		}
		if code, _, body := get(t, ts, "/run/"+id+"/trial/4"); code != 200 || !strings.Contains(body, "beta#2") {
			t.Errorf("%s: trial page: %d %.300s", id, code, body)
		}
	}
}

// A large run is listed from its record's head, without reading its
// results, until it is opened.
func TestRunsListReadsALargeRunsHead(t *testing.T) {
	out := t.TempDir()
	rec, _ := makeRun(t, out, spec{id: "big", candidates: []string{"alpha", "beta"}, tasks: 3, trials: 1, start: t0})
	was := indexForList
	indexForList = 0 // every run is large
	t.Cleanup(func() { indexForList = was })
	s, err := New(Options{Out: out, Gates: func(*record.Record) string { return "gates hold" }})
	must(t, err)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	_, _, body := get(t, ts, "/")
	wantIn(t, body, html.EscapeString(rec.WinnerLine), "open the run", "local · 3 tasks")
	path := filepath.Join(out, "big", record.ResultsFile)
	if s.cache.peek(path) != nil {
		t.Error("the runs list read the large run whole")
	}
	get(t, ts, "/run/big")
	_, _, body = get(t, ts, "/")
	wantIn(t, body, "gates hold", "local · 3 tasks")
}

// A run forge stopped playing before it finished (killed: its
// running.json left with an old time) is marked stopped, with the command
// that finishes it; a run still played is live.
func TestStoppedRunIsMarked(t *testing.T) {
	out := t.TempDir()
	goneAt := time.Now().Add(-time.Hour)
	for id, sign := range map[string]time.Time{"gone": goneAt, "going": time.Now()} {
		dir := filepath.Join(out, id)
		must(t, os.MkdirAll(dir, 0o755))
		must(t, record.Write(filepath.Join(dir, record.ResultsFile), &record.Record{SchemaVersion: record.SchemaVersion, RunID: id, Backend: "local", StartedAt: t0, Trials: 1}))
		must(t, os.WriteFile(filepath.Join(dir, record.TrialsFile), nil, 0o644))
		running, _ := json.Marshal(record.Running{UpdatedAt: sign.UTC(), Jobs: []record.RunningJob{}})
		must(t, os.WriteFile(filepath.Join(dir, record.RunningFile), running, 0o644))
	}
	ts := serve(t, Options{Out: out})
	_, _, body := get(t, ts, "/")
	row := func(id string) string { // the list's row of run id
		for _, tr := range strings.Split(body, "<tr>") {
			if strings.Contains(tr, `href="/run/`+id+`"`) {
				return tr
			}
		}
		return ""
	}
	gone, going := row("gone"), row("going")
	wantIn(t, gone, ">stopped</span>")
	wantIn(t, going, ">live</span>")
	if strings.Contains(going, "stopped") {
		t.Errorf("the run still played is marked stopped:\n%s", going)
	}
	_, _, body = get(t, ts, "/run/gone")
	wantIn(t, body, `id="livebadge">stopped`, `id="stopped"`, "forge run --resume gone")
	if strings.Contains(body, "data-events") {
		t.Error("the stopped run's page listens for events")
	}
	_, _, body = get(t, ts, "/run/going")
	wantIn(t, body, `id="livebadge">live`)
	if strings.Contains(body, `id="stopped"`) {
		t.Error("the page of the run still played says it stopped")
	}
	// The stopped run's stream says it stopped, when it was last seen,
	// and ends.
	code, _, stream := get(t, ts, "/run/gone/events?from=0")
	if code != 200 {
		t.Fatalf("events of the stopped run: status %d", code)
	}
	wantIn(t, stream, "event: stopped\ndata: \""+goneAt.UTC().Format(time.DateTime)+"\"\n")
}

// An artifact holding a secret's value is stored as written; a viewer that
// does not know the secret (forge view on its own knows none of a
// manifest's) shows results.json's excerpt, masked when the run wrote it,
// and offers no download of the file.
func TestArtifactWithASecretShowsTheMaskedExcerpt(t *testing.T) {
	out := t.TempDir()
	rec, dir := makeRun(t, out, spec{id: "r", candidates: []string{"alpha"}, trials: 1, files: true, start: t0})
	r := &rec.Results[0]
	must(t, os.WriteFile(filepath.Join(dir, filepath.FromSlash(r.ArtifactPath)), []byte("token: s3cr3t-value\n"), 0o644))
	r.ArtifactContent, r.SecretInArtifact = "token: ***\n", true
	must(t, record.Write(filepath.Join(dir, record.ResultsFile), rec))
	ts := serve(t, Options{Out: out})
	_, _, body := get(t, ts, "/run/r/trial/1")
	wantIn(t, body, "token: ***", "holds a secret&#39;s value")
	for _, bad := range []string{"s3cr3t-value", "/run/r/file/" + r.ArtifactPath} {
		if strings.Contains(body, bad) {
			t.Errorf("the trial page holds %q", bad)
		}
	}
	// Asked for directly, by its path or another naming the same file, the
	// file is not served; the run's other files still are.
	link := filepath.Join(dir, "alpha", "hardlink.md")
	must(t, os.Link(filepath.Join(dir, filepath.FromSlash(r.ArtifactPath)), link))
	for _, p := range []string{"/run/r/file/" + r.ArtifactPath, "/run/r/file/alpha/hardlink.md"} {
		code, _, body := get(t, ts, p)
		if code != http.StatusForbidden || strings.Contains(body, "s3cr3t-value") {
			t.Errorf("%s: status %d, body %q; want 403 without the secret", p, code, body)
		}
		wantIn(t, body, "holds a secret&#39;s value")
	}
	if code, _, _ := get(t, ts, "/run/r/file/"+r.OutputPath); code != 200 {
		t.Errorf("stdout.log: status %d, want 200", code)
	}
}

// TestTrialPageShowsTheVerifier: a suite trial judged by its task's
// verifier shows its reward, metrics, log and the verify phase, and the
// task it played (its instruction as Markdown, its metadata).
func TestTrialPageShowsTheVerifier(t *testing.T) {
	out := t.TempDir()
	rec, dir := makeRun(t, out, spec{id: "v", candidates: []string{"alpha"}, tasks: 1, trials: 1, files: true, start: t0})
	r := &rec.Results[0]
	reward := 0.5
	r.Reward, r.Metrics = &reward, map[string]float64{"passed": 2, "total": 4}
	r.VerifierLogPath, r.VerifierOutput = "alpha/task-00000/verifier.log", "2 of 4 checks passed\n"
	r.Phases.Verify = 0.7
	jd := filepath.Join(dir, "alpha", "task-00000")
	must(t, os.WriteFile(filepath.Join(jd, "verifier.log"), []byte("check 1 ok\n2 of 4 checks passed\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(jd, "task.json"), []byte(`{"id":"task-00000","objective":"# Fix the bug\n\nIn /app/lib.py.","difficulty":"medium","tags":["python","bug"]}`), 0o644))
	must(t, record.Write(filepath.Join(dir, record.ResultsFile), rec))
	ts := serve(t, Options{Out: out})
	code, _, body := get(t, ts, "/run/v/trial/1")
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	wantIn(t, body, `id="reward">0.5<`, "<dt>passed</dt><dd>2</dd>", "check 1 ok", `class="phase verify"`, "verify 700ms",
		"<h1>Fix the bug</h1>", "<dt>difficulty</dt><dd>medium</dd>", `[&#34;python&#34;,&#34;bug&#34;]`)
}

// TestMatrixFiltersOnDifficultyAndCategory: tasks that say their
// difficulty and category (Harbor's metadata) can be filtered on them.
func TestMatrixFiltersOnDifficultyAndCategory(t *testing.T) {
	out := t.TempDir()
	rec, dir := makeRun(t, out, spec{id: "h", candidates: []string{"alpha", "beta"}, tasks: 6, trials: 1, start: t0})
	for i := range rec.Tasks {
		rec.Tasks[i].Difficulty = []string{"easy", "hard"}[i%2]
		rec.Tasks[i].Category = []string{"files", "git", "web"}[i%3]
	}
	must(t, record.Write(filepath.Join(dir, record.ResultsFile), rec))
	ts := serve(t, Options{Out: out})
	rows := func(body string) int { return strings.Count(body, `<td class="task">`) }
	_, _, body := get(t, ts, "/run/h")
	wantIn(t, body, `<option value="easy">easy</option><option value="hard">hard</option>`, `<option value="web">web</option>`)
	_, _, body = get(t, ts, "/run/h?difficulty=easy")
	if n := rows(body); n != 3 {
		t.Errorf("easy: %d tasks, want 3", n)
	}
	wantIn(t, body, "3 of 6 tasks", `<option value="easy" selected>`)
	_, _, body = get(t, ts, "/run/h?difficulty=hard&category=git") // tasks 1 and 3 are hard; 1 and 4 are git
	if n := rows(body); n != 1 {
		t.Errorf("hard git: %d tasks, want 1", n)
	}
}

// The runs list's Gates column says the gates' verdict in a word; the
// run's details line under its row says it whole, with the backend and
// the manifest.
func TestRunsListGatesInAWordAndWhole(t *testing.T) {
	out := t.TempDir()
	makeRun(t, out, spec{id: "gated", candidates: []string{"alpha", "beta"}, trials: 1, start: t0})
	why := "failed: gates.require_winner: there is no winner; gates.max_infra_errors 0: 2 jobs failed on infrastructure"
	ts := serve(t, Options{Out: out, Gates: func(*record.Record) string { return why }})
	_, _, body := get(t, ts, "/")
	wantIn(t, body, `<td class="gates">failed</td>`, "<span class=\"k\">gates</span> "+html.EscapeString(why),
		"<span class=\"k\">backend</span> local", "<span class=\"k\">manifest</span> <code>forge.yaml</code>")
}

// TestTrialPageShowsTampering: a trial whose verifier's tools changed says
// which on its page (issue 41); another does not.
func TestTrialPageShowsTampering(t *testing.T) {
	out := t.TempDir()
	rec, dir := makeRun(t, out, spec{id: "tm", candidates: []string{"alpha"}, tasks: 1, trials: 2, files: true, start: t0})
	rec.Results[0].Tampered = []string{"/usr/bin/bash", "/usr/bin/python3"}
	must(t, record.Write(filepath.Join(dir, record.ResultsFile), rec))
	ts := serve(t, Options{Out: out})
	_, _, body := get(t, ts, "/run/tm/trial/1")
	wantIn(t, body, "<dt>tampered</dt><dd>/usr/bin/bash, /usr/bin/python3</dd>")
	if code, _, body := get(t, ts, "/run/tm/trial/2"); code != 200 || strings.Contains(body, "tampered") {
		t.Errorf("an honest trial's page (status %d) says tampered:\n%s", code, body)
	}
}
