package reports

import (
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// Lane states of a swimlane segment: a live controller shows its legs' ANA
// state (ANA state names of the NVMe spec as the kernel prints them), any
// other controller its kernel state; LaneMixed is a live controller whose
// legs disagree, LaneNoLeg a live controller with no leg to any namespace.
const (
	LaneMixed = "mixed ANA"
	LaneNoLeg = "live, no namespace"
)

// laneStates is every state a lane can show, in legend order, with its
// colour (see laneColors).
var laneStates = []string{
	"optimized", "non-optimized", "change", "inaccessible", "persistent-loss",
	LaneMixed, LaneNoLeg, "new", "connecting", "resetting", "deleting", "deleting (no IO)", "dead",
}

// Segment is a span of a lane in one state: [FromS, ToS) seconds since run
// start.
type Segment struct {
	FromS, ToS float64
	State      string
}

// Lane is one consumer host's path (controller address ip:port) to the
// migration's subsystem over the swimlane's span; Role is "source",
// "target" or "" (neither, from the migration's Pending line). A time with
// no controller at that address has no segment.
type Lane struct {
	Host, Address, Role string
	Segments            []Segment
}

// PhaseMark is a migration entering Phase at TS.
type PhaseMark struct {
	TS    float64
	Phase string
}

// FaultSpan is one injected fault from its inject line to its recover
// line (Open: no recover line before the span's end).
type FaultSpan struct {
	Fault, Target string
	FromS, ToS    float64
	Open          bool
}

// Cutover is what the swimlane of one migration shows, on [FromS, ToS]
// seconds since run start: a lane per consumer host × path, the
// migration's phase lines, the faults overlapping the span, each host's
// pause windows (from the summary) and, when fio ran, fio's I/O gaps of
// the migrated volume on each host.
type Cutover struct {
	Migration  record.MigrationSummary
	FromS, ToS float64
	Hosts      []string
	Lanes      []Lane
	Phases     []PhaseMark
	Faults     []FaultSpan
	// FioGaps are fio's gaps (at least the summary's MinGapS) of the
	// migrated subsystem's volumes, per host, within the span.
	FioGaps map[string][]record.FioGap
	// FioRan: the run had real fio on this subsystem.
	FioRan bool
}

// swimlanePadS is how far a swimlane reaches before a migration's first
// phase line and after its terminal phase or last pause window.
const swimlanePadS = 5

// laneState is the state a lane shows for controller c.
func laneState(c record.Controller) string {
	if c.State != "live" {
		return c.State
	}
	if len(c.Legs) == 0 {
		return LaneNoLeg
	}
	s := c.Legs[0].ANA
	for _, l := range c.Legs[1:] {
		if l.ANA != s {
			return LaneMixed
		}
	}
	return s
}

// laneRank orders states for an address two controllers share (a stale
// controller beside a new one): the one that can carry I/O wins.
func laneRank(s string) int {
	switch s {
	case "optimized":
		return 0
	case "non-optimized":
		return 1
	case LaneMixed:
		return 2
	}
	return 3
}

// timelineIndex is the part of a timeline the swimlanes read.
type timelineIndex struct {
	samples map[string][]record.Line // per host, time ordered
	phases  map[string][]PhaseMark   // per migration
	source  map[string]map[string]bool
	target  map[string]map[string]bool
	faults  []FaultSpan
	lastT   float64
}

func indexTimeline(timeline []record.Line) *timelineIndex {
	ix := &timelineIndex{samples: map[string][]record.Line{}, phases: map[string][]PhaseMark{},
		source: map[string]map[string]bool{}, target: map[string]map[string]bool{}}
	open := map[[2]string][]int{} // (fault, target) -> indexes of open spans, FIFO
	n := map[string]int{}
	for _, l := range timeline {
		if l.Kind == record.KindSample {
			n[l.Host]++
		}
	}
	for h, k := range n {
		ix.samples[h] = make([]record.Line, 0, k)
	}
	for _, l := range timeline {
		ix.lastT = math.Max(ix.lastT, l.T)
		switch l.Kind {
		case record.KindSample:
			ix.samples[l.Host] = append(ix.samples[l.Host], l)
		case record.KindPhase:
			ix.phases[l.Migration] = append(ix.phases[l.Migration], PhaseMark{TS: l.T, Phase: l.Phase})
			if len(l.SourceEndpoints) > 0 && ix.source[l.Migration] == nil {
				ix.source[l.Migration] = endpointSet(l.SourceEndpoints)
			}
			if len(l.TargetEndpoints) > 0 { // a later line corrects the target (kube: status.connections)
				ix.target[l.Migration] = endpointSet(l.TargetEndpoints)
			}
		case record.KindFault:
			k := [2]string{l.Fault, l.Target}
			switch l.Action {
			case "inject":
				open[k] = append(open[k], len(ix.faults))
				ix.faults = append(ix.faults, FaultSpan{Fault: l.Fault, Target: l.Target, FromS: l.T, ToS: math.Inf(1), Open: true})
			case "recover":
				if q := open[k]; len(q) > 0 {
					ix.faults[q[0]].ToS, ix.faults[q[0]].Open = l.T, false
					open[k] = q[1:]
				}
			}
		}
	}
	for h := range ix.samples {
		s := ix.samples[h]
		sort.SliceStable(s, func(i, j int) bool { return s[i].T < s[j].T })
	}
	return ix
}

func endpointSet(eps []string) map[string]bool {
	m := make(map[string]bool, len(eps))
	for _, e := range eps {
		m[nvmeof.EndpointKey(e)] = true
	}
	return m
}

// Cutovers builds the swimlane data of every migration of sum from the
// run's timeline (its sample, phase and fault lines; other kinds are
// ignored). A lane's state holds from one sample of its host to the next
// (and past the host's last sample to the span's end only if that sample is
// inside the span). Hosts are the migration's consumer hosts as the
// summary names them, sorted; lanes per host are source paths first, then
// target paths, then any other, each by address.
func Cutovers(sum record.Summary, timeline []record.Line) []Cutover {
	return indexTimeline(timeline).cutovers(sum)
}

func (ix *timelineIndex) cutovers(sum record.Summary) []Cutover {
	out := make([]Cutover, 0, len(sum.Migrations))
	for _, m := range sum.Migrations {
		out = append(out, ix.cutover(sum, m))
	}
	return out
}

func (ix *timelineIndex) cutover(sum record.Summary, m record.MigrationSummary) Cutover {
	c := Cutover{Migration: m, Hosts: slices.Sorted(maps.Keys(m.Hosts)), Phases: ix.phases[m.ID]}
	from, to := m.StartS, m.EndS
	for _, hp := range m.Hosts {
		for _, w := range append(slices.Clone(hp.Windows), hp.FaultWindows...) {
			to = math.Max(to, w[1])
		}
	}
	for _, p := range c.Phases {
		to = math.Max(to, p.TS)
	}
	c.FromS, c.ToS = math.Max(0, from-swimlanePadS), to+swimlanePadS
	for _, f := range ix.faults {
		if f.FromS <= c.ToS && f.ToS >= c.FromS {
			c.Faults = append(c.Faults, f)
		}
	}
	src, tgt := ix.source[m.ID], ix.target[m.ID]
	role := func(addr string) string {
		k := nvmeof.EndpointKey(addr)
		switch {
		case src[k]:
			return "source"
		case tgt[k]:
			return "target"
		}
		return ""
	}
	for _, h := range c.Hosts {
		c.Lanes = append(c.Lanes, ix.hostLanes(h, m.NQN, c.FromS, c.ToS, role)...)
	}
	if sum.Fio != nil {
		for _, v := range sum.Fio.Volumes {
			if v.NQN != m.NQN {
				continue
			}
			c.FioRan = true
			if c.FioGaps == nil {
				c.FioGaps = map[string][]record.FioGap{}
			}
			for _, g := range v.Gaps {
				if g.EndS >= c.FromS && g.StartS <= c.ToS {
					g.Volume = v.Volume
					c.FioGaps[v.Host] = append(c.FioGaps[v.Host], g)
				}
			}
			if _, ok := c.FioGaps[v.Host]; !ok {
				c.FioGaps[v.Host] = []record.FioGap{}
			}
		}
	}
	return c
}

// hostLanes returns host h's lanes of subsystem nqn over [from, to].
func (ix *timelineIndex) hostLanes(h, nqn string, from, to float64, role func(string) string) []Lane {
	ss := ix.samples[h]
	i := sort.Search(len(ss), func(i int) bool { return ss[i].T > from })
	if i > 0 {
		i-- // the sample in force at from
	}
	lanes := map[string]*Lane{}
	for ; i < len(ss) && ss[i].T <= to; i++ {
		s := ss[i]
		end := to
		if i+1 < len(ss) {
			end = math.Min(ss[i+1].T, to)
		}
		start := math.Max(s.T, from)
		if end <= start {
			continue
		}
		states := map[string]string{}
		for _, ctl := range s.Controllers {
			if ctl.NQN != nqn {
				continue
			}
			st := laneState(ctl)
			if old, ok := states[ctl.Address]; !ok || laneRank(st) < laneRank(old) {
				states[ctl.Address] = st
			}
		}
		for addr, st := range states {
			l := lanes[addr]
			if l == nil {
				l = &Lane{Host: h, Address: addr, Role: role(addr)}
				lanes[addr] = l
			}
			if n := len(l.Segments); n > 0 && l.Segments[n-1].State == st && l.Segments[n-1].ToS == start {
				l.Segments[n-1].ToS = end
			} else {
				l.Segments = append(l.Segments, Segment{FromS: start, ToS: end, State: st})
			}
		}
	}
	out := make([]Lane, 0, len(lanes))
	for _, l := range lanes {
		out = append(out, *l)
	}
	rank := map[string]int{"source": 0, "target": 1, "": 2}
	sort.Slice(out, func(i, j int) bool {
		if rank[out[i].Role] != rank[out[j].Role] {
			return rank[out[i].Role] < rank[out[j].Role]
		}
		return out[i].Address < out[j].Address
	})
	return out
}
