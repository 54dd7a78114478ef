package forge

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkPlanHeap lays out the plan of a 100,000-job suite (4
// candidates × 25,000 tasks) and reports the memory it keeps live: the
// run holds the jobs until the last has started.
//
//	go test ./forge -run '^$' -bench PlanHeap -benchtime 1x
func BenchmarkPlanHeap(b *testing.B) {
	for range b.N {
		planHeap(b)
	}
}

func planHeap(t *testing.B) {
	var b strings.Builder
	for i := 1; i <= 25000; i++ {
		fmt.Fprintf(&b, "{\"id\": \"t%d\", \"expected\": \"%d\"}\n", i, i)
	}
	dir := writeTree(t, map[string]string{"forge.yaml": "objective: x\ntasks_file: tasks.jsonl\ncandidates: [{id: a, script: a.sh}, {id: b, script: a.sh}, {id: c, script: a.sh}, {id: d, script: a.sh}]\n",
		"a.sh": "echo\n", "tasks.jsonl": b.String()})
	m, err := Load(filepath.Join(dir, "forge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	p, err := m.Plan(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	if len(p.Jobs) != 100000 {
		t.Fatalf("%d jobs", len(p.Jobs))
	}
	t.ReportMetric(float64(ms1.HeapAlloc-ms0.HeapAlloc)/(1<<20), "live-MB")
	runtime.KeepAlive(p)
}
