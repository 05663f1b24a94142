package checks

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/record"
)

// Silent stalls (issue 28; docs/host-model.md "Silent stalls"): the time a
// host's controller was live and showed an optimized leg while nothing
// reached its target. Every sample shows the path serving, but the kernel's
// default iopolicy keeps sending I/O to it, so the subsystem is paused on
// that host. The pause checks count a stall as paused time:
//
//   - A stall line pair (record.KindStall: "start" at its start, "end" with
//     start_s) says when — the simulator writes them from its own
//     knowledge.
//   - A real host gives only evidence: a keep-alive timeout in its kernel
//     log ("I/O tag N (xxxx) type 4 opcode 0x18 (Keep Alive) QID 0 timeout",
//     Linux 6.12 drivers/nvme/host/tcp.c:2856-2865) of a controller its last
//     sample showed live with an optimized leg. The kernel sends a keep-alive
//     every kato/2 and gives up on one after kato (core.c:1280-1293, 1372),
//     so the path went silent between 1.5 × kato and kato before the timeout
//     line: the stall is estimated to run from t − 1.5 × kato (its earliest
//     start) to t, and to be at least kato long. The record carries no kato,
//     so the kernel default NVME_DEFAULT_KATO = 5 s (nvme.h:31) is taken
//     [assumption: simplyblock's CSI paths use it; paths made with kato 4
//     are judged as if 5, a longer stall]. A timeout line that a stall
//     line of the same controller accompanies (the simulator writes both)
//     adds nothing.
//
// summary.json lists every stall (record.Stall), estimated ones marked.
//
// A pause window runs from its first paused sample — or the start of a
// stall, when earlier — to the first sample after it that shows the host
// served and no stall open (windows a stall joins merge). A window holding
// an estimated stall also has a shortest possible length (its stalls
// beginning as late as the evidence allows); pause-bound is inconclusive
// when the bound falls between the two.

// NVMeDefaultKatoS is the kernel's default keep-alive timeout, seconds
// (Linux 6.12 drivers/nvme/host/nvme.h:31 NVME_DEFAULT_KATO).
const NVMeDefaultKatoS = 5.0

// keepAliveTimeout reports whether a kernel line is a keep-alive timeout
// (record.KernelKeepAliveTimeout).
func keepAliveTimeout(msg string) bool {
	return record.ParseKernel(msg).Kind == record.KernelKeepAliveTimeout
}

// stallSpan is one stall as the pause checks use it: the host is paused for
// nqn from start until the first sample at or after end showing it served;
// latest is the latest start the evidence allows (= start when known).
type stallSpan struct {
	host, controller, nqn string
	start, latest, end    float64
	ip                    string
	// address is the path's ip:port; reason what silenced it (a start
	// line's reason).
	address, reason string
}

// estimateStall is the stall a keep-alive timeout line kl implies, from the
// host's sample before it (last, nil when none): a stall of kl's controller
// when last shows it live with an optimized leg. ok is false otherwise.
func estimateStall(kl record.Line, last *record.Line) (stallSpan, bool) {
	if last == nil || !keepAliveTimeout(kl.Message) {
		return stallSpan{}, false
	}
	for _, c := range last.Controllers {
		if c.Name != kl.Controller || c.State != "live" {
			continue
		}
		if !slices.ContainsFunc(c.Legs, func(l record.Leg) bool { return l.ANA == "optimized" }) {
			return stallSpan{}, false
		}
		return stallSpan{host: kl.Host, controller: kl.Controller, nqn: c.NQN,
			start: kl.T - 1.5*NVMeDefaultKatoS, latest: kl.T - NVMeDefaultKatoS, end: kl.T,
			ip: splitEndpoint(c.Address).Traddr, address: c.Address}, true
	}
	return stallSpan{}, false
}

// stallOfLine is the stall an end line closes whose start line the record
// lacks (start_s from the line).
func stallOfLine(l record.Line) stallSpan {
	s := stallSpan{host: l.Host, controller: l.Controller, nqn: l.NQN, end: l.T, ip: splitEndpoint(l.Address).Traddr, address: l.Address}
	if l.StartS != nil {
		s.start, s.latest = *l.StartS, *l.StartS
	}
	return s
}

// record is the summary's entry for s.
func (s stallSpan) record() record.Stall {
	st := record.Stall{Host: s.host, Controller: s.controller, NQN: s.nqn, StartS: s.start, EndS: s.end, Address: s.address, Reason: s.reason}
	if s.latest != s.start {
		st.Estimate = true
		latest := s.latest
		st.LatestStartS = &latest
	}
	return st
}

// minLen is the window's length with every estimated stall in it beginning
// as late as its evidence allows; nil when it holds none (its length is
// known).
func (w window) minLen() *float64 {
	if w.latestStart <= w.start {
		return nil
	}
	d := record.RoundT(w.end - w.latestStart)
	return &d
}

// stallKey names a controller of a host.
func stallKey(host, controller string) string { return host + "\x00" + controller }

// stallLine takes one stall line of the current instant: a start opens the
// controller's stall, an end closes it (with no start seen, the stall
// joins the pause windows from its start_s).
func (j *Judge) stallLine(l record.Line) {
	if j.openStalls == nil {
		j.openStalls = map[string]stallSpan{}
	}
	k := stallKey(l.Host, l.Controller)
	switch l.Action {
	case record.StallStart:
		s := stallSpan{host: l.Host, controller: l.Controller, nqn: l.NQN, start: l.T, latest: l.T,
			ip: splitEndpoint(l.Address).Traddr, address: l.Address, reason: l.Reason}
		j.openStalls[k] = s
		ps := j.pstate(l.Host, l.NQN)
		ps.stalls++
		j.pauseFrom(ps, l.Host, s.fragment())
	case record.StallEnd:
		j.endedStalls = append(j.endedStalls, k)
		if open, ok := j.openStalls[k]; ok {
			delete(j.openStalls, k)
			ps := j.pstate(open.host, open.nqn)
			ps.stalls--
			j.host(open.host).stallDirty = true
			open.end = l.T
			j.stalls = append(j.stalls, open.record())
			return
		}
		s := stallOfLine(l)
		j.stalls = append(j.stalls, s.record())
		j.joinStall(s)
	}
}

// keepAliveLine takes a keep-alive timeout line of the current instant
// (after its stall lines): an estimate unless the controller's stall is
// known.
func (j *Judge) keepAliveLine(l record.Line) {
	k := stallKey(l.Host, l.Controller)
	if _, open := j.openStalls[k]; open || slices.Contains(j.endedStalls, k) {
		return
	}
	h := j.hosts[l.Host]
	if h == nil {
		return
	}
	if s, ok := estimateStall(l, h.lastSample); ok {
		j.stalls = append(j.stalls, s.record())
		j.joinStall(s)
	}
}

// joinStall makes the host paused for s.nqn from s.start: windows of the
// host and NQN closed at or after it open again (one window with the
// stall), and the window closes at the first sample showing the host
// served.
func (j *Judge) joinStall(s stallSpan) {
	ps := j.pstate(s.host, s.nqn)
	for i := len(j.closed) - 1; i >= 0; i-- {
		c := j.closed[i]
		if c.host != s.host || c.nqn != s.nqn || c.w.end < s.start {
			continue
		}
		j.closed = slices.Delete(j.closed, i, i+1)
		f := c.w
		f.latestStart = math.Max(f.start, f.latestStart)
		j.pauseFrom(ps, s.host, f)
		ps.needIPs = false
	}
	j.pauseFrom(ps, s.host, s.fragment())
}

// fragment is the part of a pause window stall s makes: from its start
// (latest start: s.latest), on its path's node, holding s.
func (s stallSpan) fragment() window {
	return window{start: s.start, latestStart: s.latest, ips: []string{s.ip}, stalls: []stallSpan{s}}
}

// pauseFrom opens ps's window with fragment f (its start, latest possible
// start, the nodes whose silence it is, its stalls and first paused
// sample), or adds f to the open window, whose start moves back to f's
// when earlier. A window a stall opens takes the path IPs of its first
// paused sample too (needIPs), as one a sample opens does.
func (j *Judge) pauseFrom(ps *pstate, host string, f window) {
	if !ps.paused {
		ps.paused, ps.start, ps.latest, ps.ips, ps.needIPs = true, f.start, f.latestStart, nil, true
		ps.in, ps.own, ps.hasOwn = nil, 0, false
	}
	ps.start = math.Min(ps.start, f.start)
	ps.latest = math.Min(ps.latest, f.latestStart)
	ps.ips = unionIPs(ps.ips, f.ips)
	ps.in = append(ps.in, f.stalls...)
	ps.ownAt(f.own, f.hasOwn)
	j.host(host).stallDirty = true
}

// ownAt notes a paused sample at t (when has) that Paused shows paused by
// itself: the window's earliest such one is kept.
func (ps *pstate) ownAt(t float64, has bool) {
	if has && (!ps.hasOwn || t < ps.own) {
		ps.own, ps.hasOwn = t, true
	}
}

// unionIPs adds ips to have, sorted and without duplicates.
func unionIPs(have, ips []string) []string {
	for _, ip := range ips {
		if !slices.Contains(have, ip) {
			have = append(have, ip)
		}
	}
	slices.Sort(have)
	return have
}

// pstate is host's pause state of nqn, made when missing.
func (j *Judge) pstate(host, nqn string) *pstate {
	h := j.host(host)
	ps := h.pause[nqn]
	if ps == nil {
		ps = &pstate{}
		h.pause[nqn] = ps
	}
	return ps
}

// stallList is every stall seen, those still open at the record's end
// ending there, by start, host and controller (nil for none).
func (j *Judge) stallList(end float64) []record.Stall {
	out := slices.Clone(j.stalls)
	for _, k := range slices.Sorted(maps.Keys(j.openStalls)) {
		s := j.openStalls[k]
		s.end = math.Max(s.start, end)
		out = append(out, s.record())
	}
	sortStalls(out)
	return out
}

// sortStalls orders stalls by start, host and controller.
func sortStalls(ss []record.Stall) {
	slices.SortStableFunc(ss, func(a, b record.Stall) int {
		return cmp.Or(cmp.Compare(a.StartS, b.StartS), cmp.Compare(a.Host, b.Host), cmp.Compare(a.Controller, b.Controller))
	})
}

// Fault stalls (docs/concepts.md "Pause window"): a pause window whose
// start lies in a silent stall that a landed fault made on that host's
// path is the fault's, not a migration's — even inside a migration's span
// — and pause-bound and freezes do not count it; a window the cutover (or
// anything else) began stays the migration's, naming the stalls in it.

// stallNode is the node a fault of kind aimed at target silences host's
// paths to, "" when the kind silences no path of host: node-crash (the
// node answers nothing) and network-partition ("host/node": the two hear
// nothing from each other); docs/host-model.md "Silent paths".
func stallNode(kind, target, host string) string {
	switch kind {
	case "node-crash":
		return target
	case "network-partition":
		if h, n, ok := strings.Cut(target, "/"); ok && h == host {
			return n
		}
	}
	return ""
}

// stallCause names the landed fault that silenced s's path ("KIND on
// TARGET from T s"), or "" when none did: a fault that landed (left
// evidence), of a kind that silences paths (stallNode) aimed at the node
// s's address is on (plan topology name, or that IP), injected at or
// before s began — at or before its latest start for an estimated stall —
// and not recovered before its (earliest) start. The first such fault in
// injection order wins. A fault that did not land names nothing: a stall
// cannot be charged to a fault the record holds no evidence of.
func (r *runIndex) stallCause(s record.Stall) string {
	ip := splitEndpoint(s.Address).Traddr
	if ip == "" {
		return ""
	}
	latest := s.StartS
	if s.LatestStartS != nil {
		latest = *s.LatestStartS
	}
	outcomes, _ := r.faultOutcomes()
	for _, o := range outcomes {
		if o.Status != record.FaultLanded || o.InjectedS > latest || (o.RecoveredS != nil && *o.RecoveredS < s.StartS) {
			continue
		}
		node := stallNode(o.Kind, o.Target, s.Host)
		if node == "" {
			continue
		}
		nodeIP := splitEndpoint(node).Traddr
		for _, n := range r.plan.Topology.Nodes {
			if n.Name == node {
				nodeIP = splitEndpoint(n.IP).Traddr
			}
		}
		if nodeIP == ip {
			return fmt.Sprintf("%s on %s from %s", o.Kind, o.Target, fmtS(o.InjectedS))
		}
	}
	return ""
}

// causeStalls sets the Cause of every stall (stallCause).
func (r *runIndex) causeStalls(ss []record.Stall) {
	for i := range ss {
		ss[i].Cause = r.stallCause(ss[i])
	}
}

// stallWindowCause is a fault window's cause when st began it: the fault,
// and the stall, said to be an estimate when it is one.
func stallWindowCause(st record.Stall) string {
	d := fmt.Sprintf("%s: silent stall of %s at %s from %s", st.Cause, st.Controller, st.Address, fmtS(st.StartS))
	if st.Estimate && st.LatestStartS != nil {
		d = fmt.Sprintf("%s: silent stall of %s at %s, estimated from its keep-alive timeout at %s to have begun between %s and %s",
			st.Cause, st.Controller, st.Address, fmtS(st.EndS), fmtS(st.StartS), fmtS(*st.LatestStartS))
	}
	return d
}

// begun says what began a pause window.
type begun int

const (
	begunOther begun = iota // the cutover, or anything but a fault's stall
	begunFault              // a landed fault's silent stall: a fault window
	begunMaybe              // either, depending on an estimated stall's start
)

// stallRef identifies one stall: host, controller and start.
type stallRef struct {
	host, controller string
	start            float64
}

// faultBegun tells what began window w, given the run's stalls with their
// causes (by stallRef). A window has sources: its first sample paused by
// itself (own) and its stalls, each begun within [start, latest] (one
// instant when known). The window's start lies in a fault's stall when a
// stall with a cause began no later than every other source: certainly so
// (begunFault) when such a stall's latest start is at or before every
// source without a cause can have begun; certainly not (begunOther) when
// every such stall's earliest start is after a source without a cause had
// surely begun; otherwise it depends on an estimate (begunMaybe). st is
// the fault's stall: the earliest (by start, controller) among those
// certainly first (begunFault), or that can be first (begunMaybe).
func faultBegun(w window, stalls map[stallRef]record.Stall) (record.Stall, begun) {
	otherEarliest, otherLatest := math.Inf(1), math.Inf(1)
	if w.hasOwn {
		otherEarliest, otherLatest = w.own, w.own
	}
	var faulty []record.Stall
	for _, s := range w.stalls {
		st := stalls[stallRef{s.host, s.controller, s.start}]
		if st.Cause == "" {
			otherEarliest = math.Min(otherEarliest, s.start)
			otherLatest = math.Min(otherLatest, s.latest)
			continue
		}
		faulty = append(faulty, st)
	}
	sortStalls(faulty)
	latestOf := func(st record.Stall) float64 {
		if st.LatestStartS != nil {
			return *st.LatestStartS
		}
		return st.StartS
	}
	for _, st := range faulty {
		if latestOf(st) <= otherEarliest {
			return st, begunFault
		}
	}
	for _, st := range faulty {
		if st.StartS <= otherLatest {
			return st, begunMaybe
		}
	}
	return record.Stall{}, begunOther
}
