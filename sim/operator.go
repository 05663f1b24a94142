package sim

import (
	"errors"
	"fmt"

	"github.com/fiomig/fiomig/nvmeof"
)

// The simulated simplyblock operator's VolumeMigration state machine:
// Pending → Validating → Running → Completed | Failed | Aborted, with one
// validation Job per consumer host. The two variants (Config.Operator) are
// the same code with the fix's switches on or off:
//
//   - reap first (fixed): a Job starts with nvmeof.ReapDeadControllers on
//     the subsystem;
//   - migration paths' connect options (nvmeof.MigrationTarget): prefix keeps
//     the control plane's ctrl-loss-tmo 3600 and silently drops a value <= 0;
//     fixed sends ctrl-loss-tmo 60, always;
//   - release on failure (fixed): a failing Job first runs
//     nvmeof.ReleaseMigrationPaths on its host;
//   - release the others (fixed): after cancel, release Jobs run on the other
//     validated hosts.
//
// Neither variant touches a host once the control plane reports the
// migration done: the fixed operator (simplyblock-operator 5aa711cc)
// releases migration paths only in cancelAndFail
// (volumemigration_controller.go:496) and reconcileAbort (:1366), and its
// reconcileRunning, like the pre-fix one's, only patches the status to
// Completed. So the source controllers stay; the control plane then removes
// the source listeners (see cpFinish) and they reconnect into rejected
// CONNECTs until the kernel removes them (the CSI paths' ctrl_loss_tmo 60).
// Config.ReleaseSources, fiomig's extra and not part of the fix, adds a
// release Job for the source paths after the cutover to the fixed variant.
//
// A Job makes up to three attempts, 2 s apart, of ensure (connect every
// target path; "already connected" counts as success, as nvme-cli's answer
// did for the pre-fix operator) and verify (every target path present, live
// and not yet accessible, and nvmeof.Inspect, asked per namespace and
// without a target list as the real operator's diagnose asks it, finds no
// defect). The first attempt that passes validates the host; the Job fails
// only when every attempt failed, with the last attempt's failure (source:
// simplyblock-operator cmd/simplyblock-rebalancer validate-migration mode,
// its connect+verify retry loop, defaultValidateAttempts 3 and
// defaultValidateRetryDelay 2 s, there "so a transient lag is not mistaken
// for a missing path"). A failed Job makes the operator cancel the
// migration at the control plane and mark it Failed.

type variant struct {
	reapFirst, fixedTimeouts, releaseOnFailure, releaseOthers, releaseSources bool
}

func (w *World) variant() variant {
	if w.cfg.Operator == OperatorFixed {
		return variant{reapFirst: true, fixedTimeouts: true, releaseOnFailure: true, releaseOthers: true,
			releaseSources: w.cfg.ReleaseSources}
	}
	return variant{}
}

type jobState int

const (
	jobRunning jobState = iota
	jobSucceeded
	jobFailed
	jobKilled
)

// job is one validation Job: a pod on one consumer host.
type job struct {
	m     *Migration
	h     *Host
	state jobState
	round int
	// abort interrupts the connect the Job's pod is blocked in, if any
	// (Host.connectAsync).
	abort func()
}

// Job timing: validation attempts and the delay between them, seconds.
const (
	validationAttempts    = 3
	validationRetryDelayS = 2.0
	operatorPollS         = 1.0
)

// jobStartDelay is a path Job's pod scheduling, image pull and container
// start, seconds: a uniform draw from [Config.JobStartMinS,
// Config.JobStartMaxS) (default 1-3 s [assumption]).
func (w *World) jobStartDelay() float64 { return w.uniform(w.cfg.JobStartMinS, w.cfg.JobStartMaxS) }

// reconcileDelay is the operator noticing a change (watch + reconcile).
func (w *World) reconcileDelay() float64 { return w.uniform(0.2, 0.6) }

// operatorStart: the operator picks up a Pending migration, calls
// CreateMigration and starts one validation Job per consumer host.
func (w *World) operatorStart(m *Migration) {
	if m.Phase != PhasePending {
		return
	}
	w.cpCreateMigration(m)
	w.setPhase(m, PhaseValidating, "")
	for _, hi := range m.Vol.Consumers {
		j := &job{m: m, h: w.hosts[hi]}
		m.jobs = append(m.jobs, j)
		w.after(w.jobStartDelay(), func() { w.jobRun(j) })
	}
}

// targets are the connections a Job connects: the control plane's answer
// through nvmeof.MigrationTarget with the variant's switch.
func (w *World) targets(m *Migration) []nvmeof.Target {
	out := make([]nvmeof.Target, len(m.answer))
	for i, a := range m.answer {
		out[i] = nvmeof.MigrationTarget(a, w.variant().fixedTimeouts)
	}
	return out
}

func (j *job) alive() bool { return j.state == jobRunning && j.m.Phase == PhaseValidating }

func (w *World) jobRun(j *job) {
	if !j.alive() {
		return
	}
	if w.variant().reapFirst {
		// Errors of a reap (a failed disconnect) do not fail the Job.
		nvmeof.ReapDeadControllers(j.h, j.m.Vol.NQN)
	}
	w.jobRound(j, 0)
}

// jobRound is attempt r (0-based) of ensure + verify: a pass validates the
// host, a failure is retried after validationRetryDelayS until
// validationAttempts attempts have failed.
func (w *World) jobRound(j *job, r int) {
	if !j.alive() {
		return
	}
	j.round = r
	conns := w.targets(j.m)
	w.ensure(j, conns, func(f *ValidationFailure) {
		if !j.alive() {
			return
		}
		if f == nil {
			f = w.verify(j, conns)
		}
		if f == nil {
			w.jobSucceed(j)
			return
		}
		if r+1 < validationAttempts {
			w.after(validationRetryDelayS, func() { w.jobRound(j, r+1) })
			return
		}
		w.jobFail(j, f)
	})
}

// ensure connects every target path one after another, as atlas-lib's
// multipath connect does for both operators (source of the behaviour:
// atlas-lib nvmeof/multipath.go:120-135, docs/sources.md §5.4): a path
// with no controller is connected; a path whose controller already exists
// (the kernel answers "already connected") is not reconnected — if that
// controller is not live, ensure waits up to pathTimeoutS (atlas
// nvmeof/fabrics.go:31 defaultPathTimeout = 10 s) for it to go live, and
// moves on either way. A failed connect does not stop the others. ensure
// fails only when no target path has a live controller at the end, with
// the first connect error (or the first path that did not go live); a path
// left non-live or missing beside a live one is verify's to report.
func (w *World) ensure(j *job, conns []nvmeof.Target, done func(*ValidationFailure)) {
	var first *ValidationFailure
	note := func(f *ValidationFailure) {
		if first == nil {
			first = f
		}
	}
	var step func(i int)
	step = func(i int) {
		// A killed Job's pod issues no further connect (one already in
		// the kernel completes on its own).
		if !j.alive() {
			done(nil)
			return
		}
		if i == len(conns) {
			for _, t := range conns {
				if c := j.h.existing(SpecFromTarget(t)); c != nil && c.State == nvmeof.StateLive {
					done(nil)
					return
				}
			}
			if first == nil {
				first = &ValidationFailure{Detail: "no target path went live"}
			}
			done(first)
			return
		}
		t := conns[i]
		spec := SpecFromTarget(t)
		if c := j.h.existing(spec); c != nil {
			// atlas: an existing controller is waited for, not reconnected.
			w.awaitLive(j, c, t, pathTimeoutS, func(f *ValidationFailure) {
				if f != nil {
					note(f)
				}
				step(i + 1)
			})
			return
		}
		pending := true
		abort := j.h.connectAsync(spec, func(c *Ctrl, err error) {
			pending = false
			j.abort = nil
			if c != nil {
				c.Origin = j.m.ID
			}
			if err != nil && !errors.Is(err, nvmeof.ErrAlreadyConnected) {
				note(&ValidationFailure{Endpoint: t.Endpoint(), Detail: fmt.Sprintf("connect %s: %v", t.Endpoint(), err)})
			}
			step(i + 1)
		})
		if pending {
			j.abort = abort
		}
	}
	step(0)
}

// pathTimeoutS is how long ensure waits for an existing non-live
// controller to go live (atlas-lib nvmeof/fabrics.go:31 defaultPathTimeout
// 10 s); pathPollS how often it looks [assumption: atlas polls the
// controller's state; its poll interval is not in the sources we hold —
// anything well under reconnect_delay 2 s gives the same outcome].
const (
	pathTimeoutS = 10.0
	pathPollS    = 0.1
)

// awaitLive waits until c is live (done(nil)), or pathTimeoutS passed, it
// was removed or the Job died (done with a failure naming the path).
func (w *World) awaitLive(j *job, c *Ctrl, t nvmeof.Target, left float64, done func(*ValidationFailure)) {
	switch {
	case c.State == nvmeof.StateLive:
		done(nil)
	case !j.alive():
		done(nil)
	case c.State == nvmeof.StateDead || c.State == nvmeof.StateDeleting || c.State == nvmeof.StateDeletingNoIO:
		done(&ValidationFailure{Controller: c.Name(), Endpoint: t.Endpoint(), State: string(c.State), Origin: c.Origin,
			Detail: fmt.Sprintf("existing controller %s at %s was removed while waiting for it", c.Name(), t.Endpoint())})
	case left <= 0:
		done(&ValidationFailure{Controller: c.Name(), Endpoint: t.Endpoint(), State: string(c.State), Origin: c.Origin,
			Detail: fmt.Sprintf("existing controller %s at %s not live after %g s (%s)", c.Name(), t.Endpoint(), pathTimeoutS, c.State)})
	default:
		w.after(pathPollS, func() { w.awaitLive(j, c, t, left-pathPollS, done) })
	}
}

// verify checks the host's kernel state of the migration's subsystem only:
// every target path present, live and not accessible yet (simplyblock-operator
// internal/volumemigration VerifyMigrationPaths), and no Inspect defect of
// the subsystem asked without a target list (its diagnose): a live controller
// of the subsystem with no leg fails it wherever it points, a connecting one
// only when it sits at one of this migration's target paths.
func (w *World) verify(j *job, conns []nvmeof.Target) *ValidationFailure {
	h, nqn := j.h, j.m.Vol.NQN
	st, err := h.Read()
	if err != nil {
		return &ValidationFailure{Detail: fmt.Sprintf("read host: %v", err)}
	}
	fail := func(c nvmeof.Controller, detail string) *ValidationFailure {
		f := &ValidationFailure{Controller: c.Name, Endpoint: c.Endpoint(), State: string(c.State), Detail: detail}
		if kc, ok := h.Controller(c.Name); ok {
			f.Origin = kc.Origin
		}
		return f
	}
	for _, t := range conns {
		var found *nvmeof.Controller
		for _, s := range st.SubsystemsByNQN(nqn) {
			for k := range s.Controllers {
				c := s.Controllers[k]
				if !c.State.Deleting() && t.Matches(nqn, c) && found == nil {
					found = &s.Controllers[k]
				}
			}
		}
		switch {
		case found == nil:
			// The real operator's words (docs/sources.md §4.4, §5.4).
			return &ValidationFailure{Endpoint: t.Endpoint(), Detail: fmt.Sprintf("missing target path %s: no controller — the connect did not take effect", t.Endpoint())}
		case found.State != nvmeof.StateLive:
			return fail(*found, fmt.Sprintf("target path %s on %s is %s", t.Endpoint(), found.Name, found.State))
		case found.Serving():
			return fail(*found, fmt.Sprintf("target path %s on %s is already accessible", t.Endpoint(), found.Name))
		}
	}
	// Inspect as the operator's diagnose asks it: once with the bare NQN,
	// then once per namespace the host's subsystem exports, and with no
	// target list, so no stale-endpoint verdict (source of the behaviour:
	// simplyblock-operator internal/volumemigration, VerifyMigrationPaths →
	// diagnose, which passes nil targets because pre-cutover the source
	// paths are absent from the migration's list and must stay attached).
	sels := []nvmeof.Selector{{NQN: nqn}}
	for _, s := range st.SubsystemsByNQN(nqn) {
		for _, ns := range s.NSIDs() {
			sels = append(sels, nvmeof.Selector{NQN: nqn, NSID: ns})
		}
	}
	for _, sel := range sels {
		// The first defect fails the validation.
		if ds := nvmeof.Inspect(st, sel, nil); len(ds) > 0 {
			d := ds[0]
			var c nvmeof.Controller
			if len(d.Controllers) > 0 {
				for _, s := range st.SubsystemsByNQN(nqn) {
					for _, x := range s.Controllers {
						if x.Name == d.Controllers[0] {
							c = x
						}
					}
				}
			}
			return fail(c, d.String())
		}
	}
	return nil
}

func (w *World) jobSucceed(j *job) {
	j.state = jobSucceeded
	for _, o := range j.m.jobs {
		if o.state != jobSucceeded {
			return
		}
	}
	m := j.m
	w.operatorAfter(w.reconcileDelay(), func() {
		if m.Phase != PhaseValidating {
			return
		}
		w.cpContinue(m)
		w.setPhase(m, PhaseRunning, "")
		w.pollCompletion(m)
	})
}

// jobFail: the Job fails (fixed: after releasing its migration paths); the
// operator then cancels and fails the migration.
func (w *World) jobFail(j *job, f *ValidationFailure) {
	if w.variant().releaseOnFailure {
		nvmeof.ReleaseMigrationPaths(j.h, j.m.Vol.NQN, w.targets(j.m))
	}
	j.state = jobFailed
	f.Host = j.h.Name
	m := j.m
	reason := fmt.Sprintf("NVMe path validation failed on %s: %s", j.h.Name, f.Detail)
	w.operatorAfter(w.reconcileDelay(), func() { w.failOn(m, f, reason, j) })
}

// failOn is the operator acting on failed Job j: the first of several
// failed Jobs whose reconcile runs ends the migration, and the Failed line
// names that Job in its reason and its details alike (the operator cancels
// on the Failed Job it found, docs/sources.md §5.2).
func (w *World) failOn(m *Migration, f *ValidationFailure, reason string, j *job) {
	if m.Terminal() {
		return
	}
	m.Failure = f
	w.cancelAndEnd(m, PhaseFailed, reason, j)
}

// cancelAndEnd stops the migration's running Jobs, cancels it at the
// control plane and ends it in phase; fixed: a release Job runs on every
// other host that had a validation Job, whether it passed, was still
// running or had not finished (simplyblock-operator 5aa711cc
// releaseMigrationPaths: "one release Job per recorded node (every node,
// not only passed ones)", called from cancelAndFail and reconcileAbort;
// docs/sources.md §5.2). The failed Job's own host released its paths
// before failing (jobFail).
func (w *World) cancelAndEnd(m *Migration, phase, reason string, failed *job) {
	if m.Terminal() {
		return
	}
	var release []*job
	for _, j := range m.jobs {
		if j == failed {
			continue
		}
		release = append(release, j)
		if j.state == jobRunning {
			j.state = jobKilled
		}
	}
	if m.cp == cpCreated || m.cp == cpSyncing {
		w.cpCancel(m)
	}
	if w.variant().releaseOthers {
		conns := w.targets(m)
		for _, j := range release {
			h := j.h
			w.after(w.jobStartDelay(), func() { nvmeof.ReleaseMigrationPaths(h, m.Vol.NQN, conns) })
		}
	}
	w.setPhase(m, phase, reason)
}

// pollCompletion: the operator polls the control plane until the cutover
// is done; then the control plane removes the source listeners (cpFinish)
// and the migration is Completed, with no Job on any host (both variants as
// sourced). Only with Config.ReleaseSources (fiomig's extra, fixed variant
// only) a release Job first runs on every consumer host for the source
// paths (nvmeof.ReleaseMigrationPaths, which refuses while no path of the
// subsystem is accessible).
func (w *World) pollCompletion(m *Migration) {
	w.operatorAfter(operatorPollS, func() {
		if m.Terminal() {
			return
		}
		if m.cp != cpCutDone {
			w.pollCompletion(m)
			return
		}
		if !w.variant().releaseSources {
			// As sourced (both variants): the control plane cleans the
			// source up and reports the migration done; the operator marks
			// it Completed and touches no host.
			w.operatorAfter(w.reconcileDelay(), func() {
				if !m.Terminal() {
					w.cpFinish(m)
					w.setPhase(m, PhaseCompleted, "")
				}
			})
			return
		}
		src := w.sourceTargets(m)
		left := len(m.Vol.Consumers)
		for _, hi := range m.Vol.Consumers {
			h := w.hosts[hi]
			w.after(w.jobStartDelay(), func() {
				nvmeof.ReleaseMigrationPaths(h, m.Vol.NQN, src)
				left--
				if left == 0 && !m.Terminal() {
					w.cpFinish(m)
					w.setPhase(m, PhaseCompleted, "")
				}
			})
		}
	})
}

// AbortMigration aborts a migration from any phase before the cutover: its
// Jobs stop, the control plane cancels it (fixed: release Jobs run on every
// host that had a Job) and it ends Aborted. It fails for an unknown or
// terminal migration and once the cutover has started.
func (w *World) AbortMigration(id string) error { return w.AbortMigrationReason(id, "aborted") }

// AbortMigrationReason is AbortMigration with the reason the Aborted phase
// carries.
func (w *World) AbortMigrationReason(id, reason string) error {
	m, ok := w.migByID[id]
	if !ok {
		return fmt.Errorf("sim: abort: unknown migration %q", id)
	}
	if m.Terminal() {
		return fmt.Errorf("sim: abort %s: already %s", id, m.Phase)
	}
	if m.cp >= cpCutover && m.cp != cpCancelled {
		return fmt.Errorf("sim: abort %s: cutover in progress", id)
	}
	w.cancelAndEnd(m, PhaseAborted, reason, nil)
	return nil
}

// KillValidationJob kills the running validation Job of migration id on
// host (a pod killed mid-round): it releases nothing itself; the operator
// sees it failed and cancels and fails the migration. The evidence names the
// round it was in and the host's controllers at the target listeners then.
func (w *World) KillValidationJob(id, host string) (map[string]string, error) {
	m, ok := w.migByID[id]
	if !ok {
		return nil, fmt.Errorf("sim: kill job: unknown migration %q", id)
	}
	for _, j := range m.jobs {
		if j.h.Name != host {
			continue
		}
		if j.state != jobRunning || m.Phase != PhaseValidating {
			return nil, fmt.Errorf("sim: kill job of %s on %s: not running", id, host)
		}
		j.state = jobKilled
		ev := map[string]string{"migration": id, "host": host, "round": fmt.Sprint(j.round + 1)}
		var names []string
		// Controllers as the kill found them, before it interrupted the
		// connect the pod was blocked in.
		for _, c := range j.h.ctrls {
			for _, t := range m.answer {
				if c.Spec.NQN == t.NQN && c.Spec.Addr() == t.Endpoint() {
					names = append(names, c.Name()+"="+string(c.State))
				}
			}
		}
		ev["target_path_controllers"] = fmt.Sprint(names)
		if j.abort != nil {
			j.abort()
		}
		w.operatorAfter(w.reconcileDelay(), func() {
			w.failOn(m, &ValidationFailure{Host: host, Detail: "validation Job killed"},
				fmt.Sprintf("NVMe path validation failed on %s: validation Job killed", host), j)
		})
		return ev, nil
	}
	return nil, fmt.Errorf("sim: kill job of %s: no Job on host %q", id, host)
}
