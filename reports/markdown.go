package reports

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
)

// MigrationVerdict is one migration's verdict in the report's table: fail
// when a consumer host's longest pause exceeds plan.Params.PauseCritS or the
// migration's freezes exceed plan.Params.FreezesAllowed; else inconclusive
// when the migration reached no terminal phase (record.IsTerminal of its
// Outcome: an interrupted or short record, whose pauses are not all
// seen); pass otherwise. (Split brain and served-after-cutover are judged
// per run; their check details name the migrations.)
func MigrationVerdict(plan record.Plan, m record.MigrationSummary) string {
	if m.Freezes > plan.Params.FreezesAllowed {
		return record.Fail
	}
	for _, hp := range m.Hosts {
		if hp.LongestPauseS > plan.Params.PauseCritS {
			return record.Fail
		}
	}
	if !record.IsTerminal(m.Outcome) {
		return record.Inconclusive
	}
	return record.Pass
}

// unfinishedNote names the migrations Stats leaves out (no terminal
// phase), or "".
func unfinishedNote(sum record.Summary) string {
	var ms []string
	for _, m := range sum.Migrations {
		if !record.IsTerminal(m.Outcome) {
			ms = append(ms, fmt.Sprintf("%s (no terminal phase, last phase %s)", m.ID, m.Outcome))
		}
	}
	if len(ms) == 0 {
		return ""
	}
	return "Migrations left out: " + strings.Join(ms, ", ") + "."
}

// Markdown renders report.md: a header with the verdict, seed, the command
// that reproduces the run, the bounds and whether the record covers the
// settle period (or is short or truncated); the checks; the volumes with
// their full NQNs (tables show the part after the last ':'); one row per migration
// (id, NQN, outcome, longest pause per consumer host, freezes, verdict);
// the migrations and hosts over the pause bound with the measured seconds;
// the host-observed cutover instants (control-plane times rounded to
// 0.1 s); unattributed pauses; the leak and
// completeness verdicts with the leaked controllers and missing endpoints;
// the pause statistics with the percentile method
// (migrations with no terminal phase left out and named); the plot. Equal inputs
// give equal bytes. sum.Stats is used as given (see WithStats).
func Markdown(plan record.Plan, sum record.Summary) []byte {
	var b bytes.Buffer
	p := plan.Params
	crit := p.PauseCritS
	verdicts := checksByName(sum)
	nqns := newNQNLegend(plan, sum)

	fmt.Fprintf(&b, "# fiomig run report — %s\n\n", strings.ToUpper(sum.Verdict))
	fmt.Fprintf(&b, "- Verdict: **%s**\n", sum.Verdict)
	fmt.Fprintf(&b, "- Seed: %d\n", sum.Seed)
	fmt.Fprintf(&b, "- Scenario: %s on backend %s\n", plan.Scenario, plan.Backend)
	fmt.Fprintf(&b, "- Reproduce: `%s`\n", plan.Command)
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

	b.WriteString("\n## Checks\n\n| Check | Verdict | Detail |\n|---|---|---|\n")
	for _, c := range sum.Checks {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Name, verdictCell(c.Verdict), cell(nqns.text(c.Detail)))
	}

	if len(nqns.rows) > 0 {
		b.WriteString("\n## Volumes\n\n" + legendNote + "\n\n| Volume | Short name | NQN | NSIDs | Consumers |\n|---|---|---|---|---|\n")
		for _, r := range nqns.rows {
			fmt.Fprintf(&b, "| %s | %s | `%s` | %s | %s |\n", cell(r.Volume), cell(r.Short), cell(r.NQN), r.NSIDs, cell(r.Consumers))
		}
	}

	b.WriteString("\n## Migrations\n\n")
	if len(sum.Migrations) == 0 {
		b.WriteString("No migration in the timeline.\n")
	} else {
		b.WriteString("| Migration | NQN | Outcome | Longest pause per host | Freezes | Verdict |\n|---|---|---|---|---|---|\n")
		for _, m := range sum.Migrations {
			var hs []string
			for _, h := range slices.Sorted(maps.Keys(m.Hosts)) {
				hp := m.Hosts[h]
				v := secs(hp.LongestPauseS)
				if hp.LongestPauseS > crit {
					v = "**" + v + "**"
				}
				if hp.OpenWindow {
					v += " (open)"
				}
				hs = append(hs, h+" "+v)
			}
			if len(hs) == 0 {
				hs = []string{"no consumer host"}
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s |\n", cell(m.ID), cell(nqns.name(m.NQN)), cell(m.Outcome),
				cell(strings.Join(hs, ", ")), m.Freezes, verdictCell(MigrationVerdict(plan, m)))
		}
	}

	b.WriteString("\n## Over the pause bound\n\n")
	if over := OverBound(plan, sum); len(over) == 0 {
		b.WriteString(withinBound(plan) + "\n")
	} else {
		for _, o := range over {
			b.WriteString("- " + o + "\n")
		}
	}

	b.WriteString("\n## Cutover as the hosts saw it\n\n")
	b.WriteString(cutoverNote + "\n\n")
	rows := 0
	for _, m := range sum.Migrations {
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

	b.WriteString("\n## Unattributed pauses\n\n")
	if len(sum.Unattributed) == 0 {
		b.WriteString("None: every pause window lies within a migration.\n")
	} else {
		b.WriteString("| Host | NQN | Window | Length |\n|---|---|---|---|\n")
		for _, w := range sum.Unattributed {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(w.Host), cell(nqns.name(w.NQN)), windows([][2]float64{w.Window}), secs(w.Window[1]-w.Window[0]))
		}
	}

	fmt.Fprintf(&b, "\n## Leaked controllers — %s\n\n", verdictOf(verdicts, checks.CheckLeakedControllers))
	if len(sum.LeakedControllers) == 0 {
		b.WriteString(noFinding(verdicts, checks.CheckLeakedControllers, "None after the settle period.", nqns) + "\n")
	} else {
		b.WriteString("| Host | Controller | NQN | Address | State | Kind |\n|---|---|---|---|---|---|\n")
		for _, l := range sum.LeakedControllers {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(l.Host), cell(l.Controller), cell(nqns.name(l.NQN)), cell(l.Address), cell(l.State), cell(l.Kind))
		}
	}

	fmt.Fprintf(&b, "\n## Path completeness — %s\n\n", verdictOf(verdicts, checks.CheckPathCompleteness))
	if len(sum.MissingEndpoints) == 0 {
		b.WriteString(noFinding(verdicts, checks.CheckPathCompleteness, "Every consumer host has a controller for every published ip:port endpoint.", nqns) + "\n")
	} else {
		b.WriteString("| Host | NQN | Missing endpoint |\n|---|---|---|\n")
		for _, m := range sum.MissingEndpoints {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(m.Host), cell(nqns.name(m.NQN)), cell(m.Endpoint))
		}
	}

	st := sum.Stats
	b.WriteString("\n## Pause statistics\n\n")
	if st.Pauses == 0 {
		b.WriteString("No (migration, host) pair to summarise.\n")
	} else {
		fmt.Fprintf(&b, "Longest pause per (migration, host), %d pair(s): p50 %s, p95 %s, max %s.\n\n",
			st.Pauses, secs(st.P50PauseS), secs(st.P95PauseS), secs(st.MaxPauseS))
		fmt.Fprintf(&b, "Percentile method: %s.\n", st.PercentileMethod)
	}
	if n := unfinishedNote(sum); n != "" {
		b.WriteString("\n" + n + "\n")
	}

	b.Write(FaultsMarkdown(sum))    // runs with faults only (reports/faults.go)
	b.Write(FioMarkdown(plan, sum)) // runs with real fio only (reports/fio.go)

	b.WriteString("\n## Plot\n\n![Longest pause per migration](plots/pause.png)\n")
	return b.Bytes()
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
			if hp.LongestPauseS > crit {
				over = append(over, fmt.Sprintf("%s (%s) on %s: longest pause %s > %s; windows %s",
					m.ID, nqns.name(m.NQN), h, secs(hp.LongestPauseS), secs(crit), windows(hp.Windows)))
			}
		}
	}
	for _, m := range sum.Migrations {
		if m.Freezes > p.FreezesAllowed {
			var hs []string
			for _, h := range slices.Sorted(maps.Keys(m.Hosts)) {
				if hp := m.Hosts[h]; hp.Freezes == m.Freezes {
					hs = append(hs, h+" "+windows(hp.Windows))
				}
			}
			over = append(over, fmt.Sprintf("%s (%s): %d freezes > %d allowed; windows on %s",
				m.ID, nqns.name(m.NQN), m.Freezes, p.FreezesAllowed, strings.Join(hs, ", ")))
		}
	}
	return over
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
	if v == record.Pass {
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
