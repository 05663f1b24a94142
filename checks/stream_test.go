package checks

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

// changeOnly rewrites a full-sample (format version 1) timeline as format
// version 2 writes it: a host's sample line only when its state changed,
// and one heartbeat line per instant naming the hosts sampled unchanged.
func changeOnly(tl []record.Line) []record.Line {
	out := []record.Line{{T: 0, Kind: record.KindFormat, Version: record.FormatChangeOnly, HeartbeatIntervalS: 0.1}}
	last := map[string]record.Line{}
	var hb *record.Line
	for _, l := range tl {
		if hb != nil && l.T != hb.T {
			out = append(out, *hb)
			hb = nil
		}
		if l.Kind == record.KindSample {
			if prev, ok := last[l.Host]; ok && record.SameState(prev, l) {
				if hb == nil {
					hb = &record.Line{T: l.T, Kind: record.KindHeartbeat}
				}
				hb.Hosts = append(hb.Hosts, l.Host)
				continue
			}
			last[l.Host] = l
		}
		out = append(out, l)
	}
	if hb != nil {
		out = append(out, *hb)
	}
	return out
}

// judgeCases are every synthetic record of this package's tests, plus
// variants: holes cut at random (seeded), the record cut short, and the
// topology without its volumes (consumers then come from the samples).
func judgeCases() map[string]struct {
	plan record.Plan
	tl   []record.Line
} {
	cases := map[string]struct {
		plan record.Plan
		tl   []record.Line
	}{}
	add := func(name string, p record.Plan, tl []record.Line) {
		cases[name] = struct {
			plan record.Plan
			tl   []record.Line
		}{p, tl}
	}
	for v := clean; v <= notLive; v++ {
		p, tl := migrationRun(v)
		add(fmt.Sprintf("migrationRun(%d)", v), p, tl)
	}
	for _, m := range []float64{0, 2, 30} {
		p, tl := servedRun(m)
		add(fmt.Sprintf("servedRun(%g)", m), p, tl)
	}
	for _, iv := range []float64{0.5, 1} {
		for _, pause := range []float64{2, 6, 7} {
			w := migrationWorld(iv, pause)
			add(fmt.Sprintf("migrationWorld(%g,%g)", iv, pause), w.plan, w.lines)
		}
	}
	for _, k := range []stallKind{stallExact, stallEstimate, stallHealed, stallOutside} {
		for _, o := range []stallOpts{{}, {unlanded: true}, {cutoverAt: 18}, {cutoverAt: 19.5}, {slowPeer: true}, {secondPause: true}} {
			p, tl := stallRun(k, o)
			add(fmt.Sprintf("stallRun(%d, %+v)", k, o), p, tl)
		}
	}
	p, tl := benchRun(6)
	add("benchRun(6)", p, tl)
	base := []string{}
	for name := range cases {
		base = append(base, name)
	}
	slices.Sort(base)
	rng := rand.New(rand.NewPCG(15, 15))
	for _, name := range base {
		c := cases[name]
		var holed []record.Line
		from := rng.Float64() * 40
		for _, l := range c.tl {
			if l.Kind == record.KindSample && l.T > from && l.T < from+1+rng.Float64()*10 && rng.IntN(2) == 0 {
				continue
			}
			holed = append(holed, l)
		}
		add(name+"/holed", c.plan, holed)
		add(name+"/cut", c.plan, cutAt(c.tl, 5+rng.Float64()*40))
		noVol := c.plan
		noVol.Topology.Volumes = nil
		add(name+"/no-volumes", noVol, c.tl)
	}
	return cases
}

// TestJudgeEqualsReference: the streaming Judge gives the reference's
// summary (reference_test.go: verdicts, details, windows, figures) on every
// synthetic record, fed full samples or their change-only form expanded
// back by record.Expand.
func TestJudgeEqualsReference(t *testing.T) {
	for name, c := range judgeCases() {
		want := refEvaluate(c.plan, c.tl)
		got := Evaluate(c.plan, c.tl)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: Judge differs from the reference (-want +got):\n%s", name, d)
			continue
		}
		states, err := record.Expand(changeOnly(c.tl))
		if err != nil {
			t.Fatalf("%s: expand: %v", name, err)
		}
		if d := cmp.Diff(want, Evaluate(c.plan, states)); d != "" {
			t.Errorf("%s: Judge on change-only samples differs from the reference on full samples (-want +got):\n%s", name, d)
		}
	}
}

// TestJudgeRejectsTimeGoingBackwards: the Judge needs timeline order.
func TestJudgeRejectsTimeGoingBackwards(t *testing.T) {
	plan, tl := migrationRun(clean)
	j := NewJudge(plan)
	if err := j.Add(tl[len(tl)-1]); err != nil {
		t.Fatal(err)
	}
	if err := j.Add(tl[0]); err == nil {
		t.Error("Add of an earlier line after a later one: no error")
	}
}

// BenchmarkJudgePerMigration: the Judge's cost per migration (ns/migration)
// stays flat as the record grows: it keeps no per-sample state.
func BenchmarkJudgePerMigration(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		plan, tl := benchRun(n)
		states := changeOnly(tl)
		expanded, err := record.Expand(states)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("migrations=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				j := NewJudge(plan)
				for _, l := range expanded {
					if err := j.Add(l); err != nil {
						b.Fatal(err)
					}
				}
				if s, err := j.Summary(plan); err != nil || s.Verdict != record.Pass {
					b.Fatalf("verdict %q, %v", s.Verdict, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/migration")
		})
	}
}

// A later phase line's target endpoints replace the first line's: on kube
// the harness announces the target at creation and the operator's
// status.connections, written at Validating, correct it. Judged against
// the first line's (wrong) target, the cutover serves nothing at the
// target; against the correction it serves every namespace.
func TestLaterTargetEndpointsReplaceTheFirst(t *testing.T) {
	plan, lines := migrationRun(clean)
	wrong := []string{"10.0.0.3:4420"} // the target node's nvmfPort: nothing listens there
	announce := func(correct bool) []record.Line {
		out := slices.Clone(lines)
		for i, l := range out {
			if l.Kind != record.KindPhase || l.Migration != "m1" {
				continue
			}
			switch l.Phase {
			case record.PhasePending:
				out[i].TargetEndpoints = wrong
			case record.PhaseValidating:
				if correct {
					out[i].TargetEndpoints = []string{tgt1, tgt2}
				}
			}
		}
		return out
	}
	if c := checkOf(Evaluate(plan, announce(false)), CheckServedAfterCutover); c.Verdict != record.Fail {
		t.Fatalf("target %v only: served-after-cutover %s (%s), want fail", wrong, c.Verdict, c.Detail)
	}
	if c := checkOf(Evaluate(plan, announce(true)), CheckServedAfterCutover); c.Verdict != record.Pass {
		t.Errorf("target corrected at Validating: served-after-cutover %s (%s), want pass", c.Verdict, c.Detail)
	}
}
