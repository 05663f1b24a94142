package checks

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// Judge is the checks' one implementation: it judges a timeline streamed
// line by line (issue 15), keeping only the state the checks need — each
// host's last sample, the open pause window per host and subsystem, the
// migrations whose sample span is still open, the faults, the published
// endpoints and the findings themselves — so its memory grows with hosts ×
// controllers and with the findings (one summary entry per migration), not
// with the number of samples. Feed it per-tick states: record.Expander's
// output (record.ScanStates), in timeline order. Evaluate is a fold of a
// whole record over it; TestJudgeEqualsReference holds it to an
// independent whole-record implementation kept in the tests.
//
// Lines of one instant are judged together once the stream moves past it
// (phase, endpoints and fault lines before samples).
type Judge struct {
	r   *runIndex
	err error

	batchT  float64
	batch   []record.Line
	started bool
	lastT   float64

	byID      map[string]*smig
	migs      []*smig // arrival order
	byNQN     map[string][]*smig
	active    []*smig
	judges    map[string][]*served // by host (topology consumers)
	anyJudges []*served            // NQNs outside the topology: any host
	learned   map[string]bool      // NQNs outside the topology seen so far
	served    map[*smig]*served

	hosts map[string]*shost
	// seed harness's checks (SeedChecks): the non-sample lines they read,
	// each host's first and last sample, and loss-timeout accumulated.
	seedKeep  func(record.Line) bool
	seedLines []record.Line
	loss      lossAcc
	pending   []record.Line // endpoints lines after the last sample
	// silent stalls (stalls.go): open ones by host and controller, the
	// controllers whose stall ended at the current instant, and every
	// stall seen (summary.json).
	openStalls  map[string]stallSpan
	endedStalls []string
	stalls      []record.Stall
	// kernelHosts are the hosts with a kernel line; leaves every
	// controller that left live from an optimized leg (unheard.go).
	kernelHosts map[string]bool
	leaves      []liveLeave
	hasObs      bool
	obsStart    float64
	closed      []closedWindow
}

// shost is what the Judge keeps of one host.
type shost struct {
	name       string
	firstT     float64
	first      record.Line  // the first sample
	lastSample *record.Line // &last once sampled
	last       record.Line
	stateVer   int // counts the host's sample lines whose state changed
	lastObs    float64
	observed   bool
	holes      [][2]float64 // candidate holes (gaps over HoleFactor × sample interval)
	pause      map[string]*pstate
	present    map[string]bool // NQN\x00endpoint of the current state's controllers
	prevT      float64         // the previous sample's time
	seen       map[string]seenSpan
	// stallDirty: a stall of the host ended or joined; its next sample
	// judges its pauses even if its state did not change.
	stallDirty bool
}

type pstate struct {
	paused bool
	start  float64
	ips    []string // pathIPs at the window's start
	// stalls counts the open silent stalls of the host's paths to the
	// subsystem (the host is paused while one is); latest is the window's
	// latest possible start (stalls.go).
	stalls  int
	latest  float64
	needIPs bool
	// in are the window's stalls, own its first sample paused by itself
	// (hasOwn: seen one): window.stalls, window.own.
	in     []stallSpan
	own    float64
	hasOwn bool
}

type closedWindow struct {
	nqn, host string
	w         window
}

// smig is one migration and its accumulators.
type smig struct {
	migration
	next        float64 // first phase line of the next migration of its NQN
	topo        bool    // NQN in the topology: consumers known up front
	consumers   map[string]bool
	checked     int
	split       map[string]*splitAcc
	muted       map[string]*splitAcc // split samples through a silenced path (silentIPs)
	sampledCore map[string]bool
	cutover     map[string]*float64
	cache       map[string]cached // per host: derived values at a state version
	windows     map[string][]window
	// per host: the windows in its span a fault's stall began
	// (faultBegun), and those it may have begun
	faultWins map[string][]window
	maybe     map[string][][2]float64
}

type splitAcc struct {
	n     int
	first float64
	nsids []int
}

type cached struct {
	ver       int
	both      []int
	cutoverOK bool
	// silent is silentIPs' key the cache was made for; muted are the
	// NSIDs optimized at source and target only through a silenced path.
	silent string
	muted  []int
}

// served is one Completed migration's served-after-cutover judgement.
type served struct {
	m     *smig
	at    float64
	hosts map[string]*servedHost
}

type servedHost struct {
	done    bool
	sample  *servedSample
	before  *servedSample
	lastVer int
}

type servedSample struct {
	t       float64
	missing []int
}

// NewJudge starts judging a timeline against plan.
func NewJudge(plan record.Plan) *Judge {
	r := &runIndex{
		plan: plan, last: map[string]record.Line{},
		hostNQN: map[string]string{}, volumes: map[string]record.VolumeInfo{},
		endpoints: map[string][]string{}, ever: map[string]map[string]bool{},
		settleEnd: math.Inf(-1), seen: map[string]map[string]seenSpan{},
	}
	j := &Judge{r: r, byID: map[string]*smig{}, byNQN: map[string][]*smig{},
		judges: map[string][]*served{}, learned: map[string]bool{}, hosts: map[string]*shost{},
		served: map[*smig]*served{}, seedKeep: JudgesLine(plan), loss: lossAcc{over: map[string]int{}}, kernelHosts: map[string]bool{}}
	for _, h := range plan.Topology.Hosts {
		r.hostNQN[h.Name] = h.HostNQN
	}
	for _, v := range plan.Topology.Volumes {
		r.volumes[v.NQN] = v
	}
	return j
}

// Add judges one line (per-tick states, in timeline order). Lines whose
// kind Judges rejects are ignored. A line earlier than the previous one is
// an error.
func (j *Judge) Add(l record.Line) error {
	if j.err != nil {
		return j.err
	}
	if j.started && l.T < j.lastT {
		j.err = fmt.Errorf("judge: t went backwards: %v after %v", l.T, j.lastT)
		return j.err
	}
	j.started, j.lastT = true, l.T
	if l.Kind == record.KindKernel {
		j.kernelHosts[l.Host] = true
	}
	if l.Kind != record.KindSample && j.seedKeep(l) {
		j.seedLines = append(j.seedLines, l)
	}
	if !Judges(l.Kind) {
		return nil
	}
	if len(j.batch) > 0 && l.T > j.batchT {
		j.flush()
	}
	j.batchT = l.T
	j.batch = append(j.batch, l)
	return nil
}

// flush judges the lines of one instant.
func (j *Judge) flush() {
	batch := j.batch
	j.batch = j.batch[:0]
	hasSample := false
	j.endedStalls = j.endedStalls[:0]
	var keepAlive []record.Line
	for _, l := range batch {
		switch l.Kind {
		case record.KindStall:
			j.stallLine(l)
		case record.KindKernel:
			if keepAliveTimeout(l.Message) {
				keepAlive = append(keepAlive, l)
			}
		case record.KindSample:
			hasSample = true
		case record.KindPhase:
			j.phase(l)
		case record.KindEndpoints:
			j.pending = append(j.pending, l)
		case record.KindFault:
			j.r.faults = append(j.r.faults, l)
		case record.KindHeartbeat:
			if l.Host != "" { // format version 1: an observation without a state
				j.observe(j.host(l.Host), l.T)
			}
		}
	}
	for _, l := range keepAlive {
		j.keepAliveLine(l)
	}
	if !hasSample {
		return
	}
	t := batch[0].T
	for _, e := range j.pending {
		j.r.endpoints[e.NQN] = canonicalList(e.Endpoints)
	}
	j.pending = j.pending[:0]
	j.r.settleEnd = t
	// NQNs outside the topology that this instant's samples show are
	// learned before any sample of the instant is judged.
	for _, l := range batch {
		if l.Kind == record.KindSample && !l.Repeat {
			for _, c := range l.Controllers {
				j.learn(c.NQN)
			}
			for _, s := range l.Subsystems {
				j.learn(s.NQN)
			}
		}
	}
	j.prune(t)
	for i := range batch {
		if batch[i].Kind == record.KindSample {
			j.sample(batch[i])
		}
	}
}

func (j *Judge) host(name string) *shost {
	h, ok := j.hosts[name]
	if !ok {
		h = &shost{name: name, pause: map[string]*pstate{}, present: map[string]bool{}, seen: map[string]seenSpan{}}
		j.hosts[name] = h
	}
	return h
}

func (j *Judge) observe(h *shost, t float64) {
	if !j.hasObs {
		j.hasObs, j.obsStart = true, t
	}
	prev := j.obsStart
	if h.observed {
		prev = h.lastObs
	}
	if t-prev > record.HoleFactor*j.r.plan.Params.SampleIntervalS+1e-9 {
		h.holes = append(h.holes, [2]float64{prev, t})
	}
	h.observed = true
	h.lastObs = math.Max(h.lastObs, t)
}

// learn starts tracking pauses of an NQN outside the topology on every
// host: until now no sample showed it, so every sampled host was paused
// for it since its first sample (Paused of a subsystem a sample does not
// show).
func (j *Judge) learn(nqn string) {
	if _, ok := j.r.volumes[nqn]; ok || j.learned[nqn] {
		return
	}
	j.learned[nqn] = true
	for _, h := range j.hosts {
		if h.lastSample != nil {
			h.pause[nqn] = &pstate{paused: true, start: h.firstT, latest: h.firstT, own: h.firstT, hasOwn: true}
		}
	}
}

func (j *Judge) phase(l record.Line) {
	m, ok := j.byID[l.Migration]
	if !ok {
		_, topo := j.r.volumes[l.NQN]
		m = &smig{migration: migration{id: l.Migration, nqn: l.NQN, start: l.T, terminal: math.Inf(1)},
			next: math.Inf(1), topo: topo, consumers: map[string]bool{}, split: map[string]*splitAcc{}, muted: map[string]*splitAcc{},
			sampledCore: map[string]bool{}, cutover: map[string]*float64{}, cache: map[string]cached{},
			windows: map[string][]window{}, faultWins: map[string][]window{}, maybe: map[string][][2]float64{}}
		if topo {
			for _, c := range j.r.volumes[l.NQN].Consumers {
				m.consumers[c] = true
			}
		}
		// The earlier migrations of the NQN still without a next one are
		// the latest ones: walk back until one has it.
		prev := j.byNQN[l.NQN]
		for k := len(prev) - 1; k >= 0 && math.IsInf(prev[k].next, 1); k-- {
			if prev[k].start < l.T {
				prev[k].next = l.T
			}
		}
		j.byID[l.Migration] = m
		j.migs = append(j.migs, m)
		j.byNQN[l.NQN] = append(j.byNQN[l.NQN], m)
		j.active = append(j.active, m)
		j.learn(l.NQN)
	}
	m.last = math.Max(m.last, l.T)
	if m.nqn == "" {
		m.nqn = l.NQN
	}
	switch {
	case m.source == nil && (len(l.SourceEndpoints) > 0 || len(l.TargetEndpoints) > 0):
		m.source = endpointSet(l.SourceEndpoints)
		m.target = endpointSet(l.TargetEndpoints)
	case len(l.TargetEndpoints) > 0:
		// A later phase line corrects the target endpoints: on kube the
		// operator's status.connections, written at Validating, replace
		// what the harness announced at creation (docs/run-record.md).
		m.target = endpointSet(l.TargetEndpoints)
	}
	if math.IsInf(m.terminal, 1) {
		m.outcome = l.Phase
		m.running = m.running || l.Phase == record.PhaseRunning
		if record.IsTerminal(l.Phase) {
			m.terminal, m.reason = l.T, l.Reason
		}
		if l.Phase == record.PhaseCompleted {
			t := l.T
			m.completed = &t
			s := &served{m: m, at: record.RoundT(t+j.r.plan.Params.AttributionMarginS) - 1e-9, hosts: map[string]*servedHost{}}
			j.served[m] = s
			if m.topo {
				for c := range m.consumers {
					s.hosts[c] = &servedHost{lastVer: -1}
					j.judges[c] = append(j.judges[c], s)
				}
			} else {
				j.anyJudges = append(j.anyJudges, s)
			}
		}
	}
}

// spanTo is the end (exclusive) of m's sample span: from its first phase
// line to its terminal phase plus the attribution margin (inclusive), cut
// at the first phase line of the next migration of the same subsystem
// (whose source and target may be this one's reversed).
func (j *Judge) spanTo(m *smig) float64 {
	to := m.spanEnd(j.r.plan.Params.AttributionMarginS)
	if math.IsInf(to, 1) || math.IsNaN(to) {
		to = math.Inf(1)
	} else {
		to = math.Nextafter(to, math.Inf(1))
	}
	return math.Min(to, m.next)
}

// prune drops migrations whose sample span and phase lines ended before t.
func (j *Judge) prune(t float64) {
	keep := j.active[:0]
	for _, m := range j.active {
		if t >= j.spanTo(m) && t > m.terminal {
			m.cache = nil
			continue
		}
		keep = append(keep, m)
	}
	j.active = keep
}

func (m *smig) candidate(h string) bool { return !m.topo || m.consumers[h] }

func (j *Judge) sample(s record.Line) {
	r := j.r
	h := j.host(s.Host)
	changed := !s.Repeat && (h.lastSample == nil || !record.SameState(*h.lastSample, s))
	first := h.lastSample == nil
	if first {
		h.firstT = s.T
		for nqn := range j.learned {
			h.pause[nqn] = &pstate{}
		}
		for nqn, v := range r.volumes {
			if slices.Contains(v.Consumers, s.Host) {
				h.pause[nqn] = &pstate{}
			}
		}
	}
	if first {
		h.first = s
	}
	if changed {
		if h.lastSample != nil {
			j.leaves = append(j.leaves, leftLive(*h.lastSample, s)...)
		}
		j.loss.add(s, j.r.plan)
		h.stateVer++
		for _, c := range s.Controllers {
			if r.ever[c.NQN] == nil {
				r.ever[c.NQN] = map[string]bool{}
			}
			r.ever[c.NQN][s.Host] = true
		}
		now := map[string]bool{}
		for _, c := range s.Controllers {
			now[c.NQN+"\x00"+nvmeof.EndpointKey(c.Address)] = true
		}
		for k := range h.present {
			if !now[k] {
				h.seen[k] = seenSpan{lastSeen: h.prevT, gone: s.T}
			}
		}
		h.present = now
	}
	if changed || h.stallDirty {
		h.stallDirty = false
		for nqn, ps := range h.pause {
			own := Paused(s, nqn, r.volumes[nqn].NSIDs)
			p := ps.stalls > 0 || own
			switch {
			case p && !ps.paused:
				ps.paused, ps.start, ps.latest, ps.ips = true, s.T, s.T, pathIPs(nqn, h.lastSample, &s)
				ps.in, ps.hasOwn = nil, false
			case p && ps.needIPs:
				ps.ips = unionIPs(ps.ips, pathIPs(nqn, h.lastSample, &s))
			case !p && ps.paused:
				ps.paused = false
				j.closeWindow(nqn, s.Host, ps.window(s.T, false))
			}
			if p {
				ps.ownAt(s.T, own)
			}
			ps.needIPs = false
		}
	}
	j.observe(h, s.T)
	h.last = s
	h.lastSample = &h.last
	h.prevT = s.T

	for _, m := range j.active {
		if s.T < m.start || s.T >= j.spanTo(m) {
			if m.candidate(s.Host) && s.T >= m.start && s.T <= m.terminal {
				m.sampledCore[s.Host] = true
			}
			continue
		}
		cand := m.candidate(s.Host)
		if cand && s.T <= m.terminal {
			m.sampledCore[s.Host] = true
		}
		if m.source == nil {
			continue
		}
		silent := j.r.silentIPs(s.Host, s.T)
		silentKey := strings.Join(slices.Sorted(maps.Keys(silent)), ",")
		c, ok := m.cache[s.Host]
		if !ok || c.ver != h.stateVer || c.silent != silentKey {
			c = cached{ver: h.stateVer, silent: silentKey}
			src := optimizedAt(s, m.nqn, m.source, nil)
			tgt := optimizedAt(s, m.nqn, m.target, nil)
			wsrc := optimizedAt(s, m.nqn, m.source, silent)
			wtgt := optimizedAt(s, m.nqn, m.target, silent)
			for ns := range src {
				switch {
				case wsrc[ns] && wtgt[ns]:
					c.both = append(c.both, ns)
				case tgt[ns]:
					c.muted = append(c.muted, ns)
				}
			}
			sort.Ints(c.both)
			sort.Ints(c.muted)
			c.cutoverOK = len(tgt) > 0 && len(src) == 0
			m.cache[s.Host] = c
		}
		m.checked++
		for _, acc := range []struct {
			nsids []int
			to    map[string]*splitAcc
		}{{c.both, m.split}, {c.muted, m.muted}} {
			if len(acc.nsids) == 0 {
				continue
			}
			a := acc.to[s.Host]
			if a == nil {
				a = &splitAcc{first: s.T, nsids: acc.nsids}
				acc.to[s.Host] = a
			}
			a.n++
		}
		if cand && m.target != nil && m.cutover[s.Host] == nil && c.cutoverOK {
			t := s.T
			m.cutover[s.Host] = &t
		}
	}

	judge := func(sv *served, sh *servedHost) {
		m := sv.m
		if sh.done || s.T < *m.completed {
			return
		}
		if s.T >= m.next {
			sh.done = true
			return
		}
		var cur *servedSample
		if sh.lastVer == h.stateVer && sh.before != nil {
			cur = &servedSample{t: s.T, missing: sh.before.missing}
		} else {
			cur = &servedSample{t: s.T, missing: unservedAtTarget(s, m.nqn, r.volumes[m.nqn].NSIDs, m.target)}
		}
		sh.lastVer = h.stateVer
		if s.T >= sv.at {
			sh.done, sh.sample = true, cur
			return
		}
		sh.before = cur
	}
	list := j.judges[s.Host]
	keep := list[:0]
	for _, sv := range list {
		sh := sv.hosts[s.Host]
		if sv.m.target != nil {
			judge(sv, sh)
		}
		if !sh.done && sv.m.target != nil {
			keep = append(keep, sv)
		}
	}
	j.judges[s.Host] = keep
	for _, sv := range j.anyJudges {
		if sv.m.target == nil {
			continue
		}
		sh := sv.hosts[s.Host]
		if sh == nil {
			sh = &servedHost{lastVer: -1}
			sv.hosts[s.Host] = sh
		}
		judge(sv, sh)
	}
}

// window is ps's open window closed at end.
func (ps *pstate) window(end float64, open bool) window {
	return window{start: ps.start, end: end, open: open, ips: ps.ips, latestStart: ps.latest,
		stalls: ps.in, own: ps.own, hasOwn: ps.hasOwn}
}

// closeWindow keeps a pause window of nqn on host once it closed; it is
// attributed at the end, when every migration's outcome is known.
func (j *Judge) closeWindow(nqn, host string, w window) {
	j.closed = append(j.closed, closedWindow{nqn: nqn, host: host, w: w})
}

// attribute returns the migration a pause window of nqn starting at t
// belongs to, among the migrations seen so far, or nil: the migration of
// the NQN whose span (first phase line to terminal phase plus the
// attribution margin; open-ended while it has no terminal phase) contains
// t. When several do, one whose phase lines themselves span t wins over one
// that only covers t with its margin, and then the one that started last.
// A migration that never started its cutover (noCutover) takes no window.
func (j *Judge) attribute(nqn string, t float64) *smig {
	margin := j.r.plan.Params.AttributionMarginS
	var best *smig
	bestCore := false
	for _, m := range j.byNQN[nqn] {
		if t < m.start || t > m.spanEnd(margin) || m.noCutover() {
			continue
		}
		core := t <= m.coreEnd()
		if best == nil || (core && !bestCore) || (core == bestCore && (m.start > best.start || (m.start == best.start && m.id > best.id))) {
			best, bestCore = m, core
		}
	}
	return best
}

// Summary ends the stream and returns the summary (see Evaluate). Call it
// once. plan is the plan as finally written
// (the fault schedule as executed); its params and topology must be the
// ones NewJudge got.
func (j *Judge) Summary(plan record.Plan) (record.Summary, error) {
	if j.err != nil {
		return record.Summary{}, j.err
	}
	j.r.plan = plan
	if len(j.batch) > 0 {
		j.flush()
	}
	r := j.r
	if math.IsInf(r.settleEnd, -1) { // no sample: the record's last line
		r.settleEnd = 0
		if j.started {
			r.settleEnd = j.lastT
		}
		for _, e := range j.pending {
			r.endpoints[e.NQN] = canonicalList(e.Endpoints)
		}
	}
	sort.SliceStable(j.migs, func(a, b int) bool {
		x, y := j.migs[a], j.migs[b]
		if x.start != y.start {
			return x.start < y.start
		}
		return x.id < y.id
	})
	hostSet := map[string]bool{}
	for _, h := range r.plan.Topology.Hosts {
		hostSet[h.Name] = true
	}
	for name, h := range j.hosts {
		if h.lastSample != nil {
			hostSet[name] = true
			r.last[name] = *h.lastSample
			r.seen[name] = h.seen
			for k := range h.present {
				r.seen[name][k] = seenSpan{lastSeen: h.lastSample.T, gone: h.seen[k].gone}
			}
		}
	}
	r.hosts = slices.Sorted(maps.Keys(hostSet))
	for _, m := range j.migs {
		r.migrations = append(r.migrations, m.migration)
	}
	r.coverage, r.requiredEnd = r.computeCoverage()

	// Open windows close at the host's last sample.
	for _, name := range slices.Sorted(maps.Keys(j.hosts)) {
		h := j.hosts[name]
		for _, nqn := range slices.Sorted(maps.Keys(h.pause)) {
			if ps := h.pause[nqn]; ps.paused && h.lastSample != nil {
				j.closeWindow(nqn, name, ps.window(h.lastSample.T, true))
			}
		}
	}
	if j.hasObs {
		r.obsStart = j.obsStart
	}
	holes := j.sampleHoles()
	r.holes = holes
	stalls := j.stallList(r.settleEnd)
	r.causeStalls(stalls)
	pr := j.pauses(stalls)
	r.markUnseen(pr.migrations)
	leaks, leakRes := r.leakedControllers()
	missing, complRes := r.pathCompleteness()
	results := []record.CheckResult{
		pauseBound(r.plan, r, pr),
		freezes(r.plan, r, pr),
		leakRes,
		complRes,
		j.splitBrain(),
		j.servedAfterCutover(),
		unattributedPauses(r, pr),
		r.faultsLanded(),
	}
	results = append(results, j.seedChecks()...)
	r.unheardInconclusive(results, pr, j.leaves, j.kernelHosts)
	r.blind(results, holes)
	outcomes, matrix := r.faultOutcomes()
	cov := r.coverage
	migs := pr.migrations
	if migs == nil {
		migs = []record.MigrationSummary{}
	}
	return record.Summary{
		Seed: r.plan.Seed, Verdict: Overall(results), Checks: results, Migrations: migs,
		Unattributed: pr.unattributed, FaultWindows: pr.faultWindows, LeakedControllers: leaks, MissingEndpoints: missing,
		Coverage: &cov, SampleHoles: holes, Faults: outcomes, FaultMatrix: matrix, Stalls: stalls,
	}, nil
}

// pauses attributes the streamed pause windows (each host's maximal runs
// of paused samples of a subsystem, from the first paused sample to the
// first sample after it; one still open at the host's last sample closes
// there, flagged open) and builds the migrations' summaries. A window a
// landed fault's stall began (faultBegun; stalls: every stall of the run,
// with its cause) is a fault window wherever it lies.
func (j *Judge) pauses(stalls []record.Stall) pauseResult {
	r := j.r
	res := newPauseResult()
	inRun := map[string]bool{}
	for _, n := range r.nqns() {
		inRun[n] = true
	}
	byRef := map[stallRef]record.Stall{}
	for _, st := range stalls {
		byRef[stallRef{st.Host, st.Controller, st.StartS}] = st
	}
	// Windows by NQN, host, time.
	sort.SliceStable(j.closed, func(a, b int) bool {
		x, y := j.closed[a], j.closed[b]
		if x.nqn != y.nqn {
			return x.nqn < y.nqn
		}
		if x.host != y.host {
			return x.host < y.host
		}
		return x.w.start < y.w.start
	})
	for _, c := range j.closed {
		if !inRun[c.nqn] || !r.consumes(c.host, c.nqn) {
			continue
		}
		m := j.attribute(c.nqn, c.w.start)
		st, by := faultBegun(c.w, byRef)
		if by == begunFault {
			id := ""
			if m != nil {
				id = m.id
				m.faultWins[c.host] = append(m.faultWins[c.host], c.w)
			}
			res.stallWindow(c.host, c.nqn, c.w, st, id)
			continue
		}
		if m == nil {
			res.outside(r, c.host, c.nqn, c.w)
			continue
		}
		m.windows[c.host] = append(m.windows[c.host], c.w)
		if by == begunMaybe {
			m.maybe[c.host] = append(m.maybe[c.host], [2]float64{c.w.start, c.w.end})
		}
	}
	migs := make([]record.MigrationSummary, len(j.migs))
	for i, m := range j.migs {
		end := m.terminal
		if math.IsInf(end, 1) {
			end = math.Max(m.start, r.settleEnd)
		}
		migs[i] = record.MigrationSummary{ID: m.id, NQN: m.nqn, Outcome: m.outcome,
			StartS: m.start, EndS: end, CompletedS: m.completed, Hosts: map[string]record.HostPauses{}, NoCutover: m.noCutover(), Reason: m.reason}
		for _, h := range r.consumers(m.nqn) {
			hp := record.HostPauses{Windows: [][2]float64{}}
			if !m.sampledCore[h] && !m.noCutover() {
				res.unsampled = append(res.unsampled, m.id+" on "+h)
			}
			for _, w := range m.windows[h] {
				hp.Windows = append(hp.Windows, [2]float64{w.start, w.end})
				if d := record.RoundT(w.end - w.start); d > hp.LongestPauseS {
					hp.LongestPauseS, hp.LongestPauseMinS = d, w.minLen()
				}
				hp.OpenWindow = hp.OpenWindow || w.open
				for _, s := range w.stalls {
					hp.Stalls = append(hp.Stalls, byRef[stallRef{s.host, s.controller, s.start}])
				}
			}
			sortStalls(hp.Stalls)
			for _, w := range m.faultWins[h] {
				hp.FaultWindows = append(hp.FaultWindows, [2]float64{w.start, w.end})
			}
			hp.MaybeFaultWindows = m.maybe[h]
			if m.target != nil {
				hp.CutoverS = m.cutover[h]
			}
			if hp.CutoverS != nil && m.completed != nil {
				lag := record.RoundT(*hp.CutoverS - *m.completed)
				hp.CutoverLagS = &lag
			}
			hp.Freezes = len(hp.Windows)
			if hp.CutoverS != nil {
				hp.MaskedBy = maskedBy(res.faultWindows, h, m.nqn, *hp.CutoverS)
			}
			if hp.MaskedBy != nil {
				hp.Freezes++
			}
			migs[i].Freezes = max(migs[i].Freezes, hp.Freezes)
			migs[i].Hosts[h] = hp
		}
	}
	res.sort()
	res.migrations = migs
	return res
}

// maskedBy is the fault window of host and nqn among fws that holds the
// host-observed cutover at cut (its start to its end, inclusive: the
// sample that ends a window can be the cutover's), or nil: the cutover's
// own pause is inside the fault's, and the window's length bounds it
// (docs/concepts.md "Pause window").
func maskedBy(fws []record.HostWindow, host, nqn string, cut float64) *record.Masked {
	for _, fw := range fws {
		if fw.Host != host || fw.NQN != nqn || cut < fw.Window[0] || cut > fw.Window[1] {
			continue
		}
		fault := fw.Cause
		if fw.Stall != nil {
			fault = fw.Stall.Cause
		}
		return &record.Masked{Window: fw.Window, Fault: fault, BoundS: record.RoundT(fw.Window[1] - fw.Window[0])}
	}
	return nil
}

func (j *Judge) splitBrain() record.CheckResult {
	var found, silenced, unknown []string
	checked := 0
	for _, m := range j.migs {
		if m.source == nil {
			unknown = append(unknown, m.id)
			continue
		}
		checked += m.checked
		for _, h := range j.r.hosts {
			if a := m.split[h]; a != nil {
				found = append(found, fmt.Sprintf("%s on %s: %d sample(s) from %s, NSID %s optimized at source and target",
					m.id, h, a.n, fmtS(a.first), joinInts(a.nsids)))
			}
			if a := m.muted[h]; a != nil {
				silenced = append(silenced, fmt.Sprintf("%s on %s: %d sample(s) from %s, NSID %s",
					m.id, h, a.n, fmtS(a.first), joinInts(a.nsids)))
			}
		}
	}
	return j.r.splitBrainResult(found, silenced, unknown, checked, len(j.migs))
}

func (j *Judge) servedAfterCutover() record.CheckResult {
	r := j.r
	var bad, unknown []string
	judged := 0
	margin := r.plan.Params.AttributionMarginS
	byMig := j.served
	for _, m := range j.migs {
		if m.completed == nil {
			continue
		}
		if m.target == nil {
			unknown = append(unknown, m.id+": no target endpoints in its phase lines")
			continue
		}
		sv := byMig[m]
		for _, h := range r.consumers(m.nqn) {
			var s *servedSample
			if sv != nil {
				if sh := sv.hosts[h]; sh != nil {
					switch {
					case sh.sample != nil:
						s = sh.sample
					case sh.done || !math.IsInf(m.next, 1):
						s = sh.before
					}
				}
			}
			if s == nil {
				lastAt := "it has no sample"
				if last, ok := r.lastSample(h); ok {
					lastAt = "its last sample is at " + fmtS(last.T)
				}
				unknown = append(unknown, fmt.Sprintf("%s on %s: no sample at or after Completed + margin (%s + %s = %s); %s",
					m.id, h, fmtS(*m.completed), fmtS(margin), fmtS(*m.completed+margin), lastAt))
				continue
			}
			instant := math.Min(*m.completed+margin, m.next)
			if d := r.unseenAt(m.id, h, instant, s.t); d != "" {
				unknown = append(unknown, d)
				continue
			}
			judged++
			if len(s.missing) > 0 {
				bad = append(bad, fmt.Sprintf("%s on %s at %s: NSID %s not served by a live controller at the target",
					m.id, h, fmtS(s.t), joinInts(s.missing)))
			}
		}
	}
	return r.servedResult(bad, unknown, judged)
}

// sampleHoles are every host's holes (observed.go), by host and time.
func (j *Judge) sampleHoles() []record.SampleHole {
	r := j.r
	out := []record.SampleHole{}
	if r.plan.Params.SampleIntervalS <= 0 {
		return out
	}
	end := r.settleEnd
	start := 0.0
	if j.hasObs {
		start = j.obsStart
	}
	for _, name := range r.hosts {
		h := j.hosts[name]
		if h == nil || !h.observed {
			out = append(out, record.SampleHole{Host: name, From: start, To: end, IntervalS: r.plan.Params.SampleIntervalS, NoSample: true})
			continue
		}
		gaps := append(slices.Clone(h.holes), [2]float64{h.lastObs, end})
		for _, g := range gaps {
			prev, t := g[0], g[1]
			iv := math.Max(r.intervalAt(prev), r.intervalAt(t))
			if t-prev > record.HoleFactor*iv+1e-9 {
				out = append(out, record.SampleHole{Host: name, From: prev, To: t, IntervalS: iv})
			}
		}
	}
	return out
}

// seedChecks is SeedChecks on what the Judge kept: the lines they read but
// samples (JudgesLine), each host's first and last sample (dirty-start,
// paths-per-subsystem), and loss-timeout accumulated over every state.
func (j *Judge) seedChecks() []record.CheckResult {
	lines := slices.Clone(j.seedLines)
	for _, name := range slices.Sorted(maps.Keys(j.hosts)) {
		if h := j.hosts[name]; h.lastSample != nil {
			lines = append(lines, h.first, h.last)
		}
	}
	sort.SliceStable(lines, func(a, b int) bool { return lines[a].T < lines[b].T })
	out := SeedChecks(j.r.plan, lines)
	// loss-timeout read every state the Judge saw, not only the kept ones;
	// it goes where SeedChecks puts it, before paths-per-subsystem.
	out = slices.DeleteFunc(out, func(c record.CheckResult) bool { return c.Name == CheckLossTimeout })
	if res, ok := j.loss.result(j.r.plan); ok {
		at := slices.IndexFunc(out, func(c record.CheckResult) bool { return c.Name == CheckPathsPerSubsystem })
		out = slices.Insert(out, at, res)
	}
	out = notJudgedShort(out, j.r.plan, lines, j.r.coverage)
	j.r.notJudgedStale(out, lines)
	return out
}
