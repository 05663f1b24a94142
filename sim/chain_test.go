package sim

import (
	"testing"

	"github.com/fiomig/fiomig/nvmeof"
)

// TestCancelChain is research/incident.md §6.2's mechanism chain after a
// cancel before continue with sbcli's control plane, event by event, for
// both operators:
//  1. prefix: at the target primary and secondary (overlap nodes: only the
//     listener removed) the validation's controllers are left connecting
//     and their reconnects are rejected "does not allow host"; at the
//     target tertiary (no branch in _cleanup_created) the listener stays
//     and the controller is left live, parked (every leg inaccessible);
//  2. fixed: none of those survive (the abort releases them);
//  3. both lose the volume's path at the source tertiary (its subsystem
//     deleted: "Could not find subsystem", not counted as "does not allow");
//  4. prefix's leaks carry the control plane's ctrl_loss_tmo 3600, the
//     volume's own paths the CSI driver's 60.
func TestCancelChain(t *testing.T) {
	for _, op := range []string{OperatorPrefix, OperatorFixed} {
		t.Run(op, func(t *testing.T) {
			w := newWorld(t, Config{Seed: 5, Volumes: 1, Operator: op, ControlPlane: ControlPlaneSbcli})
			advance(t, w, 1)
			v := w.Volumes()[0]
			h := w.hosts[v.Consumers[0]]
			id, err := w.StartMigration(v.NQN)
			if err != nil {
				t.Fatal(err)
			}
			m, _ := w.Migration(id)
			dst := targetEndpoints(w, m)
			for w.Now() < 60 { // until the validation connected every target path
				advance(t, w, w.Now()+0.05)
				n := 0
				for _, c := range ctrlsAt(h, v.NQN, dst) {
					if c.State == nvmeof.StateLive {
						n++
					}
				}
				if n == 3 {
					break
				}
			}
			if ph, _ := w.MigrationPhase(id); ph != PhaseValidating {
				t.Fatalf("phase %s at %.1f s, want Validating with the target paths connected", ph, w.Now())
			}
			srcTer := w.listenerEndpoints(v.NQN, m.SrcLVS)[2]
			notAllowed := int64(0)
			for _, n := range w.nodes {
				notAllowed += n.notAllowed
			}
			if err := w.AbortMigration(id); err != nil {
				t.Fatal(err)
			}
			untilTerminal(t, w, id, 120)
			advance(t, w, w.Now()+20)

			got := map[string]*Ctrl{}
			for _, c := range ctrlsAt(h, v.NQN, dst) {
				got[c.Spec.Addr()] = c
			}
			after := int64(0)
			for _, n := range w.nodes {
				after += n.notAllowed
			}
			switch op {
			case OperatorPrefix:
				for k, ep := range dst {
					c := got[ep]
					if c == nil {
						t.Fatalf("prefix: no leak at %s (target %d)", ep, k)
					}
					if c.Spec.Options.CtrlLossTmo != 3600 {
						t.Errorf("prefix leak %s: ctrl_loss_tmo %d, want the control plane's 3600", ep, c.Spec.Options.CtrlLossTmo)
					}
					switch {
					case k < 2 && c.State != nvmeof.StateConnecting:
						t.Errorf("prefix leak at %s (target %d): %s, want connecting", ep, k, c.State)
					case k == 2 && (c.State != nvmeof.StateLive || serving(c)):
						t.Errorf("prefix leak at the target tertiary %s: %s serving=%v, want live and parked", ep, c.State, serving(c))
					}
				}
				if after-notAllowed < 2 {
					t.Errorf("prefix: %d \"does not allow host\" rejections after the cancel, want the connecting leaks' reconnects", after-notAllowed)
				}
			case OperatorFixed:
				if len(got) != 0 {
					t.Errorf("fixed: %d validation controllers left at the targets, want 0 (released)", len(got))
				}
			}
			if _, ok := srcTer.node.Subsystem(v.NQN); ok {
				t.Errorf("%s: the source tertiary %s still holds the subsystem; sbcli's cancel deletes it", op, srcTer.node.Name)
			}
			for _, c := range ctrlsAt(h, v.NQN, []string{srcTer.addr()}) {
				if c.State == nvmeof.StateLive {
					t.Errorf("%s: the path at the source tertiary %s is still live", op, srcTer.addr())
				}
				if c.Spec.Options.CtrlLossTmo != 60 {
					t.Errorf("%s: the volume path at %s has ctrl_loss_tmo %d, want the CSI driver's 60", op, srcTer.addr(), c.Spec.Options.CtrlLossTmo)
				}
			}
		})
	}
}

// serving: some leg of c is optimized or non-optimized.
func serving(c *Ctrl) bool {
	for _, l := range c.legs {
		if l.ana == nvmeof.ANAOptimized || l.ana == nvmeof.ANANonOptimized {
			return true
		}
	}
	return false
}
