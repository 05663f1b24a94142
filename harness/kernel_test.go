package harness

import (
	"context"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/record"
)

// TestSimulatorKernelLinesParse: every kernel line the simulator prints
// that the checks count is typed by record.ParseKernel — the text is
// formatted in sim and parsed only there, so the two must agree. A run of
// the main job without the source release (controllers created, removed
// after their reconnects, reconnected, answered "Could not find
// subsystem") is checked line by line.
func TestSimulatorKernelLinesParse(t *testing.T) {
	s := DefaultSpec()
	s.Out, s.Params.Migrations = t.TempDir(), 6
	s.Params.Model.ReleaseSources = false
	kinds := map[string]int{}
	var bad []string
	res, err := Run(context.Background(), s, Options{SummaryOnly: true, OnLine: func(l record.Line) {
		if l.Kind != record.KindKernel {
			return
		}
		e := l.Event()
		kinds[e.Kind]++
		for prefix, kind := range map[string]string{"new ctrl": record.KernelNewCtrl, "Removing controller": record.KernelRemoved,
			"Removing ctrl": record.KernelDisconnected, "Failed reconnect attempt": record.KernelReconnectFailed,
			"Successfully reconnected": record.KernelReconnected, "Connect Invalid Data Parameter": record.KernelSubsysNotFound} {
			if strings.HasPrefix(l.Message, prefix) && e.Kind != kind && !(prefix == "Removing ctrl" && e.Kind == record.KernelRemoved) {
				bad = append(bad, l.Message)
			}
		}
		if e.Kind == record.KernelNewCtrl && (e.NQN == "" || e.Addr == "") {
			bad = append(bad, l.Message)
		}
	}})
	if err != nil || res.Interrupted {
		t.Fatalf("run: %v (interrupted %v)", err, res.Interrupted)
	}
	for _, b := range bad {
		t.Errorf("kernel line not typed as its text says: %q", b)
	}
	for _, k := range []string{record.KernelNewCtrl, record.KernelRemoved, record.KernelReconnectFailed} {
		if kinds[k] == 0 {
			t.Errorf("no %s line in a run without the source release (kinds seen: %v)", k, kinds)
		}
	}
}
