package sim

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// podIntervals returns the completed counts of pod's io events, in order,
// and whether it was killed.
func podIntervals(evs []Event, pod string) (done []int64, killed bool, reason string) {
	for _, e := range evs {
		if e.Kind == EventIO && e.Pod == pod {
			if e.PodState == "killed" {
				return done, true, e.Reason
			}
			done = append(done, e.Completed)
		}
	}
	return done, false, ""
}

func longestZeroRun(xs []int64) int {
	best, cur := 0, 0
	for _, x := range xs {
		if x == 0 {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}

func primaryNode(w *World, v *Volume) *Node { return w.nodes[w.lvstores[v.LVS].Nodes[0]] }

func TestTargetRestart(t *testing.T) {
	w := newWorld(t, Config{Seed: 1, Model: record.Model{Volumes: 3, Pods: true}})
	advance(t, w, 2)
	v := w.Volumes()[0]
	n := primaryNode(w, v)
	h := w.hosts[v.Consumers[0]]
	ev, err := w.StopTarget(n.Name, false)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := strconv.Atoi(ev["connected_controllers"]); c == 0 {
		t.Fatalf("evidence %v: no controller was connected to %s", ev, n.Name)
	}
	if again, _ := w.StopTarget(n.Name, false); again["already"] != "true" {
		t.Errorf("second stop: %v, want already", again)
	}
	evs := advance(t, w, 12)
	for _, c := range ctrlsAt(h, v.NQN, []string{canonicalAddr(n.IP, w.lvstores[v.LVS].Port)}) {
		if c.State != nvmeof.StateConnecting {
			t.Errorf("%s at the stopped node: %s, want connecting", c.Name(), c.State)
		}
	}
	refused := 0
	for _, e := range evs {
		if e.Kind == EventKernel && strings.Contains(e.Message, "failed to connect socket: -111") {
			refused++
		}
	}
	if refused == 0 {
		t.Error("no refused reconnect attempt while the target was down")
	}
	// SPDK keeps its configuration in memory: the restart took every
	// subsystem of the node (3-way HA on 3 nodes: all 3 volumes).
	if ev["subsystems_lost"] != "3" || len(n.subsystems) != 0 {
		t.Errorf("stop evidence %v, %d subsystems left on %s; want all 3 lost", ev, len(n.subsystems), n.Name)
	}
	ev, err = w.StartTarget(n.Name)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := strconv.Atoi(ev["reconnecting_controllers"]); c == 0 {
		t.Errorf("start evidence %v: no controller reconnecting", ev)
	}
	// sbcli re-creates each lvol subsystem with its namespaces before its
	// listener (lvol_controller.py:1369, 1418, 1451): from the start on,
	// every listener fronts the volume's namespaces, and no controller
	// reconnecting through it is live without legs.
	if ev["subsystems_recreated"] != "3" {
		t.Errorf("start evidence %v, want 3 subsystems re-created", ev)
	}
	for _, x := range w.Volumes() {
		ts, ok := n.Subsystem(x.NQN)
		if !ok {
			t.Fatalf("%s not re-created on %s", x.Name, n.Name)
		}
		consumer := w.hosts[x.Consumers[0]].NQN
		if _, has := ts.listener(w.lvstores[x.LVS].Port); !has || !slices.Equal(ts.exposedNSIDs(consumer), x.NSIDs) {
			t.Errorf("%s on %s right after the start: listener %v, namespaces exposed %v; want the listener in front of %v", x.Name, n.Name, has, ts.exposedNSIDs(consumer), x.NSIDs)
		}
	}
	for w.Now() < 20 {
		evs = append(evs, advance(t, w, w.Now()+0.01)...)
		for _, c := range h.ctrls {
			if c.Spec.Traddr == n.IP && c.State == nvmeof.StateLive && len(c.legs) == 0 {
				t.Fatalf("t=%.2f %s at %s live with no leg: a listener before its namespaces", w.Now(), c.Name(), c.Spec.Addr())
			}
		}
	}
	for _, c := range h.ctrls {
		if c.State != nvmeof.StateLive || len(c.legs) == 0 {
			t.Errorf("after the restart %s (%s) is %s with %d legs, want live with legs", c.Name(), c.Spec.Addr(), c.State, len(c.legs))
		}
	}
	// With the secondaries still serving, the pod never stopped.
	done, killed, _ := podIntervals(evs, "fio-"+v.Name)
	if killed || longestZeroRun(done) > 0 {
		t.Errorf("pod: killed %v, intervals %v; want I/O to fail over to the non-optimized paths", killed, done)
	}
}

func TestSilentTargetLossPausesUntilKato(t *testing.T) {
	w := newWorld(t, Config{Seed: 2, Model: record.Model{Volumes: 3, Pods: true, PodToleranceS: 30}})
	advance(t, w, 2.05)
	v := w.Volumes()[0]
	n := primaryNode(w, v)
	if _, err := w.StopTarget(n.Name, true); err != nil {
		t.Fatal(err)
	}
	evs := advance(t, w, 20)
	var detectedAt float64
	for _, e := range evs {
		if e.Kind == EventKernel && strings.Contains(e.Message, "Keep Alive") && detectedAt == 0 {
			detectedAt = e.T
		}
	}
	kato := float64(kernelDefaultKato) // CSI paths use the kernel default
	if detectedAt < 2.05+kato || detectedAt > 2.05+1.5*kato {
		t.Errorf("keep-alive timeout at %.2f s, want within [kato, 1.5 kato] after the loss at 2.05 s", detectedAt)
	}
	done, killed, _ := podIntervals(evs, "fio-"+v.Name)
	if killed {
		t.Fatal("pod killed with a 30 s tolerance")
	}
	// I/O on the optimized path hangs until the loss is detected, then
	// fails over: at least kato-1 whole intervals without a completion.
	if z := longestZeroRun(done); z < int(kato)-1 || z > int(1.5*kato)+1 {
		t.Errorf("longest run of intervals without completions %d (intervals %v), want about kato = %g", z, done, kato)
	}
	if done[len(done)-1] == 0 {
		t.Error("I/O did not resume on the secondaries")
	}
}

func TestPodDiesWhenNoPathServes(t *testing.T) {
	for _, tc := range []struct {
		tolerance float64
		want      string
	}{
		{5, "no I/O completed"},
		{300, "I/O error (EIO)"},
	} {
		w := newWorld(t, Config{Seed: 3, Model: record.Model{Volumes: 2, Pods: true, PodToleranceS: tc.tolerance}})
		advance(t, w, 1)
		v := w.Volumes()[1]
		for _, ep := range w.listenerEndpoints(v.NQN, v.LVS) {
			ts, _ := ep.node.Subsystem(v.NQN)
			ts.removeListener(ep.port)
		}
		evs := advance(t, w, 200)
		_, killed, reason := podIntervals(evs, "fio-"+v.Name)
		if !killed || !strings.Contains(reason, tc.want) {
			t.Errorf("tolerance %g: killed %v (%q), want killed: %s", tc.tolerance, killed, reason, tc.want)
		}
		requeue := 0
		for _, e := range evs {
			if e.Kind == EventKernel && e.Message == "no usable path - requeuing I/O" {
				requeue++
			}
		}
		if requeue != 1 {
			t.Errorf("tolerance %g: %d 'no usable path' lines, want 1", tc.tolerance, requeue)
		}
		// The other volume's pod is untouched.
		if _, k, _ := podIntervals(evs, "fio-"+w.Volumes()[0].Name); k {
			t.Error("the other volume's pod died")
		}
	}
}

func TestFaultsDeterministic(t *testing.T) {
	run := func() []Event {
		w := newWorld(t, Config{Seed: 11, Model: record.Model{Volumes: 4, Pods: true, Operator: OperatorPrefix, HostsAreNodes: true}})
		var evs []Event
		evs = append(evs, advance(t, w, 1)...)
		w.SetPhaseHook(func(m *Migration, ph string) {
			if ph == PhaseValidating {
				w.DropConnects(w.nodes[w.rng.Intn(3)].Name)
			}
		})
		for i := 0; i < 4; i++ {
			id, _ := w.StartMigration(w.volumes[i].NQN)
			evs = append(evs, untilTerminal(t, w, id, 300)...)
			for _, n := range w.nodes {
				w.StopDroppingConnects(n.Name)
			}
		}
		w.StopTarget("storage-2", true)
		evs = append(evs, advance(t, w, w.Now()+20)...)
		w.StartTarget("storage-2")
		evs = append(evs, advance(t, w, w.Now()+100)...)
		return evs
	}
	a, b := run(), run()
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed with faults and pods: different events")
	}
}

func TestLeftoverController(t *testing.T) {
	w := newWorld(t, Config{Seed: 1, Model: record.Model{Volumes: 1}})
	v := w.Volumes()[0]
	h := w.hosts[v.Consumers[0]]
	other := w.lvstores[(v.LVS+1)%3]
	addr := canonicalAddr(w.nodes[other.Nodes[0]].IP, other.Port)
	name, err := w.LeaveLeftoverController(h.Name, v.NQN, addr, ControlPlaneConnectOptions)
	if err != nil {
		t.Fatal(err)
	}
	advance(t, w, 1)
	c, _ := h.Controller(name)
	if c.State != nvmeof.StateConnecting || c.Origin != "leftover" {
		t.Errorf("leftover %s: %s origin %s, want connecting leftover", name, c.State, c.Origin)
	}
	if _, err := w.LeaveLeftoverController(h.Name, v.NQN, canonicalAddr(w.nodes[0].IP, 9), ControlPlaneConnectOptions); err == nil {
		t.Error("leftover at an unserved port accepted")
	}
}

// TestTargetRestartMigrationListenersBackAtCutover: a restart of a target
// node during the data sync loses the migration's target listener there;
// sbcli's restart re-creates the volume's subsystem with its source-role
// listener only, so the host's validation controller at the target port is
// rejected ("does not allow host") until the migration task restores its
// listeners at cutover (tasks_runner_lvol_migration.py:723-792); then it
// reconnects and the migration completes with the target primary serving.
func TestTargetRestartMigrationListenersBackAtCutover(t *testing.T) {
	w := newWorld(t, Config{Seed: 3, Model: record.Model{Volumes: 1}})
	advance(t, w, 1)
	v := w.Volumes()[0]
	h := w.hosts[v.Consumers[0]]
	dst := (v.LVS + 1) % len(w.lvstores)
	prim := w.listenerEndpoints(v.NQN, dst)[0]
	id, err := w.StartMigrationTo(v.NQN, dst)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := w.Migration(id)
	for m.Phase != PhaseRunning && w.Now() < 60 {
		advance(t, w, w.Now()+0.05)
	}
	if m.cp != cpSyncing {
		t.Fatalf("migration %s at %.1f s, want in its data sync", m.Phase, w.Now())
	}
	if _, err := w.StopTarget(prim.node.Name, false); err != nil {
		t.Fatal(err)
	}
	advance(t, w, w.Now()+0.5)
	if _, err := w.StartTarget(prim.node.Name); err != nil {
		t.Fatal(err)
	}
	if m.cp != cpSyncing {
		t.Fatalf("the cutover started during the restart; pick another seed")
	}
	ts, ok := prim.node.Subsystem(v.NQN)
	if !ok {
		t.Fatalf("%s not re-created on %s", v.Name, prim.node.Name)
	}
	if _, has := ts.listener(w.lvstores[v.LVS].Port); !has {
		t.Errorf("source-role listener not re-created on %s", prim.node.Name)
	}
	if _, has := ts.listener(prim.port); has {
		t.Errorf("migration listener %s re-created by the restart, want it back only at cutover", prim.addr())
	}
	before := prim.node.notAllowed
	for m.cp == cpSyncing {
		advance(t, w, w.Now()+0.05)
		for _, c := range ctrlsAt(h, v.NQN, []string{prim.addr()}) {
			if m.cp == cpSyncing && c.State == nvmeof.StateLive {
				t.Fatalf("t=%.2f %s live at %s before the cutover restored its listener", w.Now(), c.Name(), prim.addr())
			}
		}
	}
	if prim.node.notAllowed == before {
		t.Errorf("no \"does not allow host\" rejection at %s between the restart and the cutover", prim.addr())
	}
	untilTerminal(t, w, id, 120)
	advance(t, w, w.Now()+5)
	if m.Phase != PhaseCompleted {
		t.Fatalf("%s ended %s (%s), want Completed", id, m.Phase, m.Reason)
	}
	cs := ctrlsAt(h, v.NQN, []string{prim.addr()})
	if len(cs) != 1 || cs[0].State != nvmeof.StateLive || len(cs[0].legs) == 0 || cs[0].legs[0].ana != nvmeof.ANAOptimized {
		t.Errorf("after the cutover the host's path at the target primary %s: %d controllers, want one live optimized", prim.addr(), len(cs))
	}
}

// TestChainSourceRestartAcrossCutover: a restart of the source primary's
// target that spans a single-volume cutover must not leave its source-port
// listener optimized beside the optimized target primary (a split brain).
// sbcli's restart is not migration-aware: it re-creates every lvol its DB
// record places on the node's lvstores, the primary's listener optimized
// (storage_node_ops.py:8921-8938 recreate_lvstore, :9704 add_lvol_thread),
// a non-leader's non-optimized (:7813, :8524). The single-volume cutover's
// Done handler drives every source path inaccessible right before the
// target primary goes optimized (tasks_runner_lvol_migration.py:2154-2183
// steps 2, 3, 5) and then points the lvol record at the target
// (_apply_migration_to_db, :2221 → :209-236). So a restart ending inside the
// cutover window has its re-created source listener made inaccessible by
// the flip, and one ending after the flip re-creates the volume at the
// target lvstore only.
func TestChainSourceRestartAcrossCutover(t *testing.T) {
	for _, tc := range []struct {
		name string
		// restartEnds: the cutover state at which the source primary's
		// target comes back.
		restartEnds cpState
	}{
		{"ends in the cutover window", cpCutover},
		{"ends after the flip", cpCutDone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, Config{Seed: 3, Model: record.Model{Volumes: 1}})
			advance(t, w, 1)
			v := w.Volumes()[0]
			if v.batch() {
				t.Fatal("want a single-namespace volume")
			}
			src := w.listenerEndpoints(v.NQN, v.LVS)[0]
			dst := (v.LVS + 1) % len(w.lvstores)
			tgt := w.listenerEndpoints(v.NQN, dst)[0]
			id, err := w.StartMigrationTo(v.NQN, dst)
			if err != nil {
				t.Fatal(err)
			}
			m, _ := w.Migration(id)
			for m.cp != cpSyncing && w.Now() < 60 {
				advance(t, w, w.Now()+0.05)
			}
			if _, err := w.StopTarget(src.node.Name, false); err != nil {
				t.Fatal(err)
			}
			for m.cp < tc.restartEnds && w.Now() < 120 {
				advance(t, w, w.Now()+0.01)
			}
			if m.cp != tc.restartEnds {
				t.Fatalf("migration at cp state %d, want %d", m.cp, tc.restartEnds)
			}
			if _, err := w.StartTarget(src.node.Name); err != nil {
				t.Fatal(err)
			}
			// Until Completed removes the source listeners: never the
			// source primary optimized once the target primary is.
			for !m.Terminal() && w.Now() < 180 {
				tts, tok := tgt.node.Subsystem(v.NQN)
				sts, sok := src.node.Subsystem(v.NQN)
				if tok && sok && m.cp >= cpCutDone && tts.anaOf(tgt.port) == nvmeof.ANAOptimized {
					if i, has := sts.listener(src.port); has && sts.Listeners[i].ANA != nvmeof.ANAInaccessible {
						t.Fatalf("t=%.2f split brain: source %s %s while target %s optimized", w.Now(), src.addr(), sts.Listeners[i].ANA, tgt.addr())
					}
				}
				advance(t, w, w.Now()+0.01)
			}
			if m.Phase != PhaseCompleted {
				t.Fatalf("%s ended %s (%s), want Completed", id, m.Phase, m.Reason)
			}
			// After the flip the restarted node holds the volume where its
			// record says: the target lvstore's listener with its HA state.
			if tc.restartEnds == cpCutDone {
				ts, ok := src.node.Subsystem(v.NQN)
				if !ok {
					t.Fatalf("%s not re-created on %s", v.Name, src.node.Name)
				}
				for k, ep := range w.listenerEndpoints(v.NQN, dst) {
					if ep.node == src.node && ts.anaOf(ep.port) != haANA(k) {
						t.Errorf("target listener %s: %s, want %s", ep.addr(), ts.anaOf(ep.port), haANA(k))
					}
				}
			}
		})
	}
}

// TestChainBatchSourceRestartAfterFlipSplitBrain pins an sbcli hazard the
// model keeps [inference from sourced parts]: a batch member's lvol record
// names the source until its cleanup_source (tasks_runner_lvol_migration.py
// :2594; tasks_runner_batch_migration.py:197-201), so a restart of the
// source primary that ends after the batch cutover's flip re-creates the
// source-port listener optimized (storage_node_ops.py:8921-8938) beside the
// optimized target primary, until Completed removes the source listeners.
func TestChainBatchSourceRestartAfterFlipSplitBrain(t *testing.T) {
	w := newWorld(t, Config{Seed: 3, Model: record.Model{Volumes: 1, NamespacesPerVolume: 3}})
	advance(t, w, 1)
	v := w.Volumes()[0]
	if !v.batch() {
		t.Fatal("want a namespaced (batch) volume")
	}
	src := w.listenerEndpoints(v.NQN, v.LVS)[0]
	dst := (v.LVS + 1) % len(w.lvstores)
	tgt := w.listenerEndpoints(v.NQN, dst)[0]
	id, err := w.StartMigrationTo(v.NQN, dst)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := w.Migration(id)
	for m.cp != cpSyncing && w.Now() < 60 {
		advance(t, w, w.Now()+0.05)
	}
	if _, err := w.StopTarget(src.node.Name, false); err != nil {
		t.Fatal(err)
	}
	for m.cp < cpCutDone && w.Now() < 120 {
		advance(t, w, w.Now()+0.01)
	}
	if m.cp != cpCutDone {
		t.Fatalf("migration at cp state %d, want after its flip", m.cp)
	}
	if _, err := w.StartTarget(src.node.Name); err != nil {
		t.Fatal(err)
	}
	split := false
	for !m.Terminal() && w.Now() < 180 {
		tts, tok := tgt.node.Subsystem(v.NQN)
		sts, sok := src.node.Subsystem(v.NQN)
		if tok && sok && tts.anaOf(tgt.port) == nvmeof.ANAOptimized {
			if i, has := sts.listener(src.port); has && sts.Listeners[i].ANA == nvmeof.ANAOptimized {
				split = true
			}
		}
		advance(t, w, w.Now()+0.01)
	}
	if !split {
		t.Errorf("no source listener %s optimized beside the target %s after a batch flip and a source restart", src.addr(), tgt.addr())
	}
	if m.Phase != PhaseCompleted {
		t.Fatalf("%s ended %s (%s), want Completed", id, m.Phase, m.Reason)
	}
	if ts, ok := src.node.Subsystem(v.NQN); ok {
		if _, has := ts.listener(src.port); has {
			t.Errorf("source listener %s still there after Completed", src.addr())
		}
	}
}
