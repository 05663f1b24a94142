package sim

import (
	"strings"
	"testing"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// The host-model gaps of issue 28, one acceptance test each (the third,
// a silent stall that pause-bound counts, is in faults/stall_test.go and
// checks/stalls_test.go; docs/host-model.md "Tests of each gap"). Bounds
// come from the kernel's rules (docs/host-model.md), not from a run of the
// model.

// TestPartitionedHostSeesNoCutoverUntilKeepAlive: a host partitioned from
// its volume's source primary just before the cutover hears none of it on
// that path — its leg there stays optimized through the cutover window and
// after (the last ANA state the kernel read) — until its keep-alive
// expires, kato to 1.5 × kato after the partition (Linux 6.12
// drivers/nvme/host/core.c:1280-1293, 1372). Its other paths see the
// cutover.
func TestPartitionedHostSeesNoCutoverUntilKeepAlive(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		w := newWorld(t, Config{Seed: seed, Model: record.Model{Volumes: 1, SyncMinS: 0.5, SyncMaxS: 1}})
		advance(t, w, 1)
		v := w.Volumes()[0]
		h := w.hosts[v.Consumers[0]]
		src := primaryNode(w, v)
		id, err := w.StartMigration(v.NQN)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := w.Migration(id)
		for m.Phase != PhaseRunning && w.Now() < 60 {
			advance(t, w, w.Now()+0.01)
		}
		if m.Phase != PhaseRunning {
			t.Fatalf("seed %d: migration %s never Running (%s)", seed, id, m.Phase)
		}
		var stale *Ctrl
		for _, c := range h.ctrls {
			if c.Spec.NQN == v.NQN && c.Spec.Addr() == canonicalAddr(src.IP, w.lvstores[v.LVS].Port) && c.State == nvmeof.StateLive {
				stale = c
			}
		}
		if stale == nil || len(stale.legs) == 0 || stale.legs[0].ana != nvmeof.ANAOptimized {
			t.Fatalf("seed %d: no live optimized controller of %s at the source primary %s", seed, h.Name, src.Name)
		}
		partAt := w.Now()
		if _, err := w.Partition(h.Name, src.Name); err != nil {
			t.Fatal(err)
		}
		kato := float64(stale.Spec.Options.KeepAliveTmo)
		cutoverSeen, othersSaw := false, false
		detected := 0.0
		for detected == 0 && w.Now() < partAt+2*kato {
			advance(t, w, w.Now()+0.01)
			if m.cp >= cpCutover {
				cutoverSeen = true
			}
			if stale.State != nvmeof.StateLive {
				detected = w.Now()
				break
			}
			if len(stale.legs) == 0 || stale.legs[0].ana != nvmeof.ANAOptimized {
				ana := "no leg"
				if len(stale.legs) > 0 {
					ana = string(stale.legs[0].ana)
				}
				t.Fatalf("seed %d: t=%.2f %s at %s shows %s %.2f s after the partition, before its keep-alive expired: the cutover reached a partitioned path",
					seed, w.Now(), stale.Name(), stale.Spec.Addr(), ana, w.Now()-partAt)
			}
			for _, c := range h.ctrls {
				if c != stale && c.Spec.NQN == v.NQN && c.State == nvmeof.StateLive && m.cp == cpCutover &&
					len(c.legs) > 0 && c.legs[0].ana == nvmeof.ANAInaccessible {
					othersSaw = true
				}
			}
		}
		if !cutoverSeen || !othersSaw {
			t.Fatalf("seed %d: the cutover did not happen before the keep-alive expired (cutover %v, other paths saw it %v); the test needs it inside",
				seed, cutoverSeen, othersSaw)
		}
		if d := detected - partAt; detected == 0 || d < kato-0.011 || d > 1.5*kato+0.011 {
			t.Errorf("seed %d: %s left live %.2f s after the partition, want within [kato, 1.5 kato] = [%g, %g] s", seed, stale.Name(), d, kato, 1.5*kato)
		}
	}
}

// TestCrashLongerThanCtrlLossRemovesCSIPaths: a node that crashes and stays
// down: each CSI controller to it notices after its keep-alive (kato to
// 1.5 × kato), then makes max_reconnects = ctrl_loss_tmo / reconnect_delay
// = 30 attempts, each reconnect_delay later than the last failure and each
// failing when the kernel's SYN timers give up (3 s: one SYN retry,
// tcp.c:2051-2052; net/ipv4/tcp_timer.c), and is removed after the last:
// kato + 30 × (2 + 3) s to 1.5 × kato + 30 × (2 + 3) s after the crash.
func TestCrashLongerThanCtrlLossRemovesCSIPaths(t *testing.T) {
	w := newWorld(t, Config{Seed: 5, Model: record.Model{Volumes: 3}})
	advance(t, w, 1)
	n := w.nodes[1]
	var csi []*Ctrl
	for _, h := range w.hosts {
		for _, c := range h.ctrls {
			if c.Origin == "csi" && c.Spec.Traddr == n.IP {
				csi = append(csi, c)
			}
		}
	}
	if len(csi) == 0 {
		t.Fatal("no CSI controller to storage-2")
	}
	crashAt := w.Now()
	if _, err := w.CrashNode(n.Name); err != nil {
		t.Fatal(err)
	}
	removedAt := map[*Ctrl]float64{}
	for len(removedAt) < len(csi) && w.Now() < crashAt+600 {
		for _, e := range advance(t, w, w.Now()+0.5) {
			if e.Kind != EventKernel || !strings.HasPrefix(e.Message, "Removing ctrl") {
				continue
			}
			for _, c := range csi {
				if c.host.Name == e.Host && c.Name() == e.Controller {
					removedAt[c] = e.T
				}
			}
		}
	}
	const (
		kato, attempts, delay, syn = 5.0, 30.0, 2.0, 3.0
		slack                      = 0.1 // the error-recovery teardown, and the 0.5 s steps
	)
	lo, hi := crashAt+kato+attempts*(delay+syn), crashAt+1.5*kato+attempts*(delay+syn)+slack
	for _, c := range csi {
		at, ok := removedAt[c]
		switch {
		case !ok:
			t.Errorf("%s/%s (CSI, %s) not removed %g s after the crash; the kernel removes it within %g s", c.host.Name, c.Name(), c.Spec.Addr(), w.Now()-crashAt, hi-crashAt)
		case at < lo-slack || at > hi:
			t.Errorf("%s/%s removed %.2f s after the crash, want within [%g, %g] s", c.host.Name, c.Name(), at-crashAt, lo-crashAt, hi-crashAt)
		}
	}
}
