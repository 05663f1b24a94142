package reports

import (
	"strings"
	"testing"

	"github.com/fiomig/fiomig/analysis"
	"github.com/fiomig/fiomig/incidents"
)

// TestPairMarkdown: one seed's two runs are described, not judged: the
// table by class, where the plans diverge, and the command that judges the
// claim over seeds.
func TestPairMarkdown(t *testing.T) {
	fig := func(op string, plans map[string]string, fails ...analysis.ValidationFailure) analysis.Run {
		return analysis.Run{Figures: analysis.IncidentFigures{Operator: op, Seed: 4, Failures: fails, ValidationFailed: len(fails), Plans: plans}}
	}
	plans := map[string]string{"mig-0001": "a", "mig-0002": "b", "mig-0003": "c"}
	other := map[string]string{"mig-0001": "a", "mig-0002": "x", "mig-0003": "c"}
	d := analysis.DescribePair([]analysis.Run{
		fig("prefix", plans, analysis.ValidationFailure{Migration: "mig-0001", Cause: analysis.CauseParkedLeak},
			analysis.ValidationFailure{Migration: "mig-0003", Cause: analysis.CauseSubsystemLoss}),
		fig("fixed", other, analysis.ValidationFailure{Migration: "mig-0002", Cause: analysis.CauseSubsystemLoss},
			analysis.ValidationFailure{Migration: "mig-0003", Cause: analysis.CauseSubsystemLoss}),
	})
	if d == nil {
		t.Fatal("no description of a prefix and a fixed run")
	}
	md := string(PairMarkdown(*d, incidents.Default))
	for _, w := range []string{"described, not judged", "--operator both --seeds 1-10", "| total | 2 | 2 | +0 |", "diverge at mig-0002",
		"| mig-0001 | prefix | " + analysis.CauseParkedLeak + " | — |"} {
		if !strings.Contains(md, w) {
			t.Errorf("markdown lacks %q:\n%s", w, md)
		}
	}
}
