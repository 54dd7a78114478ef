package daytonatest

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"
	toolbox "github.com/daytonaio/daytona/libs/toolbox-api-client-go"

	"github.com/forge-run/forge/internal/testkit/wait"
)

// chaosCalls sends one lookup per name (each a 404 unless chaos answers),
// eight at a time in the order given, and returns the names chaos
// answered 504.
func chaosCalls(t *testing.T, s *Server, names []string) []string {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, n := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			req, _ := http.NewRequest(http.MethodGet, s.URL()+"/sandbox/"+n, nil)
			req.Header.Set("Authorization", "Bearer "+s.APIKey())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		}()
	}
	wg.Wait()
	var hit []string
	for _, c := range s.CallLog() {
		if c.Fault == "chaos 504" {
			hit = append(hit, c.Path)
		}
	}
	slices.Sort(hit)
	return hit
}

// Chaos picks the same calls for the same seed whatever the order the
// calls come in, other calls for another seed, none at rate 0, all at
// rate 1, and about rate's share.
func TestChaosIsSeeded(t *testing.T) {
	var names []string
	for i := range 400 {
		names = append(names, fmt.Sprintf("sb-%d", i%200)) // each name twice
	}
	shuffled := slices.Clone(names)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	rule := func(rate float64) ChaosRule {
		return ChaosRule{Ops: []string{OpGetSandbox}, Rate: rate, Fault: Fault{Status: http.StatusGatewayTimeout}}
	}
	play := func(seed uint64, rate float64, order []string) []string {
		s := Start(t, Options{Specs: specs})
		s.SetChaos(seed, rule(rate))
		hit := chaosCalls(t, s, order)
		if got := s.ChaosFired()[OpGetSandbox]; got != len(hit) {
			t.Errorf("ChaosFired %d, the call log has %d", got, len(hit))
		}
		return hit
	}
	a, b, c := play(7, 0.2, names), play(7, 0.2, shuffled), play(8, 0.2, names)
	if !slices.Equal(a, b) {
		t.Errorf("the same seed picked other calls in another order:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Error("another seed picked the same calls")
	}
	if n := len(a); n < 50 || n > 110 {
		t.Errorf("%d of 400 calls at rate 0.2", n)
	}
	if n := len(play(7, 0, names)); n != 0 {
		t.Errorf("%d calls at rate 0", n)
	}
	if n := len(play(7, 1, names)); n != 400 {
		t.Errorf("%d calls of 400 at rate 1", n)
	}
}

// After: the call has its effect, then the client gets the status.
// Delay: the call waits, then is handled.
func TestChaosAfterAndDelay(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	c := client(t, s)
	s.SetChaos(1, ChaosRule{Ops: []string{OpCreateSandbox}, Rate: 1, Fault: Fault{Status: 500, After: true}})
	_, err := c.Create(ctx(t), types.SnapshotParams{SandboxBaseParams: types.SandboxBaseParams{Name: "made"}})
	if statusOf(err) != 500 {
		t.Fatalf("create: %v, want a 500", err)
	}
	sb, err := c.Get(ctx(t), "made")
	if err != nil || sb.Name != "made" {
		t.Fatalf("the sandbox was not made: %v", err)
	}

	s.SetChaos(1, ChaosRule{Ops: []string{OpSessionExec}, Rate: 1, Fault: Fault{Status: 502, After: true}},
		ChaosRule{Ops: []string{OpGetSandbox}, Rate: 1, Fault: Fault{Delay: 300 * time.Millisecond}})
	if err := sb.Process.CreateSession(ctx(t), "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Process.ExecuteSessionCommand(ctx(t), "s", "echo ran", true, false); statusOf(err) != 502 {
		t.Fatalf("exec: %v, want a 502", err)
	}
	wait.For(t, "the command to end", 20*time.Second, func() bool {
		got, err := sb.Process.GetSession(ctx(t), "s")
		if err != nil {
			t.Fatal(err)
		}
		cmds, _ := got["commands"].([]toolbox.Command)
		if len(cmds) != 1 || cmds[0].GetCommand() != "echo ran" {
			t.Fatalf("commands %+v", got["commands"])
		}
		code, done := cmds[0].GetExitCodeOk()
		return done && *code == 0
	})
	began := time.Now()
	if _, err := c.Get(ctx(t), "made"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d < 300*time.Millisecond {
		t.Errorf("a delayed call took %s", d)
	}
	if _, err := sb.Process.GetSession(ctx(t), "nope"); statusOf(err) != 404 {
		t.Errorf("unknown session: %v, want 404", err)
	}
	deleteAll(t, s, c)
}
