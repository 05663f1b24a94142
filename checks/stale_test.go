package checks

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

// thin drops host's sample lines with from < t < to except those at the
// times in keep: a collector that stalled and answered only then.
func thin(tl []record.Line, host string, from, to float64, keep ...float64) []record.Line {
	var out []record.Line
	for _, l := range tl {
		if l.Kind == record.KindSample && l.Host == host && l.T > from && l.T < to && !slices.Contains(keep, l.T) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// bothFormats is a doctored record as format version 1 writes it (every
// host's whole state at every tick) and as version 2 does (change-only
// samples and heartbeats, record/FORMAT.md), expanded back into per-tick
// states as the Judge reads it.
func bothFormats(t *testing.T, tl []record.Line) map[string][]record.Line {
	t.Helper()
	v2, err := record.Expand(changeOnly(tl))
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]record.Line{"version 1": tl, "version 2": v2}
}

// servedWorld: vol1 (NSIDs 1, 2) on host-a and host-b migrates from src1/src2
// to tgt1/tgt2 (m1: Pending 10 s, Running 20 s, every path inaccessible
// 20–22 s, Completed 22.5 s; served-after-cutover judged at 52.5 s);
// sampled every 0.5 s to 100 s. During [badFrom, badTo) host-a's target
// paths serve only NSID 1 (NSID 2 over src2, live: no pause); a second
// migration m2 of vol1 starts at m2At (0: none).
func servedWorld(badFrom, badTo, m2At float64) (record.Plan, []record.Line) {
	w := newWorld(0.5, "host-a", "host-b")
	w.plan.Params.Migrations = 1
	w.volume("vol1", vol1, []int{1, 2}, "host-a", "host-b")
	hosts := []string{"host-a", "host-b"}
	w.endpoints(vol1, src1, src2)
	for _, h := range hosts {
		w.ctrl(h, "nvme0", vol1, src1, "live", legs("optimized", 1, 2)...)
		w.ctrl(h, "nvme1", vol1, src2, "live", legs("non-optimized", 1, 2)...)
	}
	w.until(10)
	w.phase("m1", vol1, record.PhasePending, []string{src1, src2}, []string{tgt1, tgt2})
	w.phase("m1", vol1, record.PhaseValidating, nil, nil)
	for _, h := range hosts {
		w.ctrl(h, "nvme2", vol1, tgt1, "live", legs("inaccessible", 1, 2)...)
		w.ctrl(h, "nvme3", vol1, tgt2, "live", legs("inaccessible", 1, 2)...)
	}
	w.until(20)
	w.phase("m1", vol1, record.PhaseRunning, nil, nil)
	for _, h := range hosts {
		for name := range w.state[h] {
			w.ana(h, name, "inaccessible")
		}
	}
	w.until(22)
	good := func() {
		for _, h := range hosts {
			w.ctrl(h, "nvme2", vol1, tgt1, "live", legs("optimized", 1, 2)...)
			w.ctrl(h, "nvme3", vol1, tgt2, "live", legs("non-optimized", 1, 2)...)
			w.drop(h, "nvme0")
			w.drop(h, "nvme1")
		}
	}
	bad := func() {
		w.ctrl("host-a", "nvme2", vol1, tgt1, "live", legs("optimized", 1)...)
		w.ctrl("host-a", "nvme3", vol1, tgt2, "live", legs("non-optimized", 1)...)
		w.ctrl("host-a", "nvme1", vol1, src2, "live", legs("non-optimized", 2)...)
	}
	good()
	w.endpoints(vol1, tgt1, tgt2)
	w.until(22.5)
	w.phase("m1", vol1, record.PhaseCompleted, nil, nil)
	// Changes at 22 s, badFrom, badTo and m2At, in time order.
	steps := []float64{badFrom, badTo}
	if m2At > 0 {
		steps = append(steps, m2At)
		w.plan.Params.Migrations = 2
	}
	slices.Sort(steps)
	for _, at := range steps {
		w.until(at)
		switch at {
		case badFrom:
			bad()
		case badTo:
			good()
		}
		if at == m2At {
			w.phase("m2", vol1, record.PhasePending, []string{tgt1, tgt2}, []string{src1, src2})
			w.phase("m2", vol1, record.PhaseFailed, nil, nil)
		}
	}
	w.until(100)
	return w.plan, w.lines
}

// TestStateAtAnInstantNeedsAFreshObservation (issue 24 item 1): a check
// that reads a host's state at an instant judges it only on an
// observation the hole rule accepts at that instant (within
// record.HoleFactor sample intervals); a host whose samples were thinned
// around the instant (a stalling collector) leaves the check inconclusive,
// never failed or passed on a stale state — on both timeline formats.
func TestStateAtAnInstantNeedsAFreshObservation(t *testing.T) {
	type tc struct {
		name  string
		plan  record.Plan
		tl    []record.Line
		check string
		want  string
		words []string // in the check's detail
	}
	var cases []tc

	// served-after-cutover at Completed + margin (52.5 s): host-a's target
	// is fine then, bad from 60 s to 80 s; host-a was seen at 45 s, then
	// only at 65 s (bad). Dense, the check passes.
	plan, tl := servedWorld(60, 80, 0)
	cases = append(cases,
		tc{"served: dense record", plan, tl, CheckServedAfterCutover, record.Pass, nil},
		tc{"served: next observation 12.5 s after the instant", plan, thin(tl, "host-a", 45, 75, 65), CheckServedAfterCutover, record.Inconclusive,
			[]string{"m1 on host-a: the state at 52.5 s is not known", "its observations nearest are at 45 s and 65 s"}})

	// Judged on the last sample before the next migration (m2 at 50 s,
	// before Completed + margin): host-a's target is bad until 40 s, fine
	// after; host-a was seen at 35 s (bad), then at 55 s.
	plan, tl = servedWorld(22.5, 40, 50)
	cases = append(cases,
		tc{"served before the next migration: dense record", plan, tl, CheckServedAfterCutover, record.Pass, nil},
		tc{"served before the next migration: last observation 15 s before it", plan, thin(tl, "host-a", 30, 55, 35), CheckServedAfterCutover, record.Inconclusive,
			[]string{"m1 on host-a: the state at 50 s is not known"}})

	// paths-per-subsystem and the leak checks at the end of the settle
	// period (62.5 s): host-a held two extra controllers of vol1 from 40 s
	// to 50 s, and was last seen at 45 s.
	plan, tl = migrationRun(clean)
	extra := func(tl []record.Line) []record.Line {
		out := slices.Clone(tl)
		for i, l := range out {
			if l.Kind == record.KindSample && l.Host == "host-a" && l.T >= 40 && l.T < 50 {
				cs := slices.Clone(l.Controllers)
				cs = append(cs, record.Controller{Name: "nvme8", NQN: vol1, Address: src1, State: "connecting", Transport: "tcp", Legs: []record.Leg{}},
					record.Controller{Name: "nvme9", NQN: vol1, Address: src2, State: "connecting", Transport: "tcp", Legs: []record.Leg{}})
				out[i].Controllers = cs
			}
		}
		return out
	}
	stale := thin(extra(tl), "host-a", 45, 1000)
	cases = append(cases,
		tc{"paths: dense record", plan, extra(tl), CheckPathsPerSubsystem, record.Pass, nil},
		tc{"leaks: dense record", plan, extra(tl), CheckLeakedControllers, record.Pass, nil},
		tc{"completeness: dense record", plan, extra(tl), CheckPathCompleteness, record.Pass, nil},
		tc{"paths: last observation at 45 s", plan, stale, CheckPathsPerSubsystem, record.Inconclusive,
			[]string{"the last sample of host-a is at 45 s, before the end of the settle period at 62.5 s"}},
		tc{"leaks: last observation at 45 s", plan, stale, CheckLeakedControllers, record.Inconclusive,
			[]string{"the last sample of host-a is at 45 s, before the end of the settle period at 62.5 s"}},
		tc{"completeness: last observation at 45 s", plan, stale, CheckPathCompleteness, record.Inconclusive,
			[]string{"the last sample of host-a is at 45 s, before the end of the settle period at 62.5 s"}})

	// dirty-start at the run start: host-a first seen at 30 s.
	late := thin(tl, "host-a", -1, 30)
	cases = append(cases,
		tc{"dirty-start: dense record", plan, tl, CheckDirtyStart, record.Pass, nil},
		tc{"dirty-start: first observation 30 s after the record's first", plan, late, CheckDirtyStart, record.Inconclusive,
			[]string{"host-a first observed at 30 s, 30 s after the record's first observation at 0 s"}})

	// split-brain per sample: the one split-brain sample (22.5 s) of
	// host-a thinned away with the samples around it.
	plan, tl = migrationRun(splitBraining)
	cases = append(cases,
		tc{"split-brain: dense record", plan, tl, CheckSplitBrain, record.Fail, nil},
		tc{"split-brain: the instant thinned away", plan, thin(tl, "host-a", 15, 40, 20, 35), CheckSplitBrain, record.Inconclusive,
			[]string{"host host-a unobserved from 20 s to 35 s"}})

	// pause-bound: the 2 s cutover pause (20–22 s) seen once at 21 s, then
	// host-a not until 41 s: a window measured 20 s long, of which nothing
	// is known to be paused for longer than 0 s.
	plan, tl = migrationRun(clean)
	cases = append(cases,
		tc{"pause-bound: a window across a hole", plan, thin(tl, "host-a", 15, 45, 21, 41), CheckPauseBound, record.Inconclusive,
			[]string{"host host-a unobserved from 21 s to 41 s"}})
	// A violation seen before the hole still fails: 7 s paused (20–27 s),
	// seen without a gap until 25.5 s, then neither host until 45 s.
	plan, tl = migrationRun(longPause)
	cases = append(cases,
		tc{"pause-bound: a violation seen before the hole", plan, thin(thin(tl, "host-a", 25.5, 50, 45), "host-b", 25.5, 50, 45), CheckPauseBound, record.Fail,
			[]string{"longest 5.5 s seen paused (m1 on host-a"}})

	for _, c := range cases {
		for format, lines := range bothFormats(t, c.tl) {
			t.Run(fmt.Sprintf("%s/%s", c.name, format), func(t *testing.T) {
				got := checkOf(Evaluate(c.plan, lines), c.check)
				if got.Verdict != c.want {
					t.Errorf("%s = %s (%s), want %s", c.check, got.Verdict, got.Detail, c.want)
				}
				for _, word := range c.words {
					if !strings.Contains(got.Detail, word) {
						t.Errorf("%s detail %q lacks %q", c.check, got.Detail, word)
					}
				}
				if d := cmp.Diff(checkOf(refEvaluate(c.plan, lines), c.check), got); d != "" {
					t.Errorf("the Judge (+) differs from the reference (-):\n%s", d)
				}
			})
		}
	}
}
