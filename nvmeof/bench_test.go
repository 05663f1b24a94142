package nvmeof

import (
	"fmt"
	"testing"
)

// benchHost builds a host with subsystems×perSub controllers: in each
// subsystem one optimized source path, one non-optimized, the rest migration
// target paths, alternately parked (inaccessible legs) and husks (live, no
// leg), every subsystem with nsPerSub namespaces.
func benchHost(subsystems, perSub, nsPerSub int) (HostState, []Target) {
	var h HostState
	var conns []Target
	inst := 0
	for s := 0; s < subsystems; s++ {
		sub := Subsystem{Instance: s, NQN: fmt.Sprintf("nqn.2023-02.io.simplyblock:bench:lvol:%d", s)}
		for n := 1; n <= nsPerSub; n++ {
			sub.Namespaces = append(sub.Namespaces, Namespace{Head: fmt.Sprintf("nvme%dn%d", s, n), NSID: n})
		}
		for c := 0; c < perSub; c++ {
			ip := fmt.Sprintf("10.%d.%d.%d", s/250, s%250, c%250)
			ctrl := Controller{Name: fmt.Sprintf("nvme%d", inst), Instance: inst, State: StateLive, Transport: "tcp",
				Address: Address{Traddr: ip, Trsvcid: "4420"}, NQN: sub.NQN}
			ana := ANAInaccessible
			switch {
			case c == 0:
				ana = ANAOptimized
			case c == 1:
				ana = ANANonOptimized
			default:
				conns = append(conns, Target{Transport: "tcp", Traddr: ip, Trsvcid: "4420", NQN: sub.NQN})
			}
			if c < 2 || c%2 == 0 {
				for n := 1; n <= nsPerSub; n++ {
					ctrl.Legs = append(ctrl.Legs, Leg{Name: fmt.Sprintf("nvme%dc%dn%d", s, inst, n), NSID: n, ANA: ana})
				}
			}
			sub.Controllers = append(sub.Controllers, ctrl)
			inst++
		}
		h.Subsystems = append(h.Subsystems, sub)
	}
	return h, conns
}

// BenchmarkInspectAndRelease: Inspect (bare NQN and once per NSID) plus the
// release and reap decisions for every subsystem of a host with 1,000
// controllers.
func BenchmarkInspectAndRelease(b *testing.B) {
	for _, shape := range []struct{ subs, per, ns int }{{250, 4, 1}, {100, 10, 3}, {1, 1000, 2}} {
		h, conns := benchHost(shape.subs, shape.per, shape.ns)
		b.Run(fmt.Sprintf("%dx%d-ns%d", shape.subs, shape.per, shape.ns), func(b *testing.B) {
			released := 0
			for b.Loop() {
				released = 0
				for _, nqn := range h.NQNs() {
					Inspect(h, Selector{NQN: nqn}, conns)
					for n := 1; n <= shape.ns; n++ {
						Inspect(h, Selector{NQN: nqn, NSID: n}, conns)
					}
					p, _ := PlanRelease(h, nqn, conns)
					r, _ := PlanReap(h, nqn)
					released += len(p.Release) + len(r.Release)
				}
			}
			if released == 0 {
				b.Fatal("nothing decided: the benchmark host is wrong")
			}
			b.ReportMetric(float64(len(h.Controllers())), "controllers")
		})
	}
}

// BenchmarkReadSysfs: parsing a 1,000-controller tree (what a collector
// does per host per sample).
func BenchmarkReadSysfs(b *testing.B) {
	var subs []tSubsys
	inst := 0
	for s := 0; s < 250; s++ {
		sub := tSubsys{inst: s, nqn: fmt.Sprintf("nqn.bench:%d", s), nsids: []int{1}}
		for c := 0; c < 4; c++ {
			sub.ctrls = append(sub.ctrls, tCtrl{inst: inst, state: "live", addr: tcp(fmt.Sprintf("10.0.%d.%d:4420", s, c)), legs: legs("optimized", 1)})
			inst++
		}
		subs = append(subs, sub)
	}
	fsys := buildTree(b, subs...)
	for b.Loop() {
		h, err := ReadSysfs(fsys)
		if err != nil || len(h.Controllers()) != 1000 {
			b.Fatal(err, len(h.Controllers()))
		}
	}
}
