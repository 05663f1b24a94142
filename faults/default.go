package faults

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/fiomig/fiomig/record"
)

// DefaultOptions describe the world a default schedule is drawn for.
type DefaultOptions struct {
	// Migrations is how many migrations the run starts; faults are tied to
	// them by ordinal ("#N").
	Migrations int
	// Nodes and Hosts are the storage nodes' and consumer hosts' names.
	Nodes, Hosts []string
	// Kinds to schedule (default every kind, Kinds).
	Kinds []string
}

// kindStages are the stages at which a kind can land in a healthy run:
// dropped-connects and connect-rejected land only on a CONNECT, and a
// healthy run connects only while validating; a migration can be aborted
// or its Job killed only while validating. Every other kind lands at any
// stage.
func kindStages(kind string) []string {
	switch kind {
	case KindDroppedConnects, KindConnectRejected, KindAbortedValidation:
		return []string{record.StageInValidation}
	}
	return record.Stages
}

// Default draws the default fault schedule of a run from seed: one fault
// of every kind in o.Kinds, in a seeded order, each tied to a stage of one
// migration so that together they cover every stage (record.Stages) and
// every kind. Faults go to every other migration (#1, #3, …) while there
// are enough, so that one fault's effect has ended before the next one
// starts, then to every migration, then several to a migration. Targets
// are drawn from o.Nodes and o.Hosts; durations are short enough for a
// healthy system to ride them out and long enough to land:
//
//   - node-crash, network-partition: 10–15 s (hosts notice only after the
//     keep-alive timeout, up to 1.5 × kato = 7.5 s);
//   - target-restart, ana-flap, dropped-connects, connect-rejected,
//     operator-restart: 3–8 s;
//   - reset-controller and aborted-validation: one instant.
//
// A fault triggers params after_s into its stage: 0–0.5 s in the freeze
// (about 2 s long), 0–1 s elsewhere. The same seed and options give the
// same schedule. With no migration there is nothing to tie faults to: the
// schedule is empty (and a run that asked for kinds is inconclusive).
func Default(seed int64, o DefaultOptions) ([]record.FaultSpec, error) {
	kinds := o.Kinds
	if len(kinds) == 0 {
		kinds = Kinds
	}
	for _, k := range kinds {
		if !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("default faults: unknown kind %q (want one of %s)", k, strings.Join(Kinds, ", "))
		}
	}
	if len(o.Nodes) == 0 || len(o.Hosts) == 0 {
		return nil, fmt.Errorf("default faults: need storage nodes and hosts, got %d and %d", len(o.Nodes), len(o.Hosts))
	}
	if o.Migrations <= 0 {
		return []record.FaultSpec{}, nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x64656661756c74)) // "default"
	uniform := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
	round := func(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }
	fmtS := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

	order := slices.Clone(kinds)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	// Kinds bound to one stage first, then the others fill the stages no
	// fault covers yet, then cycle.
	slices.SortStableFunc(order, func(a, b string) int { return len(kindStages(a)) - len(kindStages(b)) })
	covered := map[string]bool{}
	next := rng.IntN(len(record.Stages))
	stride := 1
	if o.Migrations >= 2*len(order) {
		stride = 2
	}
	out := make([]record.FaultSpec, 0, len(order))
	for i, k := range order {
		stages := kindStages(k)
		stage := stages[0]
		if len(stages) > 1 {
			for range record.Stages {
				s := record.Stages[next%len(record.Stages)]
				next++
				if !covered[s] || allCovered(covered) {
					stage = s
					break
				}
			}
		}
		covered[stage] = true
		// "#N+": should migration N end before the stage (a failed
		// validation), the next one to reach it takes the fault.
		mig := "#" + strconv.Itoa((i*stride)%o.Migrations+1) + "+"
		after := round(uniform(0, 1))
		if stage == record.StageInFreeze {
			after = round(uniform(0, 0.5))
		}
		s := record.FaultSpec{Fault: k, Phase: stage, Migration: mig, Params: map[string]string{"after_s": fmtS(after)}}
		node := o.Nodes[rng.IntN(len(o.Nodes))]
		host := o.Hosts[rng.IntN(len(o.Hosts))]
		switch k {
		case KindNodeCrash, KindNetworkPartition:
			s.ForS = round(uniform(10, 15))
		case KindResetController, KindAbortedValidation:
		default:
			s.ForS = round(uniform(3, 8))
		}
		switch k {
		case KindNetworkPartition:
			s.Target = host + "/" + node
		case KindResetController:
			// One node's controllers: the host's other paths keep serving.
			s.Target = host
			s.Params["node"] = node
		case KindOperatorRestart:
			s.Target = OperatorTarget
		case KindAbortedValidation:
			mig = strings.TrimSuffix(mig, "+")
			s.Migration, s.Target = mig, mig
			s.Params["mode"] = []string{ModeAbort, ModeKillJob}[rng.IntN(2)]
		default:
			s.Target = node
		}
		if _, err := FromSpec(s); err != nil {
			return nil, fmt.Errorf("default faults: %w", err)
		}
		out = append(out, s)
	}
	return out, nil
}

func allCovered(c map[string]bool) bool {
	for _, s := range record.Stages {
		if !c[s] {
			return false
		}
	}
	return true
}
