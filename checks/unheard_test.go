package checks

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

// withoutKernelLog is tl as a backend that collects no kernel log records
// it: no kernel line and no stall line (the simulator's own knowledge).
func withoutKernelLog(tl []record.Line) []record.Line {
	return slices.DeleteFunc(slices.Clone(tl), func(l record.Line) bool {
		return l.Kind == record.KindKernel || l.Kind == record.KindStall
	})
}

// withLines is tl with extra lines put in time order (after lines of the
// same time).
func withLines(tl []record.Line, extra ...record.Line) []record.Line {
	out := slices.Clone(tl)
	for _, e := range extra {
		i := len(out)
		for i > 0 && out[i-1].T > e.T {
			i--
		}
		out = slices.Insert(out, i, e)
	}
	return out
}

// TestUnheardStallsWithoutKernelLog (issue 28 deliver 3, docs/host-model.md
// "Silent stalls"): stallRun's partition, recorded without host-a's kernel
// log (no keep-alive line, no stall lines). Every sample shows vol1 served;
// the only sign is nvme0 leaving live from an optimized leg between 25.5 s
// and 26 s, which may end a silent stall from 18 s (1.5 × kato before
// 25.5 s) — or be a reset. pause-bound cannot pass over it (it fails on
// nothing seen either): inconclusive, naming the controller; with a bound
// over the stall's longest length (8 s) it passes. When the cutover's
// window already counts one freeze, freezes cannot pass either. The kernel
// log present but holding no keep-alive timeout says it was no silent
// stall; a landed target-restart of its node in effect then explains the
// leave (a reset comes at once): both pass. Outside every migration
// (stallOutside) unattributed-pauses is inconclusive. The Judge equals the
// reference on both timeline formats.
func TestUnheardStallsWithoutKernelLog(t *testing.T) {
	const named = "host-a nvme0 at 10.0.0.1:4420 left live between 25.5 and 26 s with an optimized leg"
	base := func(opts stallOpts) (record.Plan, []record.Line) {
		plan, tl := stallRun(stallExact, opts)
		return plan, withoutKernelLog(tl)
	}
	type tc struct {
		name   string
		plan   record.Plan
		tl     []record.Line
		check  string
		want   string
		detail string
	}
	var cases []tc
	plan, tl := base(stallOpts{})
	cases = append(cases,
		tc{"no kernel log", plan, tl, CheckPauseBound, record.Inconclusive, "not judged on silent stalls the record cannot see: no kernel log of the host, so a controller that left live from an optimized leg may have been silent up to 1.5 × kato = 7.5 s before (docs/host-model.md): m1: " + named},
		tc{"no kernel log: freezes, no window seen", plan, tl, CheckFreezes, record.Pass, "at most 0 freeze(s)"},
		tc{"no kernel log: unattributed, inside m1", plan, tl, CheckUnattributedPauses, record.Pass, ""})
	wide := plan
	wide.Params.PauseCritS = 8.01
	cases = append(cases, tc{"no kernel log, bound over the longest stall", wide, tl, CheckPauseBound, record.Pass, "longest pause 0 s"})

	plan, tl = base(stallOpts{cutoverAt: 19.5})
	cases = append(cases, tc{"no kernel log, a cutover window seen", plan, tl, CheckFreezes, record.Inconclusive, "m1: " + named})

	plan, tl = base(stallOpts{})
	quiet := withLines(tl, record.Line{T: 0, Kind: record.KindKernel, Host: "host-a", Controller: "nvme0", Message: `new ctrl: NQN "` + vol1 + `", addr 10.0.0.1:4420`})
	cases = append(cases, tc{"kernel log without a keep-alive timeout", plan, quiet, CheckPauseBound, record.Pass, "longest pause 0 s"})

	plan, tl = base(stallOpts{})
	plan.Faults = append(plan.Faults, record.FaultSpec{Fault: "target-restart", Target: "node-1", AtS: 25.7, ForS: 2})
	reset := withLines(tl,
		record.Line{T: 25.7, Kind: record.KindFault, Fault: "target-restart", Action: "inject", Target: "node-1", Evidence: map[string]string{"controllers_no_longer_live": "1"}},
		record.Line{T: 27.7, Kind: record.KindFault, Fault: "target-restart", Action: "recover", Target: "node-1"})
	cases = append(cases, tc{"reset by a landed target-restart", plan, reset, CheckPauseBound, record.Pass, "longest pause 0 s"})

	plan, tl = stallRun(stallOutside, stallOpts{})
	cases = append(cases, tc{"outside every migration", plan, withoutKernelLog(tl), CheckUnattributedPauses, record.Inconclusive,
		"host-a nvme0 at 10.0.0.1:4420 left live between 65.5 and 66 s with an optimized leg"})

	for _, c := range cases {
		for format, lines := range bothFormats(t, c.tl) {
			t.Run(c.name+"/"+format, func(t *testing.T) {
				s := Evaluate(c.plan, lines)
				got := findCheck(s, c.check)
				if got.Verdict != c.want || !strings.Contains(got.Detail, c.detail) {
					t.Errorf("%s %s %q, want %s with %q", c.check, got.Verdict, got.Detail, c.want, c.detail)
				}
				if d := cmp.Diff(refEvaluate(c.plan, lines), s); d != "" {
					t.Errorf("the Judge (+) differs from the reference (-):\n%s", d)
				}
			})
		}
	}
}
