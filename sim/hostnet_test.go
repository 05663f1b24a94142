package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// TestSYNGiveUp: the kernel's SYN retransmit timer as synTimers runs it.
// The tcp_syn_retries 6 rows are the kernels' own documentation (6.12
// Documentation/networking/ip-sysctl.rst:905-911: last retransmission at
// 67 s, give-up at 131 s with tcp_syn_linear_timeouts 4; 6.1.192
// ip-sysctl.rst:880-885: 63 s and 127 s); the one-retry rows are the
// NVMe/TCP host's socket (tcp.c:2051-2052), 3 s on both kernels (measured
// 3.03-3.08 s on Linux 6.18 with linear timeouts 4 and 0).
func TestSYNGiveUp(t *testing.T) {
	for _, tc := range []struct {
		syncnt, linear int
		giveUp         float64
		retransmits    []float64
	}{
		{6, 4, 131, []float64{1, 2, 3, 4, 5, 7, 11, 19, 35, 67}},
		{6, 0, 127, []float64{1, 3, 7, 15, 31, 63}},
		{1, 4, 3, []float64{1, 2}},
		{1, 0, 3, []float64{1}},
	} {
		giveUp, retrans := synTimers(tc.syncnt, tc.linear)
		if giveUp != tc.giveUp || fmt.Sprint(retrans) != fmt.Sprint(tc.retransmits) {
			t.Errorf("syncnt %d linear %d: give up at %g s, retransmits %v; want %g s, %v", tc.syncnt, tc.linear, giveUp, retrans, tc.giveUp, tc.retransmits)
		}
	}
	for _, k := range []string{HostKernel612, HostKernel61} {
		w := newWorld(t, Config{Seed: 1, Model: record.Model{Volumes: 1, HostKernel: k}})
		if got := w.synTimeoutS(); got != 3 {
			t.Errorf("kernel %s: SYN timeout %g s, want 3", k, got)
		}
	}
	if _, err := New(Config{Model: record.Model{HostKernel: "5.4"}}); err == nil || !strings.Contains(err.Error(), "host_kernel") {
		t.Errorf("HostKernel 5.4: err %v, want a host kernel error", err)
	}
}

// firstConnectWorld is a world whose host 0 connects volume 0 at another
// lvstore's port of its secondary node, where the subsystem gets a
// listener: the connect of a migration target path.
func firstConnectWorld(t *testing.T, kernel string) (*World, *Host, ConnectSpec) {
	t.Helper()
	w := newWorld(t, Config{Seed: 1, Model: record.Model{Volumes: 1, HostKernel: kernel}})
	advance(t, w, 1)
	v := w.Volumes()[0]
	other := w.lvstores[(v.LVS+1)%len(w.lvstores)]
	n := w.nodes[other.Nodes[0]]
	n.ensureSubsystem(v).addListener(other.Port, nvmeof.ANAInaccessible)
	return w, w.hosts[v.Consumers[0]], ConnectSpec{NQN: v.NQN, Traddr: n.IP, Trsvcid: fmt.Sprint(other.Port), Options: ControlPlaneConnectOptions}
}

// TestFirstConnectShownConnecting: while a first connect waits for its
// SYN-ACK the controller is in sysfs as connecting, outside every
// subsystem directory and without src_addr (Linux 6.12
// drivers/nvme/host/tcp.c:3203-3211, core.c:4958-4985), and nvmeof reads it
// so; an identical connect meanwhile is not "already connected"
// (tcp.c:3214-3216); when the SYN timers give up it goes away.
func TestFirstConnectShownConnecting(t *testing.T) {
	w, h, spec := firstConnectWorld(t, HostKernel612)
	if _, err := w.DropConnects(spec.Addr()); err != nil {
		t.Fatal(err)
	}
	before := len(h.ctrls)
	var got error
	returned := false
	h.connectAsync(spec, func(c *Ctrl, err error) { got, returned = err, true })
	if returned || len(h.ctrls) != before+1 {
		t.Fatalf("connect returned %v at once / %d controllers, want it waiting with one more controller", returned, len(h.ctrls))
	}
	checkRoundTrip(t, w, "first connect waiting")
	var shown *nvmeof.Controller
	for _, s := range readHost(t, h).SubsystemsByNQN(spec.NQN) {
		for k, c := range s.Controllers {
			if c.Endpoint() == spec.Addr() {
				shown = &s.Controllers[k]
			}
		}
	}
	if shown == nil || shown.State != nvmeof.StateConnecting || shown.Address.SrcAddr != "" || len(shown.Legs) != 0 {
		t.Fatalf("nvmeof shows %+v for the first connect, want connecting, no src_addr, no legs", shown)
	}
	if _, err := h.Connect(nvmeof.Target{NQN: spec.NQN, Traddr: spec.Traddr, Trsvcid: spec.Trsvcid}); err == nil {
		t.Fatal("second connect succeeded through a dropped SYN")
	} else if strings.Contains(err.Error(), "already") {
		t.Fatalf("second identical connect: %v; a first connect still running blocks nothing", err)
	}
	evs := advance(t, w, w.Now()+2.99)
	if returned {
		t.Fatalf("connect returned after %g s, want 3 s", 2.99)
	}
	evs = append(evs, advance(t, w, w.Now()+0.02)...)
	if !returned || got == nil || len(h.ctrls) != before {
		t.Fatalf("after 3 s: returned %v err %v, %d controllers; want a failed connect and the controller gone", returned, got, len(h.ctrls))
	}
	if !hasKernelLine(evs, h.Name, synTimeoutMsg) {
		t.Errorf("no %q kernel line", synTimeoutMsg)
	}
	checkRoundTrip(t, w, "after the first connect failed")
}

// TestSYNRetransmissionConnects: a drop rule that ends 1.5 s into a
// connect lets the 6.12 kernel's second retransmission (2 s) through; the
// 6.1 kernel retransmits only at 1 s and gives up at 3 s.
func TestSYNRetransmissionConnects(t *testing.T) {
	for _, tc := range []struct {
		kernel string
		live   bool
	}{{HostKernel612, true}, {HostKernel61, false}} {
		w, h, spec := firstConnectWorld(t, tc.kernel)
		w.DropConnects(spec.Addr())
		var gotC *Ctrl
		var gotErr error
		h.connectAsync(spec, func(c *Ctrl, err error) { gotC, gotErr = c, err })
		start := w.Now()
		advance(t, w, start+1.5)
		w.StopDroppingConnects(spec.Addr())
		advance(t, w, start+2.01)
		if tc.live && (gotC == nil || gotC.State != nvmeof.StateLive) {
			t.Errorf("kernel %s: connect %v err %v 2 s in, want live after the retransmission at 2 s", tc.kernel, gotC, gotErr)
		}
		advance(t, w, start+3.01)
		if !tc.live && (gotC != nil || gotErr == nil) {
			t.Errorf("kernel %s: connect %v err %v, want failed at 3 s (no retransmission after 1 s)", tc.kernel, gotC, gotErr)
		}
	}
}

func hasKernelLine(evs []Event, host, msg string) bool {
	for _, e := range evs {
		if e.Kind == EventKernel && e.Host == host && e.Message == msg {
			return true
		}
	}
	return false
}

// partitionedPrimary partitions volume 0's consumer from the volume's
// primary node and returns the host and its controller there.
func partitionedPrimary(t *testing.T, w *World) (*Host, *Ctrl) {
	t.Helper()
	v := w.Volumes()[0]
	h := w.hosts[v.Consumers[0]]
	n := primaryNode(w, v)
	c := one(t, h, v.NQN, canonicalAddr(n.IP, w.lvstores[v.LVS].Port))
	if _, err := w.Partition(h.Name, n.Name); err != nil {
		t.Fatal(err)
	}
	return h, c
}

// TestSilentPathHearsNothingUntilHeal: on a partitioned path no ANA
// notice, namespace notice or FIN reaches the controller; the ones the
// target sent arrive when the partition heals before the keep-alive
// expires.
func TestSilentPathHearsNothingUntilHeal(t *testing.T) {
	t.Run("notices", func(t *testing.T) {
		w := newWorld(t, Config{Seed: 1, Model: record.Model{Volumes: 1, NamespacesPerVolume: 2}})
		advance(t, w, 1)
		h, c := partitionedPrimary(t, w)
		ts := c.ts
		ts.setANA(c.port, nvmeof.ANAInaccessible)
		ts.removeNS(ts.NSIDs[0], w.rng)
		advance(t, w, w.Now()+2)
		if len(c.legs) != 2 || c.legs[0].ana != nvmeof.ANAOptimized || c.State != nvmeof.StateLive {
			t.Fatalf("silent %s: %s with %d legs (%v), want live with both legs optimized", c.Name(), c.State, len(c.legs), c.legs[0].ana)
		}
		w.Heal(h.Name, ts.Node.Name)
		advance(t, w, w.Now()+0.5)
		if len(c.legs) != 1 || c.legs[0].ana != nvmeof.ANAInaccessible {
			t.Errorf("after the heal %s has %d legs, first %v; want the rescan's one leg, inaccessible", c.Name(), len(c.legs), c.legs[0].ana)
		}
	})
	t.Run("close", func(t *testing.T) {
		w := newWorld(t, Config{Seed: 1, Model: record.Model{Volumes: 1}})
		advance(t, w, 1)
		h, c := partitionedPrimary(t, w)
		node := c.ts.Node
		c.ts.removeListener(c.port)
		evs := advance(t, w, w.Now()+2)
		if c.State != nvmeof.StateLive || hasKernelLine(evs, h.Name, "starting error recovery") {
			t.Fatalf("silent %s is %s after its listener went: the FIN reached a partitioned host", c.Name(), c.State)
		}
		healAt := w.Now()
		w.Heal(h.Name, node.Name)
		evs = advance(t, w, w.Now()+0.01)
		if c.State == nvmeof.StateLive {
			t.Fatalf("after the heal %s is still live; the target's close must arrive", c.Name())
		}
		for _, e := range evs {
			if e.Kind == EventKernel && e.Controller == c.Name() && e.Message == "starting error recovery" && e.T != healAt {
				t.Errorf("error recovery at %g s, want at the heal (%g s)", e.T, healAt)
			}
		}
	})
}

// TestStaleOptimizedPathHoldsIO: a host partitioned from its volume's
// source primary right before the cutover keeps that path as the head's
// current path (it still shows optimized: nvme_numa_path,
// multipath.c:402-413), so its I/O hangs through the cutover and after the
// target went optimized, until the keep-alive expires; the stall events
// name that time.
func TestStaleOptimizedPathHoldsIO(t *testing.T) {
	w := newWorld(t, Config{Seed: 2, Model: record.Model{Volumes: 1, Pods: true, PodToleranceS: 60, SyncMinS: 0.5, SyncMaxS: 1}})
	advance(t, w, 1)
	v := w.Volumes()[0]
	id, _ := w.StartMigration(v.NQN)
	m, _ := w.Migration(id)
	for m.Phase != PhaseRunning && w.Now() < 60 {
		advance(t, w, w.Now()+0.01)
	}
	h, c := partitionedPrimary(t, w)
	partAt := w.Now()
	hd := c.legs[0].head
	var evs []Event
	for c.State == nvmeof.StateLive && w.Now() < partAt+10 {
		evs = append(evs, advance(t, w, w.Now()+0.1)...)
		if m.cp == cpCutDone && c.State == nvmeof.StateLive {
			if st := h.headStatus(v.NQN, hd.nsid); st != ioHung {
				t.Fatalf("t=%.2f after the flip, stale path still live: head %v, want hung on the stale optimized path", w.Now(), st)
			}
		}
	}
	if m.cp < cpCutDone {
		t.Fatal("the cutover did not flip before the keep-alive expired")
	}
	detectedAt := w.Now()
	evs = append(evs, advance(t, w, w.Now()+1)...)
	if st := h.headStatus(v.NQN, hd.nsid); st != ioServed {
		t.Errorf("after the keep-alive expired: head %v, want served by the target", st)
	}
	var end *Event
	for k, e := range evs {
		if e.Kind == EventStall && e.Controller == c.Name() && e.Action == StallEnd {
			end = &evs[k]
		}
	}
	if end == nil || end.StartS == nil || *end.StartS != partAt || end.T > detectedAt || end.T < partAt+float64(c.Spec.Options.KeepAliveTmo) {
		t.Errorf("stall end %+v, want one from the partition (%g s) to the keep-alive timeout (by %g s)", end, partAt, detectedAt)
	}
}

// TestStallEvents: the partition's stall events, start and end, for the
// path that showed an optimized leg only.
func TestStallEvents(t *testing.T) {
	w := newWorld(t, Config{Seed: 4, Model: record.Model{Volumes: 1}})
	evs := advance(t, w, 1)
	v := w.Volumes()[0]
	h := w.hosts[v.Consumers[0]]
	w.CrashNode(primaryNode(w, v).Name)
	crashAt := w.Now()
	w.CrashNode(w.nodes[w.lvstores[v.LVS].Nodes[1]].Name) // a non-optimized path: no stall
	evs = append(evs, advance(t, w, 20)...)
	var lines []string
	for _, e := range evs {
		if e.Kind == EventStall {
			s := fmt.Sprintf("%s %s %s %s %v", e.Host, e.Controller, e.Address, e.Action, e.NSIDs)
			if e.StartS != nil {
				s += fmt.Sprintf(" from %g", *e.StartS)
			}
			lines = append(lines, s)
		}
	}
	c := one(t, h, v.NQN, canonicalAddr(primaryNode(w, v).IP, w.lvstores[v.LVS].Port))
	want := []string{
		fmt.Sprintf("%s %s %s start %v", h.Name, c.Name(), c.Spec.Addr(), v.NSIDs),
		fmt.Sprintf("%s %s %s end [] from %g", h.Name, c.Name(), c.Spec.Addr(), crashAt),
	}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("stall events\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// TestRemovedNamespaceFailsIO: I/O on a path whose target no longer has the
// namespace, before the host's rescan drops the leg, fails with EIO: SPDK
// answers Invalid Namespace with DNR and the host does not fail over.
func TestRemovedNamespaceFailsIO(t *testing.T) {
	w := newWorld(t, Config{Seed: 1, AENLatencyS: 1, Model: record.Model{Volumes: 1, Pods: true}})
	advance(t, w, 1)
	v := w.Volumes()[0]
	ts, _ := primaryNode(w, v).Subsystem(v.NQN)
	ts.removeNS(v.NSIDs[0], w.rng)
	evs := advance(t, w, w.Now()+0.3)
	_, killed, reason := podIntervals(evs, "fio-"+v.Name)
	if !killed || !strings.Contains(reason, "Invalid Namespace") {
		t.Errorf("pod killed %v (%q), want killed with EIO for the removed namespace", killed, reason)
	}
}
