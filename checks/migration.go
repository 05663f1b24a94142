package checks

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/fiomig/fiomig/nvmeof"
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
		if c.NQN != nqn || c.State != "live" || !eps[nvmeof.EndpointKey(c.Address)] {
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
	return splitBrainResult(found, unknown, checked, len(r.migrations))
}

// splitBrainResult is the split-brain verdict from its findings: found
// (per migration and host), migrations without endpoints, host samples checked.
func splitBrainResult(found, unknown []string, checked, migrations int) record.CheckResult {
	switch {
	case len(found) > 0:
		return record.CheckResult{Name: CheckSplitBrain, Verdict: record.Fail, Detail: strings.Join(found, "; ")}
	case len(unknown) > 0:
		return record.CheckResult{Name: CheckSplitBrain, Verdict: record.Inconclusive,
			Detail: "no source/target endpoints in the phase lines of: " + strings.Join(unknown, ", ")}
	}
	return record.CheckResult{Name: CheckSplitBrain, Verdict: record.Pass,
		Detail: fmt.Sprintf("no sample with a source and a target path both optimized (%d host samples within %d migrations)", checked, migrations)}
}

// ServedAfterCutover is the check "served-after-cutover": after every
// Completed migration, on every consumer host, the sample at the judgement
// instant shows every namespace of the subsystem with an optimized or
// non-optimized leg on a live controller at a target endpoint of the
// migration. The judgement instant is the end of the attribution margin
// (DESIGN.md): the first sample at or after Completed plus
// plan.Params.AttributionMarginS — or, when the next migration of the
// subsystem starts before that sample, the last sample before it starts.
// A host with no such sample (the record ends too early), or a migration
// without target endpoints, makes it inconclusive unless something fails;
// so does a record without migrations (plan.Params.Migrations is 0 or no
// phase line) or with fewer migrations than the plan asked for.
func ServedAfterCutover(plan record.Plan, timeline []record.Line) record.CheckResult {
	return newIndex(plan, timeline).servedAfterCutover()
}

// nextStart returns the first phase line of the next migration of the same
// subsystem after migration i, +Inf if none.
func (r *runIndex) nextStart(i int) float64 {
	m := r.migrations[i]
	for _, n := range r.migrations[i+1:] {
		if n.nqn == m.nqn && n.start > m.start {
			return n.start
		}
	}
	return math.Inf(1)
}

// judgeSample returns the sample of host h at which migration i (Completed
// at completed) is judged served, or nil; see ServedAfterCutover.
func (r *runIndex) judgeSample(i int, h string, completed float64) *record.Line {
	at := record.RoundT(completed+r.plan.Params.AttributionMarginS) - 1e-9
	next := r.nextStart(i)
	var before *record.Line
	for k := range r.samples[h] {
		s := &r.samples[h][k]
		if s.T < completed {
			continue
		}
		if s.T >= next {
			break
		}
		if s.T >= at {
			return s
		}
		before = s
	}
	if math.IsInf(next, 1) {
		return nil // the record ends before the margin does
	}
	return before
}

func (r *runIndex) servedAfterCutover() record.CheckResult {
	var bad, unknown []string
	judged := 0
	margin := r.plan.Params.AttributionMarginS
	for i, m := range r.migrations {
		if m.completed == nil {
			continue
		}
		if m.target == nil {
			unknown = append(unknown, m.id+": no target endpoints in its phase lines")
			continue
		}
		for _, h := range r.consumers(m.nqn) {
			s := r.judgeSample(i, h, *m.completed)
			if s == nil {
				lastAt := "it has no sample"
				if last, ok := r.lastSample(h); ok {
					lastAt = "its last sample is at " + fmtS(last.T)
				}
				unknown = append(unknown, fmt.Sprintf("%s on %s: no sample at or after Completed + margin (%s + %s = %s); %s",
					m.id, h, fmtS(*m.completed), fmtS(margin), fmtS(*m.completed+margin), lastAt))
				continue
			}
			judged++
			if missing := unservedAtTarget(*s, m.nqn, r.volumes[m.nqn].NSIDs, m.target); len(missing) > 0 {
				bad = append(bad, fmt.Sprintf("%s on %s at %s: NSID %s not served by a live controller at the target",
					m.id, h, fmtS(s.T), joinInts(missing)))
			}
		}
	}
	return r.servedResult(bad, unknown, judged)
}

// servedResult is the served-after-cutover verdict from its findings.
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
