package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// batchWorld is one namespaced volume (NSIDs 1..5) consumed by all three
// hosts of a 3-node, 3-way HA world: every migration target overlaps.
func batchWorld(t *testing.T, seed int64, tune func(*Config)) *World {
	cfg := Config{Seed: seed, Model: record.Model{Volumes: 1, NamespacesPerVolume: 5, ConsumersPerVolume: 3, Pods: true}}
	if tune != nil {
		tune(&cfg)
	}
	w := newWorld(t, cfg)
	advance(t, w, 1)
	return w
}

// headsOf names each host's multipath heads of v (nvmeXnY by NSID).
func headsOf(w *World, v *Volume) map[string]map[int]string {
	out := map[string]map[int]string{}
	for _, h := range w.hosts {
		out[h.Name] = map[int]string{}
		for _, s := range h.subsystems {
			if s.NQN != v.NQN {
				continue
			}
			for _, hd := range s.heads {
				out[h.Name][hd.nsid] = hd.name(s)
			}
		}
	}
	return out
}

// kernelMessages are the kernel events whose message contains sub.
func kernelMessages(evs []Event, sub string) []string {
	var out []string
	for _, e := range evs {
		if e.Kind == EventKernel && strings.Contains(e.Message, sub) {
			out = append(out, e.Host+" "+e.Controller+": "+e.Message)
		}
	}
	return out
}

// served reports whether host h has an accessible leg to nsid of nqn on a
// live controller.
func served(h *Host, nqn string, nsid int) bool {
	for _, c := range h.ctrls {
		if c.Spec.NQN != nqn || c.State != nvmeof.StateLive {
			continue
		}
		for _, l := range c.legs {
			if l.nsid == nsid && l.ana.Accessible() {
				return true
			}
		}
	}
	return false
}

// The batch cutover's two-pass namespace swap (sbcli
// tasks_runner_batch_migration.py :472-521) on every overlap node: a
// rescan that falls between a member's removal and its re-add drops that
// controller's leg, the next rescan restores it, no head goes (another
// node's path keeps it), no NSID changes, the unserved time per namespace
// stays the cutover window, and step 6 removes the old source-port
// listener from the overlap nodes at the flip, before the operator ends the
// migration.
func TestBatchCutoverTwoPassSwap(t *testing.T) {
	w := batchWorld(t, 3, nil)
	v := w.Volumes()[0]
	before := headsOf(w, v)
	dropped := map[string]bool{} // controllers seen live with fewer legs
	unserved := map[string]float64{}
	longest := 0.0
	var m *Migration
	step6Checked := false
	id, evs := runMigration(t, w, 0, 0.001, 300, func() {
		if m == nil {
			m = w.migrations[len(w.migrations)-1]
		}
		if m.cp == cpCutover || m.cp == cpCutDone {
			for _, h := range w.hosts {
				for _, c := range h.ctrls {
					if c.Spec.NQN == v.NQN && c.State == nvmeof.StateLive && len(c.legs) < len(v.NSIDs) {
						dropped[h.Name+"/"+c.Name()] = true
					}
				}
			}
		}
		for _, h := range w.hosts {
			for _, ns := range v.NSIDs {
				k := fmt.Sprintf("%s/%d", h.Name, ns)
				if served(h, v.NQN, ns) {
					delete(unserved, k)
					continue
				}
				if _, ok := unserved[k]; !ok {
					unserved[k] = w.Now()
				}
				longest = max(longest, w.Now()-unserved[k])
			}
		}
		if m.cp == cpCutDone && !step6Checked {
			step6Checked = true
			srcPort := w.lvstores[m.SrcLVS].Port
			for _, ep := range w.overlapTargets(m) {
				if ts, ok := ep.node.subsystems[v.NQN]; ok {
					if _, has := ts.listener(srcPort); has {
						t.Errorf("%s still listens at the old source port %d at the flip", ep.node.Name, srcPort)
					}
				}
			}
		}
	})
	if ph, _ := w.MigrationPhase(id); ph != PhaseCompleted {
		t.Fatalf("migration %s: %s (%s)", id, ph, m.Reason)
	}
	if !step6Checked {
		t.Fatal("never saw the cutover done before the migration ended")
	}
	if len(w.overlapTargets(m)) != 3 {
		t.Fatalf("%d overlap targets, want 3 (3-cycle)", len(w.overlapTargets(m)))
	}
	if len(dropped) == 0 {
		t.Error("no controller was seen live with fewer legs during the swap: the rescans never fell in a removal window")
	}
	if msgs := kernelMessages(evs, "IDs"); len(msgs) > 0 {
		t.Errorf("kernel refused namespaces in a clean swap: %v", msgs)
	}
	advance(t, w, w.Now()+1)
	if after := headsOf(w, v); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("heads changed: before %v, after %v (a head went with its last path)", before, after)
	}
	for _, h := range w.hosts {
		for _, c := range h.ctrls {
			if c.Spec.NQN == v.NQN && c.State == nvmeof.StateLive && len(c.legs) != len(v.NSIDs) {
				t.Errorf("%s %s at %s: %d legs after the swap, want %d", h.Name, c.Name(), c.Spec.Addr(), len(c.legs), len(v.NSIDs))
			}
		}
	}
	for _, ep := range w.listenerEndpoints(v.NQN, m.DstLVS) {
		ts := ep.node.subsystems[v.NQN]
		if !slices.Equal(ts.NSIDs, v.NSIDs) || len(ts.member) != 0 {
			t.Errorf("%s: NSIDs %v members %v after the swap, want %v unchanged", ep.node.Name, ts.NSIDs, ts.member, v.NSIDs)
		}
	}
	// The unserved time is the cutover window (its ANA) plus the hosts'
	// AEN latency (< 0.03 s) and the 1 ms step.
	if longest > m.CutoverWindowS+0.04 {
		t.Errorf("longest unserved namespace %.3f s, cutover window %.3f s: the swap added a pause", longest, m.CutoverWindowS)
	}
	for _, p := range w.Pods() {
		if p.Dead {
			t.Errorf("pod %s died: %s", p.Name, p.DeathReason)
		}
	}
	t.Logf("controllers that lost legs in the swap: %d; cutover window %.3f s; longest unserved %.3f s", len(dropped), m.CutoverWindowS, longest)
}

// Config.SyncMinS/SyncMaxS set the data sync's duration (continue to
// cutover); the default stays 3-8 s.
func TestSyncDuration(t *testing.T) {
	for _, tc := range []struct {
		name     string
		min, max float64
		lo, hi   float64
	}{
		{"default", 0, 0, 3, 8},
		{"incident pacing", 60, 180, 60, 180},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, Config{Seed: 5, Model: record.Model{Volumes: 1, SyncMinS: tc.min, SyncMaxS: tc.max}})
			advance(t, w, 1)
			var m *Migration
			running, cut := -1.0, -1.0
			id, _ := runMigration(t, w, 0, 0.01, 400, func() {
				if m == nil {
					m = w.migrations[0]
				}
				if running < 0 && m.cp == cpSyncing {
					running = w.Now()
				}
				if cut < 0 && m.cp >= cpCutover {
					cut = w.Now()
				}
			})
			if ph, _ := w.MigrationPhase(id); ph != PhaseCompleted {
				t.Fatalf("migration %s: %s", id, ph)
			}
			if d := cut - running; d < tc.lo-0.01 || d > tc.hi+0.01 {
				t.Errorf("sync took %.2f s, want within [%g, %g]", d, tc.lo, tc.hi)
			}
		})
	}
	if _, err := New(Config{Model: record.Model{SyncMinS: 10, SyncMaxS: 5}}); err == nil || !strings.Contains(err.Error(), "sync duration") {
		t.Errorf("SyncMaxS < SyncMinS: err %v, want one naming the sync duration", err)
	}
}

// Config.JobStartMinS/JobStartMaxS set a validation Job's start (the
// migration's Validating phase to the Job's first connect); the default
// stays 1-3 s.
func TestJobStartDelay(t *testing.T) {
	for _, tc := range []struct {
		name     string
		min, max float64
		lo, hi   float64
	}{
		{"default", 0, 0, 1, 3},
		{"incident pacing", 10, 30, 10, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, Config{Seed: 5, Model: record.Model{Volumes: 1, JobStartMinS: tc.min, JobStartMaxS: tc.max}})
			advance(t, w, 1)
			var m *Migration
			validating, connected := -1.0, -1.0
			id, _ := runMigration(t, w, 0, 0.01, 400, func() {
				if m == nil {
					m = w.migrations[0]
				}
				if validating < 0 && m.Phase == PhaseValidating {
					validating = w.Now()
				}
				for _, h := range w.hosts {
					for _, c := range h.ctrls {
						if connected < 0 && c.Origin == m.ID {
							connected = w.Now()
						}
					}
				}
			})
			if ph, _ := w.MigrationPhase(id); ph != PhaseCompleted {
				t.Fatalf("migration %s: %s", id, ph)
			}
			// The first connect completes within a second of the Job's start.
			if d := connected - validating; validating < 0 || connected < 0 || d < tc.lo-0.01 || d > tc.hi+1 {
				t.Errorf("Validating at %.2f s, the Job's first path at %.2f s (%.2f s later), want [%g, %g+1]", validating, connected, d, tc.lo, tc.hi)
			}
		})
	}
	if _, err := New(Config{Model: record.Model{JobStartMinS: 30, JobStartMaxS: 10}}); err == nil || !strings.Contains(err.Error(), "job start") {
		t.Errorf("JobStartMaxS < JobStartMinS: err %v, want one naming the job start", err)
	}
}

// liveWithoutLeg are the live controllers of nqn on h with no leg to nsid,
// and what nvmeof.Inspect, asked for that namespace as the operator's
// verify asks, names.
func liveWithoutLeg(t *testing.T, h *Host, nqn string, nsid int) (ctrls []string, named []string) {
	t.Helper()
	st := readHost(t, h)
	for _, s := range st.SubsystemsByNQN(nqn) {
		for _, c := range s.Controllers {
			if _, ok := c.LegTo(nsid); c.State == nvmeof.StateLive && !ok {
				ctrls = append(ctrls, c.Name)
			}
		}
	}
	for _, d := range nvmeof.Inspect(st, nvmeof.Selector{NQN: nqn, NSID: nsid}, nil) {
		named = append(named, d.Controllers...)
		if d.Scope == nvmeof.ScopeSubsystem {
			named = append(named, "subsystem:"+string(d.Kind))
		}
	}
	return ctrls, named
}

// Config.SwapReaddFail: a failed re-add in the two-pass swap (non-fatal,
// :509) leaves that node's controllers live with a partial leg set, which
// Inspect names per NSID; the members re-added after it take the lowest
// free NSIDs, so they shift and the kernel refuses them too. Off, nothing
// is missing.
func TestSwapReaddFail(t *testing.T) {
	for _, p := range []float64{0, 0.3} {
		t.Run(fmt.Sprintf("p=%g", p), func(t *testing.T) {
			w := batchWorld(t, 4, func(c *Config) { c.SwapReaddFail = p })
			v := w.Volumes()[0]
			id, evs := runMigration(t, w, 0, 0.05, 300, nil)
			advance(t, w, w.Now()+1)
			fails := w.ReaddFailures(id)
			if p == 0 {
				if len(fails) != 0 {
					t.Fatalf("re-add failures %v with the switch off", fails)
				}
				for _, h := range w.hosts {
					for _, ns := range v.NSIDs {
						if ctrls, named := liveWithoutLeg(t, h, v.NQN, ns); len(ctrls)+len(named) > 0 {
							t.Errorf("%s nsid %d: live controllers without the leg %v, Inspect names %v; want none", h.Name, ns, ctrls, named)
						}
					}
				}
				return
			}
			if len(fails) == 0 {
				t.Fatal("no re-add failed at p=0.3 (seed 4): nothing to judge")
			}
			t.Logf("migration %s (%s); failed re-adds: %v; kernel refusals: %d", id, w.migByID[id].Phase, fails, len(kernelMessages(evs, "IDs")))
			// Per failed re-add: that node's controllers are live, none has a
			// leg carrying the failed namespace (whatever NSID it sits at:
			// with SPDK's lowest free NSID a failure shifts the members
			// re-added after it), and for every NSID such a controller
			// lacks, Inspect names it or finds the namespace missing
			// from the host altogether.
			for _, f := range fails {
				var node string
				var ident int
				fmt.Sscanf(f, "%s nsid %d", &node, &ident)
				n := w.nodes[slices.IndexFunc(w.nodes, func(n *Node) bool { return n.Name == node })]
				if _, has := n.subsystems[v.NQN].nsidOf(ident); has {
					t.Errorf("%s: namespace %d present after its re-add failed", node, ident)
				}
				for _, h := range w.hosts {
					atNode := 0
					for _, c := range h.ctrls {
						if c.Spec.NQN != v.NQN || c.Spec.Traddr != n.IP || c.State != nvmeof.StateLive {
							continue
						}
						atNode++
						if len(c.legs) >= len(v.NSIDs) {
							t.Errorf("%s %s at %s: %d legs, want a partial set", h.Name, c.Name(), c.Spec.Addr(), len(c.legs))
						}
						for _, l := range c.legs {
							if l.head.ident == ident {
								t.Errorf("%s %s at %s: leg nsid %d carries namespace %d, whose re-add failed there", h.Name, c.Name(), c.Spec.Addr(), l.nsid, ident)
							}
						}
						for _, ns := range v.NSIDs {
							if slices.ContainsFunc(c.legs, func(l *leg) bool { return l.nsid == ns }) {
								continue
							}
							if _, named := liveWithoutLeg(t, h, v.NQN, ns); !slices.Contains(named, c.Name()) &&
								!slices.Contains(named, "subsystem:"+string(nvmeof.DefectNamespaceMissing)) {
								t.Errorf("%s: %s lacks nsid %d, Inspect names %v", h.Name, c.Name(), ns, named)
							}
						}
					}
					if atNode == 0 {
						t.Errorf("%s: no live controller at %s: a failed re-add should leave them live", h.Name, node)
					}
				}
			}
		})
	}
}

// Config.NSIDDivergence: on one overlap node two members take each other's
// NSID; the kernel refuses both there ("IDs don't match for shared
// namespace N"), so that node's controllers stay live without those legs
// and Inspect names them; off, no refusal and every leg is there.
func TestNSIDDivergence(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("on=%v", on), func(t *testing.T) {
			w := batchWorld(t, 6, func(c *Config) { c.NSIDDivergence = on })
			v := w.Volumes()[0]
			id, evs := runMigration(t, w, 0, 0.05, 300, nil)
			advance(t, w, w.Now()+1)
			m := w.migByID[id]
			if m.Phase != PhaseCompleted {
				t.Fatalf("migration %s: %s (%s)", id, m.Phase, m.Reason)
			}
			refused := kernelMessages(evs, "IDs don't match for shared namespace")
			var diverged []*Node
			for _, ep := range w.listenerEndpoints(v.NQN, m.DstLVS) {
				if len(ep.node.subsystems[v.NQN].member) > 0 {
					diverged = append(diverged, ep.node)
				}
			}
			if !on {
				if len(refused) > 0 || len(diverged) > 0 {
					t.Fatalf("switch off: refusals %v, diverged nodes %d", refused, len(diverged))
				}
				for _, h := range w.hosts {
					for _, ns := range v.NSIDs {
						if ctrls, named := liveWithoutLeg(t, h, v.NQN, ns); len(ctrls)+len(named) > 0 {
							t.Errorf("%s nsid %d: live without the leg %v, Inspect %v", h.Name, ns, ctrls, named)
						}
					}
				}
				return
			}
			if len(diverged) != 1 {
				t.Fatalf("%d nodes with diverged NSIDs, want 1", len(diverged))
			}
			n := diverged[0]
			ts := n.subsystems[v.NQN]
			t.Logf("%s carries %v (NSID→namespace); kernel: %d refusals, first %v", n.Name, ts.member, len(refused), refused[:min(1, len(refused))])
			if len(refused) == 0 {
				t.Error("no kernel refusal logged")
			}
			for nsid := range ts.member {
				for _, h := range w.hosts {
					ctrls, named := liveWithoutLeg(t, h, v.NQN, nsid)
					for _, c := range h.ctrls {
						if c.Spec.NQN != v.NQN || c.State != nvmeof.StateLive {
							continue
						}
						if c.Spec.Traddr == n.IP {
							if !slices.Contains(ctrls, c.Name()) || !slices.Contains(named, c.Name()) {
								t.Errorf("%s %s at %s: want live without nsid %d and named by Inspect (%v, %v)", h.Name, c.Name(), c.Spec.Addr(), nsid, ctrls, named)
							}
						} else if slices.Contains(ctrls, c.Name()) {
							t.Errorf("%s %s at %s lacks nsid %d, though its node did not diverge", h.Name, c.Name(), c.Spec.Addr(), nsid)
						}
					}
				}
			}
		})
	}
}

// Config.ListenerRace on a 4-node world, where a migration's target lvstore
// has a node not serving the source (non-overlap): CreateMigration creates
// the subsystem and its listener there but the add_ns fails (:1180 → :1197
// → :1204, non-fatal), so the validation Job's controller there is live
// with no namespace, Inspect names it, and the validation fails; off, the
// same migration completes and the controller has every leg.
func TestListenerRace(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("on=%v", on), func(t *testing.T) {
			w := newWorld(t, Config{Seed: 8, Model: record.Model{Nodes: 4, Volumes: 1, NamespacesPerVolume: 3, ConsumersPerVolume: 1, ListenerRace: on}})
			advance(t, w, 1)
			v := w.Volumes()[0] // lvstore 0: nodes 0,1,2
			id, err := w.StartMigrationTo(v.NQN, 1)
			if err != nil {
				t.Fatal(err)
			}
			m := w.migByID[id]
			race := w.nodes[3] // lvstore 1 is nodes 1,2,3: node 3 is the non-overlap tertiary
			h := w.hosts[v.Consumers[0]]
			var seen []string
			for !m.Terminal() && w.Now() < 300 {
				advance(t, w, w.Now()+0.05)
				if m.Phase != PhaseValidating || seen != nil {
					continue
				}
				for _, c := range h.ctrls {
					if c.Spec.Traddr == race.IP && c.State == nvmeof.StateLive {
						ctrls, named := liveWithoutLeg(t, h, v.NQN, v.NSIDs[0])
						seen = append(seen, fmt.Sprintf("%s legs=%d without=%v inspect=%v", c.Name(), len(c.legs), ctrls, named))
						if on && (len(c.legs) != 0 || !slices.Contains(named, c.Name())) {
							t.Errorf("race: %s at %s live with %d legs, Inspect names %v; want no legs and named", c.Name(), c.Spec.Addr(), len(c.legs), named)
						}
					}
				}
			}
			t.Logf("%s: %s (%s); at %s during validation: %v", id, m.Phase, m.Reason, race.Name, seen)
			if seen == nil {
				t.Fatalf("no live controller at %s during validation", race.Name)
			}
			if on {
				if m.Phase != PhaseFailed || m.Failure == nil {
					t.Errorf("phase %s, failure %+v: want Failed on validation", m.Phase, m.Failure)
				}
				return
			}
			if m.Phase != PhaseCompleted {
				t.Fatalf("switch off: %s (%s), want Completed", m.Phase, m.Reason)
			}
			for _, c := range h.ctrls {
				if c.Spec.Traddr == race.IP && c.State == nvmeof.StateLive && len(c.legs) != len(v.NSIDs) {
					t.Errorf("switch off: %s at %s has %d legs, want %d", c.Name(), c.Spec.Addr(), len(c.legs), len(v.NSIDs))
				}
			}
		})
	}
}

// sbcli creates subsystems with allow_any_host=True (rpc_client.py:302-311):
// a host that consumes nothing may still connect.
func TestAnyHostAllowed(t *testing.T) {
	w := newWorld(t, Config{Seed: 1, Model: record.Model{Volumes: 1, ConsumersPerVolume: 1}})
	v := w.Volumes()[0]
	other := w.hosts[(v.Consumers[0]+1)%len(w.hosts)]
	ep := w.listenerEndpoints(v.NQN, v.LVS)[0]
	c, err := other.connect(ep.target(v.NQN, CSIConnectOptions))
	if err != nil {
		t.Fatalf("non-consumer %s connect to %s: %v", other.Name, ep.addr(), err)
	}
	if c.State != nvmeof.StateLive || len(c.legs) != len(v.NSIDs) {
		t.Errorf("%s: %s with %d legs, want live with %d", c.Name(), c.State, len(c.legs), len(v.NSIDs))
	}
}

// The swap and the switches draw only from the world's seed: the same
// Config gives the same events and the same hosts' state, and another
// seed another run.
func TestSwapAndSwitchesDeterministic(t *testing.T) {
	run := func(seed int64) string {
		w := newWorld(t, Config{Seed: seed, Model: record.Model{Nodes: 4, Volumes: 2, NamespacesPerVolume: 4, ConsumersPerVolume: 3, Pods: true, LvolMonitor: true, ListenerRace: true, SwapReaddFail: 0.2, NSIDDivergence: true}})
		var b strings.Builder
		for i := 0; i < 6; i++ {
			id, evs := runMigration(t, w, i%2, 0.05, 600, nil)
			fmt.Fprintf(&b, "%s %v %v\n", id, evs, w.ReaddFailures(id))
			advance(t, w, w.Now()+3)
		}
		for _, h := range w.hosts {
			fmt.Fprintf(&b, "%+v\n", h.State())
		}
		return b.String()
	}
	a, b := run(11), run(11)
	if a != b {
		t.Fatal("same seed, different runs")
	}
	if a == run(12) {
		t.Error("seeds 11 and 12 gave the same run: the swap draws nothing from the seed?")
	}
}

// ListenerRace with sbcli's cancel before continue, which ignores the
// target tertiary (_cleanup_created, docs/sources.md §4.4): when that
// tertiary is the non-overlap node whose add_ns failed, its subsystem stays
// with a listener and no namespace, and the pre-fix operator's validation
// controller there (ctrl_loss_tmo 3600, never released) stays live with no
// namespace: a persistent zero-namespace leak. The fixed operator releases
// it when its Job fails.
func TestListenerRaceCancelLeavesZeroNamespaceLeak(t *testing.T) {
	for _, op := range []string{OperatorPrefix, OperatorFixed} {
		t.Run(op, func(t *testing.T) {
			w := newWorld(t, Config{Seed: 8, Model: record.Model{Nodes: 4, Volumes: 1, NamespacesPerVolume: 3, ListenerRace: true, Operator: op}})
			advance(t, w, 1)
			v := w.Volumes()[0]
			id, err := w.StartMigrationTo(v.NQN, 1) // lvstore 1: nodes 1,2,3; node 3 is the tertiary, non-overlap
			if err != nil {
				t.Fatal(err)
			}
			m := w.migByID[id]
			for !m.Terminal() && w.Now() < 300 {
				advance(t, w, w.Now()+0.05)
			}
			advance(t, w, w.Now()+600)
			if m.Phase != PhaseFailed {
				t.Fatalf("%s: %s, want Failed", id, m.Phase)
			}
			ter := w.nodes[3]
			ts, ok := ter.subsystems[v.NQN]
			if !ok || len(ts.Listeners) != 1 || len(ts.NSIDs) != 0 {
				t.Fatalf("%s after cancel: subsystem %v, listeners %v, NSIDs %v; want kept with its listener and no namespace", ter.Name, ok, ts.Listeners, ts.NSIDs)
			}
			h := w.hosts[v.Consumers[0]]
			var leaks []string
			for _, c := range h.ctrls {
				if c.Spec.NQN == v.NQN && c.Spec.Traddr == ter.IP && c.State == nvmeof.StateLive && len(c.legs) == 0 {
					leaks = append(leaks, fmt.Sprintf("%s (%s, ctrl_loss_tmo %d)", c.Name(), c.Origin, c.sysfsCtrlLossTmo()))
				}
			}
			t.Logf("%s: live zero-namespace controllers at %s 600 s after the cancel: %v", op, ter.Name, leaks)
			if want := op == OperatorPrefix; want != (len(leaks) == 1) {
				t.Errorf("%s: %d live zero-namespace controllers at %s, want %v", op, len(leaks), ter.Name, map[bool]int{true: 1, false: 0}[want])
			}
		})
	}
}
