package checks

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/fiomig/fiomig/record"
)

// sampleSpan returns the interval [from, to) of sample times that belong to
// migration i: from its first phase line to its terminal phase plus the
// attribution margin, cut at the first phase line of the next migration of
// the same subsystem (whose source and target may be this one's reversed).
func (r *runIndex) sampleSpan(i int) (from, to float64) {
	m := r.migrations[i]
	from, to = m.start, m.spanEnd(r.plan.Params.AttributionMarginS)
	if math.IsInf(to, 1) || math.IsNaN(to) {
		to = math.Inf(1)
	} else {
		to = math.Nextafter(to, math.Inf(1)) // the span's end is inclusive
	}
	for _, n := range r.migrations[i+1:] {
		if n.nqn == m.nqn && n.start > m.start && n.start < to {
			to = n.start
			break
		}
	}
	return from, to
}

// optimizedAt returns the NSIDs that have an optimized leg on a live
// controller of nqn whose ip:port is in eps.
func optimizedAt(s record.Line, nqn string, eps map[string]bool) map[int]bool {
	out := map[int]bool{}
	for _, c := range s.Controllers {
		if c.NQN != nqn || c.State != "live" || !eps[canonical(c.Address)] {
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

// cutoverInstant returns the host-observed cutover instant of migration m
// on host h: the first sample within the migration's span with a target
// path optimized and no source path optimized (on live controllers), or nil.
func (r *runIndex) cutoverInstant(m migration, h string) *float64 {
	if m.target == nil {
		return nil
	}
	i := r.migrationIndex(m.id)
	from, to := r.sampleSpan(i)
	for _, s := range r.samples[h] {
		if s.T < from || s.T >= to {
			continue
		}
		if len(optimizedAt(s, m.nqn, m.target)) > 0 && len(optimizedAt(s, m.nqn, m.source)) == 0 {
			t := s.T
			return &t
		}
	}
	return nil
}

func (r *runIndex) migrationIndex(id string) int {
	for i, m := range r.migrations {
		if m.id == id {
			return i
		}
	}
	return -1
}

// SplitBrain is the check "split-brain": no host sample within a
// migration's span shows the same namespace optimized both over a source
// path and over a target path of that migration (legs on live controllers;
// source and target told apart by the ip:port endpoints of the migration's
// Pending phase line). Two optimized paths to one namespace on two nodes
// mean two writers. A migration whose phase lines carry no endpoints makes
// the check inconclusive unless something fails.
func SplitBrain(plan record.Plan, timeline []record.Line) record.CheckResult {
	return newIndex(plan, timeline).splitBrain()
}

func (r *runIndex) splitBrain() record.CheckResult {
	var found, unknown []string
	checked := 0
	for i, m := range r.migrations {
		if m.source == nil {
			unknown = append(unknown, m.id)
			continue
		}
		from, to := r.sampleSpan(i)
		for _, h := range r.hosts {
			first, n := -1.0, 0
			var nsids []int
			for _, s := range r.samples[h] {
				if s.T < from || s.T >= to {
					continue
				}
				checked++
				src := optimizedAt(s, m.nqn, m.source)
				tgt := optimizedAt(s, m.nqn, m.target)
				var both []int
				for ns := range src {
					if tgt[ns] {
						both = append(both, ns)
					}
				}
				if len(both) == 0 {
					continue
				}
				if n == 0 {
					first = s.T
					sort.Ints(both)
					nsids = both
				}
				n++
			}
			if n > 0 {
				found = append(found, fmt.Sprintf("%s on %s: %d sample(s) from %s, NSID %s optimized at source and target",
					m.id, h, n, fmtS(first), joinInts(nsids)))
			}
		}
	}
	switch {
	case len(found) > 0:
		return record.CheckResult{Name: CheckSplitBrain, Verdict: record.Fail, Detail: strings.Join(found, "; ")}
	case len(unknown) > 0:
		return record.CheckResult{Name: CheckSplitBrain, Verdict: record.Inconclusive,
			Detail: "no source/target endpoints in the phase lines of: " + strings.Join(unknown, ", ")}
	}
	return record.CheckResult{Name: CheckSplitBrain, Verdict: record.Pass,
		Detail: fmt.Sprintf("no sample with a source and a target path both optimized (%d host samples within %d migrations)", checked, len(r.migrations))}
}

// ServedAfterCutover is the check "served-after-cutover": after every
// Completed migration, on every consumer host, the last sample at or before
// the judgement instant (Completed plus plan.Params.AttributionMarginS, or
// just before the next migration of the subsystem if it starts earlier)
// shows every namespace of the subsystem with an optimized or non-optimized
// leg on a live controller at a target endpoint of the migration. A host
// with no sample between Completed and the judgement instant, or a
// migration without target endpoints, makes it inconclusive unless
// something fails.
func ServedAfterCutover(plan record.Plan, timeline []record.Line) record.CheckResult {
	return newIndex(plan, timeline).servedAfterCutover()
}

func (r *runIndex) servedAfterCutover() record.CheckResult {
	var bad, unknown []string
	judged := 0
	for i, m := range r.migrations {
		if m.completed == nil {
			continue
		}
		if m.target == nil {
			unknown = append(unknown, m.id+": no target endpoints in its phase lines")
			continue
		}
		_, to := r.sampleSpan(i)
		for _, h := range r.consumers(m.nqn) {
			var last *record.Line
			for k, s := range r.samples[h] {
				if s.T >= *m.completed && s.T < to {
					last = &r.samples[h][k]
				}
			}
			if last == nil {
				unknown = append(unknown, fmt.Sprintf("%s on %s: no sample after Completed at %s", m.id, h, fmtS(*m.completed)))
				continue
			}
			judged++
			if missing := unservedAtTarget(*last, m.nqn, r.volumes[m.nqn].NSIDs, m.target); len(missing) > 0 {
				bad = append(bad, fmt.Sprintf("%s on %s at %s: NSID %s not served by a live controller at the target",
					m.id, h, fmtS(last.T), joinInts(missing)))
			}
		}
	}
	switch {
	case len(bad) > 0:
		return record.CheckResult{Name: CheckServedAfterCutover, Verdict: record.Fail, Detail: strings.Join(bad, "; ")}
	case len(unknown) > 0:
		return record.CheckResult{Name: CheckServedAfterCutover, Verdict: record.Inconclusive, Detail: strings.Join(unknown, "; ")}
	}
	return record.CheckResult{Name: CheckServedAfterCutover, Verdict: record.Pass,
		Detail: fmt.Sprintf("every namespace served at the target on every consumer host (%d Completed migration/host pairs)", judged)}
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
			if c.State == "live" && target[canonical(c.Address)] && accessible(l.ANA) {
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
