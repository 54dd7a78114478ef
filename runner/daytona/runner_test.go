package daytona

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"

	"github.com/forge-run/forge/internal/testkit/wait"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

const alphaPy = `import json, os, sys
objective, out = sys.argv[1], sys.argv[2]
assert os.path.exists("data/empty.txt") and os.path.getsize("data/empty.txt") == 0
with open(out, "w") as f:
    f.write("# AI Events\n" + objective + "\n")
with open(os.environ["FORGE_RESULT"], "w") as f:
    json.dump({"items": 10}, f)
env = {k: v for k, v in os.environ.items()}
with open("env.json", "w") as f:
    json.dump(env, f)
print("[Alpha] Found 10 events")
print("alpha warning", file=sys.stderr)
`

const betaPy = `import sys
print("[Beta] starting")
1 / 0
`

const gammaSh = `echo "[Gamma] forgot the artifact"
`

// sampleTournament is the sample tournament: one winner, one crash, one
// candidate that writes no artifact.
func sampleTournament(e *env) []runner.Job {
	alpha := e.pyJob("alpha", alphaPy)
	alpha.Files = append(alpha.Files, runner.File{Src: e.file("empty.txt", ""), Dst: "data/empty.txt"})
	return []runner.Job{alpha, e.pyJob("beta", betaPy), e.shJob("gamma", gammaSh)}
}

func TestSampleTournament(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	jobs := sampleTournament(e)
	var mu sync.Mutex
	seen := map[string][]runner.Phase{}
	for i := range jobs {
		id := jobs[i].CandidateID
		jobs[i].Progress = func(p runner.Phase) {
			mu.Lock()
			defer mu.Unlock()
			seen[id] = append(seen[id], p)
		}
	}
	res, errs := e.runAll(context.Background(), 3, jobs)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", jobs[i].CandidateID, err)
		}
	}
	alpha, beta, gamma := res[0], res[1], res[2]

	if !alpha.Success || alpha.ErrorKind != runner.ErrNone {
		t.Fatalf("alpha: %+v", alpha)
	}
	if alpha.Output != "[Alpha] Found 10 events\n" || alpha.Stderr != "alpha warning\n" {
		t.Errorf("alpha stdout/stderr = %q / %q", alpha.Output, alpha.Stderr)
	}
	if alpha.ArtifactContent != "# AI Events\nGenerate weekly AI events\n" || alpha.ExitCode == nil || *alpha.ExitCode != 0 {
		t.Errorf("alpha artifact = %q, exit %v", alpha.ArtifactContent, alpha.ExitCode)
	}
	if !reflect.DeepEqual(alpha.Submitted, map[string]any{"items": 10.0}) {
		t.Errorf("alpha submitted = %v (%s)", alpha.Submitted, alpha.SubmitError)
	}
	if alpha.Backend != "daytona" || alpha.SandboxID == "" {
		t.Errorf("alpha backend/sandbox = %q / %q", alpha.Backend, alpha.SandboxID)
	}
	ph := alpha.Phases
	if ph.Create <= 0 || ph.Upload <= 0 || ph.Execute <= 0 || ph.Download <= 0 || ph.Cleanup <= 0 || ph.Setup != 0 {
		t.Errorf("alpha phases = %+v", ph)
	}
	want := []runner.Phase{runner.PhaseCreate, runner.PhaseUpload, runner.PhaseExecute, runner.PhaseDownload, runner.PhaseCleanup}
	if !reflect.DeepEqual(seen["alpha"], want) {
		t.Errorf("alpha phases entered = %v, want %v", seen["alpha"], want)
	}

	if beta.Success || beta.ErrorKind != runner.ErrCandidateFailed || beta.ErrorMessage != "ZeroDivisionError: division by zero" {
		t.Errorf("beta: %s %q", beta.ErrorKind, beta.ErrorMessage)
	}
	if beta.ExitCode == nil || *beta.ExitCode != 1 || beta.Output != "[Beta] starting\n" {
		t.Errorf("beta exit %v output %q", beta.ExitCode, beta.Output)
	}
	if gamma.Success || gamma.ErrorKind != runner.ErrArtifactMissing {
		t.Errorf("gamma: %s %q", gamma.ErrorKind, gamma.ErrorMessage)
	}

	// The sandboxes: named, labelled, with a backstop, all deleted.
	boxes := e.srv.Sandboxes()
	if len(boxes) != 3 {
		t.Fatalf("%d sandboxes created, want 3", len(boxes))
	}
	for _, sb := range boxes {
		cand := sb.Labels[LabelCandidate]
		if sb.Name != "forge-run1-"+cand+"-1" || sb.Labels[LabelApp] != "forge" || sb.Labels[LabelRun] != testRunID || sb.Labels[LabelTrial] != "1" {
			t.Errorf("sandbox %s labels %v", sb.Name, sb.Labels)
		}
		if sb.AutoDeleteInterval != 0 || sb.AutoStopInterval != 11 { // ceil(30 s + 10 min)
			t.Errorf("sandbox %s auto-stop %d auto-delete %d", sb.Name, sb.AutoStopInterval, sb.AutoDeleteInterval)
		}
		if sb.DeletedAt.IsZero() {
			t.Errorf("sandbox %s not deleted", sb.Name)
		}
	}

	// What alpha's process saw: the sandbox's home (as the sandbox sees
	// it), no DAYTONA_* variables.
	var alphaHome, seenHome string
	for _, sb := range boxes {
		if sb.ID == alpha.SandboxID {
			alphaHome, seenHome = sb.Home, sb.UserHome
		}
	}
	b, err := os.ReadFile(filepath.Join(alphaHome, "forge", "alpha", "env.json"))
	if err != nil {
		t.Fatal(err)
	}
	var seenEnv map[string]string
	json.Unmarshal(b, &seenEnv)
	if seenEnv["HOME"] != seenHome || seenEnv["FORGE_CANDIDATE_ID"] != "alpha" || seenEnv["FORGE_OUTPUT"] != seenHome+"/forge/alpha/output.md" {
		t.Errorf("alpha env: HOME=%q FORGE_CANDIDATE_ID=%q FORGE_OUTPUT=%q", seenEnv["HOME"], seenEnv["FORGE_CANDIDATE_ID"], seenEnv["FORGE_OUTPUT"])
	}
	for k := range seenEnv {
		if strings.HasPrefix(k, "DAYTONA_") {
			t.Errorf("the candidate saw %s", k)
		}
	}

	// The ledger: every intended sandbox was created and deleted.
	e.close()
	entries := ledgerEvents(t, e.opts.LedgerPath)
	if st, pending := Summarise(entries), pendingSandboxes(entries); st.Open || len(pending) != 0 {
		t.Errorf("ledger state %+v, pending %v", st, pending)
	}
	if e.srv.Calls(daytonatest.OpCreateSandbox) != 3 {
		t.Errorf("%d create calls, want 3", e.srv.Calls(daytonatest.OpCreateSandbox))
	}
}

func TestObjectiveArrivesVerbatim(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	job := e.pyJob("quote", `import json, os, sys
with open(sys.argv[2], "w") as f:
    json.dump({"argv": sys.argv[1], "env": os.environ["FORGE_OBJECTIVE"], "n": len(sys.argv)}, f)
`)
	job.Objective = "it's \"quoted\" $(touch pwned) `id` $HOME \\ \n second line\n\ttab; rm -rf / # ünïcødé '' \"\""
	res := e.run(job)
	if !res.Success {
		t.Fatalf("%s: %s\n%s", res.ErrorKind, res.ErrorMessage, res.Stderr)
	}
	var got struct {
		Argv, Env string
		N         int
	}
	if err := json.Unmarshal([]byte(res.ArtifactContent), &got); err != nil {
		t.Fatal(err)
	}
	if got.Argv != job.Objective || got.Env != job.Objective || got.N != 3 {
		t.Fatalf("got %+v\nwant %q", got, job.Objective)
	}
	if _, err := os.Stat(filepath.Join(e.srv.Sandboxes()[0].Home, "forge", "quote", "pwned")); err == nil {
		t.Fatal("the objective was run by a shell")
	}
}

func TestAPIKeyNeverReachesASandbox(t *testing.T) {
	t.Setenv("DAYTONA_API_KEY", daytonatest.DefaultAPIKey)
	e := newEnv(t, daytonatest.Options{}, func(o *Options) { o.Env = map[string]string{"MODE": "fast"} })
	job := e.pyJob("envdump", `import json, os, sys
with open(sys.argv[2], "w") as f:
    json.dump(dict(os.environ), f)
`)
	res := e.run(job)
	if !res.Success {
		t.Fatalf("%s: %s", res.ErrorKind, res.ErrorMessage)
	}
	if strings.Contains(res.ArtifactContent, daytonatest.DefaultAPIKey) || strings.Contains(res.ArtifactContent, "DAYTONA_") {
		t.Fatalf("the candidate's environment holds Daytona variables: %s", res.ArtifactContent)
	}
	if !strings.Contains(res.ArtifactContent, `"MODE": "fast"`) {
		t.Errorf("the manifest's daytona env is missing: %s", res.ArtifactContent)
	}
	for _, sb := range e.srv.Sandboxes() {
		for k, v := range sb.Env {
			if strings.HasPrefix(k, "DAYTONA_") || v == daytonatest.DefaultAPIKey {
				t.Errorf("sandbox create env holds %s", k)
			}
		}
		for _, pe := range sb.ProcessEnvs {
			for k, v := range pe {
				if v == daytonatest.DefaultAPIKey {
					t.Errorf("a process in the sandbox got the key in %s", k)
				}
			}
		}
	}
	o := Options{APIKey: "k", Env: map[string]string{"DAYTONA_API_KEY": "x"}}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "DAYTONA_API_KEY") {
		t.Errorf("Validate let DAYTONA_API_KEY into the sandbox env: %v", err)
	}
}

func TestAuthFailureStopsTheRunAndCleansUp(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	// One job is running when another job's create is refused.
	slow := e.shJob("slow", "sleep 30\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type out struct {
		res runner.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := e.r.Run(ctx, slow)
		done <- out{res, err}
	}()
	wait.For(t, "the slow candidate to run", 20*time.Second, func() bool { return e.srv.Running() > 0 })

	e.srv.Inject(daytonatest.OpCreateSandbox, daytonatest.Fault{Status: 401, Times: 100})
	jobs := []runner.Job{e.shJob("a", "echo a > \"$2\"\n"), e.shJob("b", "echo b > \"$2\"\n"), e.shJob("c", "echo c > \"$2\"\n")}
	started := time.Now()
	res, errs := e.runAll(ctx, 3, jobs)
	for i, err := range errs {
		var ue *runner.UnusableError
		if !errors.As(err, &ue) || ue.Kind != runner.ErrAuth {
			t.Fatalf("%s: err = %v, want an auth UnusableError", jobs[i].CandidateID, err)
		}
		if res[i].ErrorKind != runner.ErrAuth || !strings.Contains(res[i].ErrorMessage, "DAYTONA_API_KEY") {
			t.Errorf("%s: %s %q", jobs[i].CandidateID, res[i].ErrorKind, res[i].ErrorMessage)
		}
	}
	s := <-done
	var ue *runner.UnusableError
	if !errors.As(s.err, &ue) || ue.Kind != runner.ErrAuth || s.res.ErrorKind != runner.ErrAuth {
		t.Fatalf("the running job: %v / %s", s.err, s.res.ErrorKind)
	}
	// Fast: the running job did not wait for its 30 s candidate.
	if d := time.Since(started); d > 20*time.Second {
		t.Fatalf("stopping took %s", d)
	}
	if n := e.srv.LiveCount(); n != 0 {
		t.Fatalf("%d sandboxes alive after the auth failure", n)
	}
	if n := e.srv.Calls(daytonatest.OpCreateSandbox); n > 4 {
		t.Errorf("%d create calls: a refused key must not be retried", n)
	}
	if _, err := e.r.Run(ctx, jobs[0]); !errors.As(err, &ue) {
		t.Errorf("a job started after the failure: %v", err)
	}
	if strings.Contains(ue.Error(), e.srv.APIKey()) {
		t.Errorf("the error shows the key: %v", ue)
	}
}

func TestRateLimitStormIsRidden(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	e.srv.Inject(daytonatest.OpCreateSandbox, daytonatest.Fault{
		Status: 429, Times: 4, Header: http.Header{"Retry-After-Sandbox-Create": {"1"}},
		Body: `{"statusCode":429,"message":"Rate limit exceeded","error":"Too Many Requests"}`,
	})
	jobs := e.shJobs(4, "c%d", "echo ok > \"$2\"\n")
	var trace pacerTrace
	e.r.pacer.trace = trace.add
	res, errs := e.runAll(context.Background(), 4, jobs)
	for i := range jobs {
		if errs[i] != nil || !res[i].Success {
			t.Fatalf("%s: %v %s %s", jobs[i].CandidateID, errs[i], res[i].ErrorKind, res[i].ErrorMessage)
		}
	}
	// No creation went through sooner than the Retry-After of a 429 that
	// came before it. (Attempts already in flight when a 429 arrived got a
	// 429 themselves: the storm lasts for the first four.)
	var creates []daytonatest.Call
	for _, c := range e.srv.CallLog() {
		if c.Op == daytonatest.OpCreateSandbox {
			creates = append(creates, c)
		}
	}
	if len(creates) != 8 {
		t.Fatalf("%d creates, want 8 (4 refused, 4 accepted)", len(creates))
	}
	// Every job's first attempt met the storm, so the first create that went
	// through was a retry and must have waited out a Retry-After.
	var first429, first200 time.Time
	for _, c := range creates {
		switch {
		case c.Status == 429 && (first429.IsZero() || c.End.Before(first429)):
			first429 = c.End
		case c.Status == 200 && (first200.IsZero() || c.Start.Before(first200)):
			first200 = c.Start
		}
	}
	if gap := first200.Sub(first429); gap < time.Second {
		t.Errorf("the first create went through %s after the first 429 asking for 1 s", gap)
	}
	// The pacer let no creation through while a pause a 429 asked for was
	// running: its own trace, in the order it acted.
	var until time.Time
	pauses, grants := 0, 0
	for _, ev := range trace.events() {
		if ev.pause > 0 {
			pauses++
			until = ev.at.Add(ev.pause)
			continue
		}
		grants++
		if ev.at.Before(until) {
			t.Errorf("a creation was let through %s before the pause a 429 asked for ended", until.Sub(ev.at))
		}
	}
	if pauses != 4 || grants != 8 {
		t.Errorf("the pacer traced %d pauses and %d grants, want 4 and 8", pauses, grants)
	}
	if !strings.Contains(e.warn.String(), "(HTTP 429); retrying in") {
		t.Errorf("no warning about the rate limit: %s", e.warn.String())
	}
	if e.r.pacer.limit() >= 1000 {
		t.Errorf("creation rate %.1f/s was not lowered", e.r.pacer.limit())
	}
}

func TestDeleteIsRetriedOn5xx(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	e.srv.Inject(daytonatest.OpDeleteSandbox, daytonatest.Fault{Status: 500, Times: 2})
	e.srv.Inject(daytonatest.OpDeleteSandbox, daytonatest.Fault{Status: 429, RetryAfter: "0"})
	res := e.run(e.shJob("d", "echo ok > \"$2\"\n"))
	if !res.Success {
		t.Fatalf("%s %s", res.ErrorKind, res.ErrorMessage)
	}
	if n := e.srv.Calls(daytonatest.OpDeleteSandbox); n != 4 {
		t.Errorf("%d delete calls, want 4", n)
	}
	if e.srv.LiveCount() != 0 || len(e.r.Undeleted()) != 0 {
		t.Errorf("live %d, undeleted %v", e.srv.LiveCount(), e.r.Undeleted())
	}
}

func TestUndeletableSandboxIsNamed(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, func(o *Options) { o.Retry.Tries = 2 })
	// Every delete during the job fails; Close's sweep then succeeds.
	e.srv.Inject(daytonatest.OpDeleteSandbox, daytonatest.Fault{Status: 502, Times: 5})
	res := e.run(e.shJob("u", "echo ok > \"$2\"\n"))
	if !res.Success {
		t.Fatalf("%s %s", res.ErrorKind, res.ErrorMessage)
	}
	und := e.r.Undeleted()
	if len(und) != 1 || !strings.HasPrefix(und[0], "forge-run1-u-1 (") {
		t.Fatalf("undeleted = %v", und)
	}
	if !strings.Contains(e.warn.String(), "could not delete sandbox forge-run1-u-1") {
		t.Errorf("warning missing: %s", e.warn.String())
	}
	if e.srv.LiveCount() != 1 {
		t.Fatalf("live = %d", e.srv.LiveCount())
	}
	e.close()
	if e.srv.LiveCount() != 0 || len(e.r.Undeleted()) != 0 {
		t.Fatalf("after Close: live %d, undeleted %v", e.srv.LiveCount(), e.r.Undeleted())
	}
	var events []string
	for _, le := range ledgerEvents(t, e.opts.LedgerPath) {
		events = append(events, le.Event)
	}
	if got := strings.Join(events, " "); got != "open create created undeletable deleted close" {
		t.Errorf("ledger events: %s", got)
	}
}

func TestAmbiguousCreateLeavesNoDuplicateNorOrphan(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	e.srv.Inject(daytonatest.OpCreateSandbox, daytonatest.Fault{Drop: true})
	e.srv.Inject(daytonatest.OpCreateSandbox, daytonatest.Fault{Status: 503})
	res := e.run(e.shJob("amb", "echo ok > \"$2\"\n"))
	if !res.Success {
		t.Fatalf("%s %s", res.ErrorKind, res.ErrorMessage)
	}
	if n := len(e.srv.Sandboxes()); n != 1 {
		t.Fatalf("%d sandboxes created, want 1 (no duplicate)", n)
	}
	if e.srv.Calls(daytonatest.OpCreateSandbox) != 1 || e.srv.Calls(daytonatest.OpGetSandbox) == 0 {
		t.Errorf("creates %d, lookups %d: the dropped create should have been found by name",
			e.srv.Calls(daytonatest.OpCreateSandbox), e.srv.Calls(daytonatest.OpGetSandbox))
	}
}

func TestCancelDuringCreateLeavesNoOrphan(t *testing.T) {
	// The sandbox takes a while to start: the SDK has no handle to give back
	// when the run is cancelled, and the API refuses to delete it (409)
	// until it has started.
	e := newEnv(t, daytonatest.Options{StartDelay: 1500 * time.Millisecond}, func(o *Options) { o.CreateTimeout = time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan runner.Result, 1)
	go func() {
		res, _ := e.r.Run(ctx, e.shJob("c", "true\n"))
		done <- res
	}()
	wait.For(t, "the sandbox to be created", 20*time.Second, func() bool { return e.srv.LiveCount() == 1 })
	cancel()
	res := <-done
	if res.ErrorKind != runner.ErrCancelled {
		t.Fatalf("%s %s", res.ErrorKind, res.ErrorMessage)
	}
	if n := e.srv.LiveCount(); n != 0 {
		t.Fatalf("%d sandboxes alive after the cancelled job returned", n)
	}
	if e.srv.Calls(daytonatest.OpGetSandbox) == 0 {
		t.Error("the cancelled creation was not looked up by name")
	}
}

func TestStaleSandboxWithTheSameNameIsReplaced(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	// A sandbox left by an earlier, crashed process of the same run.
	c, err := sdk.NewClientWithConfig(&types.DaytonaConfig{APIKey: e.opts.APIKey, APIUrl: e.opts.APIURL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(context.Background(), types.SnapshotParams{SandboxBaseParams: types.SandboxBaseParams{
		Name: "forge-run1-stale-1", Labels: map[string]string{LabelApp: LabelAppValue, LabelRun: testRunID},
	}}); err != nil {
		t.Fatal(err)
	}
	res := e.run(e.shJob("stale", "echo ok > \"$2\"\n"))
	if !res.Success {
		t.Fatalf("%s %s", res.ErrorKind, res.ErrorMessage)
	}
	if n := len(e.srv.Sandboxes()); n != 2 || e.srv.LiveCount() != 0 {
		t.Fatalf("%d sandboxes, %d alive; want the stale one replaced and both gone", n, e.srv.LiveCount())
	}
	if !strings.Contains(e.warn.String(), "already exists") {
		t.Errorf("no warning about the stale sandbox: %s", e.warn.String())
	}
}

// pacerTrace collects what the pacer did.
type pacerTrace struct {
	mu  sync.Mutex
	evs []pacerEvent
}

func (p *pacerTrace) add(ev pacerEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evs = append(p.evs, ev)
}

func (p *pacerTrace) events() []pacerEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.evs)
}

// A timed-out candidate's log stream follows its sandbox until it goes:
// when the sandbox cannot be deleted, the job still ends.
func TestUndeletableSandboxDoesNotHoldTheJob(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, func(o *Options) { o.Retry.Tries = 2 })
	e.srv.Inject(daytonatest.OpDeleteSandbox, daytonatest.Fault{Status: 502, Times: 5})
	job := e.shJob("held", "sleep 30; echo never > \"$2\"\n")
	job.Timeout = time.Second
	done := make(chan runner.Result, 1)
	go func() { done <- e.run(job) }()
	select {
	case res := <-done:
		if res.ErrorKind != runner.ErrTimeout {
			t.Fatalf("%s %q", res.ErrorKind, res.ErrorMessage)
		}
	case <-time.After(60 * time.Second): // the candidate would sleep 30 s
		t.Fatal("the job waited for the stream of a sandbox it could not delete")
	}
	if und := e.r.Undeleted(); len(und) != 1 {
		t.Fatalf("undeleted = %v", und)
	}
}

// A creation given up and not found by name may still be made by the
// service (its request was in flight): the closing sweep deletes it
// without the warning it gives a sandbox of the run it knows nothing of.
func TestLateCreationIsSweptQuietly(t *testing.T) {
	e := newEnv(t, daytonatest.Options{}, nil)
	ctx := context.Background()
	if err := e.r.reconcile(ctx, "forge-run1-late-1"); err != nil {
		t.Fatal(err)
	}
	c, err := sdk.NewClientWithConfig(&types.DaytonaConfig{APIKey: e.opts.APIKey, APIUrl: e.opts.APIURL})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"forge-run1-late-1", "forge-run1-stray-1"} {
		if _, err := c.Create(ctx, types.SnapshotParams{SandboxBaseParams: types.SandboxBaseParams{
			Name: name, Labels: map[string]string{LabelApp: LabelAppValue, LabelRun: testRunID},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	e.close()
	if n := e.srv.LiveCount(); n != 0 {
		t.Fatalf("%d sandboxes alive after Close", n)
	}
	warn := e.warn.String()
	if strings.Contains(warn, "forge-run1-late-1") || !strings.Contains(warn, "sandbox forge-run1-stray-1 (") {
		t.Errorf("warnings:\n%s", warn)
	}
}
