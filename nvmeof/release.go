package nvmeof

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Host is one host's kernel NVMe-oF initiator as fiomig drives it: the
// LinuxHost implementation for a real host, MemHost for tests, and the
// simulator's for simulated hosts.
type Host interface {
	// Read returns this host's controllers only (ReadHost with its host NQN).
	Read() (HostState, error)
	// Connect creates a controller for t and returns its name ("nvme7"). An
	// existing controller with the same connection key (AlreadyConnected)
	// makes it fail with an error wrapping ErrAlreadyConnected.
	Connect(t Target) (string, error)
	// Disconnect deletes one controller by name; a controller already gone
	// is not an error.
	Disconnect(controller string) error
}

// Released is one controller a release or reap tore down (or, in a plan,
// would tear down or keeps), and why.
type Released struct {
	Controller string `json:"controller"` // "nvme3"
	NQN        string `json:"nqn"`
	Address    string `json:"address"` // canonical ip:port, or the raw traddr when not an IP
	Reason     string `json:"reason"`
}

// Plan is the decision of a release or a reap on one subsystem, before any
// controller is touched: what to tear down, in teardown order, what is kept
// and why. Refused, when non-empty, says why nothing at all is torn down.
type Plan struct {
	NQN     string
	Release []Released
	Keep    []Released
	Refused string
}

// PlanRelease decides which controllers of subsystem nqn on h a migration
// release tears down, given the migration's connections (the paths it made).
// A controller is released only if its ip:port (and transport, when the
// connection names one) is one of conns' AND no leg over it is accessible —
// so controllers with zero legs, only inaccessible legs, or not live
// (connecting, resetting) qualify. Nothing is released while no controller of
// the subsystem has an accessible leg: that is the cutover window, where
// every path is inaccessible by design (Plan.Refused says so). Other
// addresses are never touched; controllers already being deleted are left
// alone. Connections naming another NQN are ignored. On a host with native
// multipath off (h.Multipath) nothing is released and Plan.Refused says why:
// without legs and ANA states no path can be told serving or not.
//
// Errors: nqn empty. An NQN not attached on h gives an empty plan.
func PlanRelease(h HostState, nqn string, conns []Target) (Plan, error) {
	p := Plan{NQN: nqn}
	if nqn == "" {
		return p, errors.New("release: empty subsystem NQN")
	}
	subs := h.SubsystemsByNQN(nqn)
	var all []Controller
	for _, s := range subs {
		all = append(all, s.Controllers...)
	}
	if len(all) == 0 {
		return p, nil
	}
	if h.Multipath == MultipathOff {
		for _, c := range TeardownOrder(all) {
			p.Keep = append(p.Keep, Released{Controller: c.Name, NQN: nqn, Address: c.Address.Key(),
				Reason: "native multipath off: no legs or ANA states to judge by"})
		}
		p.Refused = "native NVMe multipath is off on this host (nvme_core multipath=N): the kernel shows no path legs or ANA states, so whether a path serves I/O or a cutover is under way cannot be told; releasing nothing"
		return p, nil
	}
	serving := false
	for _, c := range all {
		serving = serving || c.Serving()
	}
	ts := newTargetSet(nqn, conns)
	for _, c := range TeardownOrder(all) {
		r := Released{Controller: c.Name, NQN: nqn, Address: c.Address.Key()}
		switch {
		case !ts.matches(nqn, c):
			r.Reason = "not a path of this migration"
			p.Keep = append(p.Keep, r)
		case c.State.Deleting():
			r.Reason = "already being deleted"
			p.Keep = append(p.Keep, r)
		case c.Serving():
			r.Reason = "serves I/O: a leg is accessible"
			p.Keep = append(p.Keep, r)
		case !serving:
			r.Reason = "cutover window: no path of the subsystem is accessible"
			p.Keep = append(p.Keep, r)
		default:
			r.Reason = releaseReason(c)
			p.Release = append(p.Release, r)
		}
	}
	if !serving {
		p.Refused = "no controller of the subsystem has an accessible leg (cutover window): releasing nothing"
	}
	return p, nil
}

func releaseReason(c Controller) string {
	switch {
	case c.State != StateLive:
		return fmt.Sprintf("migration path, %s: carries no I/O", c.State)
	case len(c.Legs) == 0:
		return "migration path with no leg"
	default:
		return "migration path, every leg inaccessible"
	}
}

// PlanReap decides which dead controllers of subsystem nqn on h a reap tears
// down. From Inspect asked with the bare NQN and once per NSID, it takes the
// controller-not-contributing defects (controller scope) without co-tenants
// whose controller has no leg to any namespace; one teardown per controller
// however many namespaces flagged it. So it never reaps a connecting
// controller, a parked target with inaccessible legs, a partially serving
// controller — nor the last controller of the subsystem: when the candidates
// are every live controller (the others connecting, resetting, ...), the last
// of them in teardown order is kept, since a rescan may yet give it legs.
//
// Errors: nqn empty. An NQN not attached on h gives an empty plan.
func PlanReap(h HostState, nqn string) (Plan, error) {
	p := Plan{NQN: nqn}
	if nqn == "" {
		return p, errors.New("reap: empty subsystem NQN")
	}
	subs := h.SubsystemsByNQN(nqn)
	byName := map[string]Controller{}
	var all []Controller
	for _, s := range subs {
		for _, c := range s.Controllers {
			byName[c.Name] = c
			all = append(all, c)
		}
	}
	if len(all) == 0 {
		return p, nil
	}
	sels := []Selector{{NQN: nqn}}
	seenNSID := map[int]bool{}
	for _, s := range subs {
		for _, id := range s.NSIDs() {
			if !seenNSID[id] {
				seenNSID[id] = true
				sels = append(sels, Selector{NQN: nqn, NSID: id})
			}
		}
	}
	flagged := map[string][]int{}
	for _, sel := range sels {
		for _, d := range Inspect(h, sel, nil) {
			if d.Kind != DefectControllerNotContributing || d.Scope != ScopeController || len(d.CoTenants) > 0 {
				continue
			}
			c := byName[d.Controllers[0]]
			if len(c.Legs) > 0 || c.State != StateLive {
				continue
			}
			if !slices.Contains(flagged[c.Name], d.NSID) {
				flagged[c.Name] = append(flagged[c.Name], d.NSID)
			}
		}
	}
	var cand []Controller
	for _, c := range TeardownOrder(all) {
		if _, ok := flagged[c.Name]; ok {
			cand = append(cand, c)
		}
	}
	live := 0
	for _, c := range all {
		if c.State == StateLive {
			live++
		}
	}
	if len(cand) > 0 && len(cand) == live {
		last := cand[len(cand)-1]
		cand = cand[:len(cand)-1]
		p.Keep = append(p.Keep, Released{Controller: last.Name, NQN: nqn, Address: last.Address.Key(),
			Reason: "the last live controller of the subsystem is never reaped"})
	}
	for _, c := range cand {
		ids := flagged[c.Name]
		sort.Ints(ids)
		p.Release = append(p.Release, Released{Controller: c.Name, NQN: nqn, Address: c.Address.Key(),
			Reason: fmt.Sprintf("live with no leg to any namespace (controller-not-contributing for namespace(s) %v)", ids)})
	}
	return p, nil
}

// Execute disconnects every controller of p.Release on h, in order. One
// failed disconnect does not stop the rest: the successes are returned with
// the first error (naming its controller).
func (p Plan) Execute(h Host) ([]Released, error) {
	var done []Released
	var first error
	for _, r := range p.Release {
		if err := h.Disconnect(r.Controller); err != nil {
			if first == nil {
				first = fmt.Errorf("disconnect %s (%s): %w", r.Controller, r.Address, err)
			}
			continue
		}
		done = append(done, r)
	}
	return done, first
}

// ReleaseMigrationPaths reads h and tears down the migration paths of
// subsystem nqn that PlanRelease selects, given the migration's connections
// (the operator's VMIG_CONNECTIONS, see ParseConnections). It returns what it
// released; on a failed disconnect it goes on with the rest and returns the
// first error with the successes. Errors: nqn empty, h.Read failing.
func ReleaseMigrationPaths(h Host, nqn string, conns []Target) ([]Released, error) {
	if nqn == "" {
		return nil, errors.New("release: empty subsystem NQN")
	}
	st, err := h.Read()
	if err != nil {
		return nil, fmt.Errorf("release %s: %w", nqn, err)
	}
	p, err := PlanRelease(st, nqn, conns)
	if err != nil {
		return nil, err
	}
	return p.Execute(h)
}

// ReapDeadControllers reads h and tears down the controllers of subsystem nqn
// that PlanReap selects: live controllers serving nothing. Errors as
// ReleaseMigrationPaths.
func ReapDeadControllers(h Host, nqn string) ([]Released, error) {
	if nqn == "" {
		return nil, errors.New("reap: empty subsystem NQN")
	}
	st, err := h.Read()
	if err != nil {
		return nil, fmt.Errorf("reap %s: %w", nqn, err)
	}
	p, err := PlanReap(st, nqn)
	if err != nil {
		return nil, err
	}
	return p.Execute(h)
}
