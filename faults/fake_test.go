package faults

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/fiomig/fiomig/backend"
	"github.com/fiomig/fiomig/record"
)

// fakeCluster is a scripted discrete-event cluster for the injector's unit
// tests: phase lines and CONNECT attempts at given times, and the knobs of
// hooks.go with counters, so that each test can check exactly what the
// injector asked for and when.
type fakeCluster struct {
	now      float64
	script   []record.Line // phase lines to emit, sorted by T
	connects []fakeConnect // CONNECT attempts, sorted by T
	phase    map[string]string
	advances []float64

	down      map[string]bool
	stops     int
	starts    int
	stopErr   error
	drops     []*fakeDrop
	aborted   []string
	killed    []string
	nodeNames []string
}

type fakeConnect struct {
	t      float64
	target string // node name
	host   string
}

type fakeDrop struct {
	target  string
	open    bool
	dropped int64
	first   float64
	from    string
}

func newFake(script ...record.Line) *fakeCluster {
	sort.SliceStable(script, func(i, j int) bool { return script[i].T < script[j].T })
	return &fakeCluster{script: script, phase: map[string]string{}, down: map[string]bool{},
		nodeNames: []string{"storage-1", "storage-2", "storage-3"}}
}

func (f *fakeCluster) Name() string { return "fake" }
func (f *fakeCluster) Now() float64 { return f.now }

func (f *fakeCluster) AdvanceTo(t float64) ([]record.Line, error) {
	if t < f.now {
		return nil, fmt.Errorf("fake: advance to %v before now %v", t, f.now)
	}
	f.advances = append(f.advances, t)
	var out []record.Line
	for {
		// next scripted thing at or before t
		nt, kind := t+1, ""
		if len(f.script) > 0 && f.script[0].T <= t {
			nt, kind = f.script[0].T, "phase"
		}
		if len(f.connects) > 0 && f.connects[0].T() <= t && f.connects[0].T() < nt {
			nt, kind = f.connects[0].T(), "connect"
		}
		if kind == "" {
			break
		}
		f.now = nt
		switch kind {
		case "phase":
			l := f.script[0]
			f.script = f.script[1:]
			if _, ok := f.phase[l.Migration]; !ok || !record.IsTerminal(f.phase[l.Migration]) {
				f.phase[l.Migration] = l.Phase
				out = append(out, l)
			}
		case "connect":
			c := f.connects[0]
			f.connects = f.connects[1:]
			msg := "new ctrl"
			for _, d := range f.drops {
				if d.open && d.target == c.target {
					if d.dropped == 0 {
						d.first, d.from = nt, c.host
					}
					d.dropped++
					msg = "failed to connect queue: 0 ret=881"
				}
			}
			out = append(out, record.Line{T: nt, Kind: record.KindKernel, Host: c.host, Controller: "nvme9", Message: msg})
		}
	}
	f.now = t
	return out, nil
}

func (c fakeConnect) T() float64 { return c.t }

func (f *fakeCluster) Topology() record.Topology {
	var t record.Topology
	for i, n := range f.nodeNames {
		t.Nodes = append(t.Nodes, record.Node{Name: n, IP: "10.0.0." + strconv.Itoa(i+1)})
	}
	t.Hosts = []record.HostInfo{{Name: "storage-1", HostNQN: "nqn.host1"}}
	t.Volumes = []record.VolumeInfo{{Name: "vol-001", NQN: "nqn.vol1", NSIDs: []int{2}, Consumers: []string{"storage-1"}}}
	return t
}
func (f *fakeCluster) Hosts() []backend.Host     { return nil }
func (f *fakeCluster) Endpoints(string) []string { return nil }
func (f *fakeCluster) StartMigration(string) (string, error) {
	return "", errors.New("fake: scripted")
}
func (f *fakeCluster) MigrationPhase(id string) (string, bool) {
	p := f.phase[id]
	return p, record.IsTerminal(p)
}
func (f *fakeCluster) Close() error { return nil }

// fakeStepper adds EventStepper to the fake.
type fakeStepper struct{ *fakeCluster }

func (f fakeStepper) NextEventTime() (float64, bool) {
	var ts []float64
	if len(f.script) > 0 {
		ts = append(ts, f.script[0].T)
	}
	if len(f.connects) > 0 {
		ts = append(ts, f.connects[0].t)
	}
	if len(ts) == 0 {
		return 0, false
	}
	sort.Float64s(ts)
	return ts[0], true
}

// hooks: TargetRestarter, ConnectDropper, MigrationAborter.

func (f *fakeCluster) StopTarget(node string) (map[string]string, error) {
	f.stops++
	if !slices.Contains(f.nodeNames, node) {
		return nil, fmt.Errorf("fake: no node %q", node)
	}
	if f.down[node] {
		return nil, nil
	}
	f.down[node] = true
	if f.stopErr != nil {
		return nil, f.stopErr
	}
	return map[string]string{"ports_stopped": "4426,4428,4430"}, nil
}

func (f *fakeCluster) StartTarget(node string) (map[string]string, error) {
	f.starts++
	if !f.down[node] {
		return nil, nil
	}
	f.down[node] = false
	return map[string]string{"ports_listening": "4426,4428,4430"}, nil
}

func (f *fakeCluster) DropConnects(target string) (map[string]string, error) {
	if !slices.Contains(f.nodeNames, target) {
		return nil, fmt.Errorf("fake: no node %q", target)
	}
	for _, d := range f.drops {
		if d.open && d.target == target {
			return nil, fmt.Errorf("fake: already dropping %s", target)
		}
	}
	f.drops = append(f.drops, &fakeDrop{target: target, open: true})
	return map[string]string{"target": target}, nil
}

// StopDroppingConnects reports the count of the open rule for target.
func (f *fakeCluster) StopDroppingConnects(target string) (int64, error) {
	for _, d := range f.drops {
		if d.open && d.target == target {
			d.open = false
			return d.dropped, nil
		}
	}
	return 0, nil
}

func (f *fakeCluster) AbortMigration(id, reason string) (string, error) {
	p := f.phase[id]
	if p == "" || record.IsTerminal(p) {
		return p, fmt.Errorf("fake: %s is %q", id, p)
	}
	f.aborted = append(f.aborted, id)
	f.phase[id] = record.PhaseAborted
	return p, nil
}

func (f *fakeCluster) KillValidationJob(id, host string) (map[string]string, error) {
	if f.phase[id] != record.PhaseValidating {
		return nil, fmt.Errorf("fake: %s not validating", id)
	}
	f.killed = append(f.killed, id+"@"+host)
	f.phase[id] = record.PhaseFailed
	return map[string]string{"round": "1"}, nil
}

// bare hides the hooks: a cluster with no knobs.
type bare struct{ backend.Cluster }
