package sim

import (
	"testing"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// cancelBeforeContinue starts a migration of volume 0 and aborts it while
// Validating: sbcli's cancel before continue (the source tertiary's
// subsystem is deleted). It returns the migration and the tertiary.
func cancelBeforeContinue(t *testing.T, w *World) (*Migration, endpoint) {
	t.Helper()
	advance(t, w, 1)
	v := w.Volumes()[0]
	id, err := w.StartMigration(v.NQN)
	if err != nil {
		t.Fatal(err)
	}
	for ph, _ := w.MigrationPhase(id); ph != PhaseValidating && w.Now() < 60; ph, _ = w.MigrationPhase(id) {
		advance(t, w, w.Now()+0.05)
	}
	m, _ := w.Migration(id)
	ter := w.listenerEndpoints(v.NQN, m.SrcLVS)[2]
	if err := w.AbortMigration(id); err != nil {
		t.Fatal(err)
	}
	untilTerminal(t, w, id, 120)
	return m, ter
}

// TestLvolMonitorAndCSIRestore is the chain after a cancel before continue
// with sbcli's control plane (docs/sources.md §4.4, §9.4): the source
// tertiary loses the volume's subsystem, the consumer's path there goes
// (CSI ctrl_loss_tmo 60 s); the lvol monitor re-creates subsystem and
// listener within one sweep plus a cycle (≤ 330 s), and the fixed CSI
// restores the path by ip:port. Without the monitor the subsystem stays
// gone; without the CSI restore the path stays missing.
func TestLvolMonitorAndCSIRestore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		monitor bool
		csi     string
		back    bool // subsystem back on the tertiary
		path    bool // the consumer has a live controller there again
	}{
		{"neither", false, CSIRestoreOff, false, false},
		{"monitor only", true, CSIRestoreOff, true, false},
		{"monitor and fixed CSI", true, CSIRestoreByEndpoint, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, Config{Seed: 4, Model: record.Model{Volumes: 1, Operator: OperatorFixed, ControlPlane: ControlPlaneSbcli, LvolMonitor: tc.monitor, CSIRestore: tc.csi}})
			_, ter := cancelBeforeContinue(t, w)
			v := w.Volumes()[0]
			if _, ok := ter.node.Subsystem(v.NQN); ok {
				t.Fatalf("sbcli cancel left the subsystem on the source tertiary %s", ter.node.Name)
			}
			cancelled := w.Now()
			advance(t, w, cancelled+LvolMonitorSweepS+LvolMonitorCycleS+70)
			_, back := ter.node.Subsystem(v.NQN)
			if back != tc.back {
				t.Errorf("subsystem back on %s 400 s after the cancel: %v, want %v (monitor repairs %d)", ter.node.Name, back, tc.back, w.MonitorRepairs())
			}
			live := 0
			for _, c := range w.hosts[v.Consumers[0]].ctrls {
				if c.Spec.NQN == v.NQN && c.Spec.Addr() == ter.addr() && c.State == nvmeof.StateLive {
					live++
				}
			}
			if (live == 1) != tc.path {
				t.Errorf("live controllers at %s: %d, want path back %v (CSI restores %d)", ter.addr(), live, tc.path, w.CSIRestores())
			}
		})
	}
}
