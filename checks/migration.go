package checks

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// optimizedAt returns the NSIDs that have an optimized leg on a live
// controller of nqn whose ip:port is in eps, leaving out controllers at an
// IP in silent (silentIPs; nil = none).
func optimizedAt(s record.Line, nqn string, eps map[string]bool, silent map[string]bool) map[int]bool {
	out := map[int]bool{}
	for _, c := range s.Controllers {
		if c.NQN != nqn || c.State != "live" || !eps[nvmeof.EndpointKey(c.Address)] {
			continue
		}
		if silent != nil && silent[splitEndpoint(c.Address).Traddr] {
			continue
		}
		for _, l := range c.Legs {
			if l.ANA == "optimized" {
				out[l.NSID] = true
			}
		}
	}
	return out
}

// The check "split-brain": no host sample within a
// migration's span shows the same namespace optimized both over a source
// path and over a target path of that migration (legs on live controllers;
// source and target told apart by the ip:port endpoints of the migration's
// Pending phase line). Two optimized paths to one namespace on two nodes
// mean two writers. A migration whose phase lines carry no endpoints makes
// the check inconclusive unless something fails; so does a record with no
// migration or no host sample within one. A path to a node an injected
// fault has silenced for the host (silentIPs) is no writer: nothing it is
// sent arrives, and the host shows the ANA state it last heard until
// keep-alive notices (docs/host-model.md), so such samples are named
// (silenced), not found. Judge.splitBrain finds the samples;
// splitBrainResult is the verdict from the findings: found (per migration
// and host), migrations without endpoints, host samples checked.
func (r *runIndex) splitBrainResult(found, silenced, unknown []string, checked, migrations int) record.CheckResult {
	res := r.splitBrainVerdict(found, unknown, checked, migrations)
	if len(silenced) > 0 {
		res.Detail += "; not two writers, one path's node silenced by an injected fault: " + strings.Join(silenced, "; ")
	}
	return res
}

// silentIPs are the IPs of the storage nodes host cannot hear at t: a
// node-crash of the node, or a network-partition of host and the node,
// injected at or before t and not recovered before it (fault lines; the
// plan topology's IPs). nil when there is none.
func (r *runIndex) silentIPs(host string, t float64) map[string]bool {
	var out map[string]bool
	for i, f := range r.faults {
		if f.T > t {
			break
		}
		if f.Action != "inject" || strings.HasPrefix(f.Reason, "not injected") {
			continue
		}
		node := ""
		switch f.Fault {
		case "node-crash":
			node = f.Target
		case "network-partition":
			h, n, ok := strings.Cut(f.Target, "/")
			if !ok || h != host {
				continue
			}
			node = n
		default:
			continue
		}
		recovered := false
		for _, g := range r.faults[i+1:] {
			if g.T > t {
				break
			}
			if g.Action == "recover" && g.Fault == f.Fault && g.Target == f.Target {
				recovered = g.T < t
				break
			}
		}
		if recovered {
			continue
		}
		for _, n := range r.plan.Topology.Nodes {
			if n.Name == node {
				if out == nil {
					out = map[string]bool{}
				}
				out[n.IP] = true
			}
		}
	}
	return out
}

func (r *runIndex) splitBrainVerdict(found, unknown []string, checked, migrations int) record.CheckResult {
	inconclusive := func(detail string) record.CheckResult {
		return record.CheckResult{Name: CheckSplitBrain, Verdict: record.Inconclusive, Detail: detail}
	}
	switch {
	case len(found) > 0:
		return record.CheckResult{Name: CheckSplitBrain, Verdict: record.Fail, Detail: strings.Join(found, "; ")}
	case r.noMigration() != "":
		return inconclusive(r.noMigration())
	case len(unknown) > 0:
		return inconclusive("no source/target endpoints in the phase lines of: " + strings.Join(unknown, ", "))
	case checked == 0:
		return inconclusive("no host sample within any migration's span: nothing was seen to judge")
	}
	return record.CheckResult{Name: CheckSplitBrain, Verdict: record.Pass,
		Detail: fmt.Sprintf("no sample with a source and a target path both optimized (%d host samples within %d migrations)", checked, migrations)}
}

// The check "served-after-cutover": after every Completed migration, on every
// consumer host, the sample at the judgement instant shows every namespace of
// the subsystem with an optimized or non-optimized leg on a live controller
// at a target endpoint of the migration. The judgement instant is the end of
// the attribution margin (docs/concepts.md "Pause window"): the first sample
// at or after Completed plus plan.Params.AttributionMarginS — or, when the
// next migration of the subsystem starts before that sample, the last sample
// before it starts. A host with no such sample (the record ends too early),
// or a migration without target endpoints, makes it inconclusive unless
// something fails; so does a record without migrations
// (plan.Params.Migrations is 0 or no phase line), with fewer migrations
// than the plan asked for, or with no Completed migration (nothing to
// judge). Judge.servedAfterCutover finds the judged samples;
// servedResult is the verdict from the findings.
func (r *runIndex) servedResult(bad, unknown []string, judged int) record.CheckResult {
	margin := r.plan.Params.AttributionMarginS
	inconclusive := func(detail string) record.CheckResult {
		return record.CheckResult{Name: CheckServedAfterCutover, Verdict: record.Inconclusive, Detail: detail}
	}
	switch {
	case len(bad) > 0:
		return record.CheckResult{Name: CheckServedAfterCutover, Verdict: record.Fail, Detail: strings.Join(bad, "; ")}
	case r.noMigration() != "":
		return inconclusive(r.noMigration())
	case len(unknown) > 0:
		return inconclusive(strings.Join(unknown, "; "))
	case r.missingMigrations() != "":
		return inconclusive(r.missingMigrations())
	case judged == 0:
		return inconclusive("no migration Completed: no cutover to judge the target's service after")
	}
	return record.CheckResult{Name: CheckServedAfterCutover, Verdict: record.Pass,
		Detail: fmt.Sprintf("every namespace served at the target on every consumer host (%d Completed migration/host pairs, judged at Completed + %s)", judged, fmtS(margin))}
}

// unservedAtTarget returns the NSIDs of nqn (the plan's plus those the
// sample shows) without an accessible leg on a live controller at a target
// endpoint, sorted.
func unservedAtTarget(s record.Line, nqn string, nsids []int, target map[string]bool) []int {
	want := map[int]bool{}
	for _, n := range nsids {
		want[n] = true
	}
	for _, sub := range s.Subsystems {
		if sub.NQN == nqn {
			for _, n := range sub.NSIDs {
				want[n] = true
			}
		}
	}
	served := map[int]bool{}
	for _, c := range s.Controllers {
		if c.NQN != nqn {
			continue
		}
		for _, l := range c.Legs {
			want[l.NSID] = true
			if c.State == "live" && target[nvmeof.EndpointKey(c.Address)] && accessible(l.ANA) {
				served[l.NSID] = true
			}
		}
	}
	var out []int
	for n := range want {
		if !served[n] {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	if len(want) == 0 {
		return []int{0} // nothing known of the subsystem: nothing is served
	}
	return out
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}
