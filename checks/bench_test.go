package checks

import (
	"fmt"
	"testing"

	"github.com/fiomig/fiomig/record"
)

// benchRun builds a record of n back-to-back migrations of vol1 between two
// nodes on three consumer hosts, sampled every 0.1 s (about 20 s each, the
// shape of the default run: 23 migrations, ~30,000 host samples).
func benchRun(n int) (record.Plan, []record.Line) {
	hosts := []string{"host-a", "host-b", "host-c"}
	w := newWorld(0.1, hosts...)
	w.plan.Params.Migrations = n
	w.volume("vol1", vol1, []int{1}, hosts...)
	a, b := src1, tgt1
	w.endpoints(vol1, a)
	for _, h := range hosts {
		w.ctrl(h, "nvme0", vol1, a, "live", legs("optimized", 1)...)
	}
	cur, next := "nvme0", "nvme1"
	for i := 0; i < n; i++ {
		t0 := w.now
		id := fmt.Sprintf("m%d", i+1)
		w.phase(id, vol1, record.PhasePending, []string{a}, []string{b})
		for _, h := range hosts {
			w.ctrl(h, next, vol1, b, "live", legs("inaccessible", 1)...)
		}
		w.until(t0 + 10)
		for _, h := range hosts {
			w.ana(h, cur, "inaccessible")
		}
		w.until(t0 + 12)
		for _, h := range hosts {
			w.ana(h, next, "optimized")
			w.drop(h, cur)
		}
		w.endpoints(vol1, b)
		w.phase(id, vol1, record.PhaseCompleted, nil, nil)
		w.until(t0 + 20)
		a, b = b, a
		cur, next = next, cur
	}
	w.until(w.now + 60)
	return w.plan, w.lines
}

func BenchmarkEvaluate23Migrations(b *testing.B) {
	plan, tl := benchRun(23)
	if s := Evaluate(plan, tl); s.Verdict != record.Pass {
		b.Fatalf("bench record verdict %q: %+v", s.Verdict, s.Checks)
	}
	b.ReportMetric(float64(len(tl)), "lines")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Evaluate(plan, tl)
	}
}
