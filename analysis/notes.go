package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
)

// IncidentNotes explain a run's figures from its record: the validation
// failures by cause, where the leaked controllers came from, the CONNECT
// rejection rate, controllers the kernel removed, published endpoints
// without a controller, and the fio pods. own is the incident file's
// context for two of them (incidents.Notes): each incident prints only its
// own. They judge nothing (the incident file's bands do).
func IncidentNotes(f IncidentFigures, own incidents.Notes) []string {
	var notes []string
	note := func(format string, a ...any) { notes = append(notes, fmt.Sprintf(format, a...)) }
	note("%s", causesNote(f))
	if f.Leaked > 0 || f.LeaksRemovedByKernel > 0 {
		note("%s", leaksNote(f))
	}
	if len(f.MissingEndpoints) > 0 {
		note("%s", missingNote(f))
	}
	note("%s", rejectionsNote(f))
	if f.ReconnectReset != "partial" && f.LeakedConnecting == 0 && f.LeaksRemovedByKernel > 0 {
		why := cmp.Or(own.KernelRemoved, "(max_reconnects = ctrl_loss_tmo / reconnect_delay)")
		note("the kernel removed %d controllers after max_reconnects %s", f.LeaksRemovedByKernel, why)
	}
	if f.ReconnectReset == "partial" && f.LeakedConnecting > 0 {
		note("the %d connecting leaks outlive the 1 h upstream reconnect budget only because of --reconnect-reset=partial "+
			"(the counter resets on every rejected CONNECT)", f.LeakedConnecting)
	}
	switch {
	case f.PodsKilled > 0:
		note("%s", podKillsNote(f.PodKills))
	case f.Pods && own.PodsSurvived != "":
		note("no fio pod died: no pause exceeded the pods' tolerance (%s)", own.PodsSurvived)
	case f.Pods:
		note("no fio pod died: no pause exceeded the pods' tolerance")
	}
	return notes
}

// causeText explains each cause class.
var causeText = map[string]string{
	CauseSubsystemLoss: "the endpoint's node lacked the volume's subsystem (\"Could not find subsystem\") after an earlier " +
		"migration of the volume was cancelled before continue: sbcli's _cleanup_created deletes it on the source's " +
		"tertiary (migration_controller.py:247-311) until the lvol monitor repairs it; a connecting leak at the " +
		"migration's own target address is only its symptom",
	CauseZeroLegLeak:       "a live controller an earlier failed validation left, serving no or only some namespaces",
	CauseParkedLeak:        "a live controller an earlier failed validation left, every leg inaccessible",
	CauseConnectingLeak:    "a connecting controller an earlier failed validation left, while its node held the subsystem",
	CauseServingLeak:       "a live controller an earlier failed validation left, with an accessible leg",
	CauseCompletedPathLeak: "a controller a completed migration left (no operator releases those)",
	CauseMissingLegs: "this validation's own controller or a volume path was live with no or only some namespaces: the " +
		"namespace was missing or refused on that node, what the cited sbcli defects leave (docs/sources.md §4.10)",
	CauseFault:       "an injected fault was active on the endpoint's node or port",
	CauseUnexplained: "none of the above (the signal says how it failed)",
}

// restartListenerText explains a cause restartLostListener names.
const restartListenerText = "a restart of the endpoint's node spanned the migration's create and lost its target " +
	"listener, which sbcli restores only right before the cutover (tasks_runner_lvol_migration.py:723-800), so SPDK " +
	"answered \"does not allow host ... to connect at this address\" there for the rest of the validation"

// faultsOutlasted names each fault (first line with evidence) that landed
// while some migration was Validating (from its Validating phase line to
// its next phase line) when that migration is not among the validation
// failures.
func faultsOutlasted(lines, landed []record.Line, failures []ValidationFailure) []string {
	type window struct {
		id       string
		from, to float64
	}
	var ws []window
	open := map[string]int{}
	for _, l := range lines {
		if l.Kind != record.KindPhase {
			continue
		}
		if k, ok := open[l.Migration]; ok {
			ws[k].to = l.T
			delete(open, l.Migration)
		}
		if l.Phase == record.PhaseValidating {
			open[l.Migration] = len(ws)
			ws = append(ws, window{id: l.Migration, from: l.T, to: math.Inf(1)})
		}
	}
	failed := map[string]bool{}
	for _, v := range failures {
		failed[v.Migration] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range landed {
		key := l.Fault + " " + l.Target
		if seen[key] {
			continue
		}
		for _, w := range ws {
			if l.T >= w.from && l.T <= w.to {
				seen[key] = true
				if !failed[w.id] {
					out = append(out, key+" during "+w.id)
				}
				break
			}
		}
	}
	return out
}

// causesNote breaks the validation failures down by cause (CauseOrder),
// naming the cancels behind subsystem-loss ones, and names the faults that
// landed during a validation which still passed.
func causesNote(f IncidentFigures) string {
	outlasted := ""
	if n := len(f.FaultsOutlasted); n > 0 {
		outlasted = fmt.Sprintf("; %d fault(s) landed during a validation that still passed (%s): the validation Job "+
			"retries connect+verify up to 3 times, 2 s apart (simplyblock-rebalancer validate-migration), so a fault "+
			"fails a validation only when it outlasts that budget (a dropped CONNECT blocks each attempt for the 60 s "+
			"admin_timeout)", n, strings.Join(f.FaultsOutlasted, ", "))
	}
	if f.ValidationFailed == 0 {
		return "no migration failed path validation: no fault, leak or cancel disturbed a validation enough to fail it" + outlasted
	}
	var parts []string
	for _, c := range SortedCauses(f.FailureCauses) {
		text := causeText[CauseClass(c)]
		if strings.HasSuffix(c, RestartListenerQualifier+")") {
			text = restartListenerText
		}
		p := fmt.Sprintf("%d %s — %s", f.FailureCauses[c], c, text)
		if c == CauseSubsystemLoss {
			var by []string
			for _, v := range f.Failures {
				if v.Cause == c && !slices.Contains(by, v.CancelledBy) {
					by = append(by, v.CancelledBy)
				}
			}
			slices.Sort(by)
			p += fmt.Sprintf(" (after the cancels of %s)", strings.Join(by, ", "))
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("the %d validation failures by cause: %s", f.ValidationFailed, strings.Join(parts, "; ")) + outlasted
}

// LeakedKindsText is the leak breakdown, every kind, summing to Leaked.
func LeakedKindsText(f IncidentFigures) string {
	parts := []string{
		fmt.Sprintf("%d connecting", f.LeakedKinds["connecting"]),
		fmt.Sprintf("%d live no namespace", f.LeakedKinds["live no namespace"]),
	}
	for _, k := range slices.Sorted(maps.Keys(f.LeakedKinds)) {
		if k != "connecting" && k != "live no namespace" {
			parts = append(parts, fmt.Sprintf("%d %s", f.LeakedKinds[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

// leaksNote explains the leaked controllers' count from where they came from.
func leaksNote(f IncidentFigures) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(f.LeakOrigins)) {
		parts = append(parts, fmt.Sprintf("%d from a %s", f.LeakOrigins[k], k))
	}
	b := fmt.Sprintf("the %d leaked controllers (%s)", f.Leaked, LeakedKindsText(f))
	if len(parts) > 0 {
		b += " came: " + strings.Join(parts, ", ")
	}
	b += fmt.Sprintf("; %d of %d migrations failed or were aborted (each failed validation can leave the target "+
		"paths it connected)", f.Outcomes[record.PhaseFailed]+f.Outcomes[record.PhaseAborted], f.Migrations)
	if f.LeaksRemovedByKernel > 0 {
		b += fmt.Sprintf("; the kernel removed %d controllers after max_reconnects", f.LeaksRemovedByKernel)
	}
	if f.LeaksHealed > 0 {
		b += fmt.Sprintf("; %d leaks reconnected live when their endpoint came back", f.LeaksHealed)
	}
	if n, migs := cancelLosses(f, "leaked"); n > 0 {
		b += fmt.Sprintf("; %d of them sit connecting at a published endpoint of their volume, created before the cancel of "+
			"%s (before continue), whose source listed that endpoint: the cancel deleted the volume's subsystem on that "+
			"node — sbcli's cancel path (migration_controller.py _cleanup_created) deletes the subsystem on a target "+
			"primary/secondary that was the source's tertiary, the volume's own path there included; the control plane "+
			"still publishes the endpoint and the target rejects every reconnect", n, strings.Join(migs, ", "))
	}
	return b
}

// missingNote explains published endpoints without a controller.
func missingNote(f IncidentFigures) string {
	n, migs := cancelLosses(f, "missing")
	b := fmt.Sprintf("%d published endpoints have no controller on a consumer host", len(f.MissingEndpoints))
	if n > 0 {
		b += fmt.Sprintf("; at %d of them the kernel removed the volume path after max_reconnects of rejected "+
			"reconnects, because the cancel of %s (before continue) deleted the volume's subsystem on that node — "+
			"sbcli's cancel path (migration_controller.py _cleanup_created) deletes it on a target primary/secondary "+
			"that was the source's tertiary, while the control plane still publishes the endpoint: a control-plane "+
			"defect the operator fix does not touch", n, strings.Join(migs, ", "))
	}
	if r := len(f.MissingEndpoints) - n; r > 0 {
		b += fmt.Sprintf("; %d not explained by the record (no removal after a cancel found)", r)
	}
	return b
}

// cancelLosses counts f.CancelLosses of a kind and names their migrations.
func cancelLosses(f IncidentFigures, what string) (int, []string) {
	n := 0
	var migs []string
	for _, c := range f.CancelLosses {
		if c.What == what {
			n++
			if !slices.Contains(migs, c.Migration) {
				migs = append(migs, c.Migration)
			}
		}
	}
	slices.Sort(migs)
	return n, migs
}

// rejectionsNote explains the CONNECT rejection rate: every connecting
// controller whose target listens at its ip:port but no longer exposes
// its subsystem there sends one CONNECT per reconnect_delay (2 s in the
// control plane's connect strings: 30 per minute), each rejected.
func rejectionsNote(f IncidentFigures) string {
	if f.LeakedConnecting == 0 && f.RejectionsPerMin > 0 {
		return fmt.Sprintf("%.0f rejections/min over the run's last %.0f s, though no connecting controller was left at the end: "+
			"controllers that were connecting during that window sent them and were gone (removed or live again) by the end; "+
			"the window reaches back into the migrations when the settle is shorter than it "+
			"(each connecting controller at a port that listens adds 30/min, one CONNECT every reconnect_delay 2 s)", f.RejectionsPerMin, f.RejectionWindowS)
	}
	if f.LeakedConnecting == 0 {
		return fmt.Sprintf("%.0f rejections/min: no connecting controller was left at the end, so nothing reconnects "+
			"(each connecting leak at a port that listens adds 30/min, one CONNECT every reconnect_delay 2 s)", f.RejectionsPerMin)
	}
	want := float64(f.LeakedConnecting) * 30
	b := fmt.Sprintf("rejections/min = connecting leaks × 30/min per controller (one CONNECT every reconnect_delay 2 s, "+
		"each rejected): %d × 30 = %.0f, measured %.0f", f.LeakedConnecting, want, f.RejectionsPerMin)
	if d := want - f.RejectionsPerMin; d >= 30 {
		b += fmt.Sprintf(" (about %.0f connecting leaks send no CONNECT: nothing listens at their ip:port, TCP is refused)", d/30)
	}
	return b
}
