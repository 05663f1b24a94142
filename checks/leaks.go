package checks

import (
	"fmt"
	"maps"
	"math"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// LeakNotLive is the leak kind of a controller still not live (connecting,
// resetting, new) at the end of the settle period. nvmeof.Inspect never
// names such controllers; the leak check reports them (never reaps them).
const LeakNotLive = "not-live"

// leakKinds are the nvmeof.Inspect defect kinds that make a controller a
// leak (docs/concepts.md "Leak").
var leakKinds = map[nvmeof.DefectKind]bool{
	nvmeof.DefectStaleEndpoint:             true,
	nvmeof.DefectControllerNotContributing: true,
	nvmeof.DefectNoNamespace:               true,
}

// HostState converts one sample line into the nvmeof host model, so that
// nvmeof.Inspect and nvmeof.MissingEndpoints judge a recorded host exactly
// as they judge a live one. Controllers are grouped into subsystems by NQN
// (instances numbered in NQN order); a controller's address "ip:port" is
// split into traddr/trsvcid; hostNQN is the host's NQN from the plan
// topology. Names of multipath heads and legs are not recorded and are
// synthesised as nvmeSnN / nvmeScCnN.
func HostState(sample record.Line, hostNQN string) nvmeof.HostState {
	byNQN := map[string]*nvmeof.Subsystem{}
	var order []string
	get := func(nqn string) *nvmeof.Subsystem {
		if s, ok := byNQN[nqn]; ok {
			return s
		}
		s := &nvmeof.Subsystem{NQN: nqn}
		byNQN[nqn] = s
		order = append(order, nqn)
		return s
	}
	for _, sub := range sample.Subsystems {
		s := get(sub.NQN)
		for _, n := range sub.NSIDs {
			s.Namespaces = append(s.Namespaces, nvmeof.Namespace{NSID: n})
		}
	}
	for _, c := range sample.Controllers {
		s := get(c.NQN)
		inst, _ := strconv.Atoi(strings.TrimPrefix(c.Name, "nvme"))
		transport := c.Transport
		if transport == "" {
			transport = "tcp"
		}
		nc := nvmeof.Controller{
			Name:      c.Name,
			Instance:  inst,
			State:     nvmeof.ParseState(c.State),
			Transport: transport,
			Address:   splitEndpoint(c.Address),
			NQN:       c.NQN,
			HostNQN:   hostNQN,
		}
		for _, l := range c.Legs {
			nc.Legs = append(nc.Legs, nvmeof.Leg{NSID: l.NSID, ANA: nvmeof.ParseANAState(l.ANA)})
		}
		s.Controllers = append(s.Controllers, nc)
	}
	sort.Strings(order)
	var hs nvmeof.HostState
	for i, nqn := range order {
		s := byNQN[nqn]
		s.Instance = i
		sort.Slice(s.Namespaces, func(a, b int) bool { return s.Namespaces[a].NSID < s.Namespaces[b].NSID })
		for k := range s.Namespaces {
			s.Namespaces[k].Head = fmt.Sprintf("nvme%dn%d", i, s.Namespaces[k].NSID)
		}
		sort.Slice(s.Controllers, func(a, b int) bool { return s.Controllers[a].Instance < s.Controllers[b].Instance })
		for k := range s.Controllers {
			c := &s.Controllers[k]
			for j := range c.Legs {
				c.Legs[j].Name = fmt.Sprintf("nvme%dc%dn%d", i, c.Instance, c.Legs[j].NSID)
			}
		}
		hs.Subsystems = append(hs.Subsystems, *s)
	}
	return hs
}

// splitEndpoint splits a recorded "ip:port" (IPv6 bracketed) into the
// address fields; the IP is kept without brackets, as the kernel's traddr.
func splitEndpoint(ep string) nvmeof.Address {
	if ap, err := netip.ParseAddrPort(ep); err == nil {
		return nvmeof.Address{Traddr: ap.Addr().String(), Trsvcid: strconv.Itoa(int(ap.Port()))}
	}
	if h, p, err := net.SplitHostPort(ep); err == nil {
		return nvmeof.Address{Traddr: h, Trsvcid: p}
	}
	return nvmeof.Address{Traddr: ep}
}

// inspect asks nvmeof.Inspect about nqn on hs once for the whole subsystem
// (stale-endpoint, no-namespace) and once per namespace the host shows
// (controller-not-contributing, which stands down for a bare NQN on a
// subsystem with several namespaces), in that order.
func inspect(hs nvmeof.HostState, nqn string, tg []nvmeof.Target) []nvmeof.Defect {
	out := nvmeof.Inspect(hs, nvmeof.Selector{NQN: nqn}, tg)
	nsids := map[int]bool{}
	for _, s := range hs.Subsystems {
		if s.NQN != nqn {
			continue
		}
		for _, n := range s.Namespaces {
			nsids[n.NSID] = true
		}
	}
	for _, n := range slices.Sorted(maps.Keys(nsids)) {
		out = append(out, nvmeof.Inspect(hs, nvmeof.Selector{NQN: nqn, NSID: n}, tg)...)
	}
	return out
}

// lastSample returns a host's last sample, or false when it has none.
func (r *runIndex) lastSample(h string) (record.Line, bool) {
	s, ok := r.last[h]
	return s, ok
}

// leakedControllers is the check "leaked-controllers" and its findings.
// On every host's last sample (the end of the settle period), for every
// subsystem of the run (topology volumes and migrations; foreign subsystems
// on a shared kernel are not judged), nvmeof.Inspect is asked — for the
// subsystem and for each of its namespaces — with the endpoints the control
// plane last published for that NQN (the last endpoints line at or before
// the last sample) as targets; every controller it names as stale-endpoint,
// controller-not-contributing or no-namespace is leaked (the first kind
// named wins). With nothing published for the NQN, every controller of it
// is stale. A controller Inspect does not name but that is
// neither live nor on its way out (deleting, deleting (no IO), dead) is
// leaked with kind "not-live". Inconclusive (when nothing leaked) if a
// host of the topology has no sample or none at the end of the settle
// period, or a subsystem a host has controllers of was never published.
// Inconclusive, with no leak listed, when the record is short (see
// record.Coverage: it stops before the end of the settle period — the last
// migration's terminal phase plus plan.Params.SettleS, less one settle
// sample interval — or holds fewer migrations than planned): an
// interrupted run's hosts are not judged as if they had settled.
func (r *runIndex) leakedControllers() ([]record.Leak, record.CheckResult) {
	leaks := []record.Leak{}
	var unknown []string
	runNQNs := map[string]bool{}
	for _, n := range r.nqns() {
		runNQNs[n] = true
	}
	for _, h := range r.hosts {
		last, ok := r.lastSample(h)
		if !ok {
			unknown = append(unknown, "no sample of "+h)
			continue
		}
		if !r.coverage.Short && last.T < r.requiredEnd {
			unknown = append(unknown, fmt.Sprintf("the last sample of %s is at %s, before the end of the settle period at %s", h, fmtS(last.T), fmtS(r.coverage.SettleEndS)))
			continue
		}
		hs := HostState(last, r.hostNQN[h])
		ctrl := map[string]record.Controller{}
		nqnSet := map[string]bool{}
		for _, c := range last.Controllers {
			ctrl[c.Name] = c
			if runNQNs[c.NQN] {
				nqnSet[c.NQN] = true
			}
		}
		named := map[string]bool{}
		for _, nqn := range slices.Sorted(maps.Keys(nqnSet)) {
			eps, published := r.endpoints[nqn]
			if !published {
				unknown = append(unknown, fmt.Sprintf("%s has controllers of %s, whose endpoints were never published", h, nqn))
				continue
			}
			if len(eps) == 0 {
				// Inspect skips the stale-endpoint check without targets;
				// with nothing published every controller is at a stale one.
				for _, c := range last.Controllers {
					if c.NQN == nqn && !named[c.Name] {
						named[c.Name] = true
						leaks = append(leaks, record.Leak{Host: h, Controller: c.Name, NQN: c.NQN,
							Address: nvmeof.EndpointKey(c.Address), State: c.State, Kind: string(nvmeof.DefectStaleEndpoint)})
					}
				}
				continue
			}
			for _, d := range inspect(hs, nqn, nvmeof.EndpointTargets(nqn, eps)) {
				if !leakKinds[d.Kind] {
					continue
				}
				for _, name := range d.Controllers {
					c, ok := ctrl[name]
					if !ok || named[name] {
						continue
					}
					named[name] = true
					leaks = append(leaks, record.Leak{Host: h, Controller: name, NQN: c.NQN,
						Address: nvmeof.EndpointKey(c.Address), State: c.State, Kind: string(d.Kind)})
				}
			}
		}
		for _, c := range last.Controllers {
			if !runNQNs[c.NQN] || named[c.Name] {
				continue
			}
			switch nvmeof.ParseState(c.State) {
			case nvmeof.StateLive, nvmeof.StateDeleting, nvmeof.StateDeletingNoIO, nvmeof.StateDead:
				continue
			}
			named[c.Name] = true
			leaks = append(leaks, record.Leak{Host: h, Controller: c.Name, NQN: c.NQN,
				Address: nvmeof.EndpointKey(c.Address), State: c.State, Kind: LeakNotLive})
		}
	}
	sort.SliceStable(leaks, func(i, j int) bool {
		a, b := leaks[i], leaks[j]
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		return ctrlLess(a.Controller, b.Controller)
	})
	if r.coverage.Short {
		// Before the end of the settle period a controller may still be on
		// its way to live or out: nothing is judged a leak yet.
		detail := "not judged: " + r.coverage.Note
		if len(leaks) > 0 {
			detail += fmt.Sprintf("; at its last sample %d controller(s) would count as leaked", len(leaks))
		}
		return []record.Leak{}, record.CheckResult{Name: CheckLeakedControllers, Verdict: record.Inconclusive, Detail: detail}
	}
	switch {
	case len(leaks) > 0:
		// A leak a sourced repair may still fix (repairPending) is not
		// judged; the others fail the check.
		var parts, pending []string
		for _, l := range leaks {
			part := fmt.Sprintf("%s %s %s %s (%s)", l.Host, l.Controller, l.Address, l.State, l.Kind)
			if why := r.repairPending(l.NQN, math.Inf(1)); repairableLeak(l.Kind) && why != "" {
				pending = append(pending, part+": "+why)
				continue
			}
			parts = append(parts, part)
		}
		if len(parts) == 0 {
			return leaks, record.CheckResult{Name: CheckLeakedControllers, Verdict: record.Inconclusive,
				Detail: fmt.Sprintf("%d controller(s) not judged: %s", len(pending), strings.Join(pending, "; "))}
		}
		detail := fmt.Sprintf("%d leaked controller(s) after the settle period: %s", len(parts), strings.Join(parts, "; "))
		if len(pending) > 0 {
			detail += fmt.Sprintf("; %d more not judged: %s", len(pending), strings.Join(pending, "; "))
		}
		return leaks, record.CheckResult{Name: CheckLeakedControllers, Verdict: record.Fail, Detail: detail}
	case len(unknown) > 0:
		return leaks, record.CheckResult{Name: CheckLeakedControllers, Verdict: record.Inconclusive, Detail: strings.Join(unknown, "; ")}
	}
	return leaks, record.CheckResult{Name: CheckLeakedControllers, Verdict: record.Pass,
		Detail: fmt.Sprintf("no leaked controller on %d host(s) at %s", len(r.hosts), fmtS(r.settleEnd))}
}

// pathCompleteness is the check "path-completeness" and its findings: on
// its last sample every consumer host has a controller for every endpoint
// the control plane last published for each volume it consumes, matched by
// canonical ip:port (nvmeof.MissingEndpoints), never by address alone.
// Inconclusive (when nothing is missing) if a consumer host has no sample
// (or none at the end of the settle period) or a volume's endpoints were
// never published; inconclusive, with nothing listed, when the record is
// short (see leakedControllers).
func (r *runIndex) pathCompleteness() ([]record.MissingEndpoint, record.CheckResult) {
	missing := []record.MissingEndpoint{}
	var unknown []string
	pairs := 0
	for _, nqn := range r.nqns() {
		eps, published := r.endpoints[nqn]
		if !published {
			unknown = append(unknown, "endpoints of "+nqn+" never published")
			continue
		}
		for _, h := range r.consumers(nqn) {
			last, ok := r.lastSample(h)
			if !ok {
				unknown = append(unknown, "no sample of "+h)
				continue
			}
			if !r.coverage.Short && last.T < r.requiredEnd {
				unknown = append(unknown, fmt.Sprintf("the last sample of %s is at %s, before the end of the settle period at %s", h, fmtS(last.T), fmtS(r.coverage.SettleEndS)))
				continue
			}
			pairs++
			for _, e := range nvmeof.MissingEndpoints(eps, HostState(last, r.hostNQN[h]), nqn) {
				missing = append(missing, record.MissingEndpoint{Host: h, NQN: nqn, Endpoint: e})
			}
		}
	}
	sort.SliceStable(missing, func(i, j int) bool {
		a, b := missing[i], missing[j]
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		if a.NQN != b.NQN {
			return a.NQN < b.NQN
		}
		return a.Endpoint < b.Endpoint
	})
	if r.coverage.Short {
		detail := "not judged: " + r.coverage.Note
		if len(missing) > 0 {
			detail += fmt.Sprintf("; at its last sample %d published endpoint(s) had no controller", len(missing))
		}
		return []record.MissingEndpoint{}, record.CheckResult{Name: CheckPathCompleteness, Verdict: record.Inconclusive, Detail: detail}
	}
	switch {
	case len(missing) > 0:
		// An endpoint a sourced repair may still bring back
		// (repairPending) is not judged; the others fail the check.
		var parts, pending []string
		for _, m := range missing {
			part := fmt.Sprintf("%s %s %s", m.Host, m.NQN, m.Endpoint)
			if c := r.missingCause(m); c != "" {
				part += " (" + c + ")"
			}
			if why := r.repairPending(m.NQN, r.goneSince(m)); why != "" {
				pending = append(pending, part+": "+why)
				continue
			}
			parts = append(parts, part)
		}
		if len(parts) == 0 {
			return missing, record.CheckResult{Name: CheckPathCompleteness, Verdict: record.Inconclusive,
				Detail: fmt.Sprintf("%d published endpoint(s) without a controller not judged: %s", len(pending), strings.Join(pending, "; "))}
		}
		detail := fmt.Sprintf("%d published endpoint(s) without a controller: %s", len(parts), strings.Join(parts, "; "))
		if len(pending) > 0 {
			detail += fmt.Sprintf("; %d more not judged: %s", len(pending), strings.Join(pending, "; "))
		}
		return missing, record.CheckResult{Name: CheckPathCompleteness, Verdict: record.Fail, Detail: detail}
	case len(unknown) > 0:
		return missing, record.CheckResult{Name: CheckPathCompleteness, Verdict: record.Inconclusive, Detail: strings.Join(dedup(unknown), "; ")}
	case pairs == 0:
		return missing, record.CheckResult{Name: CheckPathCompleteness, Verdict: record.Inconclusive, Detail: "no volume with a consumer host: nothing to judge"}
	}
	return missing, record.CheckResult{Name: CheckPathCompleteness, Verdict: record.Pass,
		Detail: fmt.Sprintf("every published ip:port endpoint has a controller (%d volume/host pairs)", pairs)}
}

// ctrlLess orders controller names by instance (nvme2 before nvme10).
func ctrlLess(a, b string) bool {
	ia, ea := strconv.Atoi(strings.TrimPrefix(a, "nvme"))
	ib, eb := strconv.Atoi(strings.TrimPrefix(b, "nvme"))
	if ea == nil && eb == nil && ia != ib {
		return ia < ib
	}
	return a < b
}

func dedup(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// missingCause says what the record shows before a missing endpoint's
// controller went away on its host: when it was last seen, the last
// migration of the subsystem that ended Failed or Aborted before then with
// the endpoint among its source paths, and the faults injected into that
// migration. "" when the host never had a controller there.
func (r *runIndex) missingCause(m record.MissingEndpoint) string {
	sp, ok := r.seen[m.Host][m.NQN+"\x00"+m.Endpoint]
	if !ok || sp.gone <= sp.lastSeen {
		return ""
	}
	gone := sp.gone
	out := "its controller was gone from " + fmtS(gone)
	var cause *migration
	for i := range r.migrations {
		mg := &r.migrations[i]
		if mg.nqn == m.NQN && mg.terminal <= gone && (mg.outcome == record.PhaseFailed || mg.outcome == record.PhaseAborted) && mg.source[m.Endpoint] {
			if cause == nil || mg.terminal > cause.terminal {
				cause = mg
			}
		}
	}
	if cause == nil {
		return out
	}
	out += fmt.Sprintf(", %.1f s after %s, of which it was a source path, ended %s", gone-cause.terminal, cause.id, cause.outcome)
	var fs []string
	for _, f := range r.faults {
		if f.Action == "inject" && f.Migration == cause.id {
			fs = append(fs, f.Fault+" on "+f.Target)
		}
	}
	if len(fs) > 0 {
		out += "; injected into it: " + strings.Join(dedup(fs), ", ")
	}
	return out
}
