package faults

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fiomig/fiomig/backend"
	"github.com/fiomig/fiomig/record"
)

// Injector wraps a backend.Cluster and runs a fault schedule while the
// scenario advances it. It is itself a backend.Cluster: AdvanceTo injects
// and recovers every fault at its cluster time and returns the fault lines
// among the cluster's own, in time order. Driven by one goroutine, like the
// cluster.
//
// A fault with a phase trigger fires when its migration enters the phase
// (plus params after_s); on a cluster that implements EventStepper that is
// the exact instant, otherwise the end of the AdvanceTo that reported the
// phase line. Every inject line is stamped at the injection instant; a
// lagging fault's first effect (its "landed" line) is dated to its event
// on an EventStepper, to the end of the AdvanceTo otherwise. A fault with a time trigger fires at at_s. Every injected
// fault's recovery is registered at injection (before Inject runs, so even
// a failed injection is recovered) and runs for_s seconds later, or at
// RecoverAll / Close. A "#N+" fault that cannot land when its migration
// reaches the stage (Precondition: nothing there for it to break) is
// passed over to the next migration that does; plan.json names the
// migrations passed over (Executed, params passed_over).
type Injector struct {
	backend.Cluster
	items   []*item
	env     Env
	stepper EventStepper
	errs    []error
	groups  map[string]*group
	// ordinal numbers the migrations in the order their first phase line
	// was seen (1-based), for schedule entries naming "#N".
	ordinal map[string]int
}

type itemState int

const (
	waiting itemState = iota // phase trigger not seen yet
	armed                    // due at dueS
	active                   // injected, recovery at recoverS
	done                     // recovered, or never injectable
)

type item struct {
	spec      record.FaultSpec
	fault     Fault
	afterS    float64
	state     itemState
	dueS      float64
	recoverS  float64
	injectedS float64
	migration string // the migration whose phase fired the trigger
	landed    bool   // the fault has taken effect (or was no lagging one)
	recovered bool
	// group is the overlap group of the fault's kind and target while it
	// is active (see Injector: overlapping faults).
	group *group
	// joined is set when the fault joined an effect already in place.
	joined bool
	// stage is the stage its migration was in at injection (fault line).
	stage, stageMigration string
	// minOrdinal is the least ordinal of a migration that may still fire
	// a "#N+" trigger, once migrations were passed over (passedOver: each
	// "<id> (<why the fault could not land there>)"; see Precondition).
	minOrdinal int
	passedOver []string
}

// group is the faults of one kind and target whose windows overlap: the
// first one's Fault injected the effect, the last recover ends it.
type group struct {
	fault   Fault // the first member's: it injected, it recovers
	active  []*item
	landed  bool
	injectS float64
	members int // every member so far
	failed  error
	endS    float64 // when the last member recovered
}

// NewInjector wraps c with schedule. Each entry is checked with FromSpec;
// an entry with a Phase is triggered by that phase (of Migration, or of the
// first migration to enter it when Migration is ""), any other at AtS.
// aborted-validation entries default to the Validating phase of their
// target migration.
func NewInjector(c backend.Cluster, schedule []record.FaultSpec) (*Injector, error) {
	in := &Injector{Cluster: c, env: Env{Cluster: c, MigrationNQN: map[string]string{}}, ordinal: map[string]int{}, groups: map[string]*group{}}
	if s, ok := c.(EventStepper); ok {
		in.stepper = s
	}
	for k, s := range schedule {
		f, err := FromSpec(s)
		if err != nil {
			return nil, fmt.Errorf("fault schedule entry %d: %w", k+1, err)
		}
		it := &item{spec: s, fault: f}
		if v, ok := s.Params["after_s"]; ok {
			it.afterS, _ = strconv.ParseFloat(v, 64)
		}
		if s.Fault == KindAbortedValidation && s.Phase == "" && s.AtS == 0 {
			it.spec.Phase = record.PhaseValidating
		}
		if s.Fault == KindAbortedValidation && it.spec.Phase != "" && s.Migration == "" {
			it.spec.Migration = s.Target
		}
		if it.spec.Phase == "" {
			it.state, it.dueS = armed, s.AtS+it.afterS
		}
		in.items = append(in.items, it)
	}
	return in, nil
}

// Errors are the injections and recoveries that failed, in order; each is
// also recorded in the timeline (a fault line without evidence, with the
// error as its reason).
func (in *Injector) Errors() []error { return in.errs }

// AdvanceTo implements backend.Cluster.
func (in *Injector) AdvanceTo(t float64) ([]record.Line, error) {
	// A t already past (a wall-clock cluster whose previous step took
	// longer than the interval) is still a step: the cluster answers it
	// (or refuses it with its own error), and its lines are observed.
	var out []record.Line
	for first := true; ; first = false {
		in.fire(&out)
		now := in.Now()
		if !first && now >= t {
			return out, nil
		}
		next := t
		if d, ok := in.nextDue(); ok && d < next {
			next = max(d, now)
		}
		if in.stepper != nil && (in.awaitingPhase() || in.awaitingLanding()) {
			if e, ok := in.stepper.NextEventTime(); ok && e < next {
				next = max(e, now)
			}
		}
		lines, err := in.Cluster.AdvanceTo(next)
		if len(out) == 0 {
			out = lines // the cluster's slice is ours: no copy
		} else {
			out = append(out, lines...)
		}
		in.observe(lines, &out)
		in.pollStages()
		in.poll(&out)
		if err != nil {
			return out, err
		}
	}
}

// awaitingPhase reports whether some fault still waits for a phase.
func (in *Injector) awaitingPhase() bool {
	for _, it := range in.items {
		if it.state == waiting {
			return true
		}
	}
	return false
}

// awaitingLanding reports whether an injected lagging fault has not shown
// its first effect yet (stepping then dates that effect to its event).
func (in *Injector) awaitingLanding() bool {
	for _, it := range in.items {
		if it.state == active && !it.landed {
			return true
		}
	}
	return false
}

// nextDue is the earliest pending injection or recovery time.
func (in *Injector) nextDue() (float64, bool) {
	best, ok := 0.0, false
	for _, it := range in.items {
		var d float64
		switch it.state {
		case armed:
			d = it.dueS
		case active:
			d = it.recoverS
		default:
			continue
		}
		if !ok || d < best {
			best, ok = d, true
		}
	}
	return best, ok
}

// observe arms phase triggers from the phase lines just returned.
func (in *Injector) observe(lines []record.Line, out *[]record.Line) {
	for _, l := range lines {
		if l.Kind != record.KindPhase {
			continue
		}
		if l.NQN != "" {
			in.env.MigrationNQN[l.Migration] = l.NQN
		}
		if _, ok := in.ordinal[l.Migration]; !ok {
			in.ordinal[l.Migration] = len(in.ordinal) + 1
		}
		for _, it := range in.items {
			if it.state != waiting {
				continue
			}
			if it.spec.Migration != "" && !in.fires(it, l.Migration) {
				continue
			}
			if l.Phase == it.spec.Phase || l.Phase == stagePhase(it.spec.Phase) {
				it.state, it.dueS, it.migration = armed, l.T+it.afterS, l.Migration
				continue
			}
			if it.spec.Migration != "" && !strings.HasSuffix(it.spec.Migration, "+") && record.IsTerminal(l.Phase) {
				// The migration ended without entering the phase: the
				// fault can never land. Say so in the timeline.
				it.state = done
				in.line(out, l.T, it, ActionInject, nil,
					fmt.Errorf("%w: migration %s ended %s before entering %s", errNotInjected, l.Migration, l.Phase, it.spec.Phase))
			}
		}
	}
}

// stagePhase is the VolumeMigration phase whose phase line begins a stage
// ("" for in-freeze and after-cutover, which no phase line marks: a
// StageReporter tells them).
func stagePhase(stage string) string {
	switch stage {
	case record.StageInValidation:
		return record.PhaseValidating
	case record.StageBeforeCutover:
		return record.PhaseRunning
	}
	return ""
}

// pollStages arms the faults waiting for a stage no phase line marks
// (in-freeze, after-cutover) when a migration in progress is in it, asking
// the cluster's StageReporter. On an EventStepper this runs after every
// event, so the trigger is exact; otherwise at the end of each AdvanceTo.
func (in *Injector) pollStages() {
	sr, ok := in.Cluster.(StageReporter)
	if !ok {
		return
	}
	var ids []string
	for _, it := range in.items {
		if it.state != waiting || it.spec.Phase == "" || stagePhase(it.spec.Phase) != "" || !slices.Contains(record.Stages, it.spec.Phase) {
			continue
		}
		if ids == nil {
			for id := range in.ordinal {
				if _, over := in.Cluster.MigrationPhase(id); !over {
					ids = append(ids, id)
				}
			}
			sort.Slice(ids, func(i, j int) bool { return in.ordinal[ids[i]] < in.ordinal[ids[j]] })
		}
		for _, id := range ids {
			if it.spec.Migration != "" && !in.fires(it, id) {
				continue
			}
			if sr.MigrationStage(id) == it.spec.Phase {
				it.state, it.dueS, it.migration = armed, in.Now()+it.afterS, id
				break
			}
		}
	}
}

// names reports whether a schedule entry's migration names migration id:
// an id, "#N" for the N-th migration started, or "#N+" for any migration
// from the N-th on (the first of them to reach the trigger). The
// simulator's id "mig-NNNN" is its N-th migration started
// (sim/migration.go); a backend whose migrations have other names (kube:
// <run>-mig-<n>, backend/kube/migrations.go) takes it as "#N", so a fault
// file written against a simulator run fires on the same migration there.
func (in *Injector) names(want, id string) bool {
	n, ok := strings.CutPrefix(want, "#")
	if !ok {
		if want == id {
			return true
		}
		k, canonical, _ := simMigrationID(want)
		_, _, idSim := simMigrationID(id)
		return canonical && !idSim && in.ordinal[id] == k
	}
	if k, ok := strings.CutSuffix(n, "+"); ok {
		min, err := strconv.Atoi(k)
		return err == nil && in.ordinal[id] >= min
	}
	return n == strconv.Itoa(in.ordinal[id])
}

// simMigrationID parses a simulator migration id "mig-<digits>" (N >= 1):
// its ordinal N, and whether it is written as sim/migration.go names the
// N-th migration started (zero-padded to four digits, "mig-0003").
func simMigrationID(id string) (n int, canonical, ok bool) {
	k, ok := strings.CutPrefix(id, "mig-")
	if !ok {
		return 0, false, false
	}
	n, err := strconv.Atoi(k)
	if err != nil || n < 1 {
		return 0, false, false
	}
	return n, fmt.Sprintf("%04d", n) == k, true
}

// fires reports whether migration id may fire item it's trigger: the
// schedule entry names it, and it was not passed over (minOrdinal).
func (in *Injector) fires(it *item, id string) bool {
	return in.names(it.spec.Migration, id) && in.ordinal[id] >= it.minOrdinal
}

// fire injects and recovers everything due at or before now: recoveries
// first, then injections, each in schedule order. A "#N+" fault whose
// Precondition says it cannot land now is not injected: it waits for the
// next migration to reach its stage (passOver).
func (in *Injector) fire(out *[]record.Line) {
	now := in.Now()
	for _, it := range in.items {
		if it.state == active && it.recoverS <= now {
			in.recover(out, it)
		}
	}
	for _, it := range in.items {
		if it.state == armed && it.dueS <= now && !in.passOver(it) {
			in.inject(out, it)
		}
	}
}

// passOver puts an armed "#N+" fault back to waiting, for a later
// migration, when its Precondition says it cannot land now, and reports
// whether it did. Faults aimed at one migration, or at a time, are
// injected whatever (and say what they found).
func (in *Injector) passOver(it *item) bool {
	p, ok := it.fault.(Precondition)
	if !ok || it.migration == "" || !strings.HasSuffix(it.spec.Migration, "+") {
		return false
	}
	err := p.CanLand(in.env)
	if err == nil {
		return false
	}
	it.passedOver = append(it.passedOver, fmt.Sprintf("%s (%v)", it.migration, err))
	it.minOrdinal = in.ordinal[it.migration] + 1
	it.state, it.migration = waiting, ""
	return true
}

func (in *Injector) inject(out *[]record.Line, it *item) {
	now := in.Now()
	// Register the recovery first: a half-done injection is recovered too.
	it.state, it.injectedS, it.recoverS = active, now, now+it.spec.ForS
	if a, ok := it.fault.(*AbortedValidation); ok && it.migration != "" && in.names(a.Migration, it.migration) {
		a.Migration = it.migration
	}
	it.stageMigration, it.stage = in.stageAt(it.migration)
	key := it.fault.Kind() + "\x00" + it.fault.Target()
	if g := in.groups[key]; g != nil && len(g.active) > 0 {
		// Overlap: the effect is already in place. Inject nothing; the
		// effect now ends with the last member's recover.
		it.group, it.joined = g, true
		g.active = append(g.active, it)
		g.members++
		if g.failed != nil {
			it.landed = true
			in.line(out, now, it, ActionInject, nil, fmt.Errorf("joined a %s on %s whose injection failed: %w", it.fault.Kind(), it.fault.Target(), g.failed))
			return
		}
		it.landed = g.landed
		var ev map[string]string
		if g.landed {
			ev = in.joinEvidence(g)
		}
		in.line(out, now, it, ActionInject, ev, nil)
		return
	}
	g := &group{fault: it.fault, active: []*item{it}, injectS: now, members: 1}
	in.groups[key] = g
	it.group = g
	ev, err := it.fault.Inject(in.env)
	_, lag := it.fault.(Lagging)
	// A lagging fault's evidence comes later, with its landed line (poll).
	it.landed = !lag || err != nil
	g.landed, g.failed = !lag && len(ev) > 0, err
	in.line(out, now, it, ActionInject, ev, err)
}

// joinEvidence is the evidence of a fault that joined group g's effect:
// the effect it asked for is in place, held since the first member's
// injection, now by len(g.active) faults.
func (in *Injector) joinEvidence(g *group) map[string]string {
	return map[string]string{"overlaps": fmt.Sprintf("%s on %s in effect since %s s", g.fault.Kind(), g.fault.Target(), record.FormatT(g.injectS)),
		"holders": strconv.Itoa(len(g.active))}
}

// stageAt is the migration and stage a fault is injected in: mig's when a
// phase fired the trigger, else the first migration in progress; StageIdle
// when none is.
func (in *Injector) stageAt(mig string) (string, string) {
	sr, _ := in.Cluster.(StageReporter)
	stage := func(id string) string {
		if sr != nil {
			return sr.MigrationStage(id)
		}
		switch p, _ := in.Cluster.MigrationPhase(id); p {
		case record.PhaseValidating:
			return record.StageInValidation
		case record.PhaseRunning:
			return record.StageBeforeCutover
		}
		return ""
	}
	if mig != "" {
		if st := stage(mig); st != "" {
			return mig, st
		}
	}
	ids := make([]string, 0, len(in.ordinal))
	for id := range in.ordinal {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return in.ordinal[ids[i]] < in.ordinal[ids[j]] })
	for _, id := range ids {
		if st := stage(id); st != "" {
			return id, st
		}
	}
	return mig, record.StageIdle
}

// poll writes the landed lines of a lagging fault that has just taken
// effect, at the time it first did (within the lines of this AdvanceTo),
// for every member of its overlap group still waiting for it.
func (in *Injector) poll(out *[]record.Line) {
	for _, it := range in.items {
		if it.state != active || it.landed {
			continue
		}
		g := it.group
		if g == nil || g.landed {
			continue
		}
		lf, ok := g.fault.(Lagging)
		if !ok {
			continue
		}
		ev, at, ok := lf.Landed(in.env)
		if !ok {
			continue
		}
		g.landed = true
		for _, m := range g.active {
			if m.landed {
				continue
			}
			m.landed = true
			mev := ev
			if m.joined {
				mev = copyMap(ev)
				for k, v := range in.joinEvidence(g) {
					mev[k] = v
				}
			}
			l := in.faultLine(max(at, m.injectedS), m, ActionLanded, mev, nil)
			// Insert before the first line after the landing time, so the
			// cause comes before the kernel's report of it.
			k := sort.Search(len(*out), func(i int) bool { return (*out)[i].T > l.T })
			*out = append(*out, record.Line{})
			copy((*out)[k+1:], (*out)[k:])
			(*out)[k] = l
		}
	}
}

func (in *Injector) recover(out *[]record.Line, it *item) {
	now := in.Now()
	if !it.landed {
		in.poll(out)
	}
	var noEffect error
	if !it.landed {
		// The inject line (at the injection instant, no evidence) stays
		// without a landed line: the recover line says why.
		it.landed = true
		noEffect = fmt.Errorf("no effect observed in the %g s window from %s s", now-it.injectedS, record.FormatT(it.injectedS))
	}
	it.state, it.recovered = done, true
	it.recoverS = now
	g := it.group
	if g != nil {
		g.active = slices.DeleteFunc(g.active, func(x *item) bool { return x == it })
		if len(g.active) > 0 {
			// Another fault of the same kind and target still holds the
			// effect: recovering now would silently end it.
			ev := map[string]string{"effect_held_by": strconv.Itoa(len(g.active)) + " overlapping fault(s)",
				"until": "the last one recovers"}
			in.line(out, now, it, ActionRecover, ev, noEffect)
			return
		}
	}
	f := it.fault
	if g != nil {
		f = g.fault
	}
	if g != nil {
		g.endS = now
	}
	ev, err := f.Recover(in.env)
	err = errors.Join(noEffect, err)
	in.line(out, now, it, ActionRecover, ev, err)
}

// line adds a fault line at t to out, after every line at or before t
// (a phase line's consequence can come after later lines of the same
// step: the timeline stays in time order); an error becomes its reason.
func (in *Injector) line(out *[]record.Line, t float64, it *item, action string, ev map[string]string, err error) {
	l := in.faultLine(t, it, action, ev, err)
	k := sort.Search(len(*out), func(i int) bool { return (*out)[i].T > l.T })
	*out = append(*out, record.Line{})
	copy((*out)[k+1:], (*out)[k:])
	(*out)[k] = l
}

func (in *Injector) faultLine(t float64, it *item, action string, ev map[string]string, err error) record.Line {
	l := record.Line{T: t, Kind: record.KindFault, Fault: it.fault.Kind(), Action: action, Target: it.fault.Target()}
	if action == ActionInject {
		l.Migration, l.Phase = it.stageMigration, it.stage
	}
	if len(ev) > 0 {
		l.Evidence = ev
	}
	if err != nil {
		l.Reason = err.Error()
		in.errs = append(in.errs, fmt.Errorf("t=%.3f s: %s %s on %s: %w", t, action, it.fault.Kind(), it.fault.Target(), err))
	}
	return l
}

// RecoverAll recovers every fault still active, now, and returns the fault
// lines (a lagging fault that never landed gets no landed line; its
// recover line says so). A fault still waiting for its trigger gets an
// inject line whose reason says it was never injected.
func (in *Injector) RecoverAll() []record.Line {
	var out []record.Line
	for _, it := range in.items {
		switch it.state {
		case active:
			in.recover(&out, it)
		case waiting, armed:
			// Say so in the timeline, so that it, plan.json and the
			// report agree on every scheduled fault.
			it.state = done
			why := "its trigger never came"
			if it.spec.Phase != "" {
				why = "no migration"
				if it.spec.Migration != "" {
					why += " " + it.spec.Migration
				}
				why += " entered " + it.spec.Phase
				if len(it.passedOver) > 0 {
					why += " where it could land; passed over " + strings.Join(it.passedOver, ", ")
				}
			}
			in.line(&out, in.Now(), it, ActionInject, nil, fmt.Errorf("%w: the run ended before it (%s)", errNotInjected, why))
		}
	}
	return out
}

// Close recovers every active fault (its lines are lost: call RecoverAll
// first to keep them) and closes the cluster.
func (in *Injector) Close() error {
	in.RecoverAll()
	return in.Cluster.Close()
}

// Executed is the schedule as executed, for plan.json: each entry as
// planned, with the resolved trigger migration (params planned_migration
// keeps what the schedule said, e.g. "#3+"), params injected_at_s and
// recovered_at_s (cluster seconds) for the faults that were injected, and
// params overlap for faults that shared their effect with others.
func (in *Injector) Executed() []record.FaultSpec {
	out := make([]record.FaultSpec, 0, len(in.items))
	for _, it := range in.items {
		s := it.spec
		p := make(map[string]string, len(s.Params)+2)
		for k, v := range s.Params {
			p[k] = v
		}
		if it.migration != "" {
			if s.Migration != it.migration && s.Migration != "" {
				p["planned_migration"] = s.Migration
			}
			if s.Target == s.Migration && strings.HasPrefix(s.Target, "#") {
				s.Target = it.migration // aborted-validation names its migration
			}
			s.Migration = it.migration
		}
		if it.state == active || it.recovered {
			p["injected_at_s"] = record.FormatT(it.injectedS)
		}
		if it.recovered {
			p["recovered_at_s"] = record.FormatT(it.recoverS)
		}
		if len(it.passedOver) > 0 {
			p["passed_over"] = strings.Join(it.passedOver, "; ")
		}
		if g := it.group; g != nil && g.members > 1 {
			end := "still in effect"
			if len(g.active) == 0 {
				end = "ended at " + record.FormatT(g.endS) + " s with the last recover"
			}
			p["overlap"] = fmt.Sprintf("one of %d overlapping %s faults on %s: the effect began at %s s and %s", g.members, it.fault.Kind(), it.fault.Target(), record.FormatT(g.injectS), end)
		}
		if len(p) > 0 {
			s.Params = p
		}
		out = append(out, s)
	}
	return out
}
