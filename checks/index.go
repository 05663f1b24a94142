package checks

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// runIndex is what the checks' verdicts read once a record has been
// streamed through a Judge (Judge.Summary fills it in): the plan, the
// migrations, each host's last sample, the faults, the endpoints last
// published, coverage and when each controller was last seen.
type runIndex struct {
	plan record.Plan
	// last holds each host's last sample (an observation: a sample line
	// or a heartbeat's repeated state).
	last map[string]record.Line
	// hosts is every host of the topology and every host that has samples, sorted.
	hosts []string
	// hostNQN maps a host name to its host NQN (plan topology).
	hostNQN map[string]string
	// volumes maps a subsystem NQN to its volume (plan topology).
	volumes map[string]record.VolumeInfo
	// migrations in order of their first phase line (ties by ID).
	migrations []migration
	// endpoints maps an NQN to the endpoints of its last endpoints line at or
	// before settleEnd, canonicalised and sorted.
	endpoints map[string][]string
	// faults are the fault lines in time order.
	faults []record.Line
	// settleEnd is the time of the last sample line: the end of the settle
	// period, when the leak and completeness checks look at the hosts (the
	// last line's time when there is no sample, 0 for an empty record).
	settleEnd float64
	// ever maps an NQN to the hosts that showed a controller of it in any sample.
	ever map[string]map[string]bool
	// coverage says whether the record reaches the end of the settle period.
	coverage record.Coverage
	// seen maps host and NQN\x00endpoint to when a controller there was
	// last seen and first gone after that (missingCause).
	seen map[string]map[string]seenSpan
	// obsStart is the record's first observation of any host (a sample or
	// a heartbeat; 0 without one).
	obsStart float64
	// holes are every host's sample holes (observed.go), once known.
	holes []record.SampleHole
	// outcomes and matrix memoize faultOutcomes once every line is in.
	outcomes []record.FaultOutcome
	matrix   record.FaultMatrix
	// requiredEnd is the time the last sample must reach (less one settle
	// sample interval) for the record to cover the settle period.
	requiredEnd float64
}

// seenSpan: a controller at an endpoint last seen at lastSeen, and the
// first sample after that without it at gone (gone <= lastSeen: still there).
type seenSpan struct{ lastSeen, gone float64 }

// migration is one migration as its phase lines describe it.
type migration struct {
	id, nqn string
	start   float64 // first phase line
	last    float64 // last phase line
	// terminal is the time of the first terminal phase line, +Inf if none.
	terminal  float64
	completed *float64 // time of the Completed line
	outcome   string   // terminal phase, or the last phase seen
	running   bool     // a Running phase line came before any terminal one
	reason    string   // the terminal phase line's reason (Failed, Aborted)
	// source and target are the canonical ip:port endpoints from the first
	// phase line carrying them (Pending).
	source, target map[string]bool
}

// noCutover reports whether the migration ended Failed or Aborted without
// a Running phase: it never started its cutover. The operator calls the
// control plane's ContinueMigration (which leads to the cutover) only on
// its way to Running, and its abort and validation failures cancel before
// that (docs/sources.md §2.2: performMigration, cancelAndFail,
// reconcileAbort). A migration that failed while Running may have frozen
// its volume and keeps its pauses. [inference from the sourced flow]
func (m migration) noCutover() bool {
	return (m.outcome == record.PhaseFailed || m.outcome == record.PhaseAborted) && !math.IsInf(m.terminal, 1) && !m.running
}

// coreEnd is the end of the migration proper: its terminal phase.
func (m migration) coreEnd() float64 { return m.terminal }

// spanEnd is the end of the attribution span: terminal phase plus margin.
func (m migration) spanEnd(margin float64) float64 { return m.terminal + margin }

// settleSampleInterval is the sampling interval during the settle period
// (plan.params.settle_sample_interval_s, or sample_interval_s when 0).
func (r *runIndex) settleSampleInterval() float64 {
	if iv := r.plan.Params.SettleSampleIntervalS; iv > 0 {
		return iv
	}
	return math.Max(r.plan.Params.SampleIntervalS, 0)
}

// computeCoverage compares the record's last sample with the end of the
// settle period: the last migration's terminal phase (or its last phase line,
// when it never reached one; the run start without migrations) plus
// plan.params.settle_s (docs/concepts.md "Leak": the leak and completeness
// checks look at the hosts at the end of the settle period). One settle
// sample interval is tolerated. A timeline with fewer migrations than the
// plan asked for stopped before its settle period began. It returns the
// coverage and the earliest last-sample time that covers the settle period.
func (r *runIndex) computeCoverage() (record.Coverage, float64) {
	p := r.plan.Params
	start, what := 0.0, "the run start"
	for _, m := range r.migrations {
		end, w := m.terminal, "last terminal phase at "
		if math.IsInf(end, 1) {
			end, w = m.last, "last phase line at "
		}
		if end >= start {
			start, what = end, w+fmtS(end)
		}
	}
	c := record.Coverage{SettleEndS: record.RoundT(start + p.SettleS)}
	hasSample := false
	for _, h := range r.hosts {
		if s, ok := r.lastSample(h); ok {
			hasSample = true
			c.LastSampleS = math.Max(c.LastSampleS, s.T)
		}
	}
	tol := r.settleSampleInterval()
	required := record.RoundT(c.SettleEndS-tol) - 1e-9
	end := fmt.Sprintf("the end of the settle period at %s (%s + settle %s)", fmtS(c.SettleEndS), what, fmtS(p.SettleS))
	last := "has no sample"
	if hasSample {
		last = "ends with its last sample at " + fmtS(c.LastSampleS)
	}
	switch {
	case len(r.migrations) < p.Migrations:
		c.Short = true
		c.Note = fmt.Sprintf("the record is short: it holds %d of the %d planned migrations and %s, so the run stopped before its settle period", len(r.migrations), p.Migrations, last)
	case !hasSample || c.LastSampleS < required:
		c.Short = true
		c.Note = fmt.Sprintf("the record is short: it %s, before %s", last, end)
	default:
		c.Note = fmt.Sprintf("the last sample at %s reaches %s", fmtS(c.LastSampleS), end)
	}
	return c, required
}

// noMigration returns why the record holds no migration to judge, or "".
func (r *runIndex) noMigration() string {
	switch {
	case r.plan.Params.Migrations == 0:
		return "no migration in the record: plan.params.migrations is 0, nothing to judge"
	case len(r.migrations) == 0:
		return fmt.Sprintf("no migration in the record: the timeline has no phase line (the plan asked for %d)", r.plan.Params.Migrations)
	}
	return ""
}

// missingMigrations returns "" or why the timeline holds fewer migrations
// than the plan asked for (a run stopped early).
func (r *runIndex) missingMigrations() string {
	if n, want := len(r.migrations), r.plan.Params.Migrations; n < want {
		return fmt.Sprintf("the plan asked for %d migrations, the timeline has %d", want, n)
	}
	return ""
}

// consumers returns the consumer hosts of nqn, sorted: the volume's
// Consumers from the plan topology; for an NQN the topology does not know,
// every host that showed a controller of it.
func (r *runIndex) consumers(nqn string) []string {
	var hs []string
	if v, ok := r.volumes[nqn]; ok {
		hs = append(hs, v.Consumers...)
	} else {
		for h := range r.ever[nqn] {
			hs = append(hs, h)
		}
	}
	sort.Strings(hs)
	return hs
}

// consumes reports whether host is a consumer of nqn.
func (r *runIndex) consumes(host, nqn string) bool {
	for _, h := range r.consumers(nqn) {
		if h == host {
			return true
		}
	}
	return false
}

// nqns returns every subsystem NQN the run concerns (topology volumes and
// migrations), sorted.
func (r *runIndex) nqns() []string {
	set := map[string]bool{}
	for n := range r.volumes {
		set[n] = true
	}
	for _, m := range r.migrations {
		set[m.nqn] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// canonicalList returns eps as nvmeof.EndpointKey keys (the form
// nvmeof.MissingEndpoints and Inspect compare), deduplicated and sorted.
func canonicalList(eps []string) []string {
	out := make([]string, 0, len(eps))
	seen := map[string]bool{}
	for _, e := range eps {
		c := nvmeof.EndpointKey(e)
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// endpointSet is the set of eps' nvmeof.EndpointKey keys.
func endpointSet(eps []string) map[string]bool {
	s := map[string]bool{}
	for _, e := range eps {
		s[nvmeof.EndpointKey(e)] = true
	}
	return s
}

// fmtS formats seconds as record.FormatT does, with a unit.
func fmtS(s float64) string { return record.FormatT(s) + " s" }
