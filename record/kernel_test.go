package record

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseKernel: the host kernel's lines the checks count, as the
// simulator prints them (sim/kernel.go, sim/target.go, sim/hostnet.go) and
// as drivers/nvme/host prints them, typed; other lines are no event.
func TestParseKernel(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want KernelEvent
	}{
		{`new ctrl: NQN "nqn.a:lvol:1", addr 10.0.0.1:4426, hostnqn: nqn.h`, KernelEvent{Kind: KernelNewCtrl, NQN: "nqn.a:lvol:1", Addr: "10.0.0.1:4426"}},
		{`new ctrl: NQN "nqn.a", addr [fd00::1]:4420`, KernelEvent{Kind: KernelNewCtrl, NQN: "nqn.a", Addr: "[fd00::1]:4420"}},
		{`Removing controller (-1)...`, KernelEvent{Kind: KernelRemoved}},
		{`Removing ctrl: NQN "nqn.a"`, KernelEvent{Kind: KernelDisconnected}},
		{`Failed reconnect attempt 101/1800`, KernelEvent{Kind: KernelReconnectFailed, Attempt: 101}},
		{`Successfully reconnected (attempt 3/1800)`, KernelEvent{Kind: KernelReconnected}},
		{`Connect Invalid Data Parameter, subsysnqn "nqn.a"`, KernelEvent{Kind: KernelSubsysNotFound, NQN: "nqn.a"}},
		{`I/O tag 0 (0000) type 4 opcode 0x18 (Keep Alive) QID 0 timeout`, KernelEvent{Kind: KernelKeepAliveTimeout}},
		{`I/O tag 7 (1007) type 4 opcode 0x02 (Read) QID 3 timeout`, KernelEvent{}},
		{`Reconnecting in 2 seconds...`, KernelEvent{}},
		{`new ctrl: garbage`, KernelEvent{}},
		{``, KernelEvent{}},
	} {
		if d := cmp.Diff(tc.want, ParseKernel(tc.msg)); d != "" {
			t.Errorf("%q (-want +got):\n%s", tc.msg, d)
		}
	}
	if e := (Line{Kind: KindIO, Message: `Removing controller (-1)...`}).Event(); e.Kind != "" {
		t.Errorf("an io line is a kernel event: %+v", e)
	}
}
