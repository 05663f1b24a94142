package checks

import (
	"cmp"
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
// start; open when it was still open at the host's last sample; ips are
// the node IPs of the host's controllers of the subsystem just before and
// at its start (pathIPs), to tell which faults can have caused it.
type window struct {
	start, end float64
	open       bool
	ips        []string
	// latestStart is set (> start) when the window holds a silent stall
	// known only from a keep-alive timeout: its start if that stall began
	// as late as the evidence allows (stalls.go).
	latestStart float64
	// stalls are the silent stalls in the window; own is its first sample
	// that Paused shows paused by itself (hasOwn: it has one). Together
	// they tell whether a fault's stall began it (faultBegun).
	stalls []stallSpan
	own    float64
	hasOwn bool
}

// pathIPs returns the IPs (sorted, without port) of the controllers of nqn
// in the samples before and at a window's start (before may be nil): the
// nodes whose loss can pause the subsystem on that host.
func pathIPs(nqn string, before, at *record.Line) []string {
	var ips []string
	for _, s := range []*record.Line{before, at} {
		if s == nil {
			continue
		}
		for _, c := range s.Controllers {
			if c.NQN != nqn {
				continue
			}
			if ip := splitEndpoint(c.Address).Traddr; !slices.Contains(ips, ip) {
				ips = append(ips, ip)
			}
		}
	}
	slices.Sort(ips)
	return ips
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
	// faultWindows are the windows outside every migration that a fault
	// explains (faultCause).
	faultWindows []record.HostWindow
	// unsampled lists "migration on host" pairs with no sample of the host
	// within the migration's phase lines (migrations that started their
	// cutover only).
	unsampled []string
}

func newPauseResult() pauseResult {
	return pauseResult{unattributed: []record.HostWindow{}, faultWindows: []record.HostWindow{}}
}

// outside files a window of nqn on host that no migration takes: under
// the fault that explains it, or unattributed.
func (res *pauseResult) outside(r *runIndex, host, nqn string, w window) {
	hw := record.HostWindow{Host: host, NQN: nqn, Window: [2]float64{w.start, w.end}}
	if cause := r.faultCause(host, w); cause != "" {
		hw.Cause = cause
		res.faultWindows = append(res.faultWindows, hw)
		return
	}
	res.unattributed = append(res.unattributed, hw)
}

// stallWindow files a window of nqn on host that st, a landed fault's
// silent stall, began (faultBegun) under that fault; mig is the migration
// whose span holds its start ("" for none), which does not take it.
func (res *pauseResult) stallWindow(host, nqn string, w window, st record.Stall, mig string) {
	res.faultWindows = append(res.faultWindows, record.HostWindow{Host: host, NQN: nqn, Window: [2]float64{w.start, w.end},
		Cause: stallWindowCause(st), Stall: &st, Migration: mig})
}

// sort orders the windows outside migrations by start, host and NQN.
func (res *pauseResult) sort() {
	for _, ws := range [][]record.HostWindow{res.unattributed, res.faultWindows} {
		slices.SortStableFunc(ws, func(x, y record.HostWindow) int {
			return cmp.Or(cmp.Compare(x.Window[0], y.Window[0]), cmp.Compare(x.Host, y.Host), cmp.Compare(x.NQN, y.NQN))
		})
	}
}

// faultCause names the fault that explains a pause window outside every
// migration that started its cutover ("" if none): a landed fault injected
// at or before the window's start and not recovered more than one sample
// interval before it (the first paused sample comes up to an interval
// after the pause began), aimed at what the host's paths of the subsystem
// need — the host itself (reset-controller), the host and a node its paths
// lead to (network-partition "host/node"), or such a node (target-restart,
// node-crash, ana-flap, ...; plan topology node name → IP). The first such
// fault in injection order wins. Faults aimed elsewhere (the operator, a
// migration) explain no host's pause.
func (r *runIndex) faultCause(host string, w window) string {
	nodeIP := map[string]string{}
	for _, n := range r.plan.Topology.Nodes {
		nodeIP[n.Name] = n.IP
	}
	reaches := func(node string) bool {
		ip, ok := nodeIP[node]
		return ok && slices.Contains(w.ips, splitEndpoint(ip).Traddr)
	}
	outcomes, _ := r.faultOutcomes()
	for _, o := range outcomes {
		if o.Status != record.FaultLanded || o.InjectedS > w.start {
			continue
		}
		if o.RecoveredS != nil && *o.RecoveredS+r.intervalAt(w.start) < w.start-1e-9 {
			continue
		}
		h, node, pair := strings.Cut(o.Target, "/")
		if (pair && h == host && reaches(node)) || (!pair && (o.Target == host || reaches(o.Target))) {
			return fmt.Sprintf("%s on %s from %s", o.Kind, o.Target, fmtS(o.InjectedS))
		}
	}
	return ""
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
// fewer migrations than the plan asked for. A pair whose longest window
// holds a silent stall known only from a keep-alive timeout, and measures
// over the bound unless that stall began as late as the evidence allows
// (LongestPauseMinS within it), cannot be judged: inconclusive, when
// nothing fails. A pair whose host-observed cutover lies inside a fault
// window (HostPauses.MaskedBy) had its cutover's own pause masked by the
// fault's: the window's length bounds it, so the pair passes with that
// bound stated when it is within crit and is inconclusive over it (when
// nothing fails), naming migration, host, window and fault.
func pauseBound(plan record.Plan, r *runIndex, pr pauseResult) record.CheckResult {
	crit := plan.Params.PauseCritS
	over, open := 0, 0
	longest, where, pairs := 0.0, "", 0
	var worst record.HostPauses
	var none, unsure, maskedOver, maskedIn []string
	for _, m := range pr.migrations {
		if m.NoCutover {
			none = append(none, m.ID)
			continue
		}
		for _, h := range slices.Sorted(maps.Keys(m.Hosts)) {
			hp := m.Hosts[h]
			pairs++
			p := JudgedPauseS(hp)
			if where == "" || p > longest {
				longest, where, worst = p, m.ID+" on "+h, hp
			}
			if p > crit && hp.LongestPauseMinS != nil && *hp.LongestPauseMinS <= crit {
				unsure = append(unsure, fmt.Sprintf("%s on %s between %s and %s", m.ID, h, fmtS(*hp.LongestPauseMinS), fmtS(p)))
				continue
			}
			if p > crit && overOnlyMaybe(hp, crit) {
				unsure = append(unsure, fmt.Sprintf("%s on %s %s, a window a fault's estimated stall may have begun (then the fault's)", m.ID, h, fmtS(p)))
				continue
			}
			if p > crit {
				over++
				if hp.OpenWindow {
					open++
				}
				continue
			}
			if mb := hp.MaskedBy; mb != nil && mb.BoundS > crit {
				maskedOver = append(maskedOver, maskedText(m.ID, h, hp))
			} else if mb != nil {
				maskedIn = append(maskedIn, maskedText(m.ID, h, hp))
			}
		}
	}
	noCut := noCutoverNote(none)
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
	case len(unsure) > 0 || len(maskedOver) > 0:
		var ds []string
		if len(unsure) > 0 {
			ds = append(ds, fmt.Sprintf("%d migration/host pair(s) paused by a silent stall known only from a keep-alive timeout, around CUTOVER_PAUSE_CRIT_S = %s: %s (docs/host-model.md)",
				len(unsure), fmtS(crit), strings.Join(unsure, "; ")))
		}
		if len(maskedOver) > 0 {
			ds = append(ds, fmt.Sprintf("%d migration/host pair(s) whose cutover lies inside a fault window longer than CUTOVER_PAUSE_CRIT_S = %s: the cutover's own pause, masked by the fault's, could not be measured: %s (docs/concepts.md)",
				len(maskedOver), fmtS(crit), strings.Join(maskedOver, "; ")))
		}
		return inconclusive(strings.Join(ds, "; "))
	case r.noMigration() != "":
		return inconclusive(r.noMigration())
	case len(pr.unsampled) > 0:
		return inconclusive("no host sample during the migration for: " + strings.Join(pr.unsampled, ", "))
	case r.missingMigrations() != "":
		return inconclusive(r.missingMigrations())
	case pairs == 0 && len(none) > 0:
		return inconclusive("no cutover pause to judge" + noCut)
	case pairs == 0:
		return inconclusive("no migration has a consumer host")
	case coarse != "":
		return inconclusive(fmt.Sprintf("%s; measured longest %s (%s)", coarse, fmtS(longest), where))
	}
	d := fmt.Sprintf("longest pause %s (%s) <= %s over %d migration/host pairs", fmtS(longest), where, fmtS(crit), pairs)
	if len(maskedIn) > 0 {
		d += fmt.Sprintf("; %d cutover(s) inside a fault window: %s", len(maskedIn), strings.Join(maskedIn, "; "))
	}
	return record.CheckResult{Name: CheckPauseBound, Verdict: record.Pass, Detail: d + noCut}
}

// maskedText says where a masked pair's cutover lies (hp.MaskedBy set):
// "ID on HOST: cutover at T s inside the fault window [a, b] s of FAULT,
// its own pause <= L s".
func maskedText(id, host string, hp record.HostPauses) string {
	mb := hp.MaskedBy
	return fmt.Sprintf("%s on %s: cutover at %s inside the fault window %s of %s, its own pause <= %s",
		id, host, fmtS(*hp.CutoverS), fmtWindows([][2]float64{mb.Window}), mb.Fault, fmtS(mb.BoundS))
}

// overOnlyMaybe reports whether every window of hp longer than crit is
// one a fault's estimated stall may have begun (MaybeFaultWindows).
func overOnlyMaybe(hp record.HostPauses, crit float64) bool {
	if len(hp.MaybeFaultWindows) == 0 {
		return false
	}
	return !slices.ContainsFunc(hp.Windows, func(w [2]float64) bool {
		return record.RoundT(w[1]-w[0]) > crit && !slices.Contains(hp.MaybeFaultWindows, w)
	})
}

// noCutoverNote is "; N migration(s) ended before Running: no cutover (ids)",
// or "" for none.
func noCutoverNote(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	const most = 10
	list := strings.Join(ids[:min(len(ids), most)], ", ")
	if len(ids) > most {
		list += ", …"
	}
	return fmt.Sprintf("; %d migration(s) ended before Running: no cutover (%s)", len(ids), list)
}

// freezes is the check "freezes": every migration's freezes (the most pause
// windows any one consumer host saw, a fault window holding the host's
// cutover counted as one: HostPauses.Freezes) are at most
// plan.Params.FreezesAllowed. A second freeze means the cutover was retried. The failing detail names
// how many migrations are over and the worst one (report.md's "Over the
// pause bound" lists every one). Inconclusive (when nothing fails) if the
// record holds no migration or fewer migrations than the plan asked for.
func freezes(plan record.Plan, r *runIndex, pr pauseResult) record.CheckResult {
	allowed := plan.Params.FreezesAllowed
	over, most, worst := 0, 0, ""
	var failing, none, unsure []string
	for _, m := range pr.migrations {
		if m.NoCutover {
			none = append(none, m.ID)
			continue
		}
		sure := 0 // the most windows on one host no fault's stall may have begun
		for _, hp := range m.Hosts {
			sure = max(sure, hp.Freezes-len(hp.MaybeFaultWindows))
		}
		if m.Freezes > allowed && sure <= allowed {
			unsure = append(unsure, fmt.Sprintf("%s: %d freezes, %d if the windows a fault's estimated stall may have begun are the fault's", m.ID, m.Freezes, sure))
		} else if m.Freezes > allowed {
			over++
			failing = append(failing, m.ID)
		}
		if m.Freezes > most {
			most = m.Freezes
			var hs []string
			for _, h := range slices.Sorted(maps.Keys(m.Hosts)) {
				if hp := m.Hosts[h]; hp.Freezes == m.Freezes {
					hs = append(hs, h+" "+freezeWindows(hp))
				}
			}
			worst = m.ID + " on " + strings.Join(hs, ", ")
		}
	}
	cut := len(pr.migrations) - len(none)
	switch {
	case over > 0:
		return record.CheckResult{Name: CheckFreezes, Verdict: record.Fail,
			Detail: fmt.Sprintf("%d of %d migration(s) over CUTOVER_FREEZES_ALLOWED = %d; most %d freezes (%s); see \"Over the pause bound\"",
				over, cut, allowed, most, worst), Failing: slices.Sorted(slices.Values(failing))}
	case len(unsure) > 0:
		return record.CheckResult{Name: CheckFreezes, Verdict: record.Inconclusive,
			Detail: fmt.Sprintf("over CUTOVER_FREEZES_ALLOWED = %d only by windows a landed fault's silent stall, known only from a keep-alive timeout, may have begun: %s (docs/concepts.md)", allowed, strings.Join(unsure, "; "))}
	case r.noMigration() != "":
		return record.CheckResult{Name: CheckFreezes, Verdict: record.Inconclusive, Detail: r.noMigration()}
	case cut == 0:
		return record.CheckResult{Name: CheckFreezes, Verdict: record.Inconclusive, Detail: "no cutover to count freezes of" + noCutoverNote(none)}
	case r.missingMigrations() != "":
		return record.CheckResult{Name: CheckFreezes, Verdict: record.Inconclusive, Detail: r.missingMigrations()}
	case r.resolution() != "":
		// Windows seen apart are apart; but two closer than an interval
		// merge, and one shorter than it can be missed.
		return record.CheckResult{Name: CheckFreezes, Verdict: record.Inconclusive, Detail: r.resolution()}
	}
	return record.CheckResult{Name: CheckFreezes, Verdict: record.Pass,
		Detail: fmt.Sprintf("at most %d freeze(s) per migration over %d migrations <= %d allowed", most, cut, allowed) + noCutoverNote(none)}
}

// unattributedPauses is the check "unattributed-pauses": a pause window on
// a consumer host outside the span of every migration that started its
// cutover (first phase line to terminal phase plus
// plan.Params.AttributionMarginS) is a finding, unless a fault explains it
// (faultCause; those are listed in the detail and in summary.json
// fault_windows). With no sample of any consumer host it is inconclusive.
func unattributedPauses(r *runIndex, pr pauseResult) record.CheckResult {
	sampled := false
	for _, nqn := range r.nqns() {
		for _, h := range r.consumers(nqn) {
			_, ok := r.lastSample(h)
			sampled = sampled || ok
		}
	}
	if len(pr.unattributed) == 0 && !sampled {
		return record.CheckResult{Name: CheckUnattributedPauses, Verdict: record.Inconclusive,
			Detail: "no consumer host has a sample: no pause window could be seen"}
	}
	if len(pr.unattributed) == 0 {
		d := "every pause window lies within a migration"
		if n := len(pr.faultWindows); n > 0 {
			var ws []string
			for _, w := range pr.faultWindows[:min(n, 5)] {
				ws = append(ws, fmt.Sprintf("%s %s %s (%s)", w.Host, w.NQN, fmtWindows([][2]float64{w.Window}), w.Cause))
			}
			if n > 5 {
				ws = append(ws, fmt.Sprintf("and %d more (summary.json fault_windows)", n-5))
			}
			d = fmt.Sprintf("every pause window lies within a migration that cut over, or %d under a fault that explains it: %s", n, strings.Join(ws, "; "))
		}
		return record.CheckResult{Name: CheckUnattributedPauses, Verdict: record.Pass, Detail: d}
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

// freezeWindows are the windows hp's freezes count: its windows, and the
// fault window that holds its cutover (MaskedBy).
func freezeWindows(hp record.HostPauses) string {
	var parts []string
	if len(hp.Windows) > 0 {
		parts = append(parts, fmtWindows(hp.Windows))
	}
	if mb := hp.MaskedBy; mb != nil {
		parts = append(parts, "the fault window "+fmtWindows([][2]float64{mb.Window})+" holding its cutover")
	}
	return strings.Join(parts, " and ")
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
