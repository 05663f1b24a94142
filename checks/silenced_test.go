package checks

import (
	"slices"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/record"
)

// TestSplitBrainNotThroughASilencedPath: host-a shows the source path
// still optimized beside the optimized target at 22 s (splitBraining).
// With the source's node crashed since 21 s — a node-crash injected and
// not recovered — that path carries nothing: the host shows the ANA state
// it last heard until keep-alive notices (docs/host-model.md), so it is
// no second writer, and split-brain passes, naming the samples. A
// partition of the other host from that node, or a crash recovered before
// the sample, silences nothing for host-a: split-brain fails as before.
// (The main job's seed 1 failed split-brain this way on a node crash in
// the freeze: 20 samples of a crashed source path still optimized.)
func TestSplitBrainNotThroughASilencedPath(t *testing.T) {
	with := func(fault, target string, recoverAt float64) record.CheckResult {
		plan, tl := migrationRun(splitBraining)
		plan.Topology.Nodes = []record.Node{{Name: "node-1", IP: "10.0.0.1"}, {Name: "node-3", IP: "10.0.0.3"}}
		tl = append(tl,
			record.Line{T: 21, Kind: record.KindFault, Fault: fault, Action: "inject", Target: target},
			record.Line{T: recoverAt, Kind: record.KindFault, Fault: fault, Action: "recover", Target: target})
		slices.SortStableFunc(tl, func(a, b record.Line) int {
			switch {
			case a.T < b.T:
				return -1
			case a.T > b.T:
				return 1
			}
			return 0
		})
		for _, c := range Evaluate(plan, tl).Checks {
			if c.Name == CheckSplitBrain {
				return c
			}
		}
		t.Fatal("no split-brain check")
		return record.CheckResult{}
	}
	if c := with("node-crash", "node-1", 35); c.Verdict != record.Pass || !strings.Contains(c.Detail, "silenced by an injected fault: m1 on host-a") {
		t.Errorf("source node crashed: split-brain %s: %s; want pass naming the silenced samples", c.Verdict, c.Detail)
	}
	if c := with("network-partition", "host-b/node-1", 35); c.Verdict != record.Fail {
		t.Errorf("host-b partitioned from the source node: split-brain %s: %s; want fail (host-a hears it)", c.Verdict, c.Detail)
	}
	if c := with("node-crash", "node-1", 21.5); c.Verdict != record.Fail {
		t.Errorf("crash recovered at 21.5 s: split-brain %s: %s; want fail", c.Verdict, c.Detail)
	}
}
