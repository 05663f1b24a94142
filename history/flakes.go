package history

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/montanaflynn/stats"

	"github.com/fiomig/fiomig/reports"
)

// Flake groupings (FlakesBy): which runs count as repeats of one another.
const (
	// ByCommitSeeds: the same commit, the same seed and the same parameters
	// (Entry.Config) — the same inputs, so any flip is a flake.
	ByCommitSeeds = "commit+seeds"
	// ByCommit: the same commit, any seed or parameters.
	ByCommit = "commit"
	// BySeeds: the same seed, any commit or parameters — a flip here may be
	// a real change of the code or the flags.
	BySeeds = "seeds"
)

// FlakeMethod names how Flakes counts and bounds a flip rate.
const FlakeMethod = "flips between consecutive runs of a group (runs are a run's or a sweep's seeds, in series order), over the transitions; 95 % Wilson score interval of the proportion (reports.Wilson)"

// Flake is one check's flip rate.
type Flake struct {
	Check string
	// Flips of Transitions: consecutive runs of one group whose verdicts of
	// the check differ; Rate = Flips/Transitions with the 95 % Wilson
	// interval [Low95, High95] (all 0 without a transition).
	Flips, Transitions  int
	Rate, Low95, High95 float64
	// Groups is how many groups had at least one transition.
	Groups int
	// LastFlip describes the latest flip: "seed 3: pass → fail at <run id>".
	LastFlip string
}

// Flakes computes, per check, how often its verdict flipped between
// consecutive runs of one group (by: ByCommitSeeds, ByCommit or BySeeds;
// "" is ByCommitSeeds). Each member run of an entry (a sweep's seed) is a
// run; runs keep the series order of entries. A run without the check is
// skipped for it. Checks are sorted by rate, then flips (both descending),
// then name. Errors: an unknown grouping.
func Flakes(entries []Entry, by string) ([]Flake, error) {
	if by == "" {
		by = ByCommitSeeds
	}
	key := func(e Entry, seed int64) string {
		switch by {
		case ByCommitSeeds:
			return e.Commit + "\x00" + e.Config + "\x00" + strconv.FormatInt(seed, 10)
		case ByCommit:
			return e.Commit
		}
		return strconv.FormatInt(seed, 10)
	}
	if !slices.Contains([]string{ByCommitSeeds, ByCommit, BySeeds}, by) {
		return nil, fmt.Errorf("flakes: --by %q: want %s, %s or %s", by, ByCommitSeeds, ByCommit, BySeeds)
	}
	type prev struct{ verdict, run string }
	last := map[string]map[string]prev{} // check -> group -> last run
	groups := map[string]map[string]bool{}
	out := map[string]*Flake{}
	for _, e := range entries {
		for m, checks := range e.Checks {
			seed := int64(0)
			if m < len(e.MemberSeeds) {
				seed = e.MemberSeeds[m]
			}
			g := key(e, seed)
			for _, name := range slices.Sorted(maps.Keys(checks)) {
				v := checks[name]
				f := out[name]
				if f == nil {
					f = &Flake{Check: name}
					out[name] = f
					last[name] = map[string]prev{}
					groups[name] = map[string]bool{}
				}
				if p, ok := last[name][g]; ok {
					f.Transitions++
					groups[name][g] = true
					if p.verdict != v {
						f.Flips++
						f.LastFlip = fmt.Sprintf("seed %d: %s → %s at %s (after %s)", seed, p.verdict, v, e.ID, p.run)
					}
				}
				last[name][g] = prev{verdict: v, run: e.ID}
			}
		}
	}
	z := stats.NormPpf(0.975, 0, 1)
	var res []Flake
	for name, f := range out {
		f.Groups = len(groups[name])
		if f.Transitions > 0 {
			f.Rate = float64(f.Flips) / float64(f.Transitions)
			f.Low95, f.High95 = reports.Wilson(f.Flips, f.Transitions, z)
		}
		res = append(res, *f)
	}
	slices.SortFunc(res, func(a, b Flake) int {
		switch {
		case a.Rate != b.Rate:
			if a.Rate > b.Rate {
				return -1
			}
			return 1
		case a.Flips != b.Flips:
			return b.Flips - a.Flips
		}
		if a.Check < b.Check {
			return -1
		}
		if a.Check > b.Check {
			return 1
		}
		return 0
	})
	return res, nil
}
