package sim

import (
	"fmt"
	"sort"

	"github.com/fiomig/fiomig/nvmeof"
)

// Migration is one VolumeMigration: the volume moves from lvstore SrcLVS to
// DstLVS. Its phases are reported as phase events.
type Migration struct {
	ID     string
	Vol    *Volume
	SrcLVS int
	DstLVS int
	Phase  string
	Reason string
	// CutoverWindowS is the all-inaccessible window drawn for its cutover
	// (0 until the cutover starts).
	CutoverWindowS float64
	// Failure says what failed the migration's validation (nil otherwise).
	Failure *ValidationFailure

	// Control plane state.
	cp cpState
	// targetListeners is set while the control plane holds the target
	// listeners CreateMigration added (they are published).
	targetListeners bool
	// created are the nodes on which CreateMigration created the
	// subsystem; added are the target listeners it added.
	created []*Node
	added   []endpoint
	// raced are the nodes whose created subsystem got no namespace
	// (Config.ListenerRace); readdFailed the swap's failed re-adds
	// (Config.SwapReaddFail), "node nsid N".
	raced       []*Node
	readdFailed []string
	// answer is the control plane's CreateMigration answer: one connection
	// per target listener, with its connect options.
	answer []nvmeof.Target

	// Operator state.
	jobs []*job

	// retry is a retried cutover armed by RetryCutover (a labelled fault).
	retry *cutoverRetry
}

// cutoverRetry: the cutover rolls back and is tried again until it has
// frozen the subsystem Freezes times; then LostBlocks writes turn out
// lost, and the volume's first pod reports them (fio errno 84 EILSEQ)
// DetectAfterS seconds after the last cutover window.
type cutoverRetry struct {
	freezes, done int
	lostBlocks    int64
	detectAfterS  float64
}

// ValidationFailure is what failed a migration's path validation: the host,
// the controller the verify step objected to (if any), and the migration
// that created that controller ("" for the CSI driver's own paths or a
// leftover of an earlier run).
type ValidationFailure struct {
	Host       string
	Controller string
	Endpoint   string
	State      string
	Detail     string
	// Origin is the ID of the migration whose validation created the
	// controller, "csi" for a volume path, "leftover" for a dirty start.
	Origin string
}

type cpState int

const (
	cpNone      cpState = iota
	cpCreated           // CreateMigration done, target listeners inaccessible
	cpSyncing           // continue: data sync running
	cpCutover           // all paths inaccessible
	cpCutDone           // target serving, waiting for the operator to finish
	cpFinished          // source listeners removed
	cpCancelled         // cancel done
)

// Terminal reports whether the migration is over.
func (m *Migration) Terminal() bool { return isTerminal(m.Phase) }

// Migrations are all migrations started, in start order.
func (w *World) Migrations() []*Migration { return w.migrations }

// Migration returns the migration with id.
func (w *World) Migration(id string) (*Migration, bool) {
	m, ok := w.migByID[id]
	return m, ok
}

// MigrationPhase is the migration's current phase and whether it is
// terminal ("" and false for an unknown id).
func (w *World) MigrationPhase(id string) (string, bool) {
	m, ok := w.migByID[id]
	if !ok {
		return "", false
	}
	return m.Phase, m.Terminal()
}

// SetPhaseHook registers fn to run whenever a migration enters a phase
// (after the phase event is recorded, before anything else happens at that
// instant) — for faults injected at a named phase. nil removes it.
func (w *World) SetPhaseHook(fn func(m *Migration, phase string)) { w.phaseHook = fn }

// StartMigration creates a VolumeMigration for the volume whose subsystem
// is nqn, to an lvstore other than its current one (chosen with the seed),
// and returns its id. The migration starts Pending now; the operator takes
// it from there and its progress comes out of AdvanceTo. A volume migrates
// one migration at a time.
func (w *World) StartMigration(nqn string) (string, error) {
	v, ok := w.byNQN[nqn]
	if !ok {
		return "", fmt.Errorf("sim: start migration: unknown subsystem %q", nqn)
	}
	if v.migration != nil {
		return "", fmt.Errorf("sim: start migration of %s: migration %s in progress (%s)", v.Name, v.migration.ID, v.migration.Phase)
	}
	if len(w.lvstores) < 2 {
		return "", fmt.Errorf("sim: start migration of %s: no other lvstore to migrate to", v.Name)
	}
	dst := w.rng.Intn(len(w.lvstores) - 1)
	if dst >= v.LVS {
		dst++
	}
	return w.startMigration(v, dst), nil
}

// StartMigrationTo is StartMigration to lvstore dst, named by the caller
// (a VolumeMigration's targetNodeUUID: lvstore i's primary is node i). It
// draws nothing from the seed to choose.
func (w *World) StartMigrationTo(nqn string, dst int) (string, error) {
	v, ok := w.byNQN[nqn]
	if !ok {
		return "", fmt.Errorf("sim: start migration: unknown subsystem %q", nqn)
	}
	if v.migration != nil {
		return "", fmt.Errorf("sim: start migration of %s: migration %s in progress (%s)", v.Name, v.migration.ID, v.migration.Phase)
	}
	if dst < 0 || dst >= len(w.lvstores) {
		return "", fmt.Errorf("sim: start migration of %s: no lvstore %d (have %d)", v.Name, dst, len(w.lvstores))
	}
	if dst == v.LVS {
		return "", fmt.Errorf("sim: start migration of %s: lvstore %d already serves it", v.Name, dst)
	}
	return w.startMigration(v, dst), nil
}

func (w *World) startMigration(v *Volume, dst int) string {
	nqn := v.NQN
	m := &Migration{ID: fmt.Sprintf("mig-%04d", len(w.migrations)+1), Vol: v, SrcLVS: v.LVS, DstLVS: dst}
	w.migrations = append(w.migrations, m)
	w.migByID[m.ID] = m
	v.migration = m
	var src, tgt []string
	for _, ep := range w.listenerEndpoints(nqn, m.SrcLVS) {
		src = append(src, ep.addr())
	}
	for _, ep := range w.listenerEndpoints(nqn, m.DstLVS) {
		tgt = append(tgt, ep.addr())
	}
	sort.Strings(src)
	sort.Strings(tgt)
	m.Phase = PhasePending
	w.emit(Event{Kind: EventPhase, Migration: m.ID, NQN: nqn, Phase: PhasePending, SourceEndpoints: src, TargetEndpoints: tgt})
	if w.phaseHook != nil {
		w.phaseHook(m, PhasePending)
	}
	w.operatorAfter(w.uniform(0.2, 0.6), func() { w.operatorStart(m) })
	return m.ID
}

func (w *World) setPhase(m *Migration, phase, reason string) {
	m.Phase, m.Reason = phase, reason
	e := Event{Kind: EventPhase, Migration: m.ID, NQN: m.Vol.NQN, Phase: phase, Reason: reason}
	if f := m.Failure; f != nil && phase == PhaseFailed {
		e.Details = map[string]string{"host": f.Host, "controller": f.Controller, "endpoint": f.Endpoint,
			"state": f.State, "origin": f.Origin, "detail": f.Detail}
		for k, v := range e.Details {
			if v == "" {
				delete(e.Details, k)
			}
		}
	}
	w.emit(e)
	if isTerminal(phase) {
		m.Vol.migration = nil
		w.publish(m.Vol)
	}
	if w.phaseHook != nil {
		w.phaseHook(m, phase)
	}
}

// Stage is where the migration is, in fiomig's stage names: "in-validation"
// (Validating), "before-cutover" (data sync), "in-freeze" (the cutover
// window: every path inaccessible), "after-cutover" (the target serves,
// until the migration ends), or "" (pending or over).
func (m *Migration) Stage() string {
	if m.Terminal() {
		return ""
	}
	switch {
	case m.Phase == PhaseValidating:
		return "in-validation"
	case m.cp == cpSyncing:
		return "before-cutover"
	case m.cp == cpCutover:
		return "in-freeze"
	case m.cp == cpCutDone || m.cp == cpFinished:
		return "after-cutover"
	}
	return ""
}
