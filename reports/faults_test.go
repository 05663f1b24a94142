package reports

import (
	"strings"
	"testing"

	"github.com/fiomig/fiomig/record"
)

// TestFaultsSection: report.md lists every fault with its stage, evidence
// and status (a fault that did not land in capitals) and the kind × stage
// matrix (a cell whose faults did not all land in bold); report.html has
// the same rows; a run without faults has no section.
func TestFaultsSection(t *testing.T) {
	landed := 12.5
	sum := record.Summary{Verdict: record.Inconclusive,
		Faults: []record.FaultOutcome{
			{Kind: "node-crash", Target: "storage-2", Migration: "mig-0003", Phase: record.StageInFreeze, InjectedS: 10, LandedS: &landed,
				Evidence: map[string]string{"controllers_no_longer_live": "2"}, Status: record.FaultLanded},
			{Kind: "ana-flap", Target: "storage-1", Phase: record.StageIdle, InjectedS: 40, Status: record.FaultNoEvidence, Reason: "no effect observed"},
		},
		FaultMatrix: record.FaultMatrix{Stages: append(append([]string{}, record.Stages...), record.StageIdle), Kinds: []record.FaultMatrixRow{
			{Kind: "node-crash", Cells: []record.FaultCell{{}, {}, {Injected: 1, Landed: 1}, {}, {}}},
			{Kind: "ana-flap", Cells: []record.FaultCell{{}, {}, {}, {}, {Injected: 1}}},
		}},
	}
	md := string(Markdown(record.Plan{}, sum))
	for _, want := range []string{
		"## Faults",
		"2 fault(s) of 2 kind(s); 1 landed",
		"| 1 | node-crash | storage-2 | mig-0003 | in-freeze | 10 s | 12.5 s | — | landed | controllers_no_longer_live=2 |",
		"| 2 | ana-flap | storage-1 | — | idle | 40 s | — | — | **INCONCLUSIVE** | reason: no effect observed |",
		"| Kind | in-validation | before-cutover | in-freeze | after-cutover | idle |",
		"| node-crash | — | — | 1/1 | — | — |",
		"| ana-flap | — | — | — | — | **0/1** |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	html, err := HTML(record.Plan{}, sum, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h2>Faults</h2>", "<td>node-crash</td>", "<td>in-freeze</td>", `<span class="inconclusive">0/1</span>`} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(string(Markdown(record.Plan{}, record.Summary{})), "## Faults") {
		t.Error("a run without faults has a faults section")
	}
}
