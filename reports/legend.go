package reports

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/fiomig/fiomig/record"
)

// nqnLegend shortens subsystem NQNs for the report's tables: an NQN is
// shown as its part after the last ':' (simplyblock's lvol UUID), and the
// report lists every full NQN once, in its "Volumes" section. An NQN whose
// part after the last ':' is empty, or shared with another NQN of the
// report, is shown in full.
type nqnLegend struct {
	short map[string]string
	rows  []LegendRow
	repl  *strings.Replacer
}

// LegendRow is one subsystem of the report's "Volumes" section: the volume
// (from plan.json's topology; "—" for an NQN only the record names), the
// short name the tables use, the full NQN, its NSIDs and consumer hosts.
type LegendRow struct {
	Volume, Short, NQN, NSIDs, Consumers string
}

// shortNQN returns the part of nqn after its last ':' ("" when none).
func shortNQN(nqn string) string {
	i := strings.LastIndexByte(nqn, ':')
	if i < 0 {
		return ""
	}
	return nqn[i+1:]
}

func newNQNLegend(plan record.Plan, sum record.Summary) *nqnLegend {
	l := &nqnLegend{short: map[string]string{}}
	var order []string
	vols := map[string]record.VolumeInfo{}
	for _, v := range plan.Topology.Volumes {
		if _, ok := vols[v.NQN]; !ok {
			vols[v.NQN] = v
			order = append(order, v.NQN)
		}
	}
	extra := map[string]bool{}
	note := func(nqn string) {
		if _, ok := vols[nqn]; !ok && nqn != "" {
			extra[nqn] = true
		}
	}
	for _, m := range sum.Migrations {
		note(m.NQN)
	}
	for _, w := range append(slices.Clone(sum.Unattributed), sum.FaultWindows...) {
		note(w.NQN)
	}
	for _, k := range sum.LeakedControllers {
		note(k.NQN)
	}
	for _, e := range sum.MissingEndpoints {
		note(e.NQN)
	}
	order = append(order, slices.Sorted(maps.Keys(extra))...)

	count := map[string]int{}
	for _, n := range order {
		count[shortNQN(n)]++
	}
	var pairs []string
	for _, n := range order {
		s := shortNQN(n)
		if s == "" || count[s] > 1 {
			s = n
		}
		l.short[n] = s
		row := LegendRow{Volume: "—", Short: s, NQN: n, NSIDs: "—", Consumers: "—"}
		if v, ok := vols[n]; ok {
			row.Volume = v.Name
			if len(v.NSIDs) > 0 {
				ns := make([]string, len(v.NSIDs))
				for i, id := range v.NSIDs {
					ns[i] = fmt.Sprint(id)
				}
				row.NSIDs = strings.Join(ns, ", ")
			}
			if len(v.Consumers) > 0 {
				row.Consumers = strings.Join(v.Consumers, ", ")
			}
		}
		l.rows = append(l.rows, row)
		if s != n {
			pairs = append(pairs, n)
		}
	}
	// Longest first, so that an NQN that extends another is replaced whole.
	sort.SliceStable(pairs, func(i, j int) bool { return len(pairs[i]) > len(pairs[j]) })
	args := make([]string, 0, 2*len(pairs))
	for _, n := range pairs {
		args = append(args, n, l.short[n])
	}
	l.repl = strings.NewReplacer(args...)
	return l
}

// name returns the short form of nqn for a table cell.
func (l *nqnLegend) name(nqn string) string {
	if s, ok := l.short[nqn]; ok {
		return s
	}
	return nqn
}

// text replaces every full NQN of the legend in s by its short form (check
// details, which the checks write with full NQNs).
func (l *nqnLegend) text(s string) string { return l.repl.Replace(s) }

// legendNote introduces the "Volumes" section.
const legendNote = "Tables name a subsystem by the part of its NQN after the last ':'; the full NQNs:"

// CoverageItem is one fact of the report's header on how much of the run
// the record holds; Bad marks a short or truncated record.
type CoverageItem struct {
	Label, State, Text string
	Bad                bool
}

// coverageItems says whether the record reaches the end of the settle
// period and whether its last line was cut off; nil without sum.Coverage
// (a summary from before it existed).
func coverageItems(sum record.Summary) []CoverageItem {
	c := sum.Coverage
	if c == nil {
		return nil
	}
	it := CoverageItem{Label: "Record", State: "complete", Text: c.Note}
	if c.Short {
		it.State, it.Bad = "short", true
		it.Text = c.Note + "; leaked-controllers and path-completeness are not judged"
	}
	out := []CoverageItem{it}
	if c.TruncatedLine {
		out = append(out, CoverageItem{Label: "Timeline", State: "truncated", Bad: true,
			Text: "the last line of timeline.jsonl was cut off (the run was killed while writing it); evaluated up to the last complete line"})
	}
	return out
}

// tenths formats seconds rounded to 0.1 s (control-plane times, whose
// microseconds mean nothing next to host samples taken every 0.1 s).
func tenths(s float64) string {
	v := math.Round(s*10) / 10
	if v == 0 {
		v = 0 // no "-0"
	}
	return record.FormatT(v) + " s"
}

func optTenths(s *float64) string {
	if s == nil {
		return "—"
	}
	return tenths(*s)
}

// lagCell is the cutover table's lag: the host-observed instant minus the
// control plane's Completed time as the table shows it (rounded to 0.1 s),
// so that each row's three figures add up; "—" without a lag.
func lagCell(m record.MigrationSummary, hp record.HostPauses) string {
	if hp.CutoverLagS == nil || hp.CutoverS == nil || m.CompletedS == nil {
		return "—"
	}
	v := record.RoundT(*hp.CutoverS - math.Round(*m.CompletedS*10)/10)
	if v == 0 {
		v = 0
	}
	return record.FormatT(v) + " s"
}
