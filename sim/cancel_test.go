package sim

import (
	"testing"

	"github.com/fiomig/fiomig/nvmeof"
)

// An abort after continue goes through the control plane's cleanup_target
// (sbcli cleanup_subsystem_or_ns): on a node that held the subsystem before
// the migration only the volume's namespace is removed and every listener
// stays, so the host's controllers there stay live and lose their legs. On
// 3 nodes with 3-way HA every target node is such a node.
func TestAbortAfterContinueLeavesLiveControllersWithoutNamespaces(t *testing.T) {
	w := newWorld(t, Config{Seed: 2, Volumes: 1})
	advance(t, w, 1)
	v := w.Volumes()[0]
	id, _ := w.StartMigration(v.NQN)
	for ph, _ := w.MigrationPhase(id); ph != PhaseRunning && w.Now() < 60; ph, _ = w.MigrationPhase(id) {
		advance(t, w, w.Now()+0.05)
	}
	if ph, _ := w.MigrationPhase(id); ph != PhaseRunning {
		t.Fatalf("phase %s at %.1f s, want Running", ph, w.Now())
	}
	m, _ := w.Migration(id)
	if err := w.AbortMigration(id); err != nil {
		t.Fatal(err)
	}
	advance(t, w, w.Now()+5)
	for _, ep := range w.listenerEndpoints(v.NQN, m.DstLVS) {
		ts, ok := ep.node.Subsystem(v.NQN)
		if !ok {
			t.Fatalf("subsystem gone from %s, want it kept (it predates the migration)", ep.node.Name)
		}
		if _, has := ts.listener(ep.port); !has {
			t.Errorf("target listener %s removed, want it kept", ep.addr())
		}
		if len(ts.NSIDs) != 0 {
			t.Errorf("%s still has namespaces %v, want the volume's removed", ep.node.Name, ts.NSIDs)
		}
	}
	h := w.hosts[v.Consumers[0]]
	n := 0
	for _, c := range h.ctrls {
		if c.Spec.NQN != v.NQN {
			continue
		}
		n++
		if c.State != nvmeof.StateLive || len(c.legs) != 0 {
			t.Errorf("%s at %s: %s with %d legs, want live with none", c.Name(), c.Spec.Addr(), c.State, len(c.legs))
		}
	}
	if n != 6 {
		t.Errorf("%d controllers of the volume on %s, want 6 (3 source, 3 target paths)", n, h.Name)
	}
}

// After a Completed migration neither operator touches a host (OP
// 36c00741 and 5aa711cc: reconcileRunning only patches the status; the fix
// releases only in cancelAndFail and reconcileAbort), so the source
// controllers stay and, their listeners removed by the control plane,
// reconnect into rejected CONNECTs until ctrl_loss_tmo; only fiomig's extra
// Config.ReleaseSources (fixed variant) releases them first.
func TestSourcePathsAfterCompleted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		op      string
		release bool
		left    int
	}{
		{"prefix", OperatorPrefix, false, 3},
		{"prefix ignores release-sources", OperatorPrefix, true, 3},
		{"fixed as sourced", OperatorFixed, false, 3},
		{"fixed with release-sources", OperatorFixed, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, Config{Seed: 1, Volumes: 1, Operator: tc.op, ReleaseSources: tc.release})
			advance(t, w, 1)
			v := w.Volumes()[0]
			src := w.Endpoints(v.NQN)
			id, _ := w.StartMigration(v.NQN)
			untilTerminal(t, w, id, 300)
			if ph, _ := w.MigrationPhase(id); ph != PhaseCompleted {
				t.Fatalf("%s ended %s, want Completed", id, ph)
			}
			advance(t, w, w.Now()+10)
			left := ctrlsAt(w.hosts[v.Consumers[0]], v.NQN, src)
			if len(left) != tc.left {
				t.Fatalf("%d source controllers left 10 s after Completed, want %d", len(left), tc.left)
			}
			for _, c := range left {
				if c.State != nvmeof.StateConnecting {
					t.Errorf("source %s %s, want connecting (listener removed)", c.Spec.Addr(), c.State)
				}
			}
		})
	}
}
