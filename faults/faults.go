package faults

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fiomig/fiomig/backend"
	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// Fault kinds (record.FaultSpec.Fault, the "fault" field of fault lines).
const (
	KindTargetRestart     = "target-restart"
	KindDroppedConnects   = "dropped-connects"
	KindAbortedValidation = "aborted-validation"
)

// Kinds are every fault kind FromSpec builds, in catalogue order.
var Kinds = []string{KindTargetRestart, KindDroppedConnects, KindAbortedValidation}

// Fault line actions.
const (
	ActionInject  = "inject"
	ActionRecover = "recover"
	// ActionLanded is the line of a Lagging fault's first effect, with its
	// evidence, after its evidence-less inject line (checks.FaultsLanded
	// accepts an inject line's evidence from the landed line that follows).
	ActionLanded = "landed"
)

// kindParams are the params each kind reads (FromSpec), besides after_s,
// which every kind takes. Any other param is an error: a mistyped one
// (mdoe, lost_blcks) would otherwise be ignored and the fault run with
// its default.
var kindParams = map[string][]string{
	KindAbortedValidation: {"mode", "host"},
	KindConnectRejected:   {"host"},
	KindResetController:   {"node"},
	KindRetriedCutover:    {"freezes", "lost_blocks", "detect_after_s"},
}

// recordedParams are the params the Injector adds to the executed
// schedule (Executed): a rerun of an executed schedule (fiomig shrink)
// carries them, and they are read by nothing.
var recordedParams = append(slices.Clone(resultParams), "passed_over")

// Modes of aborted-validation (FaultSpec.Params["mode"]).
const (
	ModeAbort   = "abort"
	ModeKillJob = "kill-job"
)

// Env is what a fault sees when it is injected or recovered.
type Env struct {
	// Cluster is the cluster itself (not the Injector wrapping it), so the
	// knobs of hooks.go can be asserted on it.
	Cluster backend.Cluster
	// MigrationNQN maps migration ids to their subsystem NQN, from the
	// phase lines seen so far.
	MigrationNQN map[string]string
}

// Fault is one injectable fault.
type Fault interface {
	// Kind is one of the Kind* constants.
	Kind() string
	// Target is what the fault hits: a node name, an ip:port or a migration id.
	Target() string
	// Inject applies the fault now and returns the evidence of what was
	// observed to change (empty when nothing changed). An error means the
	// fault could not be (fully) injected; Recover is still called.
	Inject(env Env) (map[string]string, error)
	// Recover undoes the fault; it is idempotent (recovering twice, or a
	// fault whose target vanished, is not an error) and returns what it
	// observed changing.
	Recover(env Env) (map[string]string, error)
}

// Lagging is a fault whose evidence appears only after injection (dropped
// CONNECTs are evidence only once a CONNECT arrives). The Injector writes
// its inject line at the injection instant with the evidence known then
// (none), and a "landed" line with the evidence when Landed first reports
// it, at the time the fault first took effect; if it never did, the
// recover line says so (its reason) and no landed line exists, which
// leaves checks.FaultsLanded inconclusive. The timeline stays in time
// order and append-only.
type Lagging interface {
	Fault
	// Landed returns the evidence so far, the cluster time at which the
	// fault first took effect, and whether it has.
	Landed(env Env) (evidence map[string]string, atS float64, ok bool)
}

// Precondition is a fault that can tell, before it is injected, that its
// injection now could show no effect — it cuts live controllers and there
// is none to cut, they are still reconnecting after an earlier fault (a
// crash or a partition that just ended) — or would
// stack on an earlier fault's effect that has not ended (lastPath). The
// Injector passes such a "#N+" fault over to the next migration
// (Injector.passOver) instead of injecting it there.
type Precondition interface {
	Fault
	// CanLand returns nil when injecting now can show the fault's
	// evidence, else why it cannot.
	CanLand(env Env) error
}

// FromSpec builds the fault a schedule entry names and checks its
// parameters. Errors name the entry's fault and target.
func FromSpec(s record.FaultSpec) (Fault, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("fault %s on %q: %s", s.Fault, s.Target, fmt.Sprintf(format, a...))
	}
	if s.Target == "" {
		return nil, bad("no target")
	}
	if s.ForS < 0 {
		return nil, bad("for_s %v: negative", s.ForS)
	}
	if s.AtS < 0 {
		return nil, bad("at_s %v: negative", s.AtS)
	}
	if s.Phase != "" {
		if _, ok := whenPhase(s.Phase); !ok {
			return nil, bad("phase %q: want a stage (%s) or a VolumeMigration phase (%s)", s.Phase,
				strings.Join(record.Stages, ", "), strings.Join(migrationPhases, ", "))
		}
	}
	if m, ok := strings.CutPrefix(s.Migration, "#"); ok {
		if s.Fault == KindAbortedValidation {
			m = strings.TrimSuffix(m, "+")
		}
		if n, err := strconv.Atoi(strings.TrimSuffix(m, "+")); err != nil || n < 1 || (s.Fault == KindAbortedValidation && strings.HasSuffix(s.Migration, "+")) {
			return nil, bad("migration %q: want an id, #N (the N-th migration started, N >= 1) or #N+ (the first from the N-th on to reach the stage; not for aborted-validation, whose target is its migration)", s.Migration)
		}
	}
	field, id := "migration", s.Migration
	if s.Fault == KindAbortedValidation && s.Migration == "" {
		field, id = "target", s.Target // its target is its migration
	}
	if n, canonical, ok := simMigrationID(id); ok && !canonical {
		return nil, bad("%s %q: the simulator's id of migration %d (in start order) is mig-%04d; or write #%d",
			field, id, n, n, n)
	}
	if v, ok := s.Params["after_s"]; ok {
		if f, err := strconv.ParseFloat(v, 64); err != nil || f < 0 {
			return nil, bad("params after_s %q: want seconds >= 0", v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Params)) {
		if k != "after_s" && !slices.Contains(kindParams[s.Fault], k) && !slices.Contains(recordedParams, k) {
			return nil, bad("params %q: not a param of %s (known: %s)", k, s.Fault,
				strings.Join(append([]string{"after_s"}, kindParams[s.Fault]...), ", "))
		}
	}
	switch s.Fault {
	case KindTargetRestart:
		if !(s.ForS > 0) {
			return nil, bad("for_s must be > 0 (how long the target stays down)")
		}
		return &TargetRestart{Node: s.Target}, nil
	case KindDroppedConnects:
		if !(s.ForS > 0) {
			return nil, bad("for_s must be > 0 (how long CONNECTs are dropped)")
		}
		return &DroppedConnects{At: s.Target}, nil
	case KindAbortedValidation:
		mode := s.Params["mode"]
		if mode == "" {
			mode = ModeAbort
		}
		if mode != ModeAbort && mode != ModeKillJob {
			return nil, bad("params mode %q: want %q or %q", mode, ModeAbort, ModeKillJob)
		}
		if s.Migration != "" && s.Migration != s.Target {
			return nil, bad("migration %q: the target of an aborted validation is its migration", s.Migration)
		}
		return &AbortedValidation{Migration: s.Target, Mode: mode, Host: s.Params["host"]}, nil
	case KindNodeCrash, KindANAFlap:
		if !(s.ForS > 0) {
			return nil, bad("for_s must be > 0 (how long the fault lasts)")
		}
		if s.Fault == KindNodeCrash {
			return &NodeCrash{Node: s.Target}, nil
		}
		return &ANAFlap{Node: s.Target}, nil
	case KindNetworkPartition:
		h, n, ok := SplitPartitionTarget(s.Target)
		if !ok {
			return nil, bad("target: want <host>/<node>")
		}
		if !(s.ForS > 0) {
			return nil, bad("for_s must be > 0 (how long the partition lasts)")
		}
		return &NetworkPartition{Host: h, Node: n}, nil
	case KindConnectRejected:
		if !(s.ForS > 0) {
			return nil, bad("for_s must be > 0 (how long CONNECTs are rejected)")
		}
		return &ConnectRejected{At: s.Target, Host: s.Params["host"]}, nil
	case KindOperatorRestart:
		if s.Target != OperatorTarget {
			return nil, bad("target: want %q", OperatorTarget)
		}
		if !(s.ForS > 0) {
			return nil, bad("for_s must be > 0 (how long the operator is down)")
		}
		return &OperatorRestart{}, nil
	case KindResetController:
		return &ResetController{Host: s.Target, Node: s.Params["node"]}, nil
	case KindRetriedCutover:
		if s.Migration != "" && s.Migration != s.Target {
			return nil, bad("migration %q: the target of a retried cutover is its migration", s.Migration)
		}
		f, err := retriedCutoverFromParams(s.Target, s.Params)
		if err != nil {
			return nil, bad("%v", err)
		}
		return f, nil
	}
	return nil, fmt.Errorf("fault %q: unknown kind (want one of %s, %s)", s.Fault, strings.Join(Kinds, ", "), KindRetriedCutover)
}

// TargetRestart stops a storage node's target, then starts it again at
// recovery. Its evidence is what the backend reports changing (ports,
// listeners, controllers it disconnected) plus what the hosts' kernels
// show right after the stop: controllers at the node's IP that were live
// and no longer are (read from each host's sysfs through nvmeof).
type TargetRestart struct{ Node string }

// Kind implements Fault.
func (f *TargetRestart) Kind() string { return KindTargetRestart }

// Target implements Fault.
func (f *TargetRestart) Target() string { return f.Node }

// Inject implements Fault.
func (f *TargetRestart) Inject(env Env) (map[string]string, error) {
	r, ok := env.Cluster.(TargetRestarter)
	if !ok {
		return nil, fmt.Errorf("%s: the %s backend cannot restart targets", KindTargetRestart, env.Cluster.Name())
	}
	ip := nodeIP(env.Cluster, f.Node)
	var hosts backend.HostReader
	before, err := liveAt(env.Cluster, &hosts, ip)
	if err != nil {
		return nil, err
	}
	ev, err := r.StopTarget(f.Node)
	if err != nil {
		return nil, err
	}
	after, err := liveAt(env.Cluster, &hosts, ip)
	if err != nil {
		return ev, err
	}
	var lost []string
	for _, c := range before {
		if !slices.Contains(after, c) {
			lost = append(lost, c)
		}
	}
	out := copyMap(ev)
	if len(lost) > 0 {
		out["controllers_no_longer_live"] = strconv.Itoa(len(lost))
		out["controllers"] = list(lost, 8)
	}
	return out, nil
}

// CanLand implements Precondition (lastPath).
func (f *TargetRestart) CanLand(env Env) error { return lastPath(env, "", f.Node) }

// Recover implements Fault: start the target (idempotent).
func (f *TargetRestart) Recover(env Env) (map[string]string, error) {
	r, ok := env.Cluster.(TargetRestarter)
	if !ok {
		return nil, nil // nothing was injected
	}
	return r.StartTarget(f.Node)
}

// DroppedConnects drops the CONNECTs to a node or ip:port for a window. It
// lands with the first dropped CONNECT; its evidence is the count so far.
//
// A ConnectDropper reports its count when a window stops, so Landed reads
// it by stopping and restarting the drop at the same cluster instant
// (nothing happens in between); the first drop is dated to the first
// Landed call that saw it, which the Injector makes exact on an
// EventStepper by advancing event by event while it waits.
type DroppedConnects struct {
	At string // node name or ip:port

	open    bool
	dropped int64
	firstS  float64
	gap     error // a restart of the drop that failed (window ended early)
}

// Kind implements Fault.
func (f *DroppedConnects) Kind() string { return KindDroppedConnects }

// Target implements Fault.
func (f *DroppedConnects) Target() string { return f.At }

// Inject implements Fault: open the window. The evidence comes later (Landed).
func (f *DroppedConnects) Inject(env Env) (map[string]string, error) {
	d, ok := env.Cluster.(ConnectDropper)
	if !ok {
		return nil, fmt.Errorf("%s: the %s backend cannot drop CONNECTs", KindDroppedConnects, env.Cluster.Name())
	}
	if _, err := d.DropConnects(f.At); err != nil {
		return nil, err
	}
	f.open, f.dropped, f.firstS, f.gap = true, 0, 0, nil
	return nil, nil
}

// Landed implements Lagging.
func (f *DroppedConnects) Landed(env Env) (map[string]string, float64, bool) {
	d, ok := env.Cluster.(ConnectDropper)
	if !ok {
		return nil, 0, false
	}
	if dc, ok := d.(ConnectDropCounter); ok && f.open {
		// Cumulative since DropConnects: read without stopping.
		if n, err := dc.DroppedConnects(f.At); err == nil && n > f.dropped {
			if f.dropped == 0 {
				f.firstS = env.Cluster.Now()
			}
			f.dropped = n
		}
	} else if f.open {
		f.collect(env, d)
		if _, err := d.DropConnects(f.At); err != nil {
			f.open, f.gap = false, err
		}
	}
	if f.dropped == 0 {
		return nil, 0, false
	}
	ev := map[string]string{"connects_dropped": strconv.FormatInt(f.dropped, 10)}
	return ev, f.firstS, true
}

func (f *DroppedConnects) collect(env Env, d ConnectDropper) {
	n, err := d.StopDroppingConnects(f.At)
	if err != nil {
		return
	}
	if n > 0 && f.dropped == 0 {
		f.firstS = env.Cluster.Now()
	}
	if _, cumulative := d.(ConnectDropCounter); cumulative {
		// The count since DropConnects, which Landed may have read already.
		f.dropped = max(f.dropped, n)
		return
	}
	f.dropped += n
}

// Recover implements Fault: stop dropping (idempotent).
func (f *DroppedConnects) Recover(env Env) (map[string]string, error) {
	d, ok := env.Cluster.(ConnectDropper)
	if !ok {
		return nil, nil
	}
	if f.open {
		f.collect(env, d)
		f.open = false
	} else if _, err := d.StopDroppingConnects(f.At); err != nil {
		return nil, err
	}
	ev := map[string]string{"connects_dropped": strconv.FormatInt(f.dropped, 10)}
	if f.gap != nil {
		return ev, fmt.Errorf("the drop window ended early: %w", f.gap)
	}
	return ev, nil
}

// AbortedValidation aborts a migration (ModeAbort) or kills one consumer
// host's validation Job (ModeKillJob). Its evidence is the phase the
// migration was in and the phase it is in after; recovery changes nothing
// (an aborted or failed migration is terminal).
type AbortedValidation struct {
	Migration string
	Mode      string
	// Host is the consumer host whose Job is killed; "" = the first
	// consumer of the migration's volume (plan topology).
	Host string
}

// Kind implements Fault.
func (f *AbortedValidation) Kind() string { return KindAbortedValidation }

// Target implements Fault.
func (f *AbortedValidation) Target() string { return f.Migration }

// Inject implements Fault.
func (f *AbortedValidation) Inject(env Env) (map[string]string, error) {
	a, ok := env.Cluster.(MigrationAborter)
	if !ok {
		return nil, fmt.Errorf("%s: the %s backend cannot abort migrations", KindAbortedValidation, env.Cluster.Name())
	}
	before, _ := env.Cluster.MigrationPhase(f.Migration)
	ev := map[string]string{}
	switch f.Mode {
	case ModeKillJob:
		host := f.Host
		if host == "" {
			host = firstConsumer(env.Cluster.Topology(), env.MigrationNQN[f.Migration])
		}
		if host == "" {
			return nil, fmt.Errorf("%s: no consumer host known for migration %s", KindAbortedValidation, f.Migration)
		}
		kev, err := a.KillValidationJob(f.Migration, host)
		if err != nil {
			return nil, err
		}
		ev = copyMap(kev)
		ev["job_killed_on"] = host
	default:
		if before != record.PhaseValidating {
			// An abort is a validation fault only while validating; later
			// it takes the control plane's cancel after continue, a
			// different fault.
			return nil, fmt.Errorf("%s: migration %s is %q, not Validating: not aborted", KindAbortedValidation, f.Migration, before)
		}
		from, err := a.AbortMigration(f.Migration, "aborted by fault "+KindAbortedValidation)
		if err != nil {
			return nil, err
		}
		before = from
	}
	after, _ := env.Cluster.MigrationPhase(f.Migration)
	ev["phase_before"] = before
	if after != before {
		ev["phase_after"] = after
	} else if f.Mode == ModeAbort {
		// The backend accepted the abort but nothing observable changed.
		return nil, fmt.Errorf("%s: migration %s still %s after the abort", KindAbortedValidation, f.Migration, after)
	}
	// A killed Job is observed by the operator a moment later; its
	// evidence is what the backend saw of the Job (round, target paths).
	return ev, nil
}

// Recover implements Fault: nothing to undo.
func (f *AbortedValidation) Recover(Env) (map[string]string, error) { return nil, nil }

// nodeIP is the IP of the storage node named node in the cluster's
// topology ("" when unknown).
func nodeIP(c backend.Cluster, node string) string {
	for _, n := range c.Topology().Nodes {
		if n.Name == node {
			return n.IP
		}
	}
	return ""
}

// liveAt reads every host's kernel state (its sysfs tree through nvmeof)
// and returns the live controllers whose traddr is ip, as "<host>/<nvmeN>".
func liveAt(c backend.Cluster, hosts *backend.HostReader, ip string) ([]string, error) {
	if ip == "" {
		return nil, nil
	}
	want, err := netip.ParseAddr(ip)
	if err != nil {
		return nil, nil
	}
	var out []string
	for _, h := range c.Hosts() {
		hs, _, err := hosts.Read(h)
		if err != nil {
			return nil, fmt.Errorf("read host %s: %w", h.Name(), err)
		}
		for _, ctrl := range hs.Controllers() {
			a, err := netip.ParseAddr(strings.Trim(ctrl.Address.Traddr, "[]"))
			if err != nil || a != want || ctrl.State != nvmeof.StateLive {
				continue
			}
			out = append(out, h.Name()+"/"+ctrl.Name)
		}
	}
	return out, nil
}

func firstConsumer(t record.Topology, nqn string) string {
	for _, v := range t.Volumes {
		if v.NQN == nqn && len(v.Consumers) > 0 {
			return v.Consumers[0]
		}
	}
	return ""
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// list joins the first max items with spaces, noting how many were left out.
func list(xs []string, max int) string {
	xs = append([]string(nil), xs...)
	sort.Strings(xs)
	if len(xs) <= max {
		return strings.Join(xs, " ")
	}
	return strings.Join(xs[:max], " ") + fmt.Sprintf(" (+%d more)", len(xs)-max)
}

// errNotInjected is the reason recorded for a phase-triggered fault whose
// migration ended before entering the phase.
var errNotInjected = errors.New("not injected")
