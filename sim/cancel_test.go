package sim

import (
	"testing"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

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
			w := newWorld(t, Config{Seed: 1, Model: record.Model{Volumes: 1, Operator: tc.op, ReleaseSources: tc.release}})
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
