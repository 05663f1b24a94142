package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// The mechanism chain of docs/sources.md §9.4, one test per event
// kind, with sbcli's control plane (ControlPlaneSbcli) on the 3-node
// 3-cycle layout (every target node is an overlap node), on virtual time.
//
// Layout of a migration from lvstore S (nodes s0 s1 s2: primary, secondary,
// tertiary) to lvstore T (t0 t1 t2) at port pT: sbcli's _cleanup_created
// (migration_controller.py:247-311) computes its overlap without the
// tertiaries, so for t0 and t1 it removes the pT listener where the node is
// s0 or s1 and deletes the whole subsystem where it is s2 — on 3 nodes s2 is
// always t0 or t1 — and it never touches t2, whose pT listener stays.

// kernel log fragments of the two rejections (target.go fabricConnect):
// SPDK's "does not allow host" and "Could not find subsystem".
const (
	logNotAllowed = "is not allowed"
	logNoSubsys   = "Connect Invalid Data Parameter"
)

// chain is one world driven through a cancel before continue, with every
// event recorded.
type chain struct {
	w        *World
	v        *Volume
	h        *Host
	m        *Migration
	src, dst []endpoint
	// cancelAt is when the abort reached the control plane.
	cancelAt float64
	evs      []Event
}

func (c *chain) to(t *testing.T, at float64) {
	t.Helper()
	c.evs = append(c.evs, advance(t, c.w, at)...)
}

// logsOf are the kernel log messages of host h's controller name after
// time from.
func (c *chain) logsOf(h *Host, name string, from float64) []string {
	var out []string
	for _, e := range c.evs {
		if e.Kind == EventKernel && e.Host == h.Name && e.Controller == name && e.T >= from {
			out = append(out, e.Message)
		}
	}
	return out
}

func countContaining(msgs []string, frag string) int {
	n := 0
	for _, m := range msgs {
		if strings.Contains(m, frag) {
			n++
		}
	}
	return n
}

// one returns h's single controller of nqn at addr, or fails.
func one(t *testing.T, h *Host, nqn, addr string) *Ctrl {
	t.Helper()
	cs := ctrlsAt(h, nqn, []string{addr})
	if len(cs) != 1 {
		t.Fatalf("%s: %d controllers at %s, want 1", h.Name, len(cs), addr)
	}
	return cs[0]
}

// startValidated starts a migration of v to lvstore dst and advances until
// host h has a live controller at every target path (the validation Job
// connected them), the migration still Validating.
func startValidated(t *testing.T, c *chain, v *Volume, dst int) *Migration {
	t.Helper()
	id, err := c.w.StartMigrationTo(v.NQN, dst)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := c.w.Migration(id)
	eps := targetEndpoints(c.w, m)
	for c.w.Now() < c.cancelAt+120 {
		c.to(t, c.w.Now()+0.05)
		live := 0
		for _, x := range ctrlsAt(c.h, v.NQN, eps) {
			if x.State == nvmeof.StateLive {
				live++
			}
		}
		if live == len(eps) {
			break
		}
	}
	if m.Phase != PhaseValidating {
		t.Fatalf("%s %s at %.1f s, want Validating with every target path connected", id, m.Phase, c.w.Now())
	}
	return m
}

// cancelChain builds cfg's world (sbcli control plane, one consumer host
// per volume), migrates volume 0 to lvstore (its own + dstOffset) and
// aborts it once the validation connected every target path: sbcli's
// cancel before continue. It advances until the migration is terminal and
// 20 s more.
func cancelChain(t *testing.T, cfg Config, dstOffset int) *chain {
	t.Helper()
	cfg.ControlPlane = ControlPlaneSbcli
	if cfg.Volumes == 0 {
		cfg.Volumes = 1
	}
	c := &chain{w: newWorld(t, cfg)}
	c.to(t, 1)
	c.v = c.w.Volumes()[0]
	c.h = c.w.hosts[c.v.Consumers[0]]
	c.m = startValidated(t, c, c.v, (c.v.LVS+dstOffset)%len(c.w.lvstores))
	c.src = c.w.listenerEndpoints(c.v.NQN, c.m.SrcLVS)
	c.dst = c.w.listenerEndpoints(c.v.NQN, c.m.DstLVS)
	if err := c.w.AbortMigration(c.m.ID); err != nil {
		t.Fatal(err)
	}
	c.cancelAt = c.w.Now()
	for !c.m.Terminal() && c.w.Now() < c.cancelAt+120 {
		c.to(t, c.w.Now()+0.5)
	}
	c.to(t, c.w.Now()+20)
	return c
}

// TestChainPrefixCancelLeaks is event 1: after a prefix cancel before
// continue the consumer host holds, per target path:
//   - at the target node that is s0/s1 (listener removed): the validation's
//     controller connecting, every reconnect rejected "does not allow host";
//   - at the source tertiary s2 (subsystem deleted): the validation's
//     controller at s2:pT and the volume's own data path at s2:pS both
//     connecting, rejected "Could not find subsystem" (no repair here);
//   - at t2 (untouched): the validation's controller live and parked, every
//     namespace's leg inaccessible.
//
// Both targets are run, so s2 is t0 once and t1 once.
func TestChainPrefixCancelLeaks(t *testing.T) {
	for _, off := range []int{1, 2} {
		t.Run(fmt.Sprintf("target lvstore +%d", off), func(t *testing.T) {
			c := cancelChain(t, Config{Seed: 5, Model: record.Model{Operator: OperatorPrefix, NamespacesPerVolume: 3}}, off)
			s2 := c.src[2].node
			if c.dst[2].node == s2 {
				t.Fatalf("3-cycle broken: the source tertiary %s is the target tertiary", s2.Name)
			}
			hitS2 := false
			for k, ep := range c.dst {
				x := one(t, c.h, c.v.NQN, ep.addr())
				logs := c.logsOf(c.h, x.Name(), c.cancelAt)
				switch {
				case k == 2:
					if x.State != nvmeof.StateLive || serving(x) || len(x.legs) != len(c.v.NSIDs) {
						t.Errorf("tgt.ter %s: %s, %d legs, serving %v; want live, parked: %d inaccessible legs", ep.addr(), x.State, len(x.legs), serving(x), len(c.v.NSIDs))
					}
				case ep.node == s2:
					hitS2 = true
					if x.State != nvmeof.StateConnecting || countContaining(logs, logNoSubsys) == 0 || countContaining(logs, logNotAllowed) != 0 {
						t.Errorf("leak at the source tertiary %s: %s, rejections %d \"could not find subsystem\" / %d \"does not allow host\"; want connecting, only the first",
							ep.addr(), x.State, countContaining(logs, logNoSubsys), countContaining(logs, logNotAllowed))
					}
				default:
					if x.State != nvmeof.StateConnecting || countContaining(logs, logNotAllowed) == 0 || countContaining(logs, logNoSubsys) != 0 {
						t.Errorf("leak at %s (target %d): %s, rejections %d \"does not allow host\" / %d \"could not find subsystem\"; want connecting, only the first",
							ep.addr(), k, x.State, countContaining(logs, logNotAllowed), countContaining(logs, logNoSubsys))
					}
				}
			}
			if !hitS2 {
				t.Fatalf("the source tertiary %s is not t0 or t1", s2.Name)
			}
			// The volume's own tertiary data path, at s2:pS.
			x := one(t, c.h, c.v.NQN, c.src[2].addr())
			logs := c.logsOf(c.h, x.Name(), c.cancelAt)
			if x.State != nvmeof.StateConnecting || countContaining(logs, logNoSubsys) == 0 || countContaining(logs, logNotAllowed) != 0 {
				t.Errorf("tertiary data path %s: %s; want connecting, rejected \"could not find subsystem\" only", c.src[2].addr(), x.State)
			}
			if _, ok := s2.Subsystem(c.v.NQN); ok {
				t.Errorf("subsystem still on the source tertiary %s", s2.Name)
			}
		})
	}
}

// TestChainFixedCancelAndRepair is event 2: with the fixed operator none of
// the validation's controllers survive the Job (its failure releases) or the
// release Jobs; prefix keeps its three. Both operators lose the tertiary data
// path (sbcli deleted the subsystem) until the lvol monitor's repair, which
// comes within one sweep plus a cycle (≤ 330 s, lvol_monitor.py, constants.py
// :153-154) and re-creates the subsystem on s2 with the listener at pS; the
// fixed CSI driver (by ip:port) then restores the path, live and
// non-optimized on every namespace.
//
// With the pre-fix CSI driver (restore only when no controller of the
// subsystem is at that IP, docs/sources.md §7) the prefix operator's leak at
// s2:pT keeps the path from being restored after the repair.
func TestChainFixedCancelAndRepair(t *testing.T) {
	for _, tc := range []struct {
		op, csi  string
		restored bool
	}{
		{OperatorPrefix, CSIRestoreByEndpoint, true},
		{OperatorFixed, CSIRestoreByEndpoint, true},
		{OperatorPrefix, CSIRestoreByIP, false},
	} {
		op := tc.op
		t.Run(op+"/csi-"+tc.csi, func(t *testing.T) {
			c := cancelChain(t, Config{Seed: 6, Model: record.Model{Operator: op, NamespacesPerVolume: 3, LvolMonitor: true, CSIRestore: tc.csi}}, 1)
			left := ctrlsAt(c.h, c.v.NQN, targetEndpoints(c.w, c.m))
			want := map[string]int{OperatorPrefix: 3, OperatorFixed: 0}[op]
			if len(left) != want {
				t.Errorf("%d validation controllers left after the Job and release Jobs, want %d", len(left), want)
			}
			s2, pS := c.src[2].node, c.src[2].addr()
			if _, ok := s2.Subsystem(c.v.NQN); ok {
				t.Fatalf("subsystem still on the source tertiary %s 20 s after the cancel, want it deleted (or the repair came that early: pick a seed)", s2.Name)
			}
			repaired := 0.0
			for c.w.Now() < c.cancelAt+LvolMonitorSweepS+LvolMonitorCycleS+1 {
				if _, ok := s2.Subsystem(c.v.NQN); ok {
					repaired = c.w.Now()
					break
				}
				for _, x := range ctrlsAt(c.h, c.v.NQN, []string{pS}) {
					if x.State == nvmeof.StateLive {
						t.Fatalf("t=%.1f the tertiary data path %s is live before the repair", c.w.Now(), pS)
					}
				}
				c.to(t, c.w.Now()+0.5)
			}
			if repaired == 0 {
				t.Fatalf("no lvol monitor repair of %s within %g s of the cancel", s2.Name, LvolMonitorSweepS+LvolMonitorCycleS)
			}
			ts, _ := s2.Subsystem(c.v.NQN)
			if _, ok := ts.listener(c.src[2].port); !ok || !slices.Equal(ts.NSIDs, c.v.NSIDs) {
				t.Errorf("repaired subsystem on %s: listener at %s %v, namespaces %v; want the listener and %v", s2.Name, pS, ok, ts.NSIDs, c.v.NSIDs)
			}
			// The CSI monitor backed off while the path could not connect
			// (up to CSIBackoffMaxS); one backoff later it is back.
			c.to(t, repaired+CSIBackoffMaxS+CSIMonitorS+CSIMonitorJitterS)
			back := false
			for _, x := range ctrlsAt(c.h, c.v.NQN, []string{pS}) {
				if x.State == nvmeof.StateLive && len(x.legs) == len(c.v.NSIDs) && x.legs[0].ana == nvmeof.ANANonOptimized {
					back = true
				}
			}
			if back != tc.restored {
				t.Errorf("tertiary data path %s restored %v (CSI restores %d) %.0f s after the repair, want %v", pS, back, c.w.CSIRestores(), c.w.Now()-repaired, tc.restored)
			}
		})
	}
}

// TestChainValidationBlocking is event 3, on one host consuming two
// subsystems. After a cancel of subsystem A's migration before continue:
//   - subsystem B's migration passes meanwhile, whatever A's leaks (verify
//     reads only its own subsystem, paths.go:241);
//   - A's next migration to the same target, while s2 lacks A's subsystem,
//     fails at s2:pT — prefix on its own connecting leak there (ensure
//     waits for it, it cannot reconnect), fixed with "no controller — the
//     connect did not take effect"; the prefix leaks at the other target
//     addresses reconnect once CreateMigration re-adds their listeners and
//     fail nothing;
//   - once the lvol monitor re-created A's subsystem on s2, A's migration to
//     the same target passes in both operators.
func TestChainValidationBlocking(t *testing.T) {
	for _, op := range []string{OperatorPrefix, OperatorFixed} {
		t.Run(op, func(t *testing.T) {
			c := cancelChain(t, Config{Seed: 3, Model: record.Model{Operator: op, Hosts: 1, Volumes: 2, LvolMonitor: true, CSIRestore: CSIRestoreByEndpoint}}, 1)
			s2 := c.src[2].node
			if _, ok := s2.Subsystem(c.v.NQN); ok {
				t.Fatalf("%s already repaired on %s; the test needs the window", c.v.Name, s2.Name)
			}
			b := c.w.Volumes()[1]
			idB, err := c.w.StartMigration(b.NQN)
			if err != nil {
				t.Fatal(err)
			}
			id2, err := c.w.StartMigrationTo(c.v.NQN, c.m.DstLVS)
			if err != nil {
				t.Fatal(err)
			}
			m2, _ := c.w.Migration(id2)
			mB, _ := c.w.Migration(idB)
			for (!m2.Terminal() || !mB.Terminal()) && c.w.Now() < c.cancelAt+200 {
				c.to(t, c.w.Now()+0.5)
			}
			if mB.Phase != PhaseCompleted {
				t.Errorf("%s's migration %s ended %s (%+v), want Completed beside %s's leaks", b.Name, idB, mB.Phase, mB.Failure, c.v.Name)
			}
			pT := canonicalAddr(s2.IP, c.w.lvstores[c.m.DstLVS].Port)
			f := m2.Failure
			switch {
			case m2.Phase != PhaseFailed || f == nil:
				t.Fatalf("%s's second migration %s ended %s, want Failed in the window", c.v.Name, id2, m2.Phase)
			case f.Endpoint != pT:
				t.Errorf("failure %+v at %s, want at s2's target address %s only", f, f.Endpoint, pT)
			case op == OperatorPrefix && (f.Origin != c.m.ID || f.State != string(nvmeof.StateConnecting)):
				t.Errorf("prefix failure %+v, want %s's connecting leak", f, c.m.ID)
			case op == OperatorFixed && !strings.Contains(f.Detail, "the connect did not take effect"):
				t.Errorf("fixed failure %+v, want \"no controller — the connect did not take effect\"", f)
			}
			// m2's own cancel deleted s2's subsystem again; wait for the
			// repair, then the same migration passes.
			for bound := c.w.Now() + LvolMonitorSweepS + LvolMonitorCycleS + 1; c.w.Now() < bound; {
				if _, ok := s2.Subsystem(c.v.NQN); ok {
					break
				}
				c.to(t, c.w.Now()+0.5)
			}
			if _, ok := s2.Subsystem(c.v.NQN); !ok {
				t.Fatalf("no repair of %s on %s", c.v.Name, s2.Name)
			}
			id3, err := c.w.StartMigrationTo(c.v.NQN, c.m.DstLVS)
			if err != nil {
				t.Fatal(err)
			}
			untilTerminal(t, c.w, id3, 300)
			if m3, _ := c.w.Migration(id3); m3.Phase != PhaseCompleted {
				t.Errorf("after the repair %s ended %s (%+v), want Completed", id3, m3.Phase, m3.Failure)
			}
		})
	}
}

// TestChainLeakLifetime is event 4. Prefix's leaks carry the control
// plane's ctrl_loss_tmo 3600 (sysfs shows max_reconnects × reconnect_delay);
// with the upstream kernel (ReconnectResetFull) a connecting leak makes
// max_reconnects = ceil(3600 / 2) = 1800 attempts and is removed about an
// hour after it lost its listener, each attempt rejected (kernel
// drivers/nvme/host/fabrics.c nvmf_parse_options: max_reconnects =
// DIV_ROUND_UP(ctrl_loss_tmo, reconnect_delay), nvmf_should_reconnect;
// tcp.c nvme_tcp_reconnect_ctrl_work: ++nr_reconnects per attempt, reset
// only after a successful one; tcp.c nvme_tcp_reconnect_or_remove then
// removes it; core.c nvme_delete_ctrl). The parked live leak loses nothing
// and stays. Fixed's validation controllers show 60.
func TestChainLeakLifetime(t *testing.T) {
	t.Run(OperatorFixed, func(t *testing.T) {
		w := newWorld(t, Config{Seed: 5, Model: record.Model{Volumes: 1, Operator: OperatorFixed, ControlPlane: ControlPlaneSbcli}})
		c := &chain{w: w}
		c.to(t, 1)
		c.v, c.h = w.Volumes()[0], w.hosts[w.Volumes()[0].Consumers[0]]
		m := startValidated(t, c, c.v, (c.v.LVS+1)%len(w.lvstores))
		for _, x := range readHost(t, c.h).SubsystemsByNQN(c.v.NQN)[0].Controllers {
			if containsStr(targetEndpoints(w, m), x.Endpoint()) && x.CtrlLossTmo != 60 {
				t.Errorf("fixed validation controller %s: sysfs ctrl_loss_tmo %d, want 60", x.Name, x.CtrlLossTmo)
			}
		}
	})
	t.Run(OperatorPrefix, func(t *testing.T) {
		c := cancelChain(t, Config{Seed: 5, Model: record.Model{Operator: OperatorPrefix}}, 1)
		st := readHost(t, c.h)
		var connecting []*Ctrl
		for _, ep := range c.dst {
			x := one(t, c.h, c.v.NQN, ep.addr())
			for _, mc := range st.SubsystemsByNQN(c.v.NQN)[0].Controllers {
				if mc.Name == x.Name() && mc.CtrlLossTmo != 3600 {
					t.Errorf("prefix leak %s at %s: sysfs ctrl_loss_tmo %d, want 3600", mc.Name, ep.addr(), mc.CtrlLossTmo)
				}
			}
			if x.State == nvmeof.StateConnecting {
				connecting = append(connecting, x)
			}
		}
		if len(connecting) != 2 {
			t.Fatalf("%d connecting leaks, want 2 (t0, t1)", len(connecting))
		}
		parked := one(t, c.h, c.v.NQN, c.dst[2].addr())
		c.to(t, c.cancelAt+3590)
		for _, x := range connecting {
			if x.State != nvmeof.StateConnecting {
				t.Errorf("leak %s at %s: %s 3590 s after its listener went, want still connecting", x.Name(), x.Spec.Addr(), x.State)
			}
		}
		c.to(t, c.cancelAt+3610)
		for _, x := range connecting {
			if x.State != nvmeof.StateDead {
				t.Errorf("leak %s at %s: %s 3610 s after its listener went, want removed", x.Name(), x.Spec.Addr(), x.State)
				continue
			}
			logs := c.logsOf(c.h, x.Name(), c.cancelAt)
			var removedAt float64
			for _, e := range c.evs {
				if e.Kind == EventKernel && e.Controller == x.Name() && strings.HasPrefix(e.Message, "Removing controller") {
					removedAt = e.T
				}
			}
			rejected := countContaining(logs, logNotAllowed) + countContaining(logs, logNoSubsys)
			if n := countContaining(logs, "Failed reconnect attempt"); n != 1800 || rejected != 1800 || countContaining(logs, "Failed reconnect attempt 1800/1800") != 1 {
				t.Errorf("leak %s: %d failed attempts, %d rejected, want 1800 of 1800, each rejected", x.Name(), n, rejected)
			}
			if d := removedAt - c.cancelAt; d < 3595 || d > 3605 {
				t.Errorf("leak %s removed %.1f s after its listener went, want ~3600", x.Name(), d)
			}
		}
		if parked.State != nvmeof.StateLive {
			t.Errorf("parked leak %s: %s after an hour, want live (it lost nothing)", parked.Name(), parked.State)
		}
	})
}

// TestChainPostContinueCancel is §2 mechanism 2: a cancel after continue
// goes through cleanup_target (tasks_runner_lvol_migration.py:2624-2700);
// on 3 nodes every target node held the subsystem before (overlap), so only
// the volume's namespaces are removed there (migration_controller.py
// :637-642) and every listener stays. The subsystem is the live source one:
// every controller of it on the consumer host — source data paths and
// target paths alike — stays live with no namespace, and the heads go.
func TestChainPostContinueCancel(t *testing.T) {
	for _, op := range []string{OperatorPrefix, OperatorFixed} {
		t.Run(op, func(t *testing.T) {
			w := newWorld(t, Config{Seed: 2, Model: record.Model{Volumes: 1, NamespacesPerVolume: 3, Operator: op, ControlPlane: ControlPlaneSbcli}})
			advance(t, w, 1)
			v := w.Volumes()[0]
			id, _ := w.StartMigration(v.NQN)
			m, _ := w.Migration(id)
			for m.Phase != PhaseRunning && w.Now() < 60 {
				advance(t, w, w.Now()+0.05)
			}
			if m.cp != cpSyncing {
				t.Fatalf("%s at %.1f s, want in its data sync", m.Phase, w.Now())
			}
			if err := w.AbortMigration(id); err != nil {
				t.Fatal(err)
			}
			advance(t, w, w.Now()+5)
			for _, lvs := range []int{m.SrcLVS, m.DstLVS} {
				for _, ep := range w.listenerEndpoints(v.NQN, lvs) {
					ts, ok := ep.node.Subsystem(v.NQN)
					if !ok {
						t.Fatalf("subsystem gone from %s, want it kept (overlap)", ep.node.Name)
					}
					if _, has := ts.listener(ep.port); !has {
						t.Errorf("listener %s removed, want every listener kept", ep.addr())
					}
					if len(ts.NSIDs) != 0 {
						t.Errorf("%s still has namespaces %v, want them removed", ep.node.Name, ts.NSIDs)
					}
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
				t.Errorf("%d controllers of the volume on %s, want 6 (3 source data paths, 3 target paths)", n, h.Name)
			}
			if ss := readHost(t, h).SubsystemsByNQN(v.NQN); len(ss) != 1 || len(ss[0].Namespaces) != 0 {
				t.Errorf("host subsystem %+v, want no namespace head left", ss)
			}
		})
	}
}

// TestChainLvolMonitorRepair is the lvol monitor's repair
// (lvol_monitor.py:598-640, storage_node_ops.py:9936 and :9790-9897): on
// each non-leader node of the lvol's lvstore a missing subsystem is
// re-created, its namespaces added with their explicit NSIDs (a
// single-namespace volume keeps NSID 2, a namespaced one 1..3), then the
// listener at the lvol's current port with the node's ANA state; the
// primary is checked, never repaired. What the order implies is asserted:
// the moment the listener is up every namespace is behind it, and a host
// reconnecting to a repaired node is never live without legs and gets
// every namespace at once.
func TestChainLvolMonitorRepair(t *testing.T) {
	w := newWorld(t, Config{Seed: 8, Model: record.Model{Volumes: 2, NamespacedVolumes: 1, NamespacesPerVolume: 3}})
	advance(t, w, 1)
	for _, v := range w.Volumes() {
		for _, ep := range w.listenerEndpoints(v.NQN, v.LVS) {
			ep.node.deleteSubsystem(v.NQN)
		}
	}
	advance(t, w, 2)
	for _, v := range w.Volumes() {
		if n := w.repairLvol(v); n != 2 {
			t.Errorf("%s: %d repairs, want 2 (secondary, tertiary)", v.Name, n)
		}
		for k, ep := range w.listenerEndpoints(v.NQN, v.LVS) {
			ts, ok := ep.node.Subsystem(v.NQN)
			if k == 0 {
				if ok {
					t.Errorf("%s: primary %s repaired, want it left alone", v.Name, ep.node.Name)
				}
				continue
			}
			if !ok {
				t.Fatalf("%s: non-leader %s not repaired", v.Name, ep.node.Name)
			}
			// The listener is up: the namespaces are already behind it.
			if got := ts.exposedNSIDs(w.hosts[v.Consumers[0]].NQN); !slices.Equal(got, v.NSIDs) {
				t.Errorf("%s on %s right after the repair: namespaces exposed %v, want the explicit %v", v.Name, ep.node.Name, got, v.NSIDs)
			}
			if len(ts.Listeners) != 1 || ts.Listeners[0].Port != ep.port || ts.Listeners[0].ANA != nvmeof.ANANonOptimized {
				t.Errorf("%s on %s: listeners %+v, want only %d non-optimized", v.Name, ep.node.Name, ts.Listeners, ep.port)
			}
		}
	}
	for w.Now() < 8 {
		advance(t, w, w.Now()+0.01)
		for _, v := range w.Volumes() {
			for _, c := range w.hosts[v.Consumers[0]].ctrls {
				if c.Spec.NQN == v.NQN && c.State == nvmeof.StateLive && len(c.legs) != len(v.NSIDs) {
					t.Fatalf("t=%.2f %s %s at %s live with %d legs, want all %d at once", w.Now(), v.Name, c.Name(), c.Spec.Addr(), len(c.legs), len(v.NSIDs))
				}
			}
		}
	}
	for _, v := range w.Volumes() {
		live := 0
		for _, c := range w.hosts[v.Consumers[0]].ctrls {
			if c.Spec.NQN == v.NQN && c.State == nvmeof.StateLive {
				live++
			}
		}
		if live != 2 {
			t.Errorf("%s: %d live paths after the repair, want 2 (the primary stays missing)", v.Name, live)
		}
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
