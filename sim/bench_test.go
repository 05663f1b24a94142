package sim

import (
	"testing"

	"github.com/fiomig/fiomig/nvmeof"
)

// benchRun runs the default world through migrations one after another for
// virtual seconds, sampling every host's tree every 0.1 s; parse also reads
// each sample through nvmeof.ReadHost (what the collectors do).
func benchRun(b *testing.B, seconds float64, parse bool) {
	for i := 0; i < b.N; i++ {
		w, err := New(Config{Seed: int64(i)})
		if err != nil {
			b.Fatal(err)
		}
		var id string
		next := 0
		samples := 0
		for t := 0.0; t < seconds; t += 0.1 {
			if _, term := w.MigrationPhase(id); id == "" || term {
				id, err = w.StartMigration(w.Volumes()[next%len(w.Volumes())].NQN)
				if err != nil {
					b.Fatal(err)
				}
				next++
			}
			if _, err := w.AdvanceTo(t); err != nil {
				b.Fatal(err)
			}
			for _, h := range w.Hosts() {
				fsys := h.Sysfs()
				samples++
				if parse {
					if _, err := nvmeof.ReadHost(fsys, h.NQN); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		b.ReportMetric(float64(samples), "samples/op")
		builds := 0
		for _, h := range w.Hosts() {
			builds += h.SysfsBuilds()
		}
		b.ReportMetric(float64(builds), "tree-builds/op")
		b.ReportMetric(float64(next), "migrations/op")
	}
}

// BenchmarkSample20Min: 20 virtual minutes, 3 hosts sampled every 0.1 s
// (36,000 host samples), trees only.
func BenchmarkSample20Min(b *testing.B) { benchRun(b, 1200, false) }

// BenchmarkSample20MinParsed: the same, each sample parsed by nvmeof.
func BenchmarkSample20MinParsed(b *testing.B) { benchRun(b, 1200, true) }
