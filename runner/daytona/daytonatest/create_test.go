package daytonatest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"

	"github.com/forge-run/forge/internal/testkit/wait"
)

// deleteAll deletes every sandbox the API lists and checks that none is
// left alive.
func deleteAll(t *testing.T, s *Server, c *daytona.Client) {
	t.Helper()
	page, err := c.List(ctx(t), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range page.Items {
		if err := sb.Delete(ctx(t)); err != nil {
			t.Fatalf("delete %s: %v", sb.ID, err)
		}
	}
	if n := s.LiveCount(); n != 0 {
		t.Fatalf("%d sandboxes left alive: %+v", n, s.Live())
	}
}

func image(img string, r *types.Resources) types.ImageParams {
	return types.ImageParams{Image: img, Resources: r}
}

const upgradeAdvice = "\nTo increase concurrency limits, upgrade your organization's Tier by visiting https://app.daytona.io/dashboard/limits."

func TestQuotaRefusesOverTheTotalUntilADeletedSandboxIsGone(t *testing.T) {
	const destroy = 2 * time.Second
	s := Start(t, Options{Specs: specs, Quota: Quota{CPU: 4}, DestroyDelay: destroy})
	c := client(t, s)
	var sbs []*daytona.Sandbox
	for i := 0; i < 4; i++ {
		sbs = append(sbs, create(t, c, fmt.Sprintf("q%d", i)))
	}
	_, err := c.Create(ctx(t), types.SnapshotParams{SandboxBaseParams: types.SandboxBaseParams{Name: "q4"}})
	want := "Total CPU limit exceeded. Maximum allowed: 4." + upgradeAdvice
	if statusOf(err) != 400 || message(err) != want {
		t.Fatalf("5th create: %v (status %d), want 400 %q", err, statusOf(err), want)
	}
	if page, err := c.List(ctx(t), nil, nil, nil); err != nil || page.Total != 4 || s.LiveCount() != 4 {
		t.Fatalf("the refused create made a sandbox: %+v, %v, live %d", page, err, s.LiveCount())
	}

	deleted := time.Now()
	if err := sbs[0].Delete(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_, err = c.Create(ctx(t), types.SnapshotParams{SandboxBaseParams: types.SandboxBaseParams{Name: "q4"}})
	if time.Since(deleted) < destroy {
		// Still destroying: it still holds its vCPU.
		if statusOf(err) != 400 || message(err) != want {
			t.Fatalf("create while one is destroying: %v, want the quota refusal", err)
		}
		if u := s.Usage(); u.CPU != 4 || s.LiveCount() != 3 {
			t.Fatalf("while destroying: usage %+v, live %d", u, s.LiveCount())
		}
	} else {
		t.Logf("the machine is slow: %v passed before the create; not checking the destroying case", time.Since(deleted))
	}
	wait.For(t, "the deleted sandbox is gone", 20*time.Second, func() bool {
		_, err := c.Get(ctx(t), sbs[0].ID)
		return isNotFound(err)
	})
	if u := s.Usage(); u != (Quota{CPU: 3, MemoryGiB: 3, DiskGiB: 9, Sandboxes: 3}) {
		t.Fatalf("usage once gone = %+v", u)
	}
	create(t, c, "q4")
	if p := s.PeakUsage(); p != (Quota{CPU: 4, MemoryGiB: 4, DiskGiB: 12, Sandboxes: 4}) || s.PeakLive() != 4 {
		t.Fatalf("peak usage %+v, peak live %d", p, s.PeakLive())
	}
	deleteAll(t, s, c)
}

func TestQuotaMemoryDiskAndStatus(t *testing.T) {
	s := Start(t, Options{Specs: specs, Quota: Quota{MemoryGiB: 12, DiskGiB: 30}})
	c := client(t, s)
	if _, err := c.Create(ctx(t), image("python:3.12", &types.Resources{CPU: 1, Memory: 8, Disk: 10})); err != nil {
		t.Fatal(err)
	}
	_, err := c.Create(ctx(t), image("python:3.12", &types.Resources{Memory: 5}))
	if want := "Total memory limit exceeded. Maximum allowed: 12GiB." + upgradeAdvice; statusOf(err) != 400 || message(err) != want {
		t.Fatalf("memory: %v, want 400 %q", err, want)
	}
	for i := 0; i < 2; i++ {
		if _, err := c.Create(ctx(t), image("python:3.12", &types.Resources{Disk: 10})); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.Create(ctx(t), types.SnapshotParams{}) // the default snapshot's 3 GiB
	want := "Total disk limit exceeded. Maximum allowed: 30GiB.\nConsider archiving your unused Sandboxes to free up available storage." + upgradeAdvice
	if statusOf(err) != 400 || message(err) != want {
		t.Fatalf("disk: %v, want 400 %q", err, want)
	}
	deleteAll(t, s, c)

	s = Start(t, Options{Specs: specs, Quota: Quota{CPU: 1, Sandboxes: 5}, QuotaStatus: 403})
	c = client(t, s)
	create(t, c, "one")
	_, err = c.Create(ctx(t), types.SnapshotParams{})
	if want := "Total CPU limit exceeded. Maximum allowed: 1." + upgradeAdvice; statusOf(err) != 403 || message(err) != want {
		t.Fatalf("403 option: %v, want 403 %q", err, want)
	}
	deleteAll(t, s, c)

	s = Start(t, Options{Specs: specs, Quota: Quota{Sandboxes: 1}})
	c = client(t, s)
	create(t, c, "only")
	if _, err = c.Create(ctx(t), types.SnapshotParams{}); statusOf(err) != 400 || !strings.HasPrefix(message(err), "Total sandbox limit exceeded. Maximum allowed: 1.") {
		t.Fatalf("sandbox count: %v", err)
	}
	deleteAll(t, s, c)
}

func TestPerSandboxMaximumIsAPermanent400(t *testing.T) {
	const advice = "\nNeed higher resource limits per-sandbox? Contact us at support@daytona.io and let us know about your use case."
	// A 403 for quota refusals does not change the per-sandbox answer.
	s := Start(t, Options{Specs: specs, Quota: Quota{CPU: 100}, QuotaStatus: 403})
	c := client(t, s)
	for _, tc := range []struct {
		r    types.Resources
		want string
	}{
		{types.Resources{CPU: 8}, "CPU request 8 exceeds maximum allowed per sandbox (4)." + advice},
		{types.Resources{CPU: 4, Memory: 16}, "Memory request 16GB exceeds maximum allowed per sandbox (8GB)." + advice},
		{types.Resources{Disk: 20}, "Disk request 20GB exceeds maximum allowed per sandbox (10GB)." + advice},
	} {
		_, err := c.Create(ctx(t), image("python:3.12", &tc.r))
		if statusOf(err) != 400 || message(err) != tc.want {
			t.Errorf("%+v: %v (status %d), want 400 %q", tc.r, err, statusOf(err), tc.want)
		}
	}
	if s.LiveCount() != 0 || len(s.Sandboxes()) != 0 {
		t.Fatalf("refused creates made sandboxes: %+v", s.Sandboxes())
	}
	if _, err := c.Create(ctx(t), image("python:3.12", &types.Resources{CPU: 4, Memory: 8, Disk: 10})); err != nil {
		t.Fatalf("the maximum itself: %v", err)
	}
	deleteAll(t, s, c)

	s = Start(t, Options{Specs: specs, MaxPerSandbox: Quota{CPU: 8}})
	c = client(t, s)
	if _, err := c.Create(ctx(t), image("python:3.12", &types.Resources{CPU: 8})); err != nil {
		t.Fatalf("8 vCPU with MaxPerSandbox.CPU 8: %v", err)
	}
	if _, err := c.Create(ctx(t), image("python:3.12", &types.Resources{Memory: 9})); statusOf(err) != 400 {
		t.Fatalf("the memory maximum stays the default: %v", err)
	}
	deleteAll(t, s, c)
}

func TestUnknownSnapshotIsRefused(t *testing.T) {
	s := Start(t, Options{Specs: specs, Snapshots: []string{"my-snap"}})
	c := client(t, s)
	snap := func(name string) types.SnapshotParams { return types.SnapshotParams{Snapshot: name} }
	_, err := c.Create(ctx(t), snap("my-agent-snap"))
	if want := "Snapshot my-agent-snap not found. Did you add it through the Daytona Dashboard?"; statusOf(err) != 400 || message(err) != want {
		t.Fatalf("unknown snapshot: %v, want 400 %q", err, want)
	}
	if len(s.Sandboxes()) != 0 {
		t.Fatal("the refused create made a sandbox")
	}
	sb, err := c.Create(ctx(t), snap("my-snap"))
	if err != nil {
		t.Fatalf("known snapshot: %v", err)
	}
	if info := s.Sandboxes()[0]; info.ID != sb.ID || info.Snapshot != "my-snap" {
		t.Fatalf("info %+v", info)
	}
	if _, err := c.Create(ctx(t), snap("")); err != nil {
		t.Fatalf("default snapshot: %v", err)
	}
	deleteAll(t, s, c)

	// With no Snapshots, the organization has only the default one.
	s = Start(t, Options{Specs: specs})
	c = client(t, s)
	if _, err := c.Create(ctx(t), snap("my-snap")); statusOf(err) != 400 {
		t.Fatalf("a named snapshot with none known: %v", err)
	}
	deleteAll(t, s, c)
}

// rawSandbox GETs a sandbox as JSON, to see fields the SDK drops.
func rawSandbox(t *testing.T, s *Server, id string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL()+"/sandbox/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+s.APIKey())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestFailStart(t *testing.T) {
	for _, delay := range []time.Duration{0, 300 * time.Millisecond} {
		t.Run(fmt.Sprint("StartDelay=", delay), func(t *testing.T) {
			s := Start(t, Options{Specs: specs, StartDelay: delay, Quota: Quota{CPU: 4},
				FailStart: map[string]string{"broken-snap": "error", "broken:1": "build_failed"}})
			c := client(t, s)
			for _, tc := range []struct {
				params      any
				label, want string
				// wantStatus is the SDK error's status: the API's 400 for a
				// snapshot that fails within its wait, 0 for the SDK's own
				// verdict on the state.
				wantStatus int
			}{
				{types.SnapshotParams{Snapshot: "broken-snap", SandboxBaseParams: types.SandboxBaseParams{Labels: map[string]string{"t": "snap"}}}, "snap", "error", 400},
				{types.ImageParams{Image: "broken:1", SandboxBaseParams: types.SandboxBaseParams{Labels: map[string]string{"t": "img"}}}, "img", "build_failed", 0},
			} {
				var err error
				switch p := tc.params.(type) {
				case types.SnapshotParams:
					_, err = c.Create(ctx(t), p)
				case types.ImageParams:
					_, err = c.Create(ctx(t), p)
				}
				wantStatus := tc.wantStatus
				if delay > 0 {
					wantStatus = 0 // the failure is seen by polling
				}
				if err == nil || !strings.HasPrefix(message(err), "Sandbox failed to start") || statusOf(err) != wantStatus {
					t.Fatalf("%s: %v (status %d), want \"Sandbox failed to start\" with status %d", tc.label, err, statusOf(err), wantStatus)
				}
				page, err := c.List(ctx(t), map[string]string{"t": tc.label}, nil, nil)
				if err != nil || page.Total != 1 || string(page.Items[0].State) != tc.want {
					t.Fatalf("%s: listed %+v, %v", tc.label, page, err)
				}
				sb := page.Items[0]
				if m := rawSandbox(t, s, sb.ID); m["errorReason"] != failReasons[tc.want] {
					t.Fatalf("%s: errorReason %v", tc.label, m["errorReason"])
				}
				if u := s.Usage(); u.CPU != 0 {
					t.Fatalf("%s: a failed sandbox holds %+v", tc.label, u)
				}
				if err := sb.Delete(ctx(t)); err != nil {
					t.Fatalf("%s: delete: %v", tc.label, err)
				}
				if _, err := c.Get(ctx(t), sb.ID); !isNotFound(err) {
					t.Fatalf("%s: get after delete: %v", tc.label, err)
				}
				if page, err := c.List(ctx(t), map[string]string{"t": tc.label}, nil, nil); err != nil || page.Total != 0 {
					t.Fatalf("%s: listed after delete: %+v, %v", tc.label, page, err)
				}
			}
			if delay > 0 && s.Calls(OpGetSandbox) == 0 {
				t.Fatal("the SDK never polled")
			}
			// While creating, a sandbox that will fail holds its quota.
			if delay > 0 && s.PeakUsage().CPU != 1 {
				t.Fatalf("peak usage %+v", s.PeakUsage())
			}
			deleteAll(t, s, c)
		})
	}
}

func TestToolboxWarmupAnswers502(t *testing.T) {
	const warmup = 2 * time.Second
	s := Start(t, Options{Specs: specs, ToolboxWarmup: warmup})
	c := client(t, s)
	sb := create(t, c, "warm")
	started := time.Now()
	_, err := sb.GetUserHomeDir(ctx(t))
	if time.Since(started) < warmup {
		if statusOf(err) != 502 {
			t.Fatalf("toolbox during warm-up: %v, want 502", err)
		}
		if _, err := sb.Process.ExecuteCommand(ctx(t), "true"); statusOf(err) != 502 {
			t.Fatalf("execute during warm-up: %v, want 502", err)
		}
	} else {
		t.Logf("the machine is slow: %v passed; not checking the warm-up", time.Since(started))
	}
	wait.For(t, "the toolbox answers", 20*time.Second, func() bool {
		_, err := sb.GetUserHomeDir(ctx(t))
		return err == nil
	})
	if r, err := sb.Process.ExecuteCommand(ctx(t), "echo ok"); err != nil || strings.TrimSpace(r.Result) != "ok" {
		t.Fatalf("after warm-up: %+v, %v", r, err)
	}
	n502 := 0
	for _, call := range s.CallLog() {
		if call.Status == 502 {
			n502++
		}
	}
	if time.Since(started) < warmup && n502 == 0 {
		t.Fatal("no 502 in the call log")
	}
	deleteAll(t, s, c)
}
