package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/nvmeof"
)

// untilTerminal advances in 0.5 s steps until migration id is terminal.
func untilTerminal(t *testing.T, w *World, id string, limit float64) []Event {
	t.Helper()
	var evs []Event
	end := w.Now() + limit
	for w.Now() < end {
		evs = append(evs, advance(t, w, w.Now()+0.5)...)
		if _, term := w.MigrationPhase(id); term {
			return evs
		}
	}
	t.Fatalf("migration %s not terminal after %g s", id, limit)
	return nil
}

// ctrlsAt returns h's controllers of nqn at the endpoints eps.
func ctrlsAt(h *Host, nqn string, eps []string) []*Ctrl {
	var out []*Ctrl
	for _, c := range h.ctrls {
		if c.Spec.NQN == nqn && containsStr(eps, c.Spec.Addr()) {
			out = append(out, c)
		}
	}
	return out
}

func targetEndpoints(w *World, m *Migration) []string {
	var eps []string
	for _, ep := range w.listenerEndpoints(m.Vol.NQN, m.DstLVS) {
		eps = append(eps, ep.addr())
	}
	return eps
}

// failFirstValidation makes the first migration's validation fail by
// dropping CONNECTs to its last target listener while it validates: the
// Job connects the first two, then waits for the third and fails.
func failFirstValidation(t *testing.T, w *World) *Migration {
	t.Helper()
	var dropped string
	w.SetPhaseHook(func(m *Migration, ph string) {
		if ph == PhaseValidating && dropped == "" {
			dropped = w.listenerEndpoints(m.Vol.NQN, m.DstLVS)[2].addr() // the last one ensure connects
			if _, err := w.DropConnects(dropped); err != nil {
				t.Fatal(err)
			}
		}
	})
	id, err := w.StartMigration(w.Volumes()[0].NQN)
	if err != nil {
		t.Fatal(err)
	}
	untilTerminal(t, w, id, 300)
	w.SetPhaseHook(nil)
	ev, err := w.StopDroppingConnects(dropped)
	if err != nil {
		t.Fatal(err)
	}
	if ev["dropped_connects"] == "0" {
		t.Fatalf("drop rule on %s saw no CONNECT: %v", dropped, ev)
	}
	m, _ := w.Migration(id)
	if m.Phase != PhaseFailed || !strings.Contains(m.Reason, "NVMe path validation failed") {
		t.Fatalf("migration %s: %s %q, want Failed on path validation", id, m.Phase, m.Reason)
	}
	if m.Failure == nil || m.Failure.Endpoint != dropped {
		t.Fatalf("failure %+v does not name the dropped endpoint %s", m.Failure, dropped)
	}
	return m
}

func TestFailedValidationLeaksOnlyWithPrefix(t *testing.T) {
	for _, op := range []string{OperatorPrefix, OperatorFixed} {
		t.Run(op, func(t *testing.T) {
			w := newWorld(t, Config{Seed: 5, Volumes: 2, Operator: op})
			advance(t, w, 1)
			m := failFirstValidation(t, w)
			h := w.hosts[m.Vol.Consumers[0]]
			eps := targetEndpoints(w, m)
			if got := w.Endpoints(m.Vol.NQN); len(got) != 3 || containsStr(got, eps[0]) {
				t.Errorf("published after the failure %v: want the 3 source endpoints only", got)
			}
			advance(t, w, w.Now()+5)
			left := ctrlsAt(h, m.Vol.NQN, eps)
			rej := int64(0)
			for _, n := range w.nodes {
				rej += n.rejected
			}
			switch op {
			case OperatorPrefix:
				// The two target paths that connected keep retrying against
				// the deleted listeners, with the control plane's 3600 s.
				if len(left) != 2 {
					t.Fatalf("prefix: %d controllers left at the target endpoints, want 2", len(left))
				}
				for _, c := range left {
					if c.State != nvmeof.StateConnecting || c.sysfsCtrlLossTmo() != 3600 || c.Origin != m.ID {
						t.Errorf("prefix leak %s: %s ctrl_loss_tmo %d origin %s, want connecting 3600 %s", c.Name(), c.State, c.sysfsCtrlLossTmo(), c.Origin, m.ID)
					}
				}
				advance(t, w, w.Now()+60)
				rej2 := int64(0)
				for _, n := range w.nodes {
					rej2 += n.rejected
				}
				// two controllers, one attempt every 2 s each
				if d := rej2 - rej; d < 55 || d > 65 {
					t.Errorf("prefix: %d rejected CONNECTs in 60 s, want about 60", d)
				}
				// upstream reset: removed after max_reconnects = 1800 attempts
				advance(t, w, w.Now()+3700)
				if n := len(ctrlsAt(h, m.Vol.NQN, eps)); n != 0 {
					t.Errorf("prefix, upstream reset: %d leaked controllers after more than an hour", n)
				}
			case OperatorFixed:
				if len(left) != 0 {
					t.Errorf("fixed: %d controllers left at the target endpoints, want 0 (released)", len(left))
				}
			}
		})
	}
}

func TestLeakFailsLaterValidationOnlyWithPrefix(t *testing.T) {
	for _, op := range []string{OperatorPrefix, OperatorFixed} {
		t.Run(op, func(t *testing.T) {
			sawLeakFailure, sawDifferentTarget := false, false
			for seed := int64(1); seed <= 6; seed++ {
				w := newWorld(t, Config{Seed: seed, Volumes: 1, Operator: op})
				advance(t, w, 1)
				m1 := failFirstValidation(t, w)
				id2, err := w.StartMigration(m1.Vol.NQN)
				if err != nil {
					t.Fatal(err)
				}
				untilTerminal(t, w, id2, 300)
				m2, _ := w.Migration(id2)
				leakCaused := m2.Failure != nil && m2.Failure.Origin == m1.ID
				if op == OperatorFixed && leakCaused {
					t.Errorf("seed %d fixed: %s failed on a controller leaked by %s: %+v", seed, id2, m1.ID, m2.Failure)
				}
				if m2.DstLVS != m1.DstLVS {
					sawDifferentTarget = true
					if op == OperatorPrefix {
						// The leaked controllers sit at endpoints the control
						// plane does not publish for this migration.
						if !leakCaused || !strings.Contains(m2.Failure.Detail, "stale-endpoint") {
							t.Errorf("seed %d prefix: %s (other target) ended %s, failure %+v; want a stale-endpoint failure on %s's leak", seed, id2, m2.Phase, m2.Failure, m1.ID)
						}
						sawLeakFailure = sawLeakFailure || leakCaused
					}
				}
			}
			if !sawDifferentTarget {
				t.Fatal("no seed migrated to another target the second time")
			}
			if op == OperatorPrefix && !sawLeakFailure {
				t.Error("prefix: no later validation failed on a leaked controller")
			}
		})
	}
}

func TestKillValidationJob(t *testing.T) {
	for _, op := range []string{OperatorPrefix, OperatorFixed} {
		t.Run(op, func(t *testing.T) {
			w := newWorld(t, Config{Seed: 3, Volumes: 1, ConsumersPerVolume: 2, Operator: op})
			advance(t, w, 1)
			v := w.Volumes()[0]
			id, _ := w.StartMigration(v.NQN)
			m, _ := w.Migration(id)
			victim := w.hosts[v.Consumers[0]]
			other := w.hosts[v.Consumers[1]]
			// Let both Jobs connect (start within 3 s) and the other one
			// validate fully (3 rounds, 2 s apart), then kill the victim
			// mid-round.
			var ev map[string]string
			for ev == nil && w.Now() < 30 {
				advance(t, w, w.Now()+0.1)
				if len(m.jobs) == 2 && m.jobs[1].state == jobSucceeded && m.jobs[0].state == jobRunning {
					var err error
					if ev, err = w.KillValidationJob(id, victim.Name); err != nil {
						t.Fatal(err)
					}
				}
			}
			if ev == nil {
				t.Skip("the other host did not validate before the victim's Job ended (timing of this seed)")
			}
			if !strings.Contains(ev["target_path_controllers"], "live") {
				t.Errorf("evidence %v: want the victim's live target-path controllers", ev)
			}
			untilTerminal(t, w, id, 60)
			if m.Phase != PhaseFailed || !strings.Contains(m.Reason, "killed") {
				t.Fatalf("%s %q, want Failed (Job killed)", m.Phase, m.Reason)
			}
			advance(t, w, w.Now()+5)
			eps := targetEndpoints(w, m)
			nOther := len(ctrlsAt(other, v.NQN, eps))
			nVictim := len(ctrlsAt(victim, v.NQN, eps))
			if op == OperatorFixed && nOther != 0 {
				t.Errorf("fixed: the other validated host keeps %d target paths, want them released", nOther)
			}
			if op == OperatorPrefix && (nOther != 3 || nVictim != 3) {
				t.Errorf("prefix: target paths left victim %d other %d, want 3 and 3 (nothing released)", nVictim, nOther)
			}
			// The killed host released nothing; fixed gave its paths 60 s.
			advance(t, w, w.Now()+70)
			nVictim = len(ctrlsAt(victim, v.NQN, eps))
			if op == OperatorFixed && nVictim != 0 {
				t.Errorf("fixed: %d target paths of the killed Job's host after 75 s, want 0 (ctrl_loss_tmo 60)", nVictim)
			}
			if op == OperatorPrefix && nVictim != 3 {
				t.Errorf("prefix: %d target paths of the killed Job's host after 75 s, want 3 (ctrl_loss_tmo 3600)", nVictim)
			}
		})
	}
}

func TestAbortMigration(t *testing.T) {
	w := newWorld(t, Config{Seed: 4, Volumes: 1})
	advance(t, w, 1)
	v := w.Volumes()[0]
	src := w.Endpoints(v.NQN)
	id, _ := w.StartMigration(v.NQN)
	for ph, _ := w.MigrationPhase(id); ph != PhaseValidating; ph, _ = w.MigrationPhase(id) {
		advance(t, w, w.Now()+0.1)
	}
	if len(w.Endpoints(v.NQN)) != 6 {
		t.Fatalf("published while validating: %v, want source and target", w.Endpoints(v.NQN))
	}
	if err := w.AbortMigration(id); err != nil {
		t.Fatal(err)
	}
	if err := w.AbortMigration(id); err == nil {
		t.Error("aborting an aborted migration succeeded")
	}
	m, _ := w.Migration(id)
	if m.Phase != PhaseAborted {
		t.Fatalf("phase %s, want Aborted", m.Phase)
	}
	if got := w.Endpoints(v.NQN); fmt.Sprint(got) != fmt.Sprint(src) {
		t.Errorf("published after abort %v, want %v", got, src)
	}
	for _, ep := range w.listenerEndpoints(v.NQN, m.DstLVS) {
		if ts, ok := ep.node.Subsystem(v.NQN); ok {
			if _, has := ts.listener(ep.port); has {
				t.Errorf("target listener %s still there after abort", ep.addr())
			}
		}
	}
	// A migration past its cutover cannot be aborted.
	id2, _ := w.StartMigration(v.NQN)
	m2, _ := w.Migration(id2)
	for m2.cp < cpCutover && !m2.Terminal() {
		advance(t, w, w.Now()+0.1)
	}
	if err := w.AbortMigration(id2); err == nil {
		t.Error("aborting during the cutover succeeded")
	}
}

func TestPrefixDropsNonPositiveCtrlLossTmo(t *testing.T) {
	for _, tc := range []struct {
		op   string
		want int // sysfs ctrl_loss_tmo of a migration path
	}{
		{OperatorPrefix, kernelDefaultCtrlLossTmo}, // -1 silently dropped: the kernel default
		{OperatorFixed, nvmeof.MigrationCtrlLossTmo},
	} {
		cp := ControlPlaneConnectOptions
		cp.CtrlLossTmo = -1
		w := newWorld(t, Config{Seed: 1, Volumes: 1, Operator: tc.op, ControlPlaneConnect: &cp})
		v := w.Volumes()[0]
		id, _ := w.StartMigration(v.NQN)
		m, _ := w.Migration(id)
		for w.Now() < 30 && len(ctrlsAt(w.hosts[v.Consumers[0]], v.NQN, targetEndpoints(w, m))) == 0 {
			advance(t, w, w.Now()+0.5)
		}
		cs := ctrlsAt(w.hosts[v.Consumers[0]], v.NQN, targetEndpoints(w, m))
		if len(cs) == 0 {
			t.Fatalf("%s: no migration path connected", tc.op)
		}
		if got := cs[0].sysfsCtrlLossTmo(); got != tc.want {
			t.Errorf("%s: migration path ctrl_loss_tmo %d, want %d", tc.op, got, tc.want)
		}
	}
}
