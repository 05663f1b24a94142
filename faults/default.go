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
	// Kinds to schedule (default every kind, Kinds, as many as the run has
	// room for: see Default).
	Kinds []string
	// MinCompleted is the fraction of migrations the run must complete
	// (checks' migration-outcomes, record.SeedThresholds; 0 = no bound):
	// the schedule ends at most the rest by design (Default).
	MinCompleted float64
}

// kindStages are the stages at which a kind's evidence can be seen in a
// healthy run: dropped-connects and connect-rejected land only on a
// CONNECT, and a healthy run connects only while validating; a migration
// can be aborted or its Job killed only while validating; operator-restart
// lands only when a reconcile has to wait, and the operator is sure to
// reconcile during the window only while it polls the control plane for
// the cutover (every 1 s, from continue until the cutover is done:
// before-cutover and in-freeze; sim/operator.go pollCompletion). After the
// cutover it may have nothing left to do (with the source release the
// Jobs end the migration), and in validation it waits for the Jobs, which
// may outlast the window. Every other kind lands at any stage.
func kindStages(kind string) []string {
	switch kind {
	case KindDroppedConnects, KindConnectRejected, KindAbortedValidation:
		return []string{record.StageInValidation}
	case KindOperatorRestart:
		return []string{record.StageBeforeCutover, record.StageInFreeze}
	}
	return record.Stages
}

// EndsBudget is how many of a run's migrations its default schedule may
// end by design (mayEnd): migrations × (1 − minCompleted), rounded down, so
// that migration-outcomes cannot fail on the schedule alone.
func EndsBudget(migrations int, minCompleted float64) int {
	if minCompleted <= 0 {
		return migrations
	}
	return int(float64(migrations)*(1-minCompleted) + 1e-9)
}

// EndsByDesign counts the faults of schedule that may end a migration by
// design (mayEnd at their stage; a fault triggered by time or phase
// rather than a stage counts, since its stage is unknown). A run whose
// migrations not completed are no more than this may fail
// migration-outcomes through its schedule alone (fiomig shrink).
func EndsByDesign(schedule []record.FaultSpec) int {
	n := 0
	for _, f := range schedule {
		if !slices.Contains(record.Stages, f.Phase) || mayEnd(f.Fault, f.Phase) {
			n++
		}
	}
	return n
}

// mayEnd reports whether a fault of kind at stage may end a migration (the
// operator fails or aborts it), its own or the next one:
//
//   - any fault in a validation: an aborted validation or a killed Job
//     does by definition; rejected or dropped CONNECTs, or a restart,
//     crash, partition or reset at a node the validation connects to, can
//     fail the Job;
//   - a node crash anywhere: it lasts 10–15 s, longer than what is left
//     of its migration from the freeze on plus the gap, so the next
//     migration's validation connects to a node that answers nothing and
//     fails (measured, 100 seeds with fixed-cancel: 75 of 78 from the
//     freeze or after the cutover; docs/host-model.md: such a connect
//     gives up after the kernel's 3 s SYN timers);
//   - a target restart after the cutover: its 3–8 s can outlast the
//     migration's release Jobs and the gap, into the next validation.
//
// Everything else ends within its migration and breaks no validation.
func mayEnd(kind, stage string) bool {
	return stage == record.StageInValidation || kind == KindNodeCrash ||
		(kind == KindTargetRestart && stage == record.StageAfterCutover)
}

// alwaysEnds reports whether every stage kind can be placed at may end a
// migration.
func alwaysEnds(kind string) bool {
	for _, st := range kindStages(kind) {
		if !mayEnd(kind, st) {
			return false
		}
	}
	return true
}

// Default draws the default fault schedule of a run from seed, in a seeded
// order, each fault tied to a stage of one migration (by ordinal, "#N+")
// at which its evidence can be seen (kindStages), the stages covered as
// far as the faults go (record.Stages):
//
//   - how many: with o.Kinds empty (the default selection) one fault per
//     two migrations, ceil(migrations / 2), of distinct kinds drawn from
//     every kind, up to one of each (all nine from 20 migrations on at
//     min-completed 0.8: four kinds always may end a migration, below);
//     a kind list gets one fault of each kind listed;
//   - where: on every other migration (#1, #3, …) while there are enough,
//     so that one fault's effect has ended before the next one starts,
//     else on every migration, then several to a migration; a fault whose
//     effect would stack on an earlier one's that has not ended moves on
//     to a later migration (Precondition, Injector);
//   - ending migrations: at most EndsBudget(migrations, o.MinCompleted)
//     faults are placed where they may end a migration (mayEnd). The
//     default selection draws no kind that always may (the validation-only
//     kinds, node-crash) beyond the budget, and a kind that has a stage
//     where it may not goes there once the budget is spent. A kind list is
//     kept whole.
//
// Targets are drawn from o.Nodes and o.Hosts; durations are short enough
// for a healthy system to ride them out and long enough to land:
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

	shuffled := slices.Clone(kinds)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	budget := EndsBudget(o.Migrations, o.MinCompleted)
	order := shuffled
	if len(o.Kinds) == 0 {
		// The default selection scales with the run: one fault per two
		// migrations, no kind that always may end one beyond the budget.
		order = nil
		ends := 0
		for _, k := range shuffled {
			if len(order) == (o.Migrations+1)/2 {
				break
			}
			if alwaysEnds(k) {
				if ends == budget {
					continue
				}
				ends++
			}
			order = append(order, k)
		}
	}
	// What is left of the budget for the kinds that may be placed where
	// they end nothing.
	spare := budget
	for _, k := range order {
		if alwaysEnds(k) {
			spare--
		}
	}
	// Kinds bound to fewer stages first, then the others fill the stages
	// no fault covers yet, then cycle.
	slices.SortStableFunc(order, func(a, b string) int { return len(kindStages(a)) - len(kindStages(b)) })
	covered := map[string]bool{}
	next := rng.IntN(len(record.Stages))
	// pick is the first of stages, from next on in record.Stages' cycle,
	// that no fault covers yet (any of them once all are covered).
	pick := func(stages []string) string {
		for pass := range 2 {
			for j := range record.Stages {
				s := record.Stages[(next+j)%len(record.Stages)]
				if slices.Contains(stages, s) && (pass == 1 || !covered[s]) {
					next += j + 1
					return s
				}
			}
		}
		return stages[0]
	}
	stride := 1
	if o.Migrations >= 2*len(order)-1 {
		stride = 2
	}
	out := make([]record.FaultSpec, 0, len(order))
	for i, k := range order {
		stages := kindStages(k)
		if !alwaysEnds(k) && spare <= 0 {
			stages = slices.DeleteFunc(slices.Clone(stages), func(s string) bool { return mayEnd(k, s) })
		}
		stage := stages[0]
		if len(stages) > 1 {
			stage = pick(stages)
		}
		covered[stage] = true
		if !alwaysEnds(k) && mayEnd(k, stage) {
			spare--
		}
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
