package view_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/forge-run/forge/cli"
	"github.com/forge-run/forge/compare"
	"github.com/forge-run/forge/internal/testkit/browser"
	"github.com/forge-run/forge/internal/testkit/fakemodel"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/view"
)

// forgeRun plays a manifest into out with forge's own command line code
// and returns the run's id.

// browserToken is the viewer's token in the browser tests: they go
// through the URL forge view prints, as a user does.
const browserToken = "b7e1c0ffee0000000000000000000001"

func forgeRun(t *testing.T, out, manifest, id string) string {
	return forgeRunEnv(t, out, manifest, id, nil)
}

// forgeRunEnv is forgeRun with env's variables set for forge.
func forgeRunEnv(t *testing.T, out, manifest, id string, env map[string]string) string {
	t.Helper()
	var stderr strings.Builder
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	code := cli.Run(context.Background(), []string{"run", "--quiet", "-f", manifest, "--out", out, "--run-id", id},
		cli.Env{Getenv: getenv, Stderr: &stderr})
	if code != cli.ExitOK && code != cli.ExitGateFailed {
		t.Fatalf("forge run -f %s: exit %d\n%s", manifest, code, stderr.String())
	}
	return id
}

// hostile writes a tournament of one candidate that prints a script and
// writes Markdown with a javascript: link and raw HTML.
func hostile(t *testing.T) string {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "evil.py"), []byte(`import sys
print("<script>window.__pwned=1</script>")
sys.stderr.write("<img src=x onerror=\"window.__pwned=1\">\n")
open(sys.argv[2], "w").write("# Hostile\n\n[x](javascript:window.__pwned=1)\n\n<img src=x onerror=\"window.__pwned=1\">\n\n<script>window.__pwned=1</script>\n")
`), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "forge.yaml"), []byte(`objective: "Break the viewer"
defaults:
  output_file: post.md
candidates:
  - id: evil
    script: evil.py
scoring:
  - type: success
`), 0o644))
	return filepath.Join(dir, "forge.yaml")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// serve serves s on a loopback port until the test ends; its base URL.
func serve(t *testing.T, s *view.Server) string {
	t.Helper()
	ln, base, err := s.Listen("127.0.0.1:0")
	must(t, err)
	srv := &http.Server{Handler: s.Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return base
}

// chromium starts headless Chromium (bin) in a 1280×900 window with opts,
// ended with the test, and returns a context whose actions have limit.
func chromium(t *testing.T, bin string, limit time.Duration, opts ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1280, 900)), opts...)...)
	t.Cleanup(cancelAlloc)
	ctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	// The browser starts on the first action, with a context that has no
	// deadline (a deadline there would end the browser); later actions
	// have one.
	must(t, chromedp.Do(ctx))
	ctx, cancel := context.WithTimeout(ctx, limit)
	t.Cleanup(cancel)
	return ctx
}

// TestViewerInChromium plays the sample suite and tournament, serves them
// and walks the viewer in headless Chromium: the runs list, the suite's
// page and its filtered matrix, a failed trial, two runs compared, a live
// run gaining a trial, and a hostile candidate's output that must not run.
// With FORGE_VIEW_SHOTS=DIR it also writes a screenshot of each view
// there (the README's: FORGE_VIEW_SHOTS=$PWD/docs/img).
func TestViewerInChromium(t *testing.T) {
	bin := browser.Require(t)
	root, _ := filepath.Abs("..")
	out := t.TempDir()
	suite := forgeRun(t, out, filepath.Join(root, "examples/suite/forge.yaml"), "suite")
	first := forgeRun(t, out, filepath.Join(root, "forge.yaml"), "tournament-1")
	second := forgeRun(t, out, filepath.Join(root, "forge.yaml"), "tournament-2")
	evil := forgeRun(t, out, hostile(t), "hostile")
	// The sample agent, against its offline model: its trials keep a
	// transcript.
	key := "sk-forge-view-test"
	model := fakemodel.Start(t, filepath.Join(root, "examples", "agent", "fake_model.py"), key)
	agent := forgeRunEnv(t, out, filepath.Join(root, "examples", "agent", "forge.yaml"), "agent",
		map[string]string{"OPENAI_API_KEY": key, "OPENAI_BASE_URL": model})
	live := filepath.Join(out, "live")
	journal := startLive(t, live)

	// Through the token, as forge view serves it.
	s, err := view.New(view.Options{Out: out, Token: browserToken})
	must(t, err)
	base := serve(t, s)
	ctx := chromium(t, bin, 3*time.Minute, chromedp.Flag("blink-settings", "preferredColorScheme=1"))

	var mu sync.Mutex
	var console []string
	must(t, chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			console = append(console, "exception: "+e.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value))
				}
				console = append(console, string(e.Type)+": "+strings.Join(parts, " "))
			}
		}
	}))
	shots := os.Getenv("FORGE_VIEW_SHOTS")
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	shot := func(name string) {
		t.Helper()
		if shots == "" {
			return
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: a PNG
		must(t, err)
		must(t, os.WriteFile(filepath.Join(shots, "view-"+name+".png"), png, 0o644))
	}
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	// follow opens the page the link at sel leads to, as a new load: a DOM
	// read right after a click can meet the page still being replaced
	// ("No node with given id found"), while Navigate waits for the load.
	follow := func(what, sel, visible string) {
		t.Helper()
		href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(`+strconv.Quote(sel)+`).getAttribute("href")`))
		if err != nil || !strings.HasPrefix(href, "/") {
			t.Fatalf("%s: the link at %s: %q, %v", what, sel, href, err)
		}
		do(what, chromedp.Navigate(strings.TrimSuffix(base, "/")+href), chromedp.WaitVisible(css(visible)))
	}

	// The runs list, newest first, then the suite's page.
	do("runs list", chromedp.Navigate(base+"?token="+browserToken), chromedp.WaitVisible(css("#runs")))
	runs := text("#runs")
	shot("runs")
	for _, id := range []string{suite, first, second, evil, agent, "live"} {
		if !strings.Contains(runs, id) {
			t.Errorf("runs list lacks %s", id)
		}
	}
	do("open the suite", chromedp.Click(css(`a.run[href="/run/suite"]`)), chromedp.WaitVisible(css("#matrix")))
	shot("run")

	// Filter the matrix: tasks whose id holds "1".
	rec, err := record.Read(filepath.Join(out, suite, record.ResultsFile))
	must(t, err)
	want := 0
	for _, row := range rec.TaskMatrix {
		if strings.Contains(strings.ToLower(row.TaskID), "1") {
			want++
		}
	}
	wantText := fmt.Sprintf("%d of %d tasks", want, len(rec.TaskMatrix))
	do("filter the matrix", chromedp.SetValue(css("#taskfilter"), "1"), chromedp.Click(css("#filter")),
		chromedp.WaitVisible(chromedp.Search(`//p[@id="matrixcount"][text()="`+wantText+`"]`)))

	// A failed trial: its error line and its stderr.
	failed := map[string]bool{}
	for i := range rec.Results {
		if r := &rec.Results[i]; !r.Success {
			failed[strings.TrimSpace(r.ErrorMessage)] = true
		}
	}
	if len(failed) == 0 {
		t.Fatal("the sample suite has no failed trial")
	}
	do("open the failed trials", chromedp.Navigate(base+"run/suite?status=failed#trials"), chromedp.WaitVisible(css("#trialtable")))
	follow("open a failed trial", "#trialtable tbody tr:first-child a", "#error")
	errText, stderr := text("#error"), text("#stderr")
	shot("trial")
	if !failed[strings.TrimSpace(errText)] {
		t.Errorf("the error line %q is no failed trial's error message", errText)
	}
	if !strings.HasPrefix(stderr, "stderr") {
		t.Errorf("no stderr section: %q", stderr)
	}

	// The sample agent's trial, from the runs list: its transcript, step
	// by step, as the agent wrote it.
	do("open the agent's run", chromedp.Navigate(base), chromedp.WaitVisible(css("#runs")),
		chromedp.Click(css(`a.run[href="/run/agent"]`)), chromedp.WaitVisible(css("#trialtable")))
	follow("open the agent's trial", "#trialtable tbody tr:first-child a", "#transcript")
	shot("transcript")
	steps, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#transcript li.step").length`))
	must(t, err)
	if tr := text("#transcript"); steps < 2 || !strings.Contains(tr, "assistant") || !strings.Contains(tr, "user") {
		t.Errorf("the agent's transcript shows %d steps:\n%s", steps, tr)
	}

	// Two runs compared, chosen on the runs list.
	do("compare", chromedp.Navigate(base), chromedp.WaitVisible(css("#runs")),
		chromedp.Click(css(`input[name="a"][value="`+first+`"]`)), chromedp.Click(css(`input[name="b"][value="`+second+`"]`)),
		chromedp.Click(css("#compare")), chromedp.WaitVisible(css("#comparison")))
	cmpText := text("#comparison")
	shot("compare")
	a, _, err := compare.Open(first, out)
	must(t, err)
	b, _, err := compare.Open(second, out)
	must(t, err)
	var table strings.Builder
	must(t, compare.WriteTable(&table, compare.Runs(a, b), false))
	if strings.TrimSpace(cmpText) != strings.TrimSpace(table.String()) {
		t.Errorf("compare page says\n%s\nforge compare says\n%s", cmpText, table.String())
	}

	// A live run gains a trial while its page is open.
	do("open the live run", chromedp.Navigate(base+"run/live"), chromedp.WaitVisible(css("#trialtable")),
		chromedp.WaitVisible(chromedp.Search(`//ul[@id="running"]/li[contains(., "gamma") and contains(., "execute")]`)))
	appendResult(t, journal, record.Trial{Result: runner.Result{CandidateID: "beta", Trial: 1, Success: true, RuntimeSeconds: 2}})
	do("see the new trial", chromedp.WaitVisible(chromedp.Search(`//table[@id="trialtable"]//a[text()="beta#1"]`)))
	shot("live")
	// The run ends: the page draws its standings without a reload (a
	// reload would forget the mark the page is given here).
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.__stay = "same page"`)); err != nil {
		t.Fatalf("mark the page: %v", err)
	}
	finishLive(t, live)
	do("see the standings", chromedp.WaitVisible(css("#standings")),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="winner" and contains(., "winner: beta")]`)))
	if v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.__stay)`)); err != nil || v != "same page" {
		t.Errorf("the page was reloaded to show the standings (window.__stay = %q, %v)", v, err)
	}
	if n := text("#trialcount"); n != "2" {
		t.Errorf("the finished run's page counts %q trials, want 2", n)
	}

	// A run whose forge is killed while its page is open: the page says it
	// stopped and how to finish it, without a reload.
	halted := filepath.Join(out, "halted")
	startLive(t, halted)
	do("open the run about to stop", chromedp.Navigate(base+"run/halted"),
		chromedp.WaitVisible(chromedp.Search(`//ul[@id="running"]/li[contains(., "gamma")]`)))
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.__stay = "still"`)); err != nil {
		t.Fatalf("mark the page: %v", err)
	}
	lastSeen, err := json.Marshal(record.Running{UpdatedAt: time.Now().UTC().Add(-time.Hour), Jobs: []record.RunningJob{}})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(halted, record.RunningFile), lastSeen, 0o644))
	do("see it stopped", chromedp.WaitVisible(css("#stopped")),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="livebadge" and text()="stopped"]`)))
	if v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.__stay)`)); err != nil || v != "still" {
		t.Errorf("the page was reloaded to show the run stopped (window.__stay = %q, %v)", v, err)
	}
	if got := text("#stopped"); !strings.Contains(got, "forge run --resume halted") {
		t.Errorf("the stopped notice says %q", got)
	}

	// The hostile candidate's trial: nothing of its output runs.
	pwned := func() string {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`typeof window.__pwned`))
		must(t, err)
		return v
	}
	do("open the hostile trial", chromedp.Navigate(base+"run/hostile/trial/1"), chromedp.WaitVisible(css("#markdown")))
	if v := pwned(); v != "undefined" {
		t.Errorf("after opening: window.__pwned is %s", v)
	}
	do("click its link", chromedp.Click(css("#markdown a")))
	// A javascript: link would run in this page; the link, emptied,
	// reloads it, and the evaluation may meet the page being replaced.
	if v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`typeof window.__pwned`)); err != nil && !strings.Contains(err.Error(), "navigated or closed") {
		t.Fatalf("after clicking: %v", err)
	} else if err == nil && v != "undefined" {
		t.Errorf("after clicking: window.__pwned is %s", v)
	}
	// The link, its javascript: gone, may load the page again: the DOM is
	// read from the page loaded afresh, not from one being replaced.
	do("open the hostile trial again", chromedp.Navigate(base+"run/hostile/trial/1"), chromedp.WaitVisible(css("#markdown")))
	counts, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[document.querySelectorAll("script:not([src])").length,
		document.querySelectorAll("[onerror]").length,
		document.querySelectorAll("a[href^='javascript:' i]").length,
		document.querySelectorAll("img[src='x']").length,
		document.querySelectorAll("script[src]").length]`))
	must(t, err)
	if want := []int{0, 0, 0, 0, 1}; fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("inline scripts, onerror attributes, javascript: links, img[src=x], scripts: %v, want %v", counts, want)
	}
	if md := text("#markdown"); !strings.Contains(md, "Hostile") {
		t.Errorf("the Markdown was not rendered: %q", md)
	}
	if out := text("#stdout"); !strings.Contains(out, "<script>window.__pwned=1</script>") {
		t.Errorf("stdout is not shown as text: %q", out)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, c := range console {
		if !strings.Contains(c, "Content Security Policy") {
			t.Errorf("console: %s", c)
		}
	}
}

// startLive writes the head of a run in progress and its journal with
// one finished trial; it returns the journal's path.
func startLive(t *testing.T, dir string) string {
	must(t, os.MkdirAll(dir, 0o755))
	head := &record.Record{SchemaVersion: record.SchemaVersion, RunID: filepath.Base(dir), Backend: "local", Objective: "in progress",
		StartedAt: time.Now().UTC(), Trials: 1}
	must(t, record.Write(filepath.Join(dir, record.ResultsFile), head))
	journal := filepath.Join(dir, record.TrialsFile)
	must(t, os.WriteFile(journal, nil, 0o644))
	appendResult(t, journal, record.Trial{Result: runner.Result{CandidateID: "alpha", Trial: 1, Success: true, RuntimeSeconds: 1}})
	// A job under way, as forge run lists it.
	running, err := json.Marshal(record.Running{UpdatedAt: time.Now().UTC(),
		Jobs: []record.RunningJob{{Job: "gamma", Phase: runner.PhaseExecute, StartedAt: time.Now().UTC().Add(-2 * time.Second)}}})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, record.RunningFile), running, 0o644))
	return journal
}

// finishLive ends the run startLive began as forge run ends one: its
// record written whole, running.json removed.
func finishLive(t *testing.T, dir string) {
	rec, err := record.Read(filepath.Join(dir, record.ResultsFile))
	must(t, err)
	rec.FinishedAt = time.Now().UTC()
	one, half := 1.0, 0.5
	rec.Results = []record.Trial{{Result: runner.Result{CandidateID: "alpha", Trial: 1, Success: true, RuntimeSeconds: 1}, Score: &half},
		{Result: runner.Result{CandidateID: "beta", Trial: 1, Success: true, RuntimeSeconds: 2}, Score: &one}}
	rec.Standings = []record.Standing{{Rank: 1, CandidateID: "beta", Trials: 1, Successes: 1}, {Rank: 2, CandidateID: "alpha", Trials: 1, Successes: 1}}
	rec.WinnerLine = "winner: beta (1.00), 2.00× alpha"
	must(t, os.Remove(filepath.Join(dir, record.RunningFile)))
	must(t, record.Write(filepath.Join(dir, record.ResultsFile), rec))
}

func appendResult(t *testing.T, journal string, r record.Trial) {
	b, err := json.Marshal(&r)
	must(t, err)
	f, err := os.OpenFile(journal, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.Write(append(b, '\n'))
	must(t, err)
	must(t, f.Close())
}

// TestRunsListFitsTheWindow lists runs whose id, manifest, gates, cost
// and backend are long and checks, in Chromium windows 1280 and 1920 px
// wide, that the runs list fits: the page does not scroll sideways, nor
// does the table's box, no cell overflows, and every value of the long run
// is on screen, whole.
func TestRunsListFitsTheWindow(t *testing.T) {
	bin := browser.Require(t)
	out := t.TempDir()
	started := time.Date(2026, 3, 14, 2, 0, 0, 0, time.UTC)
	longID := "nightly-regression-20260314-020000-shard-07-of-12-retry-3-with-a-long-suffix"
	manifest := "/home/ci/workspace/forge-benchmarks/suites/terminal-bench-hard-subset/manifests/forge.nightly.yaml"
	candidates := []string{"careful-reasoning-agent-with-tools-v2", "quick-baseline-agent-without-tools", "flaky-experimental-agent-v3"}
	gates := "failed: gates.min_success_rate 0.95: careful-reasoning-agent-with-tools-v2 succeeded in 3 of 12 trials; " +
		"gates.min_success_rate 0.95: quick-baseline-agent-without-tools succeeded in 1 of 12 trials; " +
		"gates.max_infra_errors 0: 4 jobs failed on infrastructure; gates.max_cost_usd $5.00: the trials cost $123456790"
	cost := 123456789.5 // "$123456790"
	writeRun := func(id, manifest string, tasks, trials int, usd float64, start time.Time) *record.Record {
		dir := filepath.Join(out, id)
		must(t, os.MkdirAll(dir, 0o755))
		rec := &record.Record{SchemaVersion: record.SchemaVersion, RunID: id, Objective: "fit the window", Backend: "daytona",
			ManifestPath: manifest, StartedAt: start, FinishedAt: start.Add(time.Hour), Trials: trials}
		for i := range tasks {
			rec.Tasks = append(rec.Tasks, record.TaskInfo{ID: fmt.Sprintf("task-%05d", i), Weight: 1})
		}
		for _, c := range candidates {
			rec.Results = append(rec.Results, record.Trial{Result: runner.Result{CandidateID: c, Trial: 1, Success: true, RuntimeSeconds: 1},
				Cost: &record.Cost{USD: usd / float64(len(candidates))}})
			rec.Standings = append(rec.Standings, record.Standing{Rank: len(rec.Standings) + 1, CandidateID: c, Trials: 1, Successes: 1})
		}
		winner := candidates[0]
		rec.Winner = &winner
		rec.WinnerLine = "winner: " + winner + " (0.83 ± 0.04 over 1200 tasks), 1.42× " + candidates[1] + ", 2.07× " + candidates[2]
		must(t, record.Write(filepath.Join(dir, record.ResultsFile), rec))
		return rec
	}
	rec := writeRun(longID, manifest, 1200, 10, cost, started)
	writeRun("20260313-020000-ab12", "forge.yaml", 0, 1, 0.0123, started.Add(-24*time.Hour))

	s, err := view.New(view.Options{Out: out, Token: browserToken, Gates: func(r *record.Record) string {
		if r.RunID == longID {
			return gates
		}
		return "none set"
	}})
	must(t, err)
	base := serve(t, s)
	ctx := chromium(t, bin, time.Minute)

	// The values of the long run the list must show whole.
	values := []string{longID, manifest, gates, "$123456790", "daytona · 1200 tasks × 10", "2026-03-14 02:00:00", rec.WinnerLine}
	want, err := json.Marshal(values)
	must(t, err)
	check := `(() => {
	const bad = [];
	const de = document.documentElement;
	if (de.scrollWidth > innerWidth) bad.push("the page scrolls sideways: scrollWidth " + de.scrollWidth + " > innerWidth " + innerWidth);
	const table = document.getElementById("runs");
	for (let el = table.parentElement; el && el !== document.body; el = el.parentElement) {
		if (el.scrollWidth > el.clientWidth + 1) bad.push("<" + el.tagName.toLowerCase() + " class=" + el.className + "> scrolls sideways: scrollWidth " + el.scrollWidth + " > clientWidth " + el.clientWidth);
	}
	const view = table.parentElement.getBoundingClientRect();
	const left = Math.max(0, view.left) - 1, right = Math.min(innerWidth, view.right) + 1;
	for (const c of table.querySelectorAll("th, td")) {
		const what = JSON.stringify(c.textContent.trim().slice(0, 40));
		if (c.scrollWidth > c.clientWidth + 1) bad.push("cell " + what + " overflows: scrollWidth " + c.scrollWidth + " > clientWidth " + c.clientWidth);
		const r = c.getBoundingClientRect();
		if (r.width > 0 && (r.left < left || r.right > right)) bad.push("cell " + what + " is cut: " + r.left + "–" + r.right + " outside " + left + "–" + right);
	}
	for (const v of ` + string(want) + `) {
		const walk = document.createTreeWalker(table, NodeFilter.SHOW_TEXT);
		let node = null;
		while (walk.nextNode()) if (walk.currentNode.data.includes(v)) { node = walk.currentNode; break; }
		if (!node) { bad.push("not shown whole: " + v); continue; }
		const rg = document.createRange(), i = node.data.indexOf(v);
		rg.setStart(node, i); rg.setEnd(node, i + v.length);
		const rects = [...rg.getClientRects()];
		if (rects.length === 0) bad.push("not on screen: " + v);
		for (const q of rects) {
			if (q.left < left || q.right > right) { bad.push("cut: " + v + " (" + q.left + "–" + q.right + " outside " + left + "–" + right + ")"); break; }
		}
		for (let el = node.parentElement; el && el !== table; el = el.parentElement) {
			if (getComputedStyle(el).display === "none" || getComputedStyle(el).visibility === "hidden") { bad.push("hidden: " + v); break; }
		}
	}
	return bad;
})()`
	for _, width := range []int64{1280, 1920} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900), chromedp.Navigate(base+"?token="+browserToken), chromedp.WaitVisible(chromedp.CSS("#runs"))); err != nil {
			t.Fatalf("%d px: the runs list: %v", width, err)
		}
		bad, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](check))
		if err != nil {
			t.Fatalf("%d px: measure the runs list: %v", width, err)
		}
		for _, b := range bad {
			t.Errorf("%d px: %s", width, b)
		}
		if shots := os.Getenv("FORGE_VIEW_SHOTS"); shots != "" {
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			must(t, err)
			must(t, os.WriteFile(filepath.Join(shots, fmt.Sprintf("view-runs-%d.png", width)), png, 0o644))
		}
	}
}
