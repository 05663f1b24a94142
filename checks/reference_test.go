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

// The reference: an independent implementation of the checks' per-sample
// parts over a whole record held in memory (every host's samples as a
// list), kept only for TestJudgeEqualsReference. It shares with the Judge
// what turns findings into verdicts (pauseBound, freezes, splitBrainResult,
// servedResult, leakedControllers, ...), not how the findings are found:
// pause windows, their attribution, cutover instants, split-brain samples,
// the served judgement, holes and the controllers' last-seen times are
// computed here by walking each host's sample list.

// refIndex is a timeline indexed once for all checks.
type refIndex struct {
	*runIndex
	// samples holds each host's sample lines in time order.
	samples map[string][]record.Line
	// heartbeats holds the times of each host's heartbeat lines.
	heartbeats map[string][]float64
	// stallLines are the stall lines and keep-alive timeout kernel lines.
	stallLines []record.Line
}

func newRefIndex(plan record.Plan, timeline []record.Line) *refIndex {
	r := &refIndex{
		runIndex: &runIndex{
			plan:      plan,
			last:      map[string]record.Line{},
			hostNQN:   map[string]string{},
			volumes:   map[string]record.VolumeInfo{},
			endpoints: map[string][]string{},
			ever:      map[string]map[string]bool{},
			settleEnd: math.Inf(-1),
			seen:      map[string]map[string]seenSpan{},
		},
		samples:    map[string][]record.Line{},
		heartbeats: map[string][]float64{},
	}
	lines := slices.Clone(timeline)
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].T < lines[j].T })

	hostSet := map[string]bool{}
	for _, h := range plan.Topology.Hosts {
		r.hostNQN[h.Name] = h.HostNQN
		hostSet[h.Name] = true
	}
	for _, v := range plan.Topology.Volumes {
		r.volumes[v.NQN] = v
	}
	for _, l := range lines {
		if l.Kind == record.KindSample && l.T > r.settleEnd {
			r.settleEnd = l.T
		}
	}
	if math.IsInf(r.settleEnd, -1) { // no sample at all: the record's last line
		r.settleEnd = 0
		if len(lines) > 0 {
			r.settleEnd = lines[len(lines)-1].T
		}
	}

	byID := map[string]int{}
	for _, l := range lines {
		switch l.Kind {
		case record.KindSample:
			r.samples[l.Host] = append(r.samples[l.Host], l)
			hostSet[l.Host] = true
			for _, c := range l.Controllers {
				if r.ever[c.NQN] == nil {
					r.ever[c.NQN] = map[string]bool{}
				}
				r.ever[c.NQN][l.Host] = true
			}
		case record.KindPhase:
			i, ok := byID[l.Migration]
			if !ok {
				i = len(r.migrations)
				byID[l.Migration] = i
				r.migrations = append(r.migrations, migration{
					id: l.Migration, nqn: l.NQN, start: l.T, terminal: math.Inf(1),
				})
			}
			m := &r.migrations[i]
			m.last = math.Max(m.last, l.T)
			if m.nqn == "" {
				m.nqn = l.NQN
			}
			switch {
			case m.source == nil && (len(l.SourceEndpoints) > 0 || len(l.TargetEndpoints) > 0):
				m.source = endpointSet(l.SourceEndpoints)
				m.target = endpointSet(l.TargetEndpoints)
			case len(l.TargetEndpoints) > 0:
				m.target = endpointSet(l.TargetEndpoints) // a later line corrects the target
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
				}
			}
		case record.KindEndpoints:
			if l.T <= r.settleEnd {
				r.endpoints[l.NQN] = canonicalList(l.Endpoints)
			}
		case record.KindFault:
			r.faults = append(r.faults, l)
		case record.KindHeartbeat:
			r.heartbeats[l.Host] = append(r.heartbeats[l.Host], l.T)
		case record.KindStall:
			r.stallLines = append(r.stallLines, l)
		case record.KindKernel:
			if keepAliveTimeout(l.Message) {
				r.stallLines = append(r.stallLines, l)
			}
		}
	}
	sort.SliceStable(r.migrations, func(i, j int) bool {
		a, b := r.migrations[i], r.migrations[j]
		if a.start != b.start {
			return a.start < b.start
		}
		return a.id < b.id
	})
	r.hosts = slices.Sorted(maps.Keys(hostSet))
	for h, ss := range r.samples {
		r.last[h] = ss[len(ss)-1]
		r.seen[h] = refSeen(ss)
	}
	r.coverage, r.requiredEnd = r.computeCoverage()
	r.obsStart = math.Inf(1)
	for _, h := range r.hosts {
		if s := r.samples[h]; len(s) > 0 {
			r.obsStart = math.Min(r.obsStart, s[0].T)
		}
		for _, t := range r.heartbeats[h] {
			r.obsStart = math.Min(r.obsStart, t)
		}
	}
	if math.IsInf(r.obsStart, 1) {
		r.obsStart = 0
	}
	return r
}

// refSeen walks one host's samples: for each NQN\x00endpoint a controller
// showed, when it was last seen and the first sample after that without it.
func refSeen(samples []record.Line) map[string]seenSpan {
	out := map[string]seenSpan{}
	for _, s := range samples {
		has := map[string]bool{}
		for _, c := range s.Controllers {
			has[c.NQN+"\x00"+nvmeof.EndpointKey(c.Address)] = true
		}
		for k := range has {
			sp := out[k]
			sp.lastSeen = s.T
			out[k] = sp
		}
		for k, sp := range out {
			if !has[k] && sp.gone <= sp.lastSeen {
				sp.gone = s.T
				out[k] = sp
			}
		}
	}
	return out
}

// refEvaluate is Evaluate computed by the reference.
func refEvaluate(plan record.Plan, timeline []record.Line) record.Summary {
	r := newRefIndex(plan, timeline)
	holes := r.sampleHoles()
	r.holes = holes
	stalls := r.stallRecords()
	pr := r.pauses(stalls)
	r.markUnseen(pr.migrations)
	leaks, leakRes := r.leakedControllers()
	missing, complRes := r.pathCompleteness()
	results := []record.CheckResult{
		pauseBound(plan, r.runIndex, pr),
		freezes(plan, r.runIndex, pr),
		leakRes,
		complRes,
		r.splitBrain(),
		r.servedAfterCutover(),
		unattributedPauses(r.runIndex, pr),
		r.faultsLanded(),
	}
	seed := SeedChecks(plan, timeline)
	seed = notJudgedShort(seed, plan, timeline, r.coverage)
	r.notJudgedStale(seed, timeline)
	results = append(results, seed...)
	kernelHosts := map[string]bool{}
	for _, l := range timeline {
		if l.Kind == record.KindKernel {
			kernelHosts[l.Host] = true
		}
	}
	var leaves []liveLeave
	for _, h := range slices.Sorted(maps.Keys(r.samples)) {
		ss := r.samples[h]
		for i := 1; i < len(ss); i++ {
			leaves = append(leaves, leftLive(ss[i-1], ss[i])...)
		}
	}
	r.unheardInconclusive(results, pr, leaves, kernelHosts)
	r.blind(results, holes)
	outcomes, matrix := r.faultOutcomes()
	cov := r.coverage
	migs := pr.migrations
	if migs == nil {
		migs = []record.MigrationSummary{}
	}
	return record.Summary{
		Seed: plan.Seed, Verdict: Overall(results), Checks: results, Migrations: migs,
		Unattributed: pr.unattributed, FaultWindows: pr.faultWindows, LeakedControllers: leaks, MissingEndpoints: missing,
		Coverage: &cov, SampleHoles: holes, Faults: outcomes, FaultMatrix: matrix, Stalls: stalls,
	}
}

// attribute returns the index of the migration a pause window (or sample)
// of nqn starting at t belongs to, or -1: the migration of the NQN whose
// span (first phase line to terminal phase plus margin) contains t; one
// whose phase lines themselves span t wins over one that only covers t
// with its margin, and then the one that started last.
func (r *refIndex) attribute(nqn string, t float64) int {
	margin := r.plan.Params.AttributionMarginS
	best, bestCore := -1, false
	for i, m := range r.migrations {
		if m.nqn != nqn || t < m.start || t > m.spanEnd(margin) || m.noCutover() {
			continue
		}
		core := t <= m.coreEnd()
		if best < 0 || (core && !bestCore) || (core == bestCore && m.start >= r.migrations[best].start) {
			best, bestCore = i, core
		}
	}
	return best
}

// pauseWindows returns the pause windows of nqn in one host's samples (time
// ordered): maximal runs of paused samples, each from its first paused
// sample to the first sample after it; a run still paused at the last
// sample closes there and is flagged open. Each carries the IPs of the
// subsystem's controllers in the sample before its start and at it.
func pauseWindows(samples []record.Line, nqn string, nsids []int) []window {
	var out []window
	inPause := false
	var start float64
	var ips []string
	for k, s := range samples {
		p := Paused(s, nqn, nsids)
		switch {
		case p && !inPause:
			inPause, start = true, s.T
			var before *record.Line
			if k > 0 {
				before = &samples[k-1]
			}
			ips = pathIPs(nqn, before, &samples[k])
		case !p && inPause:
			inPause = false
			out = append(out, window{start: start, end: s.T, ips: ips})
		}
	}
	if inPause {
		out = append(out, window{start: start, end: samples[len(samples)-1].T, open: true, ips: ips})
	}
	return out
}

// pauses computes every consumer host's pause windows per subsystem and
// attributes each to the migration whose span contains its start — or,
// when a landed fault's stall began it (refBegun), to that fault.
func (r *refIndex) pauses(stalls []record.Stall) pauseResult {
	res := newPauseResult()
	migs := make([]record.MigrationSummary, len(r.migrations))
	for i, m := range r.migrations {
		end := m.terminal
		if math.IsInf(end, 1) {
			end = math.Max(m.start, r.settleEnd)
		}
		migs[i] = record.MigrationSummary{
			ID: m.id, NQN: m.nqn, Outcome: m.outcome,
			StartS: m.start, EndS: end, CompletedS: m.completed,
			Hosts: map[string]record.HostPauses{}, NoCutover: m.noCutover(), Reason: m.reason,
		}
		for _, h := range r.consumers(m.nqn) {
			migs[i].Hosts[h] = record.HostPauses{Windows: [][2]float64{}}
			n := 0
			for _, s := range r.samples[h] {
				if s.T >= m.start && s.T <= m.coreEnd() {
					n++
				}
			}
			if n == 0 && !m.noCutover() {
				res.unsampled = append(res.unsampled, m.id+" on "+h)
			}
		}
	}
	for _, nqn := range r.nqns() {
		nsids := r.volumes[nqn].NSIDs
		for _, h := range r.consumers(nqn) {
			for _, w := range refStallWindows(r.samples[h], r.spansOf(h, nqn), nqn, nsids) {
				i := r.attribute(nqn, w.start)
				st, by := refBegun(w, stalls)
				if by == begunFault {
					hw := record.HostWindow{Host: h, NQN: nqn, Window: [2]float64{w.start, w.end}, Cause: stallWindowCause(st), Stall: &st}
					if i >= 0 {
						hw.Migration = migs[i].ID
						hp := migs[i].Hosts[h]
						hp.FaultWindows = append(hp.FaultWindows, hw.Window)
						migs[i].Hosts[h] = hp
					}
					res.faultWindows = append(res.faultWindows, hw)
					continue
				}
				if i < 0 {
					res.outside(r.runIndex, h, nqn, w)
					continue
				}
				hp := migs[i].Hosts[h]
				hp.Windows = append(hp.Windows, [2]float64{w.start, w.end})
				if by == begunMaybe {
					hp.MaybeFaultWindows = append(hp.MaybeFaultWindows, [2]float64{w.start, w.end})
				}
				for _, sp := range w.stalls {
					for _, st := range stalls {
						if st.Host == sp.host && st.Controller == sp.controller && st.StartS == sp.start {
							hp.Stalls = append(hp.Stalls, st)
						}
					}
				}
				sortStalls(hp.Stalls)
				if d := record.RoundT(w.end - w.start); d > hp.LongestPauseS {
					hp.LongestPauseS, hp.LongestPauseMinS = d, w.minLen()
				}
				hp.OpenWindow = hp.OpenWindow || w.open
				hp.Freezes = len(hp.Windows)
				if hp.Freezes > migs[i].Freezes {
					migs[i].Freezes = hp.Freezes
				}
				migs[i].Hosts[h] = hp
			}
		}
	}
	for i, m := range r.migrations {
		for h, hp := range migs[i].Hosts {
			hp.CutoverS = r.cutoverInstant(i, h)
			if hp.CutoverS != nil && m.completed != nil {
				lag := record.RoundT(*hp.CutoverS - *m.completed)
				hp.CutoverLagS = &lag
			}
			migs[i].Hosts[h] = hp
		}
	}
	// A fault window holding a pair's host-observed cutover (from its
	// start to its end, both included) masks the cutover's own pause: the
	// pair is marked with the window, its fault (the cause up to the
	// stall's description) and its length, and the window is one freeze.
	for _, fw := range res.faultWindows {
		for i := range migs {
			hp, ok := migs[i].Hosts[fw.Host]
			if !ok || migs[i].NQN != fw.NQN || hp.CutoverS == nil || *hp.CutoverS < fw.Window[0] || *hp.CutoverS > fw.Window[1] {
				continue
			}
			fault, _, _ := strings.Cut(fw.Cause, ": ")
			hp.MaskedBy = &record.Masked{Window: fw.Window, Fault: fault, BoundS: record.RoundT(fw.Window[1] - fw.Window[0])}
			hp.Freezes++
			migs[i].Freezes = max(migs[i].Freezes, hp.Freezes)
			migs[i].Hosts[fw.Host] = hp
		}
	}
	res.sort()
	res.migrations = migs
	return res
}

// sampleSpan returns the interval [from, to) of sample times that belong to
// migration i: from its first phase line to its terminal phase plus the
// attribution margin, cut at the first phase line of the next migration of
// the same subsystem.
func (r *refIndex) sampleSpan(i int) (from, to float64) {
	m := r.migrations[i]
	from, to = m.start, m.spanEnd(r.plan.Params.AttributionMarginS)
	if math.IsInf(to, 1) || math.IsNaN(to) {
		to = math.Inf(1)
	} else {
		to = math.Nextafter(to, math.Inf(1)) // the span's end is inclusive
	}
	for _, n := range r.migrations[i+1:] {
		if n.nqn == m.nqn && n.start > m.start && n.start < to {
			to = n.start
			break
		}
	}
	return from, to
}

// cutoverInstant returns the host-observed cutover instant of migration i
// on host h: the first sample within the migration's span with a target
// path optimized and no source path optimized (on live controllers), or nil.
func (r *refIndex) cutoverInstant(i int, h string) *float64 {
	m := r.migrations[i]
	if m.target == nil {
		return nil
	}
	from, to := r.sampleSpan(i)
	for _, s := range r.samples[h] {
		if s.T < from || s.T >= to {
			continue
		}
		if len(optimizedAt(s, m.nqn, m.target, nil)) > 0 && len(optimizedAt(s, m.nqn, m.source, nil)) == 0 {
			t := s.T
			return &t
		}
	}
	return nil
}

func (r *refIndex) splitBrain() record.CheckResult {
	var found, silenced, unknown []string
	checked := 0
	for i, m := range r.migrations {
		if m.source == nil {
			unknown = append(unknown, m.id)
			continue
		}
		from, to := r.sampleSpan(i)
		for _, h := range r.hosts {
			first, n := -1.0, 0
			mfirst, mn := -1.0, 0
			var nsids, mnsids []int
			for _, s := range r.samples[h] {
				if s.T < from || s.T >= to {
					continue
				}
				checked++
				silent := r.silentIPs(h, s.T)
				src := optimizedAt(s, m.nqn, m.source, nil)
				tgt := optimizedAt(s, m.nqn, m.target, nil)
				wsrc := optimizedAt(s, m.nqn, m.source, silent)
				wtgt := optimizedAt(s, m.nqn, m.target, silent)
				var both, muted []int
				for ns := range src {
					switch {
					case wsrc[ns] && wtgt[ns]:
						both = append(both, ns)
					case tgt[ns]:
						muted = append(muted, ns)
					}
				}
				if len(muted) > 0 {
					if mn == 0 {
						mfirst = s.T
						sort.Ints(muted)
						mnsids = muted
					}
					mn++
				}
				if len(both) == 0 {
					continue
				}
				if n == 0 {
					first = s.T
					sort.Ints(both)
					nsids = both
				}
				n++
			}
			if n > 0 {
				found = append(found, fmt.Sprintf("%s on %s: %d sample(s) from %s, NSID %s optimized at source and target",
					m.id, h, n, fmtS(first), joinInts(nsids)))
			}
			if mn > 0 {
				silenced = append(silenced, fmt.Sprintf("%s on %s: %d sample(s) from %s, NSID %s",
					m.id, h, mn, fmtS(mfirst), joinInts(mnsids)))
			}
		}
	}
	return r.splitBrainResult(found, silenced, unknown, checked, len(r.migrations))
}

// nextStart returns the first phase line of the next migration of the same
// subsystem after migration i, +Inf if none.
func (r *refIndex) nextStart(i int) float64 {
	m := r.migrations[i]
	for _, n := range r.migrations[i+1:] {
		if n.nqn == m.nqn && n.start > m.start {
			return n.start
		}
	}
	return math.Inf(1)
}

// judgeSample returns the sample of host h at which migration i (Completed
// at completed) is judged served, or nil (Judge.servedAfterCutover).
func (r *refIndex) judgeSample(i int, h string, completed float64) *record.Line {
	at := record.RoundT(completed+r.plan.Params.AttributionMarginS) - 1e-9
	next := r.nextStart(i)
	var before *record.Line
	for k := range r.samples[h] {
		s := &r.samples[h][k]
		if s.T < completed {
			continue
		}
		if s.T >= next {
			break
		}
		if s.T >= at {
			return s
		}
		before = s
	}
	if math.IsInf(next, 1) {
		return nil // the record ends before the margin does
	}
	return before
}

func (r *refIndex) servedAfterCutover() record.CheckResult {
	var bad, unknown []string
	judged := 0
	margin := r.plan.Params.AttributionMarginS
	for i, m := range r.migrations {
		if m.completed == nil {
			continue
		}
		if m.target == nil {
			unknown = append(unknown, m.id+": no target endpoints in its phase lines")
			continue
		}
		for _, h := range r.consumers(m.nqn) {
			s := r.judgeSample(i, h, *m.completed)
			if s == nil {
				lastAt := "it has no sample"
				if last, ok := r.lastSample(h); ok {
					lastAt = "its last sample is at " + fmtS(last.T)
				}
				unknown = append(unknown, fmt.Sprintf("%s on %s: no sample at or after Completed + margin (%s + %s = %s); %s",
					m.id, h, fmtS(*m.completed), fmtS(margin), fmtS(*m.completed+margin), lastAt))
				continue
			}
			instant := math.Min(*m.completed+margin, r.nextStart(i))
			if d := r.unseenAt(m.id, h, instant, s.T); d != "" {
				unknown = append(unknown, d)
				continue
			}
			judged++
			if missing := unservedAtTarget(*s, m.nqn, r.volumes[m.nqn].NSIDs, m.target); len(missing) > 0 {
				bad = append(bad, fmt.Sprintf("%s on %s at %s: NSID %s not served by a live controller at the target",
					m.id, h, fmtS(s.T), joinInts(missing)))
			}
		}
	}
	return r.servedResult(bad, unknown, judged)
}

// sampleHoles computes every host's holes (observed.go), sorted by host and
// time.
func (r *refIndex) sampleHoles() []record.SampleHole {
	out := []record.SampleHole{}
	if r.plan.Params.SampleIntervalS <= 0 {
		return out
	}
	end, start := r.settleEnd, r.obsStart
	for _, h := range r.hosts {
		var ts []float64
		for _, s := range r.samples[h] {
			ts = append(ts, s.T)
		}
		ts = append(ts, r.heartbeats[h]...)
		slices.Sort(ts)
		if len(ts) == 0 {
			out = append(out, record.SampleHole{Host: h, From: start, To: end, IntervalS: r.plan.Params.SampleIntervalS, NoSample: true})
			continue
		}
		prev := start
		for _, t := range append(ts, end) {
			iv := math.Max(r.intervalAt(prev), r.intervalAt(t))
			if t-prev > record.HoleFactor*iv+1e-9 {
				out = append(out, record.SampleHole{Host: h, From: prev, To: t, IntervalS: iv})
			}
			prev = math.Max(prev, t)
		}
	}
	return out
}

// refSpans are the record's silent stalls: a stall line pair (or an end
// line alone, from its start_s), and a keep-alive timeout of a controller
// the host's last sample before it showed live with an optimized leg,
// unless a stall line of that controller is open at it or ends with it.
func (r *refIndex) refSpans() []stallSpan {
	var out []stallSpan
	open := map[string]stallSpan{}
	ended := map[string]float64{}
	for _, l := range r.stallLines {
		k := stallKey(l.Host, l.Controller)
		switch {
		case l.Kind == record.KindStall && l.Action == record.StallStart:
			open[k] = stallSpan{host: l.Host, controller: l.Controller, nqn: l.NQN, start: l.T, latest: l.T, end: math.Inf(1),
				ip: splitEndpoint(l.Address).Traddr, address: l.Address, reason: l.Reason}
		case l.Kind == record.KindStall && l.Action == record.StallEnd:
			s, ok := open[k]
			if !ok {
				s = stallOfLine(l)
			}
			delete(open, k)
			s.end = l.T
			ended[k] = l.T
			out = append(out, s)
		}
	}
	for _, s := range open {
		out = append(out, s)
	}
	for _, l := range r.stallLines {
		if l.Kind != record.KindKernel {
			continue
		}
		k := stallKey(l.Host, l.Controller)
		known := false
		for _, s := range out {
			if stallKey(s.host, s.controller) == k && s.start <= l.T && (s.end > l.T || s.end == l.T) {
				known = true
			}
		}
		if known {
			continue
		}
		var last *record.Line
		for i, s := range r.samples[l.Host] {
			if s.T < l.T {
				last = &r.samples[l.Host][i]
			}
		}
		if s, ok := estimateStall(l, last); ok {
			out = append(out, s)
		}
	}
	return out
}

// spansOf are host's stalls of nqn.
func (r *refIndex) spansOf(host, nqn string) []stallSpan {
	var out []stallSpan
	for _, s := range r.refSpans() {
		if s.host == host && s.nqn == nqn {
			out = append(out, s)
		}
	}
	return out
}

// stallRecords lists the stalls as summary.json does (one still open ends
// at the record's last sample), each with the fault that made it.
func (r *refIndex) stallRecords() []record.Stall {
	var out []record.Stall
	for _, s := range r.refSpans() {
		if math.IsInf(s.end, 1) {
			s.end = math.Max(s.start, r.settleEnd)
		}
		st := s.record()
		st.Cause = r.stallCause(st)
		out = append(out, st)
	}
	sortStalls(out)
	return out
}

// refStallWindows are the pause windows of nqn on one host with its
// stalls: a sample is paused when Paused says so or a stall covers it
// (start <= t < end); the windows are the runs of paused samples as
// pauseWindows makes them; a stall joins the window of the first sample at
// or after its start when that sample is paused (the window then starts at
// the stall's start if earlier), and otherwise is a window of its own from
// its start to that sample; windows that overlap merge. A window's ips are
// those of its first paused sample (pathIPs) and of its stalls; its latest
// start the earliest of its stalls' latest starts and of its samples that
// are paused by themselves.
func refStallWindows(samples []record.Line, spans []stallSpan, nqn string, nsids []int) []window {
	if len(spans) == 0 {
		return pauseWindows(samples, nqn, nsids)
	}
	paused := make([]bool, len(samples))
	own := make([]bool, len(samples)) // paused by the sample itself
	for k, s := range samples {
		paused[k] = Paused(s, nqn, nsids)
		own[k] = paused[k]
		for _, sp := range spans {
			if sp.start <= s.T && s.T < sp.end {
				paused[k] = true
			}
		}
	}
	type run struct {
		first int // first paused sample
		w     window
	}
	var runs []*run
	runOf := make([]*run, len(samples))
	for k := range samples {
		if !paused[k] {
			continue
		}
		if k > 0 && paused[k-1] {
			runOf[k] = runOf[k-1]
			continue
		}
		var before *record.Line
		if k > 0 {
			before = &samples[k-1]
		}
		ru := &run{first: k, w: window{start: samples[k].T, ips: pathIPs(nqn, before, &samples[k]), latestStart: math.Inf(1)}}
		runs = append(runs, ru)
		runOf[k] = ru
	}
	for k := range samples {
		if ru := runOf[k]; ru != nil && own[k] {
			ru.w.latestStart = math.Min(ru.w.latestStart, samples[k].T)
			if !ru.w.hasOwn {
				ru.w.own, ru.w.hasOwn = samples[k].T, true
			}
		}
	}
	var ws []window
	for _, ru := range runs {
		n := ru.first
		for n < len(samples) && paused[n] {
			n++
		}
		if n < len(samples) {
			ru.w.end = samples[n].T
		} else {
			ru.w.end, ru.w.open = samples[len(samples)-1].T, true
		}
	}
	for _, sp := range spans {
		k := sort.Search(len(samples), func(i int) bool { return samples[i].T >= sp.start })
		if k == len(samples) {
			continue
		}
		if ru := runOf[k]; ru != nil {
			ru.w.start = math.Min(ru.w.start, sp.start)
			ru.w.latestStart = math.Min(ru.w.latestStart, sp.latest)
			ru.w.ips = unionIPs(ru.w.ips, []string{sp.ip})
			ru.w.stalls = append(ru.w.stalls, sp)
			continue
		}
		ws = append(ws, window{start: sp.start, end: samples[k].T, ips: []string{sp.ip}, latestStart: sp.latest, stalls: []stallSpan{sp}})
	}
	for _, ru := range runs {
		ws = append(ws, ru.w)
	}
	sort.SliceStable(ws, func(a, b int) bool { return ws[a].start < ws[b].start })
	var out []window
	for _, w := range ws {
		if n := len(out); n > 0 && w.start <= out[n-1].end {
			p := &out[n-1]
			p.end = math.Max(p.end, w.end)
			p.open = p.open || w.open
			p.latestStart = math.Min(p.latestStart, w.latestStart)
			p.ips = unionIPs(p.ips, w.ips)
			p.stalls = append(p.stalls, w.stalls...)
			if w.hasOwn && (!p.hasOwn || w.own < p.own) {
				p.own, p.hasOwn = w.own, true
			}
			continue
		}
		out = append(out, w)
	}
	for i := range out {
		if out[i].latestStart <= out[i].start {
			out[i].latestStart = 0
		}
	}
	return out
}

// refBegun is faultBegun worked out by the reference: of the stalls in w
// that a landed fault made (Cause set in stalls), the one with the
// earliest start (then controller) whose latest start is no later than
// the earliest any other beginning of w can be (its first own-paused
// sample, a stall without a cause) began it; failing that, the earliest
// that may be first (its start no later than the latest another beginning
// can be) makes w a maybe; otherwise the cutover or something else began
// it.
func refBegun(w window, stalls []record.Stall) (record.Stall, begun) {
	type source struct {
		earliest, latest float64
		st               *record.Stall
	}
	var srcs []source
	if w.hasOwn {
		srcs = append(srcs, source{w.own, w.own, nil})
	}
	for _, sp := range w.stalls {
		var st *record.Stall
		for i := range stalls {
			if stalls[i].Host == sp.host && stalls[i].Controller == sp.controller && stalls[i].StartS == sp.start && stalls[i].Cause != "" {
				st = &stalls[i]
			}
		}
		srcs = append(srcs, source{sp.start, sp.latest, st})
	}
	pick := func(ok func(source) bool) *record.Stall {
		var best *record.Stall
		for _, c := range srcs {
			if c.st == nil || !ok(c) {
				continue
			}
			if best == nil || c.st.StartS < best.StartS || (c.st.StartS == best.StartS && c.st.Controller < best.Controller) {
				best = c.st
			}
		}
		return best
	}
	first := pick(func(c source) bool {
		for _, o := range srcs {
			if o.st == nil && o.earliest < c.latest {
				return false
			}
		}
		return true
	})
	if first != nil {
		return *first, begunFault
	}
	may := pick(func(c source) bool {
		for _, o := range srcs {
			if o.st == nil && o.latest < c.earliest {
				return false
			}
		}
		return true
	})
	if may != nil {
		return *may, begunMaybe
	}
	return record.Stall{}, begunOther
}
