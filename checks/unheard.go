package checks

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/record"
)

// Silent stalls a record cannot see (docs/host-model.md "Silent stalls").
// A host's kernel log tells a keep-alive timeout — the end of a silent
// stall — from a reset (Linux 6.12 drivers/nvme/host/tcp.c:2856-2865 logs
// the one, error recovery follows both). A host whose kernel log the
// record lacks (no kernel line of it at all: the kube backend's agent
// collects none) gives only its samples, and there a controller that one
// sample shows live with an optimized leg and the next connecting or
// resetting may have sat silent for up to 1.5 × kato before it left live
// (a keep-alive every kato/2, each timing out after kato; core.c:1280-1293,
// 1372), the kernel's I/O waiting on it while every sample showed the path
// serving — or may have been reset at once. Such a leave is "unheard":
// pause-bound, freezes and unattributed-pauses cannot pass over it
// (unheardInconclusive). A landed fault that resets connections at once —
// a target-restart of the controller's node, a reset-controller of its
// host — in effect at the leave explains it: no silence came first.
// kato is taken as the kernel default (NVMeDefaultKatoS), as for a
// keep-alive timeout line.

// liveLeave is a controller of host that sample prev (at from) showed
// live with an optimized leg and the next sample (at at) shows connecting
// or resetting.
type liveLeave struct {
	host, controller, nqn, address string
	from, at                       float64
}

// leftLive lists the controllers of prev that were live with an optimized
// leg and are connecting or resetting in cur (the same host's next
// sample), matched by name and NQN.
func leftLive(prev, cur record.Line) []liveLeave {
	var out []liveLeave
	for _, c := range prev.Controllers {
		if c.State != "live" || !slices.ContainsFunc(c.Legs, func(l record.Leg) bool { return l.ANA == "optimized" }) {
			continue
		}
		for _, n := range cur.Controllers {
			if n.Name == c.Name && n.NQN == c.NQN && (n.State == "connecting" || n.State == "resetting") {
				out = append(out, liveLeave{host: cur.Host, controller: c.Name, nqn: c.NQN, address: c.Address, from: prev.T, at: cur.T})
			}
		}
	}
	return out
}

// unheardSpan is the longest silent stall a leave may end: from 1.5 × kato
// before the sample before it to the sample showing it.
func (l liveLeave) unheardSpan() [2]float64 {
	return [2]float64{l.from - 1.5*NVMeDefaultKatoS, l.at}
}

func (l liveLeave) String() string {
	return fmt.Sprintf("%s %s at %s left live between %s and %s with an optimized leg", l.host, l.controller, l.address,
		record.FormatT(l.from), fmtS(l.at))
}

// resetBy names the landed fault that reset l's controller at once ("" if
// none): a target-restart of the node at its address, or a reset-controller
// of its host, injected by l.at and not recovered more than one sample
// interval before l.from.
func (r *runIndex) resetBy(l liveLeave) string {
	ip := splitEndpoint(l.address).Traddr
	outcomes, _ := r.faultOutcomes()
	for _, o := range outcomes {
		if o.Status != record.FaultLanded || o.InjectedS > l.at+1e-9 {
			continue
		}
		if o.RecoveredS != nil && *o.RecoveredS+r.intervalAt(l.from) < l.from-1e-9 {
			continue
		}
		switch o.Kind {
		case "target-restart":
			if slices.ContainsFunc(r.plan.Topology.Nodes, func(n record.Node) bool {
				return n.Name == o.Target && splitEndpoint(n.IP).Traddr == ip
			}) {
				return o.Kind + " on " + o.Target
			}
		case "reset-controller":
			if o.Target == l.host {
				return o.Kind + " on " + o.Target
			}
		}
	}
	return ""
}

// unheardInconclusive makes pause-bound, freezes and unattributed-pauses
// inconclusive, unless failed on what was seen, where a leave on a host
// whose kernel log the record lacks (kernelHosts: the hosts with a kernel
// line) may end a silent stall no sample shows: pause-bound when the stall
// lies in the span of a migration of its NQN that cut over, on a consumer
// host, and the host's longest pause there plus the stall's longest length
// exceeds the bound; freezes when it lies in such a span of a migration
// whose freezes on the host already reach the allowance; unattributed-pauses
// when it lies in no such span. Leaves a resetting fault explains
// (resetBy) are no stall.
func (r *runIndex) unheardInconclusive(results []record.CheckResult, pr pauseResult, leaves []liveLeave, kernelHosts map[string]bool) {
	margin := r.plan.Params.AttributionMarginS
	hidden := map[string][]string{}
	for _, l := range leaves {
		if kernelHosts[l.host] || !r.consumes(l.host, l.nqn) || r.resetBy(l) != "" {
			continue
		}
		span := l.unheardSpan()
		in := false
		for _, m := range pr.migrations {
			hp, ok := m.Hosts[l.host]
			end := m.EndS
			if !record.IsTerminal(m.Outcome) {
				end = math.Inf(1)
			}
			if m.NQN != l.nqn || m.NoCutover || !ok || span[1] < m.StartS || span[0] > end+margin {
				continue
			}
			in = true
			if JudgedPauseS(hp)+span[1]-span[0] > r.plan.Params.PauseCritS {
				hidden[CheckPauseBound] = append(hidden[CheckPauseBound], m.ID+": "+l.String())
			}
			if hp.Freezes+1 > r.plan.Params.FreezesAllowed {
				hidden[CheckFreezes] = append(hidden[CheckFreezes], m.ID+": "+l.String())
			}
		}
		if !in {
			hidden[CheckUnattributedPauses] = append(hidden[CheckUnattributedPauses], l.String())
		}
	}
	for i, c := range results {
		h := hidden[c.Name]
		if len(h) == 0 || c.Verdict == record.Fail {
			continue
		}
		const most = 5
		d := fmt.Sprintf("not judged on silent stalls the record cannot see: no kernel log of the host, so a controller that left live from an optimized leg may have been silent up to 1.5 × kato = %s before (docs/host-model.md): %s",
			fmtS(1.5*NVMeDefaultKatoS), strings.Join(h[:min(len(h), most)], "; "))
		if len(h) > most {
			d += fmt.Sprintf("; and %d more", len(h)-most)
		}
		if c.Verdict == record.Inconclusive {
			d += "; also: " + c.Detail
		}
		results[i] = record.CheckResult{Name: c.Name, Verdict: record.Inconclusive, Detail: d}
	}
}
