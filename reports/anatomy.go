package reports

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// WithAnatomy returns sum with every pause window of every migration and
// consumer host split into the steps the timeline shows
// (record.HostPauses.Anatomy; PauseAnatomy says what each step is). The
// host's samples, the migration's source and target endpoints (its
// Pending phase line) and, for fio runs, fio's I/O gaps decide them;
// sum's maps are copied, never changed. Windows of hosts the timeline has
// no sample of get no anatomy.
func WithAnatomy(sum record.Summary, timeline []record.Line) record.Summary {
	return indexTimeline(timeline).withAnatomy(sum)
}

func (ix *timelineIndex) withAnatomy(sum record.Summary) record.Summary {
	migs := slices.Clone(sum.Migrations)
	for i, m := range migs {
		if len(m.Hosts) == 0 {
			continue
		}
		hosts := make(map[string]record.HostPauses, len(m.Hosts))
		for _, h := range slices.Sorted(maps.Keys(m.Hosts)) {
			hp := m.Hosts[h]
			hp.Anatomy = nil
			for k, w := range hp.Windows {
				if a, ok := ix.anatomy(sum, m, h, w, hp.OpenWindow && k == len(hp.Windows)-1); ok {
					hp.Anatomy = append(hp.Anatomy, a)
				}
			}
			hosts[h] = hp
		}
		migs[i].Hosts = hosts
	}
	sum.Migrations = migs
	return sum
}

// pathView is what one sample shows of a migration's paths on a host.
type pathView struct {
	targetLive, targetAccessible, sourceAccessible bool
	source, target                                 []string // "ip:port state/ANA" of each path
}

func (ix *timelineIndex) view(s record.Line, m record.MigrationSummary) pathView {
	var v pathView
	src, tgt := ix.source[m.ID], ix.target[m.ID]
	for _, c := range s.Controllers {
		if c.NQN != m.NQN {
			continue
		}
		k := nvmeof.EndpointKey(c.Address)
		acc := false
		var anas []string
		for _, l := range c.Legs {
			anas = append(anas, l.ANA)
			acc = acc || (c.State == "live" && accessible(l.ANA))
		}
		desc := c.Address + " " + c.State
		if len(anas) > 0 {
			desc += "/" + strings.Join(slices.Compact(anas), ",")
		}
		switch {
		case src[k]:
			v.source = append(v.source, desc)
			v.sourceAccessible = v.sourceAccessible || acc
		case tgt[k]:
			v.target = append(v.target, desc)
			v.targetLive = v.targetLive || c.State == "live"
			v.targetAccessible = v.targetAccessible || acc
		}
	}
	return v
}

func accessible(ana string) bool { return ana == "optimized" || ana == "non-optimized" }

// anatomy splits window w of migration m on host h (open: still open at
// the host's last sample) into steps; ok false without samples of h.
func (ix *timelineIndex) anatomy(sum record.Summary, m record.MigrationSummary, h string, w [2]float64, open bool) (record.PauseAnatomy, bool) {
	ss := ix.samples[h]
	i0 := sort.Search(len(ss), func(i int) bool { return ss[i].T >= w[0]-1e-9 })
	if i0 == len(ss) {
		return record.PauseAnatomy{}, false
	}
	a := record.PauseAnatomy{Window: w}
	step := func(name string, at, after *float64, detail string) {
		st := record.PauseStep{Step: name, AtS: at, AfterS: after, Detail: detail}
		if at != nil {
			d := record.RoundT(*at - w[0])
			st.SinceStartS = &d
			if after != nil {
				st.InSampleHole = inHole(sum.SampleHoles, h, *after, *at)
			}
		}
		if st.InSampleHole {
			st.Detail += fmt.Sprintf("; in a hole in %s's samples: only known to lie in (%s, %s] s", h, record.FormatT(*after), record.FormatT(*at))
		}
		a.Steps = append(a.Steps, st)
	}
	before := func(i int) *float64 {
		if i == 0 {
			return nil
		}
		return ptr(ss[i-1].T)
	}
	// 1. The source path lost: the first paused sample, or a silent stall
	// the window starts with (a path live and optimized that carried
	// nothing: docs/host-model.md "Silent stalls").
	v0 := ix.view(ss[i0], m)
	var stall *record.Stall
	for i := range sum.Stalls {
		if st := &sum.Stalls[i]; st.Host == h && st.NQN == m.NQN && st.StartS <= w[0]+1e-9 && st.EndS >= w[0]-1e-9 {
			stall = st
			break
		}
	}
	searchFrom := i0 // where a target path's service is looked for
	switch {
	case stall != nil:
		where := stall.Controller
		for _, c := range ss[i0].Controllers {
			if c.Name == stall.Controller && c.NQN == m.NQN {
				where += " (" + c.Address + ", " + roleOf(ix, m, c.Address) + " path)"
			}
		}
		detail := fmt.Sprintf("a silent stall of %s: live and optimized while nothing reached its target", where)
		if stall.Estimate && stall.LatestStartS != nil {
			detail += fmt.Sprintf("; known from the keep-alive timeout only: it began between %s and %s s", record.FormatT(stall.StartS), record.FormatT(*stall.LatestStartS))
		}
		step(record.StepSilentStall, ptr(stall.StartS), nil, detail)
		step(record.StepStallEnded, ptr(stall.EndS), nil, "the stalled controller stopped serving (it left live, or the host's keep-alive timeout fired)")
		searchFrom = sort.Search(len(ss), func(i int) bool { return ss[i].T >= stall.EndS-1e-9 })
	case v0.sourceAccessible:
		step(record.StepSourceLost, ptr(ss[i0].T), before(i0), "the first paused sample (a source path still serves another namespace); source paths: "+strings.Join(v0.source, "; "))
	default:
		step(record.StepSourceLost, ptr(ss[i0].T), before(i0), "the first paused sample; source paths: "+listOr(v0.source, "none"))
	}
	// The window's last sample: the first one after it.
	iEnd := sort.Search(len(ss), func(i int) bool { return ss[i].T >= w[1]-1e-9 })
	if iEnd == len(ss) {
		iEnd = len(ss) - 1
	}
	// 2. A target controller live: before the window, or within it.
	switch {
	case v0.targetLive:
		k := i0
		for k > 0 && ix.view(ss[k-1], m).targetLive {
			k--
		}
		step(record.StepTargetLive, ptr(ss[k].T), before(k), "live before the window ("+listOr(v0.target, "")+")")
	default:
		found := false
		for k := i0 + 1; k <= iEnd; k++ {
			if v := ix.view(ss[k], m); v.targetLive {
				step(record.StepTargetLive, ptr(ss[k].T), before(k), "target paths: "+strings.Join(v.target, "; "))
				found = true
				break
			}
		}
		if !found {
			step(record.StepTargetLive, nil, nil, "no target controller live by the window's end; target paths at its start: "+listOr(v0.target, "none"))
		}
	}
	// 3. A target path optimized or non-optimized on a live controller.
	found := false
	for k := searchFrom; k <= iEnd; k++ {
		if v := ix.view(ss[k], m); v.targetAccessible {
			detail := "target paths: " + strings.Join(v.target, "; ")
			if stall != nil {
				detail = "the first sample after the stall ended with " + detail
				for j := i0; j < searchFrom; j++ {
					if ix.view(ss[j], m).targetAccessible {
						detail += fmt.Sprintf(" (a target path was accessible from %s s, while the stalled path kept the I/O)", record.FormatT(ss[j].T))
						break
					}
				}
			}
			step(record.StepTargetAccessible, ptr(ss[k].T), before(k), detail)
			found = true
			break
		}
	}
	vEnd := ix.view(ss[iEnd], m)
	switch {
	case open:
		a.EndedBy = "open"
	case vEnd.targetAccessible:
		a.EndedBy = "target"
	case vEnd.sourceAccessible:
		a.EndedBy = "source"
	default:
		a.EndedBy = "other"
	}
	if !found {
		why := "no target path accessible by the window's end"
		if a.EndedBy == "source" {
			why += "; a source path came back: " + strings.Join(vEnd.source, "; ")
		}
		step(record.StepTargetAccessible, nil, nil, why)
	}
	// 4. fio's first completion after the window's I/O gap.
	if sum.Fio != nil {
		ran, gap := false, record.FioGap{}
		for _, fv := range sum.Fio.Volumes {
			if fv.NQN != m.NQN || fv.Host != h {
				continue
			}
			ran = true
			for _, g := range fv.Gaps {
				if g.StartS <= w[1] && g.EndS >= w[0] && (gap.Volume == "" || g.EndS > gap.EndS) {
					gap, gap.Volume = g, fv.Volume
				}
			}
		}
		switch {
		case !ran:
		case gap.Volume == "":
			step(record.StepFirstCompletion, nil, nil, fmt.Sprintf("no fio gap of at least %s s overlaps the window: I/O went on within that", record.FormatT(sum.Fio.MinGapS)))
		case gap.Open:
			step(record.StepFirstCompletion, nil, nil, fmt.Sprintf("fio on %s completed nothing from %s s to the end of its log", gap.Volume, record.FormatT(gap.StartS)))
		default:
			step(record.StepFirstCompletion, ptr(gap.EndS), ptr(gap.StartS), fmt.Sprintf("fio on %s: no completion from %s s (the gap's start) to this one", gap.Volume, record.FormatT(gap.StartS)))
		}
	}
	return a, true
}

// roleOf is "source", "target" or "other": the role of the path at addr
// in migration m.
func roleOf(ix *timelineIndex, m record.MigrationSummary, addr string) string {
	k := nvmeof.EndpointKey(addr)
	switch {
	case ix.source[m.ID][k]:
		return "source"
	case ix.target[m.ID][k]:
		return "target"
	}
	return "other"
}

// inHole reports whether a hole in host h's samples overlaps (from, to].
func inHole(holes []record.SampleHole, h string, from, to float64) bool {
	for _, x := range holes {
		if x.Host == h && x.From < to && x.To > from {
			return true
		}
	}
	return false
}

func ptr(v float64) *float64 { return &v }

func listOr(xs []string, none string) string {
	if len(xs) == 0 {
		return none
	}
	return strings.Join(xs, "; ")
}

// anatomyStepNames are the steps as the reports name them.
var anatomyStepNames = map[string]string{
	record.StepSourceLost: "1. source path lost", record.StepTargetLive: "2. target controller live",
	record.StepTargetAccessible: "3. target ANA accessible", record.StepFirstCompletion: "4. first I/O completion",
	record.StepSilentStall: "1. silent stall", record.StepStallEnded: "1'. stall ended",
}

// AnatomyRow is one step of a pause anatomy as the reports show it.
type AnatomyRow struct {
	Step, SeenAt, SinceStart, Detail string
}

// AnatomyView is the anatomy of the worst cutover's longest pause window
// (report.md and report.html, under "Worst cutover").
type AnatomyView struct {
	Host, Window, EndedBy string
	Rows                  []AnatomyRow
}

// worstAnatomy is the anatomy of the longest window of the worst
// (migration, host) pair (worstPair); ok false without one.
func worstAnatomy(sum record.Summary) (AnatomyView, bool) {
	m, h, ok := worstPair(sum)
	if !ok {
		return AnatomyView{}, false
	}
	hp := m.Hosts[h]
	best := -1
	for i, a := range hp.Anatomy {
		if best < 0 || a.Window[1]-a.Window[0] > hp.Anatomy[best].Window[1]-hp.Anatomy[best].Window[0] {
			best = i
		}
	}
	if best < 0 {
		return AnatomyView{}, false
	}
	a := hp.Anatomy[best]
	ended := map[string]string{"target": "a target path became accessible", "source": "a source path came back", "open": "still open at the last sample", "other": "the record does not show which path"}[a.EndedBy]
	v := AnatomyView{Host: h, Window: windows([][2]float64{a.Window}), EndedBy: ended}
	for _, st := range a.Steps {
		r := AnatomyRow{Step: anatomyStepNames[st.Step], SeenAt: "not seen", SinceStart: "—", Detail: st.Detail}
		if st.AtS != nil {
			r.SeenAt = secs(*st.AtS)
			if st.AfterS != nil {
				r.SeenAt += " (after " + secs(*st.AfterS) + ")"
			}
			r.SinceStart = signedSecs(*st.SinceStartS)
		}
		if st.InSampleHole {
			r.SeenAt += ", in a sample hole"
		}
		v.Rows = append(v.Rows, r)
	}
	return v, true
}

// noSamplesNote says why a report with a worst cutover shows no pause
// anatomy, swimlane or churn: it was drawn without the timeline's samples
// (summary.json has no churn, WriteRun's sign of it) — a run past the host
// states a report keeps in memory (scenario.ReportStatesMax), while the
// checks judged every sample. "" otherwise.
func noSamplesNote(sum record.Summary) string {
	if _, _, ok := worstPair(sum); !ok || sum.Churn != nil {
		return ""
	}
	if _, ok := worstAnatomy(sum); ok {
		return ""
	}
	return "No pause anatomy, swimlane or churn count: this report was drawn without the timeline's samples " +
		"(a run keeps them for its report only up to a bound of host states; the checks judged every sample)."
}

// anatomyMarkdown renders worstAnatomy's view, "" without one.
func anatomyMarkdown(sum record.Summary) string {
	v, ok := worstAnatomy(sum)
	if !ok {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**Pause anatomy** of its longest window on %s, %s (ended: %s); each step happened between the sample before and the one that shows it:\n\n| Step | Seen at | Since the window's start | What the record shows |\n|---|---|---|---|\n",
		v.Host, v.Window, v.EndedBy)
	for _, r := range v.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Step, r.SeenAt, r.SinceStart, cell(clip(r.Detail)))
	}
	return b.String()
}
