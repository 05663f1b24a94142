package checks

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/record"
)

// Check names as they appear in summary.json "checks", in report order.
const (
	CheckPauseBound         = "pause-bound"
	CheckFreezes            = "freezes"
	CheckLeakedControllers  = "leaked-controllers"
	CheckPathCompleteness   = "path-completeness"
	CheckSplitBrain         = "split-brain"
	CheckServedAfterCutover = "served-after-cutover"
	CheckUnattributedPauses = "unattributed-pauses"
	CheckFaultsLanded       = "faults-landed"
)

// window is one pause window on a host: [start, end] in seconds since run
// start; open when it was still open at the host's last sample.
type window struct {
	start, end float64
	open       bool
}

// Paused reports whether one host sample shows a pause of subsystem nqn:
// some namespace has no leg that is optimized or non-optimized on a live
// controller of that subsystem (docs/concepts.md "Pause window"; kernel
// drivers/nvme/host/multipath.c: only such legs carry I/O, anything else
// requeues it). The namespaces judged are nsids (the volume's, from the
// plan) plus those the sample shows for nqn, as multipath heads or as legs.
// With no namespace known at all, the subsystem pauses when no live
// controller has any accessible leg.
func Paused(sample record.Line, nqn string, nsids []int) bool {
	want := map[int]bool{}
	for _, n := range nsids {
		want[n] = true
	}
	for _, s := range sample.Subsystems {
		if s.NQN == nqn {
			for _, n := range s.NSIDs {
				want[n] = true
			}
		}
	}
	served := map[int]bool{}
	anyServed := false
	for _, c := range sample.Controllers {
		if c.NQN != nqn {
			continue
		}
		for _, l := range c.Legs {
			want[l.NSID] = true
			if c.State == "live" && accessible(l.ANA) {
				served[l.NSID] = true
				anyServed = true
			}
		}
	}
	if len(want) == 0 {
		return !anyServed
	}
	for n := range want {
		if !served[n] {
			return true
		}
	}
	return false
}

func accessible(ana string) bool { return ana == "optimized" || ana == "non-optimized" }

// pauseResult is the pause analysis of a run.
type pauseResult struct {
	migrations   []record.MigrationSummary
	unattributed []record.HostWindow
	// unsampled lists "migration on host" pairs with no sample of the host
	// within the migration's phase lines.
	unsampled []string
}

// pauseBound is the check "pause-bound": for every migration and consumer
// host the longest pause window is at most plan.Params.PauseCritS; a
// window that spans a hole in the host's samples counts only with what was
// seen of it (JudgedPauseS). The
// failing detail stays one line — how many pairs are over, the longest and
// where — since report.md's "Over the pause bound" lists every pair. It is
// inconclusive (when nothing fails) if the record holds no migration
// (plan.Params.Migrations is 0 or the timeline has no phase line), a
// consumer host has no sample during a migration, or the timeline holds
// fewer migrations than the plan asked for.
func pauseBound(plan record.Plan, r *runIndex, pr pauseResult) record.CheckResult {
	crit := plan.Params.PauseCritS
	over, open := 0, 0
	longest, where, pairs := 0.0, "", 0
	var worst record.HostPauses
	for _, m := range pr.migrations {
		for _, h := range slices.Sorted(maps.Keys(m.Hosts)) {
			hp := m.Hosts[h]
			pairs++
			p := JudgedPauseS(hp)
			if where == "" || p > longest {
				longest, where, worst = p, m.ID+" on "+h, hp
			}
			if p > crit {
				over++
				if hp.OpenWindow {
					open++
				}
			}
		}
	}
	inconclusive := func(detail string) record.CheckResult {
		return record.CheckResult{Name: CheckPauseBound, Verdict: record.Inconclusive, Detail: detail}
	}
	coarse := r.resolution()
	if coarse != "" && over > 0 && longest-plan.Params.SampleIntervalS <= crit {
		// Over the bound as measured, but within the sampling error.
		return inconclusive(fmt.Sprintf("%s; measured longest %s (%s), within %s of the bound", coarse, fmtS(longest), where, fmtS(plan.Params.SampleIntervalS)))
	}
	switch {
	case over > 0:
		d := fmt.Sprintf("%d of %d migration/host pair(s) over CUTOVER_PAUSE_CRIT_S = %s; longest %s (%s)", over, pairs, fmtS(crit), fmtS(longest), where)
		if worst.LongestSeenPauseS != nil {
			d = fmt.Sprintf("%d of %d migration/host pair(s) over CUTOVER_PAUSE_CRIT_S = %s; longest %s seen paused (%s, whose window measured %s spans a hole in its samples)",
				over, pairs, fmtS(crit), fmtS(longest), where, fmtS(worst.LongestPauseS))
		}
		if fs := r.faultsDuring(longestWindow(pr, where)); len(fs) > 0 {
			d += "; faults in effect then: " + strings.Join(fs, ", ")
		}
		if open > 0 {
			d += fmt.Sprintf("; %d with a window still open at the last sample", open)
		}
		return record.CheckResult{Name: CheckPauseBound, Verdict: record.Fail, Detail: d + `; see "Over the pause bound"`}
	case r.noMigration() != "":
		return inconclusive(r.noMigration())
	case len(pr.unsampled) > 0:
		return inconclusive("no host sample during the migration for: " + strings.Join(pr.unsampled, ", "))
	case r.missingMigrations() != "":
		return inconclusive(r.missingMigrations())
	case pairs == 0:
		return inconclusive("no migration has a consumer host")
	case coarse != "":
		return inconclusive(fmt.Sprintf("%s; measured longest %s (%s)", coarse, fmtS(longest), where))
	}
	return record.CheckResult{Name: CheckPauseBound, Verdict: record.Pass,
		Detail: fmt.Sprintf("longest pause %s (%s) <= %s over %d migration/host pairs", fmtS(longest), where, fmtS(crit), pairs)}
}

// freezes is the check "freezes": every migration's freezes (the most pause
// windows any one consumer host saw) are at most plan.Params.FreezesAllowed.
// A second freeze means the cutover was retried. The failing detail names
// how many migrations are over and the worst one (report.md's "Over the
// pause bound" lists every one). Inconclusive (when nothing fails) if the
// record holds no migration or fewer migrations than the plan asked for.
func freezes(plan record.Plan, r *runIndex, pr pauseResult) record.CheckResult {
	allowed := plan.Params.FreezesAllowed
	over, most, worst := 0, 0, ""
	var failing []string
	for _, m := range pr.migrations {
		if m.Freezes > allowed {
			over++
			failing = append(failing, m.ID)
		}
		if m.Freezes > most {
			most = m.Freezes
			var hs []string
			for _, h := range slices.Sorted(maps.Keys(m.Hosts)) {
				if hp := m.Hosts[h]; hp.Freezes == m.Freezes {
					hs = append(hs, h+" "+fmtWindows(hp.Windows))
				}
			}
			worst = m.ID + " on " + strings.Join(hs, ", ")
		}
	}
	switch {
	case over > 0:
		return record.CheckResult{Name: CheckFreezes, Verdict: record.Fail,
			Detail: fmt.Sprintf("%d of %d migration(s) over CUTOVER_FREEZES_ALLOWED = %d; most %d freezes (%s); see \"Over the pause bound\"",
				over, len(pr.migrations), allowed, most, worst), Failing: slices.Sorted(slices.Values(failing))}
	case r.noMigration() != "":
		return record.CheckResult{Name: CheckFreezes, Verdict: record.Inconclusive, Detail: r.noMigration()}
	case r.missingMigrations() != "":
		return record.CheckResult{Name: CheckFreezes, Verdict: record.Inconclusive, Detail: r.missingMigrations()}
	case r.resolution() != "":
		// Windows seen apart are apart; but two closer than an interval
		// merge, and one shorter than it can be missed.
		return record.CheckResult{Name: CheckFreezes, Verdict: record.Inconclusive, Detail: r.resolution()}
	}
	return record.CheckResult{Name: CheckFreezes, Verdict: record.Pass,
		Detail: fmt.Sprintf("at most %d freeze(s) per migration over %d migrations <= %d allowed", most, len(pr.migrations), allowed)}
}

// unattributedPauses is the check "unattributed-pauses": a pause window on
// a consumer host outside every migration's span (first phase line to
// terminal phase plus plan.Params.AttributionMarginS) is a finding.
func unattributedPauses(r *runIndex, pr pauseResult) record.CheckResult {
	if len(pr.unattributed) == 0 {
		return record.CheckResult{Name: CheckUnattributedPauses, Verdict: record.Pass,
			Detail: "every pause window lies within a migration"}
	}
	var ws []string
	for _, w := range pr.unattributed {
		d := fmt.Sprintf("%s %s %s", w.Host, w.NQN, fmtWindows([][2]float64{w.Window}))
		if fs := r.faultsDuring(w.Window[0], w.Window[1]); len(fs) > 0 {
			d += " (faults in effect: " + strings.Join(fs, ", ") + ")"
		}
		ws = append(ws, d)
	}
	return record.CheckResult{Name: CheckUnattributedPauses, Verdict: record.Fail,
		Detail: fmt.Sprintf("%d pause window(s) outside every migration: %s", len(ws), strings.Join(ws, "; "))}
}

func fmtWindows(ws [][2]float64) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = fmt.Sprintf("[%s, %s]", record.FormatT(w[0]), record.FormatT(w[1]))
	}
	return strings.Join(parts, " ") + " s"
}

// longestWindow is the longest pause window of the "<migration> on <host>"
// pair where ([0, 0] when unknown).
func longestWindow(pr pauseResult, where string) (float64, float64) {
	id, host, _ := strings.Cut(where, " on ")
	for _, m := range pr.migrations {
		if m.ID != id {
			continue
		}
		var best [2]float64
		for _, w := range m.Hosts[host].Windows {
			if w[1]-w[0] > best[1]-best[0] {
				best = w
			}
		}
		return best[0], best[1]
	}
	return 0, 0
}

// faultsDuring names the faults whose effect overlapped [a, b]: injected
// (and landed) before b, not recovered before a.
func (r *runIndex) faultsDuring(a, b float64) []string {
	if b <= a {
		return nil
	}
	outcomes, _ := r.faultOutcomes()
	var out []string
	for _, o := range outcomes {
		if o.Status == record.FaultNotInjected || o.InjectedS > b {
			continue
		}
		if o.RecoveredS != nil && *o.RecoveredS < a {
			continue
		}
		out = append(out, fmt.Sprintf("%s on %s from %s", o.Kind, o.Target, fmtS(o.InjectedS)))
	}
	return out
}
