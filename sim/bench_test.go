package sim

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
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

// BenchmarkScale: 100 hosts, 1,000 volumes on 10 storage nodes, 1,000
// migrations (up to 50 at a time), events discarded, no sampling. Reports
// the virtual seconds simulated.
func BenchmarkScale(b *testing.B) {
	for i := 0; i < b.N; i++ {
		w, err := New(Config{Seed: int64(i), Model: record.Model{Nodes: 10, Hosts: 100, Volumes: 1000}})
		if err != nil {
			b.Fatal(err)
		}
		started, running := 0, map[string]bool{}
		next := 0
		for started < 1000 || len(running) > 0 {
			for id := range running {
				if _, term := w.MigrationPhase(id); term {
					delete(running, id)
				}
			}
			for started < 1000 && len(running) < 50 {
				v := w.Volumes()[next%1000]
				next++
				if v.migration != nil {
					continue
				}
				id, err := w.StartMigration(v.NQN)
				if err != nil {
					b.Fatal(err)
				}
				running[id] = true
				started++
			}
			if _, err := w.AdvanceTo(w.Now() + 1); err != nil {
				b.Fatal(err)
			}
		}
		completed := 0
		for _, m := range w.Migrations() {
			if m.Phase == PhaseCompleted {
				completed++
			}
		}
		if completed != 1000 {
			b.Fatalf("%d of 1000 migrations completed", completed)
		}
		b.ReportMetric(w.Now(), "virtual-s/op")
	}
}

// incidentRun is the incident's shape on the simulator alone: 3 hosts that
// are the 3 storage nodes, 10 pods, 23 migrations one at a time of seeded
// volumes, CONNECTs to a seeded node dropped for 40 s during the first
// three validations, then 2.5 h of settle; hosts sampled through nvmeof
// every 0.1 s during migrations and every 10 s while settling.
type incidentFigures struct {
	failed, leakCaused, ctrls, expected, leaks, rejPerMin, podsKilled int
}

func incidentRun(tb testing.TB, seed int64, op, reset string) incidentFigures {
	w, err := New(Config{Seed: seed, Model: record.Model{Hosts: 3, HostsAreNodes: true, Volumes: 10, Pods: true, Operator: op, ReconnectReset: reset}})
	if err != nil {
		tb.Fatal(err)
	}
	// Sysfs returns the same tree until the host changes, so a sampler
	// may parse a tree once (what a collector can memoise).
	last := map[*Host]fs.FS{}
	sample := func() {
		for _, h := range w.Hosts() {
			fsys := h.Sysfs()
			if last[h] == fsys {
				continue
			}
			last[h] = fsys
			if _, err := nvmeof.ReadHost(fsys, h.NQN); err != nil {
				tb.Fatal(err)
			}
		}
	}
	faulted := 0
	w.SetPhaseHook(func(m *Migration, ph string) {
		if ph == PhaseValidating && faulted < 3 {
			faulted++
			n := w.nodes[w.rng.Intn(len(w.nodes))]
			w.DropConnects(n.Name)
			w.after(40, func() { w.StopDroppingConnects(n.Name) })
		}
	})
	step := func(to, dt float64) {
		for w.Now() < to {
			if _, err := w.AdvanceTo(min(to, w.Now()+dt)); err != nil {
				tb.Fatal(err)
			}
			sample()
		}
	}
	for i := 0; i < 23; i++ {
		v := w.volumes[w.rng.Intn(10)]
		if _, err := w.StartMigration(v.NQN); err != nil {
			tb.Fatal(err)
		}
		for v.migration != nil {
			step(w.Now()+0.1, 0.1)
		}
		step(w.Now()+5, 0.1)
	}
	step(w.Now()+9000-60, 10)
	rej0 := int64(0)
	for _, n := range w.nodes {
		rej0 += n.rejected
	}
	step(w.Now()+60, 10)
	var f incidentFigures
	for _, n := range w.nodes {
		f.rejPerMin += int(n.rejected)
	}
	f.rejPerMin -= int(rej0)
	for _, m := range w.migrations {
		if m.Phase == PhaseFailed {
			f.failed++
			if m.Failure != nil && strings.HasPrefix(m.Failure.Origin, "mig-") && m.Failure.Origin != m.ID {
				f.leakCaused++
			}
		}
	}
	for _, h := range w.hosts {
		for _, s := range h.State().Subsystems {
			for _, c := range s.Controllers {
				f.ctrls++
				if !containsStr(w.Endpoints(s.NQN), c.Endpoint()) || c.State != nvmeof.StateLive || len(c.Legs) == 0 {
					f.leaks++
				}
			}
		}
	}
	for _, v := range w.volumes {
		f.expected += len(v.Consumers) * len(w.Endpoints(v.NQN))
	}
	for _, p := range w.pods {
		if p.Dead {
			f.podsKilled++
		}
	}
	return f
}

// BenchmarkIncidentBothOperators runs incidentRun with the prefix and the
// fixed operator (reconnect reset "partial", so that connecting leaks
// outlive the 1 h upstream budget) and reports the figures of the prefix
// run.
func BenchmarkIncidentBothOperators(b *testing.B) {
	for i := 0; i < b.N; i++ {
		p := incidentRun(b, int64(i+1), OperatorPrefix, ReconnectResetPartial)
		f := incidentRun(b, int64(i+1), OperatorFixed, ReconnectResetPartial)
		b.ReportMetric(float64(p.failed), "prefix-failed")
		b.ReportMetric(float64(p.leakCaused), "prefix-leak-caused")
		b.ReportMetric(float64(p.leaks), "prefix-leaks")
		b.ReportMetric(float64(p.rejPerMin), "prefix-rej/min")
		b.ReportMetric(float64(f.failed), "fixed-failed")
		b.ReportMetric(float64(f.leaks), "fixed-leaks")
	}
}

// benchHost is host 0 of the incident's topology (3 hosts that are the
// storage nodes, 2 volumes × 5 namespaces, 3 consumers each) once its
// volumes are connected: 6 controllers, 30 path legs, 10 heads.
func benchHost(b *testing.B) *Host {
	w, err := New(Config{Seed: 1, Model: record.Model{Hosts: 3, HostsAreNodes: true, Volumes: 2, NamespacesPerVolume: 5, ConsumersPerVolume: 3, Pods: true}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := w.AdvanceTo(1); err != nil {
		b.Fatal(err)
	}
	return w.Hosts()[0]
}

// BenchmarkRenderHost: one rebuild of a host's sysfs tree after one
// controller's state changed (what a change of the host's kernel state
// costs before a sample).
func BenchmarkRenderHost(b *testing.B) {
	h := benchHost(b)
	c := h.ctrls[0]
	states := [2]nvmeof.ControllerState{nvmeof.StateConnecting, c.State}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.State = states[i%2]
		i++
		h.render(true)
	}
}

// BenchmarkParseHost: nvmeof.ReadHost over that tree (the collector's
// parse of a changed host).
func BenchmarkParseHost(b *testing.B) {
	h := benchHost(b)
	fsys := h.Sysfs()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := nvmeof.ReadHost(fsys, h.NQN); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseHostFresh: the parse of a freshly rendered tree (no
// lookups memoised from an earlier read), as a sample sees it.
func BenchmarkParseHostFresh(b *testing.B) {
	h := benchHost(b)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		fsys := h.render(true)
		b.StartTimer()
		if _, err := nvmeof.ReadHost(fsys, h.NQN); err != nil {
			b.Fatal(err)
		}
	}
}
