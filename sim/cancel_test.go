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

// After a Completed migration the pre-fix operator touches no host
// (simplyblock-operator reconcileRunning only patches the status), so the
// source controllers stay and, their listeners removed by the control
// plane, reconnect into rejected CONNECTs; fixed releases them first.
func TestSourcePathsAfterCompleted(t *testing.T) {
	for _, op := range []string{OperatorPrefix, OperatorFixed} {
		t.Run(op, func(t *testing.T) {
			w := newWorld(t, Config{Seed: 1, Volumes: 1, Operator: op})
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
			switch op {
			case OperatorPrefix:
				if len(left) != 3 {
					t.Fatalf("prefix: %d source controllers left, want 3", len(left))
				}
				for _, c := range left {
					if c.State != nvmeof.StateConnecting {
						t.Errorf("prefix: source %s %s, want connecting (listener removed)", c.Spec.Addr(), c.State)
					}
				}
			case OperatorFixed:
				if len(left) != 0 {
					t.Errorf("fixed: %d source controllers left, want 0 (released)", len(left))
				}
			}
		})
	}
}
