package reports

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/record"
)

// The faults section of report.md and report.html: every fault of the run
// (kind, target, migration and stage at injection, evidence, landed or
// not) and the kind × stage coverage matrix, from summary.json's faults and
// fault_matrix (checks.Evaluate).

// FaultsView is the faults section laid out for report.html.
type FaultsView struct {
	Note   string
	Rows   []FaultRow
	Stages []string
	Matrix []FaultMatrixRow
}

// FaultRow is one fault, formatted.
type FaultRow struct {
	N                                                int
	Kind, Target, Migration, Stage, Injected, Landed string
	Recovered, Status, StatusClass, Evidence, Reason string
}

// FaultMatrixRow is one kind's row of the matrix: "landed/injected" per stage.
type FaultMatrixRow struct {
	Kind  string
	Cells []FaultMatrixCell
}

// FaultMatrixCell is one cell; Gap marks a cell whose faults did not all land.
type FaultMatrixCell struct {
	Text string
	Gap  bool
}

// FaultsSection lays out sum.Faults and sum.FaultMatrix; nil when the run
// had no fault.
func FaultsSection(sum record.Summary) *FaultsView {
	if len(sum.Faults) == 0 {
		return nil
	}
	v := &FaultsView{Stages: sum.FaultMatrix.Stages}
	landed, kinds := 0, map[string]bool{}
	for i, f := range sum.Faults {
		kinds[f.Kind] = true
		if f.Status == record.FaultLanded {
			landed++
		}
		row := FaultRow{N: i + 1, Kind: f.Kind, Target: f.Target, Migration: dash(f.Migration), Stage: dash(f.Phase),
			Injected: secs(f.InjectedS), Landed: optSecs(f.LandedS), Recovered: optSecs(f.RecoveredS),
			Status: f.Status, StatusClass: faultClass(f.Status), Evidence: evidenceText(f.Evidence), Reason: f.Reason}
		if f.Status == record.FaultNotInjected {
			row.Injected = "—"
		}
		v.Rows = append(v.Rows, row)
	}
	v.Note = fmt.Sprintf("%d fault(s) of %d kind(s); %d landed (left evidence). A fault that left no evidence, or a kind asked for that never landed, makes faults-landed inconclusive.",
		len(sum.Faults), len(kinds), landed)
	for _, r := range sum.FaultMatrix.Kinds {
		mr := FaultMatrixRow{Kind: r.Kind}
		for _, c := range r.Cells {
			cell := FaultMatrixCell{Text: "—"}
			if c.Injected > 0 {
				cell = FaultMatrixCell{Text: fmt.Sprintf("%d/%d", c.Landed, c.Injected), Gap: c.Landed < c.Injected}
			}
			mr.Cells = append(mr.Cells, cell)
		}
		v.Matrix = append(v.Matrix, mr)
	}
	return v
}

// FaultsMarkdown is the faults section of report.md ("" without faults).
func FaultsMarkdown(sum record.Summary) []byte {
	v := FaultsSection(sum)
	if v == nil {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n## Faults\n\n" + v.Note + "\n\n")
	b.WriteString("| # | Kind | Target | Migration | Stage at injection | Injected | Landed | Recovered | Status | Evidence |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range v.Rows {
		ev := r.Evidence
		if r.Reason != "" {
			ev = strings.TrimPrefix(ev+"; ", "; ") + "reason: " + r.Reason
		}
		status := r.Status
		if r.Status != record.FaultLanded {
			status = "**" + strings.ToUpper(status) + "**"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.N, r.Kind, cell(r.Target), cell(r.Migration), r.Stage,
			r.Injected, r.Landed, r.Recovered, status, cell(ev))
	}
	b.WriteString("\n### Fault coverage: kind × stage at injection\n\nEach cell: faults that landed / faults injected.\n\n| Kind |")
	for _, s := range v.Stages {
		b.WriteString(" " + s + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(v.Stages)) + "\n")
	for _, r := range v.Matrix {
		b.WriteString("| " + r.Kind + " |")
		for _, c := range r.Cells {
			t := c.Text
			if c.Gap {
				t = "**" + t + "**"
			}
			b.WriteString(" " + t + " |")
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

func faultClass(status string) string {
	if status == record.FaultLanded {
		return "pass"
	}
	return "inconclusive"
}

// evidenceText is evidence as sorted key=value pairs, cut at 160 characters.
func evidenceText(ev map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(ev)) {
		parts = append(parts, k+"="+ev[k])
	}
	s := strings.Join(parts, ", ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
