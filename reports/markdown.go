package reports

import (
	"bytes"
	"fmt"
	"html"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
)

// VerdictNoCutover is MigrationVerdict of a migration that never cut over
// (record.MigrationSummary.NoCutover): it has no cutover pause to judge;
// its outcome and reason say how it ended.
const VerdictNoCutover = "no cutover"

// OutcomeText is a migration's outcome as the reports show it: the phase,
// and for a Failed or Aborted one the reason its phase line gave.
func OutcomeText(m record.MigrationSummary) string {
	if m.Reason == "" {
		return m.Outcome
	}
	return m.Outcome + ": " + m.Reason
}

// MigrationVerdict is one migration's verdict in the report's table:
// VerdictNoCutover for a migration that never cut over; fail
// when a consumer host's judged pause (checks.JudgedPauseS) exceeds
// plan.Params.PauseCritS or the migration's freezes exceed
// plan.Params.FreezesAllowed; else inconclusive when the migration reached
// no terminal phase (record.IsTerminal of its Outcome: an interrupted or
// short record, whose pauses are not all seen), a window of it spans a
// hole in a host's samples, or a host's cutover lies inside a fault window
// longer than the bound (HostPauses.MaskedBy: its own pause could not be
// measured); pass otherwise. (Split brain and
// served-after-cutover are judged per run; their check details name the
// migrations.)
func MigrationVerdict(plan record.Plan, m record.MigrationSummary) string {
	if m.NoCutover {
		return VerdictNoCutover
	}
	if m.Freezes > plan.Params.FreezesAllowed {
		return record.Fail
	}
	unseen := false
	for _, hp := range m.Hosts {
		if checks.JudgedPauseS(hp) > plan.Params.PauseCritS {
			return record.Fail
		}
		unseen = unseen || hp.LongestSeenPauseS != nil || (hp.MaskedBy != nil && hp.MaskedBy.BoundS > plan.Params.PauseCritS)
	}
	if !record.IsTerminal(m.Outcome) || unseen {
		return record.Inconclusive
	}
	return record.Pass
}

// unfinishedNote names the migrations Stats leaves out (not Counted: no
// terminal phase, or no cutover) and the (migration, host) pairs it leaves
// out as masked (a cutover inside a fault window), or "".
func unfinishedNote(sum record.Summary) string {
	var ms, ps []string
	for _, m := range sum.Migrations {
		switch {
		case !record.IsTerminal(m.Outcome):
			ms = append(ms, fmt.Sprintf("%s (no terminal phase, last phase %s)", m.ID, m.Outcome))
		case m.NoCutover:
			ms = append(ms, fmt.Sprintf("%s (%s before Running: no cutover)", m.ID, m.Outcome))
		default:
			for _, h := range sortedHosts(m) {
				if m.Hosts[h].MaskedBy != nil {
					ps = append(ps, m.ID+" on "+h)
				}
			}
		}
	}
	var out []string
	if len(ms) > 0 {
		out = append(out, "Migrations left out: "+strings.Join(ms, ", ")+".")
	}
	if len(ps) > 0 {
		out = append(out, "Pairs left out, their cutover inside a fault window and its pause not measured: "+strings.Join(ps, ", ")+".")
	}
	return strings.Join(out, " ")
}

// Markdown renders report.md with the run's pause and ECDF plots linked
// (see markdown); Write also links every swimlane it wrote.
func Markdown(plan record.Plan, sum record.Summary) []byte {
	return markdown(plan, sum, baseFigures(plan, sum), nil)
}

// Limits that keep report.md under mdBudget characters (a pull request
// comment holds 65,536) whatever the run's size: table rows and list
// entries beyond them are left out with a note naming summary.json.
const (
	mdBudget       = 60000
	mdMaxRows      = 100
	mdMaxOver      = 40
	mdShownOver    = 5 // the rest of the over-bound list is folded
	mdMaxCellChars = 400
)

// markdown renders report.md for a pull request comment: the verdict (with
// the failing and inconclusive checks named) and the worst cutover first,
// then the checks and the (migration, host) pairs over the bound; the rest
// folded in <details> — run facts (seed, scenario, bounds, topology, the
// record's coverage), migrations, host-observed cutovers, pause
// statistics, leaked controllers, path completeness, unattributed pauses,
// volumes with their full NQNs (tables show the part after the last ':'),
// the fio section (runs with real fio), the plots (figs) — and the command
// that reruns the run last (with the re-judging command when sum was
// re-judged with other bounds). Long tables keep their mdMaxRows worst rows
// and say how many were left out, so the page stays under mdBudget
// characters. Equal inputs give equal bytes; sum.Stats is used as given.
func markdown(plan record.Plan, sum record.Summary, figs []Figure, omitted []string) []byte {
	var b bytes.Buffer
	p := plan.Params
	crit := p.PauseCritS
	verdicts := checksByName(sum)
	nqns := newNQNLegend(plan, sum)

	fmt.Fprintf(&b, "# fiomig run report — %s\n\n", strings.ToUpper(sum.Verdict))
	fmt.Fprintf(&b, "**Verdict: %s** — %s\n\n", sum.Verdict, verdictSentence(sum))
	if w := worstCutover(plan, sum, nqns); w != "" {
		b.WriteString("**Worst cutover:** " + w)
		if m, _, _ := worstPair(sum); swimlaneOf(figs, m.ID) != "" {
			fmt.Fprintf(&b, " Swimlane: [%s](%s).", swimlaneOf(figs, m.ID), swimlaneOf(figs, m.ID))
		}
		b.WriteString("\n\n")
		if a := anatomyMarkdown(sum); a != "" {
			b.WriteString(a + "\n")
		} else if n := noSamplesNote(sum); n != "" {
			b.WriteString(n + "\n\n")
		}
	}
	for _, c := range coverageItems(sum) {
		if c.Bad {
			fmt.Fprintf(&b, "- %s: **%s** — %s\n", c.Label, strings.ToUpper(c.State), c.Text)
		}
	}
	if rj := sum.Rejudged; rj != nil {
		fmt.Fprintf(&b, "- Re-judged from the stored record with CUTOVER_PAUSE_CRIT_S = %s and CUTOVER_FREEZES_ALLOWED = %d (the run used %s and %d): `%s`\n",
			secs(rj.PauseCritS), rj.FreezesAllowed, secs(rj.RunPauseCritS), rj.RunFreezesAllowed, rj.Command)
	}

	if !bytes.HasSuffix(b.Bytes(), []byte("\n\n")) {
		b.WriteString("\n")
	}
	b.WriteString("## Checks\n\n| Check | Verdict | Detail |\n|---|---|---|\n")
	for _, c := range sum.Checks {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Name, verdictCell(c.Verdict), cell(clip(nqns.text(c.Detail))))
	}

	b.WriteString("\n## Over the pause bound\n\n")
	if over := OverBound(plan, sum); len(over) == 0 {
		b.WriteString(withinBound(plan) + "\n")
	} else {
		for i, o := range over {
			if i == mdShownOver && len(over) > mdShownOver {
				fmt.Fprintf(&b, "\n<details><summary>%d more over the bound</summary>\n\n", len(over)-mdShownOver)
			}
			if i == mdMaxOver {
				fmt.Fprintf(&b, "- … and %d more (summary.json lists every migration)\n", len(over)-mdMaxOver)
				break
			}
			b.WriteString("- " + o + "\n")
		}
		if len(over) > mdShownOver {
			b.WriteString("\n</details>\n")
		}
	}

	open := func(summary string) {
		fmt.Fprintf(&b, "\n<details><summary>%s</summary>\n\n", html.EscapeString(summary))
	}
	closeD := func() { b.WriteString("\n</details>\n") }

	open(fmt.Sprintf("Run: seed %d, %s on %s, %d migration(s)", sum.Seed, plan.Scenario, plan.Backend, len(sum.Migrations)))
	fmt.Fprintf(&b, "- Verdict: **%s**\n", sum.Verdict)
	fmt.Fprintf(&b, "- Seed: %d\n", sum.Seed)
	fmt.Fprintf(&b, "- Scenario: %s on backend %s\n", plan.Scenario, plan.Backend)
	fmt.Fprintf(&b, "- Bounds: CUTOVER_PAUSE_CRIT_S = %s, CUTOVER_FREEZES_ALLOWED = %d; attribution margin %s; settle %s\n",
		secs(crit), p.FreezesAllowed, secs(p.AttributionMarginS), secs(p.SettleS))
	fmt.Fprintf(&b, "- Topology: %d storage node(s), %d host(s), %d volume(s); %d migration(s) in the timeline\n",
		len(plan.Topology.Nodes), len(plan.Topology.Hosts), len(plan.Topology.Volumes), len(sum.Migrations))
	for _, c := range coverageItems(sum) {
		state := c.State
		if c.Bad {
			state = "**" + strings.ToUpper(state) + "**"
		}
		fmt.Fprintf(&b, "- %s: %s — %s\n", c.Label, state, c.Text)
	}
	closeD()

	failing, noCutover := 0, 0
	for _, m := range sum.Migrations {
		switch MigrationVerdict(plan, m) {
		case record.Pass:
		case VerdictNoCutover:
			noCutover++
		default:
			failing++
		}
	}
	title := fmt.Sprintf("Migrations: %d, %d not passing", len(sum.Migrations), failing)
	if noCutover > 0 {
		title += fmt.Sprintf(", %d without a cutover", noCutover)
	}
	open(title)
	b.WriteString("## Migrations\n\n")
	if len(sum.Migrations) == 0 {
		b.WriteString("No migration in the timeline.\n")
	} else {
		b.WriteString("| Migration | NQN | Outcome | Longest pause per host | Freezes | Verdict |\n|---|---|---|---|---|---|\n")
		shown := worstMigrations(plan, sum, mdMaxRows)
		for _, m := range shown {
			var hs []string
			for _, h := range slices.Sorted(maps.Keys(m.Hosts)) {
				if m.NoCutover {
					hs = []string{"no cutover (ended before Running)"}
					break
				}
				hp := m.Hosts[h]
				v := secs(hp.LongestPauseS)
				if checks.JudgedPauseS(hp) > crit {
					v = "**" + v + "**"
				}
				if hp.LongestSeenPauseS != nil {
					v += fmt.Sprintf(" (across a hole; %s seen)", secs(*hp.LongestSeenPauseS))
				}
				if hp.OpenWindow {
					v += " (open)"
				}
				if n := maskedNote(hp); n != "" {
					v += " (" + n + ")"
				}
				hs = append(hs, h+" "+v)
			}
			if len(hs) == 0 {
				hs = []string{"no consumer host"}
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s |\n", cell(m.ID), cell(nqns.name(m.NQN)), cell(clip(OutcomeText(m))),
				cell(clip(strings.Join(hs, ", "))), m.Freezes, verdictCell(MigrationVerdict(plan, m)))
		}
		if n := len(sum.Migrations) - len(shown); n > 0 {
			fmt.Fprintf(&b, "\n%d more migration(s) within the bound are left out here; summary.json lists every one.\n", n)
		}
	}
	closeD()

	open("Cutover as the hosts saw it")
	b.WriteString("## Cutover as the hosts saw it\n\n")
	b.WriteString(cutoverNote + "\n\n")
	rows := 0
	for _, m := range worstMigrations(plan, sum, mdMaxRows) {
		for _, h := range slices.Sorted(maps.Keys(m.Hosts)) {
			hp := m.Hosts[h]
			if rows == 0 {
				b.WriteString("| Migration | Host | Completed (control plane) | Host-observed cutover | Lag |\n|---|---|---|---|---|\n")
			}
			rows++
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", cell(m.ID), cell(h), optTenths(m.CompletedS), optSecs(hp.CutoverS), lagCell(m, hp))
		}
	}
	if rows == 0 {
		b.WriteString("No migration with a consumer host.\n")
	}
	closeD()

	st := sum.Stats
	if st.Pauses == 0 {
		open("Pause statistics: no pair")
	} else {
		open(fmt.Sprintf("Pause statistics: p50 %s, p95 %s, max %s over %d pair(s)", secs(st.P50PauseS), secs(st.P95PauseS), secs(st.MaxPauseS), st.Pauses))
	}
	b.WriteString("## Pause statistics\n\n")
	if st.Pauses == 0 {
		b.WriteString("No (migration, host) pair to summarise.\n")
	} else {
		fmt.Fprintf(&b, "Longest pause per (migration, host), %d pair(s): p50 %s, p95 %s, max %s.\n\n",
			st.Pauses, secs(st.P50PauseS), secs(st.P95PauseS), secs(st.MaxPauseS))
		fmt.Fprintf(&b, "Percentile method: %s.\n", st.PercentileMethod)
	}
	if n := unfinishedNote(sum); n != "" {
		b.WriteString("\n" + clip(n) + "\n")
	}
	if ch := sum.Churn; ch != nil {
		fmt.Fprintf(&b, "\nController churn: %s\n", churnSentence(*ch))
	}
	closeD()

	leakV := verdictOf(verdicts, checks.CheckLeakedControllers)
	open(fmt.Sprintf("Leaked controllers — %s (%d)", leakV, len(sum.LeakedControllers)))
	fmt.Fprintf(&b, "## Leaked controllers — %s\n\n", leakV)
	if len(sum.LeakedControllers) == 0 {
		b.WriteString(noFinding(verdicts, checks.CheckLeakedControllers, "None after the settle period.", nqns) + "\n")
	} else {
		b.WriteString("| Host | Controller | NQN | Address | State | Kind |\n|---|---|---|---|---|---|\n")
		for i, l := range sum.LeakedControllers {
			if i == mdMaxRows {
				fmt.Fprintf(&b, "\n%d more left out here; summary.json lists every one.\n", len(sum.LeakedControllers)-mdMaxRows)
				break
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(l.Host), cell(l.Controller), cell(nqns.name(l.NQN)), cell(l.Address), cell(l.State), cell(l.Kind))
		}
	}
	closeD()

	complV := verdictOf(verdicts, checks.CheckPathCompleteness)
	open(fmt.Sprintf("Path completeness — %s (%d missing)", complV, len(sum.MissingEndpoints)))
	fmt.Fprintf(&b, "## Path completeness — %s\n\n", complV)
	if len(sum.MissingEndpoints) == 0 {
		b.WriteString(noFinding(verdicts, checks.CheckPathCompleteness, "Every consumer host has a controller for every published ip:port endpoint.", nqns) + "\n")
	} else {
		b.WriteString("| Host | NQN | Missing endpoint |\n|---|---|---|\n")
		for i, m := range sum.MissingEndpoints {
			if i == mdMaxRows {
				fmt.Fprintf(&b, "\n%d more left out here; summary.json lists every one.\n", len(sum.MissingEndpoints)-mdMaxRows)
				break
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(m.Host), cell(nqns.name(m.NQN)), cell(m.Endpoint))
		}
	}
	closeD()

	unTitle := fmt.Sprintf("Unattributed pauses (%d)", len(sum.Unattributed))
	if n := len(sum.FaultWindows); n > 0 {
		unTitle += fmt.Sprintf(", fault windows (%d)", n)
	}
	open(unTitle)
	b.WriteString("## Unattributed pauses\n\n")
	if len(sum.Unattributed) == 0 {
		b.WriteString("None: every pause window lies within a migration.\n")
	} else {
		b.WriteString("| Host | NQN | Window | Length |\n|---|---|---|---|\n")
		for i, w := range sum.Unattributed {
			if i == mdMaxRows {
				fmt.Fprintf(&b, "\n%d more left out here; summary.json lists every one.\n", len(sum.Unattributed)-mdMaxRows)
				break
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(w.Host), cell(nqns.name(w.NQN)), windows([][2]float64{w.Window}), secs(w.Window[1]-w.Window[0]))
		}
	}
	if n := len(sum.FaultWindows); n > 0 {
		fmt.Fprintf(&b, "\n%d %s:\n\n| Host | NQN | Window | Length | In the span of | Fault |\n|---|---|---|---|---|---|\n", n, faultWindowsNote)
		for i, w := range sum.FaultWindows {
			if i == mdMaxRows {
				fmt.Fprintf(&b, "\n%d more left out here; summary.json fault_windows lists every one.\n", n-mdMaxRows)
				break
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(w.Host), cell(nqns.name(w.NQN)), windows([][2]float64{w.Window}),
				secs(w.Window[1]-w.Window[0]), cell(dash(w.Migration)), cell(w.Cause))
		}
	}
	closeD()

	if len(nqns.rows) > 0 {
		open(fmt.Sprintf("Volumes (%d) with their full NQNs", len(nqns.rows)))
		b.WriteString("## Volumes\n\n" + legendNote + "\n\n| Volume | Short name | NQN | NSIDs | Consumers |\n|---|---|---|---|---|\n")
		for i, r := range nqns.rows {
			if i == mdMaxRows {
				fmt.Fprintf(&b, "\n%d more left out here; plan.json lists every one.\n", len(nqns.rows)-mdMaxRows)
				break
			}
			fmt.Fprintf(&b, "| %s | %s | `%s` | %s | %s |\n", cell(r.Volume), cell(r.Short), cell(r.NQN), r.NSIDs, cell(clip(r.Consumers)))
		}
		closeD()
	}

	if f := FaultsMarkdown(sum); f != nil { // runs with faults only (reports/faults.go)
		open(fmt.Sprintf("Faults (%d) and their kind × stage coverage", len(sum.Faults)))
		b.Write(bytes.TrimPrefix(f, []byte("\n")))
		closeD()
	}
	if fio := FioMarkdown(plan, sum); fio != nil { // runs with real fio only (reports/fio.go)
		open("fio beside the ANA samples — " + verdictOf(verdicts, checks.CheckFioPauseAgreement))
		b.Write(bytes.TrimPrefix(fio, []byte("\n")))
		closeD()
	}

	open(fmt.Sprintf("Plots (%d)", len(figs)))
	b.WriteString("## Plots\n\n")
	for _, f := range figs {
		if f.Kind == FigSwimlane {
			continue
		}
		fmt.Fprintf(&b, "![%s](%s)\n", f.Title, f.PNG)
	}
	var lanes []string
	for _, f := range figs {
		if f.Kind == FigSwimlane {
			lanes = append(lanes, fmt.Sprintf("[%s](%s)", f.Migration, f.PNG))
		}
	}
	if len(lanes) > 0 {
		b.WriteString("\nSwimlanes of the worst cutovers, the worst first: " + strings.Join(lanes, ", ") + "\n")
	}
	for _, o := range omitted {
		b.WriteString("\n" + o + "\n")
	}
	closeD()

	b.WriteString("\n## Rerun\n\n")
	if rj := sum.Rejudged; rj != nil {
		fmt.Fprintf(&b, "Re-judge: `%s`\n\n", rj.Command)
	}
	fmt.Fprintf(&b, "Reproduce the run: `%s`\n", plan.Command)
	return b.Bytes()
}

// verdictSentence names the checks that failed and those inconclusive.
func verdictSentence(sum record.Summary) string {
	var failed, inconc []string
	for _, c := range sum.Checks {
		switch c.Verdict {
		case record.Pass:
		case record.Fail:
			failed = append(failed, c.Name)
		default:
			inconc = append(inconc, c.Name)
		}
	}
	var parts []string
	if len(failed) > 0 {
		parts = append(parts, "failed: "+strings.Join(failed, ", "))
	}
	if len(inconc) > 0 {
		parts = append(parts, "inconclusive: "+strings.Join(inconc, ", "))
	}
	if len(parts) == 0 {
		if len(sum.Checks) == 0 {
			return "no check was evaluated."
		}
		return fmt.Sprintf("all %d checks pass.", len(sum.Checks))
	}
	return strings.Join(parts, "; ") + "."
}

// worstPair returns the migration and consumer host whose cutover was
// worst: the longest pause, ties broken by more freezes, then by order;
// ok false without any (migration, host) pair.
func worstPair(sum record.Summary) (m record.MigrationSummary, host string, ok bool) {
	best := -1.0
	bestF := -1
	for _, mm := range sum.Migrations {
		for _, h := range sortedHosts(mm) {
			hp := mm.Hosts[h]
			if hp.LongestPauseS > best || (hp.LongestPauseS == best && hp.Freezes > bestF) {
				m, host, ok, best, bestF = mm, h, true, hp.LongestPauseS, hp.Freezes
			}
		}
	}
	return m, host, ok
}

// worstCutover is the report's "Worst cutover" sentence, "" without any
// (migration, host) pair.
func worstCutover(plan record.Plan, sum record.Summary, nqns *nqnLegend) string {
	m, h, ok := worstPair(sum)
	if !ok {
		return ""
	}
	hp := m.Hosts[h]
	pause := secs(hp.LongestPauseS)
	rel := "≤"
	if checks.JudgedPauseS(hp) > plan.Params.PauseCritS {
		pause, rel = "**"+pause+"**", ">"
	}
	s := fmt.Sprintf("%s (%s) on %s — longest pause %s %s %s, %d freeze(s) on this host (%d for the migration), outcome %s",
		m.ID, nqns.name(m.NQN), h, pause, rel, secs(plan.Params.PauseCritS), hp.Freezes, m.Freezes, m.Outcome)
	if len(hp.Windows) > 0 {
		s += "; windows " + windows(hp.Windows)
	}
	return s + "."
}

// swimlaneOf returns the PNG of migration id's swimlane among figs, "".
func swimlaneOf(figs []Figure, id string) string {
	for _, f := range figs {
		if f.Kind == FigSwimlane && f.Migration == id {
			return f.PNG
		}
	}
	return ""
}

// worstMigrations returns up to n migrations of sum: every one not passing
// first, then the others by longest pause (descending), each group in run
// order; all of them in run order when they fit.
func worstMigrations(plan record.Plan, sum record.Summary, n int) []record.MigrationSummary {
	if len(sum.Migrations) <= n {
		return sum.Migrations
	}
	idx := make([]int, len(sum.Migrations))
	for i := range idx {
		idx[i] = i
	}
	longest := LongestPerMigration(sum)
	bad := func(i int) bool { return MigrationVerdict(plan, sum.Migrations[i]) != record.Pass }
	sort.SliceStable(idx, func(a, b int) bool {
		ia, ib := idx[a], idx[b]
		if bad(ia) != bad(ib) {
			return bad(ia)
		}
		return longest[ia] > longest[ib]
	})
	idx = idx[:n]
	slices.Sort(idx)
	out := make([]record.MigrationSummary, len(idx))
	for i, j := range idx {
		out[i] = sum.Migrations[j]
	}
	return out
}

// clip shortens s to mdMaxCellChars characters, saying so.
func clip(s string) string {
	r := []rune(s)
	if len(r) <= mdMaxCellChars {
		return s
	}
	return string(r[:mdMaxCellChars]) + " … (cut; summary.json has it whole)"
}

// OverBound lists, in migration order, every (migration, consumer host)
// whose longest pause exceeds plan.Params.PauseCritS, with the measured
// seconds and its pause windows, then every migration whose freezes exceed
// plan.Params.FreezesAllowed with the windows of the hosts that saw that
// many: one sentence per entry, nil when none. Subsystems are named by
// their short NQN (see the report's "Volumes" section). report.md and
// report.html show the same list.
func OverBound(plan record.Plan, sum record.Summary) []string {
	p := plan.Params
	crit := p.PauseCritS
	nqns := newNQNLegend(plan, sum)
	var over []string
	for _, m := range sum.Migrations {
		for _, h := range slices.Sorted(maps.Keys(m.Hosts)) {
			hp := m.Hosts[h]
			if p := checks.JudgedPauseS(hp); p > crit {
				seen := ""
				if hp.LongestSeenPauseS != nil {
					seen = fmt.Sprintf(" seen paused (measured %s across a hole in the host's samples)", secs(hp.LongestPauseS))
				}
				over = append(over, fmt.Sprintf("%s (%s) on %s: longest pause %s%s > %s; windows %s%s",
					m.ID, nqns.name(m.NQN), h, secs(p), seen, secs(crit), windows(hp.Windows), stallsIn(hp)))
			}
		}
	}
	for _, m := range sum.Migrations {
		if m.Freezes > p.FreezesAllowed {
			var hs []string
			for _, h := range slices.Sorted(maps.Keys(m.Hosts)) {
				if hp := m.Hosts[h]; hp.Freezes == m.Freezes {
					var ws []string
					if len(hp.Windows) > 0 {
						ws = append(ws, windows(hp.Windows))
					}
					if mb := hp.MaskedBy; mb != nil {
						ws = append(ws, "the fault window "+windows([][2]float64{mb.Window})+" holding its cutover")
					}
					hs = append(hs, h+" "+strings.Join(ws, " and "))
				}
			}
			over = append(over, fmt.Sprintf("%s (%s): %d freezes > %d allowed; windows on %s",
				m.ID, nqns.name(m.NQN), m.Freezes, p.FreezesAllowed, strings.Join(hs, ", ")))
		}
	}
	return over
}

// stallsIn names the silent stalls in a host's windows of a migration, and
// the fault that made each ("" for none): "; silent stall(s) in them: …".
func stallsIn(hp record.HostPauses) string {
	if len(hp.Stalls) == 0 {
		return ""
	}
	var ss []string
	for _, st := range hp.Stalls {
		d := fmt.Sprintf("%s at %s %s", st.Controller, st.Address, windows([][2]float64{{st.StartS, st.EndS}}))
		if st.Estimate {
			d += " (estimated from a keep-alive timeout)"
		}
		if st.Cause != "" {
			d += " by " + st.Cause
		}
		ss = append(ss, d)
	}
	return "; silent stall(s) in them: " + strings.Join(ss, ", ")
}

// faultWindowsNote heads the table of the pause windows a fault explains.
const faultWindowsNote = "pause window(s) an injected fault explains (not findings; pause-bound and freezes do not count them, but one that holds a host's cutover bounds that cutover's pause and is its one freeze): begun by a landed fault's silent stall — wherever it lies, even inside a migration's span — or outside every migration that cut over under a fault aimed at that host's paths"

// maskedNote says where a host's cutover hid (hp.MaskedBy), "" when it
// did not: "cutover inside the fault window [a, b] s of FAULT, its own
// pause ≤ L s".
func maskedNote(hp record.HostPauses) string {
	mb := hp.MaskedBy
	if mb == nil {
		return ""
	}
	return fmt.Sprintf("cutover inside the fault window %s of %s, its own pause ≤ %s", windows([][2]float64{mb.Window}), mb.Fault, secs(mb.BoundS))
}

// withinBound is the sentence shown when OverBound is empty.
func withinBound(plan record.Plan) string {
	return fmt.Sprintf("None: every migration and host paused at most %s, with at most %d freeze(s).",
		secs(plan.Params.PauseCritS), plan.Params.FreezesAllowed)
}

// cutoverNote explains the cutover table in report.md and report.html.
const cutoverNote = "Host-observed cutover: the first sample with a target path optimized and no source path optimized. Lag = host-observed minus the control plane's Completed time."

// secs formats seconds exactly (shortest form, microsecond resolution).
func secs(s float64) string { return record.FormatT(s) + " s" }

func optSecs(s *float64) string {
	if s == nil {
		return "—"
	}
	return secs(*s)
}

func windows(ws [][2]float64) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = "[" + record.FormatT(w[0]) + ", " + record.FormatT(w[1]) + "]"
	}
	return strings.Join(parts, " ") + " s"
}

func verdictCell(v string) string {
	if v == record.Pass || v == VerdictNoCutover {
		return v
	}
	return "**" + v + "**"
}

// noFinding is the sentence of a findings section without findings: ok
// when its check passed, else the check's verdict and detail (a short
// record is not a clean one).
func noFinding(m map[string]record.CheckResult, name, ok string, nqns *nqnLegend) string {
	c, found := m[name]
	if found && c.Verdict == record.Pass {
		return ok
	}
	if !found {
		return "Not evaluated."
	}
	return fmt.Sprintf("Nothing listed; the check is %s: %s.", c.Verdict, strings.TrimSuffix(nqns.text(c.Detail), "."))
}

// checksByName indexes sum.Checks by check name.
func checksByName(sum record.Summary) map[string]record.CheckResult {
	m := make(map[string]record.CheckResult, len(sum.Checks))
	for _, c := range sum.Checks {
		m[c.Name] = c
	}
	return m
}

func verdictOf(m map[string]record.CheckResult, name string) string {
	if c, ok := m[name]; ok {
		return c.Verdict
	}
	return "not evaluated"
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
