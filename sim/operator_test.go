package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
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
			w := newWorld(t, Config{Seed: 5, Model: record.Model{Volumes: 2, Operator: op}})
			advance(t, w, 1)
			m := failFirstValidation(t, w)
			h := w.hosts[m.Vol.Consumers[0]]
			eps := targetEndpoints(w, m)
			if got := w.Endpoints(m.Vol.NQN); len(got) != 3 || containsStr(got, eps[0]) {
				t.Errorf("published after the failure %v: want the 3 source endpoints only", got)
			}
			advance(t, w, w.Now()+5)
			// Both variants: the cancel deleted the subsystem on the source
			// tertiary node, so the volume's own path there reconnects into
			// rejected CONNECTs (the control plane, not the operator).
			ter := w.listenerEndpoints(m.Vol.NQN, m.SrcLVS)[2]
			if ts := ctrlsAt(h, m.Vol.NQN, []string{ter.addr()}); len(ts) != 1 || ts[0].State != nvmeof.StateConnecting {
				t.Errorf("source tertiary path %s after the cancel: %d controllers, want 1 connecting", ter.addr(), len(ts))
			}
			if _, ok := ter.node.Subsystem(m.Vol.NQN); ok {
				t.Errorf("subsystem still on the source tertiary node %s after the cancel", ter.node.Name)
			}
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
				// three controllers, one attempt every 2 s each: the two
				// leaked target paths and the source tertiary path, whose
				// subsystem the cancel deleted (sbcli _cleanup_created)
				if d := rej2 - rej; d < 85 || d > 95 {
					t.Errorf("prefix: %d rejected CONNECTs in 60 s, want about 90", d)
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

// TestLeakFailsLaterValidationOnlyWithPrefix: after a failed validation the
// cancel has deleted the volume's subsystem on its source tertiary node
// (sbcli _cleanup_created), which on 3 nodes is in every later target set,
// so the volume's next migration fails in both variants. With prefix a
// migration to the same target fails on the controller the first one
// leaked at that node (connecting: ensure waits 10 s for the existing
// controller, which cannot reconnect there, atlas multipath.go:120-135); to
// another target, and always with fixed (which released it), the connect
// there is rejected ("Could not find subsystem"), ensure goes on since other
// paths are live, and verify fails on the missing path: "no controller — the
// connect did not take effect" (docs/sources.md §4.4). Verify asks Inspect
// without a target list, so a leak at another target's endpoint fails
// nothing.
func TestLeakFailsLaterValidationOnlyWithPrefix(t *testing.T) {
	for _, op := range []string{OperatorPrefix, OperatorFixed} {
		t.Run(op, func(t *testing.T) {
			sawSame, sawDifferent := false, false
			for seed := int64(1); seed <= 6; seed++ {
				w := newWorld(t, Config{Seed: seed, Model: record.Model{Volumes: 1, Operator: op}})
				advance(t, w, 1)
				m1 := failFirstValidation(t, w)
				id2, err := w.StartMigration(m1.Vol.NQN)
				if err != nil {
					t.Fatal(err)
				}
				untilTerminal(t, w, id2, 300)
				m2, _ := w.Migration(id2)
				if m2.Phase != PhaseFailed || m2.Failure == nil {
					t.Errorf("seed %d: %s ended %s, want Failed (subsystem gone from the source tertiary)", seed, id2, m2.Phase)
					continue
				}
				leakCaused := m2.Failure.Origin == m1.ID
				noEffect := strings.Contains(m2.Failure.Detail, "the connect did not take effect")
				lost := w.listenerEndpoints(m1.Vol.NQN, m1.SrcLVS)[2].node // its subsystem deleted
				same := m2.DstLVS == m1.DstLVS
				sawSame, sawDifferent = sawSame || same, sawDifferent || !same
				switch {
				case op == OperatorPrefix && same:
					if !leakCaused || m2.Failure.State != string(nvmeof.StateConnecting) {
						t.Errorf("seed %d prefix, same target: failure %+v, want the connecting controller %s leaked", seed, m2.Failure, m1.ID)
					}
				default:
					if leakCaused || !noEffect || !strings.HasPrefix(m2.Failure.Endpoint, lost.IP+":") {
						t.Errorf("seed %d %s: failure %+v, want no controller at %s (subsystem deleted there), not %s's leak", seed, op, m2.Failure, lost.Name, m1.ID)
					}
				}
			}
			if !sawSame || !sawDifferent {
				t.Fatalf("seeds 1-6 migrated to the same target %v, another %v: want both", sawSame, sawDifferent)
			}
		})
	}
}

func TestKillValidationJob(t *testing.T) {
	for _, op := range []string{OperatorPrefix, OperatorFixed} {
		t.Run(op, func(t *testing.T) {
			w := newWorld(t, Config{Seed: 3, Model: record.Model{Volumes: 1, ConsumersPerVolume: 2, Operator: op}})
			advance(t, w, 1)
			v := w.Volumes()[0]
			id, _ := w.StartMigration(v.NQN)
			m, _ := w.Migration(id)
			advance(t, w, w.Now()+0.01)
			eps := targetEndpoints(w, m)
			// Wait until one host's Job has validated while the other's has
			// not connected anything yet; then CONNECTs to the target
			// tertiary get no answer, so the other Job connects the primary
			// and secondary and blocks on the tertiary (its SYN gets no answer): it
			// is killed mid-attempt there.
			var victim, other *Host
			var vj *job
			for victim == nil && w.Now() < 10 {
				advance(t, w, w.Now()+0.05)
				for k, j := range m.jobs {
					o := m.jobs[1-k]
					if j.state == jobRunning && o.state == jobSucceeded && len(ctrlsAt(j.h, v.NQN, eps)) == 0 {
						victim, other, vj = j.h, o.h, j
					}
				}
			}
			if victim == nil {
				t.Fatalf("no moment with one Job validated and the other not yet connected (seed 3)")
			}
			if _, err := w.DropConnects(eps[2]); err != nil {
				t.Fatal(err)
			}
			for len(ctrlsAt(victim, v.NQN, eps)) < 2 && w.Now() < 20 {
				advance(t, w, w.Now()+0.05)
			}
			if vj.state != jobRunning {
				t.Fatalf("victim's Job %v before it blocked on the tertiary", vj.state)
			}
			ev, err := w.KillValidationJob(id, victim.Name)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(ev["target_path_controllers"], "=live") != 2 {
				t.Errorf("evidence %v: want the victim's two live target-path controllers", ev)
			}
			untilTerminal(t, w, id, 60)
			if m.Phase != PhaseFailed || !strings.Contains(m.Reason, "killed") {
				t.Fatalf("%s %q, want Failed (Job killed)", m.Phase, m.Reason)
			}
			if _, err := w.StopDroppingConnects(eps[2]); err != nil {
				t.Fatal(err)
			}
			advance(t, w, w.Now()+5)
			nOther := len(ctrlsAt(other, v.NQN, eps))
			nVictim := len(ctrlsAt(victim, v.NQN, eps))
			if op == OperatorFixed && nOther != 0 {
				t.Errorf("fixed: the other validated host keeps %d target paths, want them released", nOther)
			}
			if op == OperatorPrefix && (nOther != 3 || nVictim != 2) {
				t.Errorf("prefix: target paths left victim %d other %d, want 2 and 3 (nothing released)", nVictim, nOther)
			}
			// The killed Job released nothing; its two paths lost their
			// listeners to the cancel and reconnect into rejections: fixed
			// gave them ctrl_loss_tmo 60, prefix 3600.
			advance(t, w, w.Now()+70)
			nVictim = len(ctrlsAt(victim, v.NQN, eps))
			if op == OperatorFixed && nVictim != 0 {
				t.Errorf("fixed: %d target paths of the killed Job's host after 75 s, want 0 (gone after ctrl_loss_tmo 60)", nVictim)
			}
			if op == OperatorPrefix && nVictim != 2 {
				t.Errorf("prefix: %d target paths of the killed Job's host after 75 s, want 2 (ctrl_loss_tmo 3600)", nVictim)
			}
		})
	}
}

func TestAbortMigration(t *testing.T) {
	w := newWorld(t, Config{Seed: 4, Model: record.Model{Volumes: 1}})
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
	// The cancel removes the target primary's and secondary's listeners (or
	// their subsystem); the target tertiary's listener stays (sbcli
	// _cleanup_created handles only the primary and the secondary).
	for k, ep := range w.listenerEndpoints(v.NQN, m.DstLVS) {
		has := false
		if ts, ok := ep.node.Subsystem(v.NQN); ok {
			_, has = ts.listener(ep.port)
		}
		if k < 2 && has {
			t.Errorf("target listener %s still there after abort", ep.addr())
		}
		if k == 2 && !has {
			t.Errorf("target tertiary listener %s gone after abort, want it left", ep.addr())
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
		w := newWorld(t, Config{Seed: 1, ControlPlaneConnect: &cp, Model: record.Model{Volumes: 1, Operator: tc.op}})
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

// TestEnsureWaitsForExistingController: a Job's ensure does not reconnect a
// target path whose controller already exists; it waits up to 10 s for it
// to go live (atlas-lib nvmeof/multipath.go:120-135, fabrics.go:31
// defaultPathTimeout), in both operators. A leftover controller at the
// target primary's address (connecting: no listener there) reconnects at
// its next attempt once CreateMigration adds the listener, so the Job passes
// in its first round with that same controller. When the leftover's
// reconnects are rejected, each round waits the full 10 s before verify
// fails on it, so the Job fails no sooner than 3 × 10 s + 2 × 2 s after it
// started (without the wait: within a few seconds).
func TestEnsureWaitsForExistingController(t *testing.T) {
	for _, op := range []string{OperatorPrefix, OperatorFixed} {
		for _, reject := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reject=%v", op, reject), func(t *testing.T) {
				w := newWorld(t, Config{Seed: 7, Model: record.Model{Volumes: 1, Operator: op}})
				advance(t, w, 1)
				v := w.Volumes()[0]
				h := w.hosts[v.Consumers[0]]
				dst := (v.LVS + 1) % len(w.lvstores)
				prim := w.listenerEndpoints(v.NQN, dst)[0]
				// reconnect_delay 8 s: the leftover is still connecting when
				// the Job reaches it (it starts 1-3 s after CreateMigration).
				opts := ControlPlaneConnectOptions
				opts.ReconnectDelay = 8
				name, err := w.LeaveLeftoverController(h.Name, v.NQN, prim.addr(), opts)
				if err != nil {
					t.Fatal(err)
				}
				leftover, _ := h.Controller(name)
				if reject {
					if _, err := w.RejectConnects(prim.addr(), h.Name); err != nil {
						t.Fatal(err)
					}
				}
				id, err := w.StartMigrationTo(v.NQN, dst)
				if err != nil {
					t.Fatal(err)
				}
				var validating, jobStart float64
				for w.Now() < 200 {
					advance(t, w, w.Now()+0.05)
					m, _ := w.Migration(id)
					if validating == 0 && m.Phase == PhaseValidating {
						validating = w.Now()
					}
					if m.Phase != PhasePending && m.Phase != PhaseValidating {
						break
					}
				}
				m, _ := w.Migration(id)
				jobStart = validating // the Job starts 1-3 s after this
				if !reject {
					if m.Phase != PhaseRunning && m.Phase != PhaseCompleted {
						t.Fatalf("phase %s (%+v), want the validation passed", m.Phase, m.Failure)
					}
					if r := m.jobs[0].round; r != 0 {
						t.Errorf("the Job passed in round %d, want the first (ensure waited for the leftover to reconnect)", r+1)
					}
					if c, ok := h.Controller(name); !ok || c != leftover || c.State != nvmeof.StateLive {
						t.Errorf("leftover %s: want the same controller, live (waited for, not replaced)", name)
					}
					return
				}
				if m.Phase != PhaseFailed || m.Failure == nil {
					t.Fatalf("phase %s, want Failed on the leftover that cannot reconnect", m.Phase)
				}
				if m.Failure.Controller != name || m.Failure.State != string(nvmeof.StateConnecting) || m.Failure.Origin != "leftover" {
					t.Errorf("failure %+v, want the connecting leftover %s", m.Failure, name)
				}
				if d := w.Now() - jobStart; d < 3*pathTimeoutS+2*validationRetryDelayS {
					t.Errorf("failed %.1f s after Validating, want >= %g s (three rounds, each waiting %g s)", d, 3*pathTimeoutS+2*validationRetryDelayS, pathTimeoutS)
				}
			})
		}
	}
}

// TestFailedReasonAndDetailsNameOneJob: when several validation Jobs fail
// close together, the migration's Failed line must name one Job in both its
// reason ("NVMe path validation failed on <host>: <detail>") and its
// details (host, detail): the operator cancels on the Failed Job it found
// (simplyblock-operator pollValidationJobs → cancelAndFail("NVMe path
// validation failed on node <n>"), docs/sources.md §5.2), and the
// cause classifier reads the details. Every Job fails here: CONNECTs to
// the target primary get no answer.
func TestFailedReasonAndDetailsNameOneJob(t *testing.T) {
	for seed := int64(1); seed <= 12; seed++ {
		w := newWorld(t, Config{Seed: seed, Model: record.Model{Volumes: 1, Hosts: 3, ConsumersPerVolume: 3}})
		advance(t, w, 1)
		v := w.Volumes()[0]
		dst := (v.LVS + 1) % len(w.lvstores)
		if _, err := w.DropConnects(w.listenerEndpoints(v.NQN, dst)[0].addr()); err != nil {
			t.Fatal(err)
		}
		id, err := w.StartMigrationTo(v.NQN, dst)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range untilTerminal(t, w, id, 600) {
			if e.Kind != EventPhase || e.Phase != PhaseFailed {
				continue
			}
			want := fmt.Sprintf("NVMe path validation failed on %s: %s", e.Details["host"], e.Details["detail"])
			if e.Reason != want {
				t.Errorf("seed %d: reason %q, details name %q", seed, e.Reason, want)
			}
		}
	}
}
