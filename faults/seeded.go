package faults

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/fiomig/fiomig/record"
)

// SeededOptions describe a seeded fault schedule: Count faults, each of a
// kind drawn from Kinds, fired at Phase of a distinct migration drawn from
// Migrations, AfterS seconds into it, lasting ForS seconds, against a node
// drawn from Nodes (target-restart, dropped-connects) or against the
// migration itself (aborted-validation, mode drawn from Modes). With no
// Migrations, the faults fire at times drawn from AtS instead (node faults
// only).
type SeededOptions struct {
	Count      int
	Kinds      []string
	Migrations []string
	Nodes      []string
	// Phase that triggers each fault (default Validating).
	Phase string
	// AfterS, ForS and AtS are [min, max] ranges in seconds, drawn uniformly.
	AfterS [2]float64
	ForS   [2]float64
	AtS    [2]float64
	// Modes of aborted-validation to draw from (default abort and kill-job).
	Modes []string
}

// Seeded draws a fault schedule from seed: the same seed and options give
// the same schedule. Entries come in the order of their migrations in
// Migrations. Errors name the option at fault.
func Seeded(seed int64, o SeededOptions) ([]record.FaultSpec, error) {
	timed := len(o.Migrations) == 0
	switch {
	case o.Count < 0:
		return nil, fmt.Errorf("seeded faults: count %d: negative", o.Count)
	case timed && (o.AtS[0] < 0 || o.AtS[1] < o.AtS[0] || (o.Count > 0 && o.AtS[1] == 0)):
		return nil, fmt.Errorf("seeded faults: no migrations, and at_s range %v is not 0 <= min <= max, max > 0", o.AtS)
	case !timed && o.Count > len(o.Migrations):
		return nil, fmt.Errorf("seeded faults: count %d > %d eligible migrations", o.Count, len(o.Migrations))
	case o.Count > 0 && len(o.Kinds) == 0:
		return nil, errors.New("seeded faults: no kinds to draw from")
	case o.AfterS[0] < 0 || o.AfterS[1] < o.AfterS[0]:
		return nil, fmt.Errorf("seeded faults: after_s range %v: want 0 <= min <= max", o.AfterS)
	case o.ForS[0] < 0 || o.ForS[1] < o.ForS[0]:
		return nil, fmt.Errorf("seeded faults: for_s range %v: want 0 <= min <= max", o.ForS)
	}
	for _, k := range o.Kinds {
		if k == KindAbortedValidation && timed {
			return nil, errors.New("seeded faults: aborted-validation needs migrations to abort")
		}
		if k != KindAbortedValidation && len(o.Nodes) == 0 {
			return nil, fmt.Errorf("seeded faults: kind %s needs nodes", k)
		}
	}
	phase := o.Phase
	if phase == "" {
		phase = record.PhaseValidating
	}
	modes := o.Modes
	if len(modes) == 0 {
		modes = []string{ModeAbort, ModeKillJob}
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6661756c7473)) // "faults"
	uniform := func(r [2]float64) float64 { return r[0] + (r[1]-r[0])*rng.Float64() }
	round := func(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }
	out := make([]record.FaultSpec, 0, o.Count)
	if timed {
		for range o.Count {
			s := record.FaultSpec{Fault: o.Kinds[rng.IntN(len(o.Kinds))], AtS: round(uniform(o.AtS)),
				Target: o.Nodes[rng.IntN(len(o.Nodes))], ForS: round(uniform(o.ForS))}
			if _, err := FromSpec(s); err != nil {
				return nil, fmt.Errorf("seeded faults: %w", err)
			}
			out = append(out, s)
		}
		slices.SortStableFunc(out, func(a, b record.FaultSpec) int {
			switch {
			case a.AtS < b.AtS:
				return -1
			case a.AtS > b.AtS:
				return 1
			}
			return 0
		})
		return out, nil
	}
	picked := rng.Perm(len(o.Migrations))[:o.Count]
	slices.Sort(picked)
	for _, mi := range picked {
		mig := o.Migrations[mi]
		s := record.FaultSpec{Fault: o.Kinds[rng.IntN(len(o.Kinds))], Phase: phase, Migration: mig,
			Params: map[string]string{"after_s": strconv.FormatFloat(round(uniform(o.AfterS)), 'f', -1, 64)}}
		forS := round(uniform(o.ForS))
		switch s.Fault {
		case KindAbortedValidation:
			s.Target = mig
			s.Params["mode"] = modes[rng.IntN(len(modes))]
		default:
			s.Target = o.Nodes[rng.IntN(len(o.Nodes))]
			s.ForS = forS
		}
		if _, err := FromSpec(s); err != nil {
			return nil, fmt.Errorf("seeded faults: %w", err)
		}
		out = append(out, s)
	}
	return out, nil
}
