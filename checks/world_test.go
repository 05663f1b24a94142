package checks

import (
	"sort"

	"github.com/fiomig/fiomig/record"
)

// world builds a synthetic run record: it holds every host's controllers,
// lets a test change them at the current time, and emits one sample line
// per host per interval while time advances.
type world struct {
	plan     record.Plan
	lines    []record.Line
	now      float64
	interval float64
	state    map[string]map[string]record.Controller // host -> controller name -> controller
}

func newWorld(interval float64, hosts ...string) *world {
	w := &world{interval: interval, state: map[string]map[string]record.Controller{}}
	w.plan = record.Plan{
		Tool: "fiomig", Scenario: "migrations", Backend: "sim", Seed: 7,
		Command: "fiomig run --seed 7",
		Params: record.Params{
			SampleIntervalS: interval, SettleSampleIntervalS: interval,
			PauseCritS: 5, FreezesAllowed: 1, AttributionMarginS: 30, SettleS: 40,
			Seed: record.DefaultSeedThresholds(),
		},
	}
	for _, h := range hosts {
		w.plan.Topology.Hosts = append(w.plan.Topology.Hosts, record.HostInfo{Name: h, HostNQN: "nqn.2014-08.org.nvmexpress:uuid:" + h})
		w.state[h] = map[string]record.Controller{}
	}
	return w
}

func (w *world) volume(name, nqn string, nsids []int, consumers ...string) {
	w.plan.Topology.Volumes = append(w.plan.Topology.Volumes, record.VolumeInfo{Name: name, NQN: nqn, NSIDs: nsids, Consumers: consumers})
}

// ctrl sets (adds or replaces) a controller on a host.
func (w *world) ctrl(host, name, nqn, addr, state string, legs ...record.Leg) {
	w.state[host][name] = record.Controller{Name: name, NQN: nqn, Address: addr, State: state, Transport: "tcp", Legs: legs}
}

// ana sets the ANA state of every leg of a controller.
func (w *world) ana(host, name, state string) {
	c := w.state[host][name]
	legs := make([]record.Leg, len(c.Legs))
	for i, l := range c.Legs {
		legs[i] = record.Leg{NSID: l.NSID, ANA: state}
	}
	c.Legs = legs
	w.state[host][name] = c
}

func (w *world) drop(host, name string) { delete(w.state[host], name) }

func (w *world) phase(id, nqn, phase string, source, target []string) {
	w.lines = append(w.lines, record.Line{T: w.now, Kind: record.KindPhase, Migration: id, NQN: nqn, Phase: phase,
		SourceEndpoints: source, TargetEndpoints: target})
}

func (w *world) endpoints(nqn string, eps ...string) {
	w.lines = append(w.lines, record.Line{T: w.now, Kind: record.KindEndpoints, NQN: nqn, Endpoints: eps})
}

func (w *world) fault(fault, action, target string, evidence map[string]string) {
	w.lines = append(w.lines, record.Line{T: w.now, Kind: record.KindFault, Fault: fault, Action: action, Target: target, Evidence: evidence})
}

// until emits a sample of every host at now, now+interval, ... below t,
// then sets now to t. Times are multiples of the interval, computed from
// an integer step count so they are exact decimal values.
func (w *world) until(t float64) {
	for step := int(w.now/w.interval + 0.5); float64(step)*w.interval < t-1e-9; step++ {
		at := record.RoundT(float64(step) * w.interval)
		hosts := make([]string, 0, len(w.state))
		for h := range w.state {
			hosts = append(hosts, h)
		}
		sort.Strings(hosts)
		for _, h := range hosts {
			w.lines = append(w.lines, w.sample(at, h))
		}
	}
	w.now = t
}

func (w *world) sample(at float64, host string) record.Line {
	l := record.Line{T: at, Kind: record.KindSample, Host: host}
	subs := map[string]map[int]bool{}
	for _, c := range w.state[host] {
		c.Legs = append([]record.Leg(nil), c.Legs...)
		l.Controllers = append(l.Controllers, c)
		if subs[c.NQN] == nil {
			subs[c.NQN] = map[int]bool{}
		}
		for _, lg := range c.Legs {
			subs[c.NQN][lg.NSID] = true
		}
	}
	sort.Slice(l.Controllers, func(i, j int) bool { return ctrlLess(l.Controllers[i].Name, l.Controllers[j].Name) })
	for nqn, ns := range subs {
		s := record.Subsystem{NQN: nqn}
		for n := range ns {
			s.NSIDs = append(s.NSIDs, n)
		}
		sort.Ints(s.NSIDs)
		l.Subsystems = append(l.Subsystems, s)
	}
	sort.Slice(l.Subsystems, func(i, j int) bool { return l.Subsystems[i].NQN < l.Subsystems[j].NQN })
	return l
}

func legs(ana string, nsids ...int) []record.Leg {
	out := make([]record.Leg, len(nsids))
	for i, n := range nsids {
		out[i] = record.Leg{NSID: n, ANA: ana}
	}
	return out
}

// Endpoints of the synthetic migration: the source on nodes 1 and 2, the
// target on node 3 at two ports (one node serves a subsystem on several
// ports, so completeness must match ip:port, never the address alone).
const (
	vol1 = "nqn.2023-02.io.simplyblock:vol1"
	src1 = "10.0.0.1:4420"
	src2 = "10.0.0.2:4420"
	tgt1 = "10.0.0.3:4426"
	tgt2 = "10.0.0.3:4428"
)

// violation selects the one defect a synthetic run carries.
type violation int

const (
	clean           violation = iota
	longPause                 // the cutover pause lasts 7 s (bound 5 s)
	secondFreeze              // a second all-inaccessible window 3 s after the cutover
	leakedCtrl                // host-a keeps its source primary controller, live with no leg
	missing4428               // host-b never connects 10.0.0.3:4428 (10.0.0.3:4426 present)
	splitBraining             // host-a sees source and target optimized in one sample
	partialTarget             // the target serves only NSID 1 until after the margin
	unattributed              // host-a pauses 1 s long after the migration's margin
	faultNoEvidence           // an injected fault line carries no evidence
	notLive                   // host-b keeps a target controller connecting at the end
)

// migrationRun builds a record of one migration of vol1 (NSIDs 1 and 2,
// consumed by host-a and host-b, sampled every 0.5 s) from src1/src2 to
// tgt1/tgt2: Pending and Validating at 10 s (target controllers connected
// inaccessible), Running at 20 s, every path inaccessible from 20 s to
// 22 s, then tgt1 optimized and tgt2 non-optimized, source controllers gone,
// Completed at 22.5 s; a fault with evidence at 30 s; settled until 100 s.
// v adds exactly one defect.
func migrationRun(v violation) (record.Plan, []record.Line) {
	w := newWorld(0.5, "host-a", "host-b")
	w.plan.Params.Migrations = 1
	w.volume("vol1", vol1, []int{1, 2}, "host-a", "host-b")
	w.plan.Faults = []record.FaultSpec{{Fault: "drop-connect", Target: "node-3", AtS: 30, ForS: 1}}
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
		if !(v == missing4428 && h == "host-b") {
			w.ctrl(h, "nvme3", vol1, tgt2, "live", legs("inaccessible", 1, 2)...)
		}
	}
	w.until(20)

	w.phase("m1", vol1, record.PhaseRunning, nil, nil)
	for _, h := range hosts {
		for name := range w.state[h] {
			w.ana(h, name, "inaccessible")
		}
	}
	pause := 2.0
	if v == longPause {
		pause = 7
	}
	w.until(20 + pause)

	for _, h := range hosts {
		w.ana(h, "nvme2", "optimized")
		if _, ok := w.state[h]["nvme3"]; ok {
			w.ana(h, "nvme3", "non-optimized")
		}
		w.drop(h, "nvme0")
		w.drop(h, "nvme1")
	}
	switch v {
	case leakedCtrl:
		w.ctrl("host-a", "nvme0", vol1, src1, "live")
	case splitBraining:
		w.ctrl("host-a", "nvme0", vol1, src1, "live", legs("optimized", 1, 2)...)
	case partialTarget:
		for _, h := range hosts {
			w.ctrl(h, "nvme2", vol1, tgt1, "live", legs("optimized", 1)...)
			w.ctrl(h, "nvme3", vol1, tgt2, "live", legs("non-optimized", 1)...)
			w.ctrl(h, "nvme1", vol1, src2, "live", legs("non-optimized", 2)...)
		}
	case notLive:
		w.ctrl("host-b", "nvme3", vol1, tgt2, "connecting")
	}
	w.endpoints(vol1, tgt1, tgt2)
	w.until(20 + pause + 0.5)
	if v == splitBraining {
		w.drop("host-a", "nvme0")
	}
	w.phase("m1", vol1, record.PhaseCompleted, nil, nil)

	if v == secondFreeze {
		w.until(25)
		for _, h := range hosts {
			w.ana(h, "nvme2", "inaccessible")
			w.ana(h, "nvme3", "inaccessible")
		}
		w.until(26)
		for _, h := range hosts {
			w.ana(h, "nvme2", "optimized")
			w.ana(h, "nvme3", "non-optimized")
		}
	}

	w.until(30)
	var evidence map[string]string
	if v != faultNoEvidence {
		evidence = map[string]string{"rejected_connects": "4"}
	}
	w.fault("drop-connect", "inject", "node-3", evidence)
	w.until(31)
	w.fault("drop-connect", "recover", "node-3", nil)

	w.until(60)
	if v == partialTarget {
		for _, h := range hosts {
			w.drop(h, "nvme1")
			w.ctrl(h, "nvme2", vol1, tgt1, "live", legs("optimized", 1, 2)...)
			w.ctrl(h, "nvme3", vol1, tgt2, "live", legs("non-optimized", 1, 2)...)
		}
	}

	w.until(70)
	if v == unattributed {
		w.ana("host-a", "nvme2", "inaccessible")
		w.ana("host-a", "nvme3", "inaccessible")
		w.until(71)
		w.ana("host-a", "nvme2", "optimized")
		w.ana("host-a", "nvme3", "non-optimized")
	}
	w.until(100)
	return w.plan, w.lines
}
