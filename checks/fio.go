package checks

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/fiomig/fiomig/fio"
	"github.com/fiomig/fiomig/record"
)

// Checks of a --workload=fio run (real fio through FUSE volumes), appended
// after the record's own checks by FioChecks.
const (
	// CheckFioPauseAgreement: for every migration and volume with fio, the
	// longest I/O gap in fio's own per-I/O log and the longest ANA pause
	// window agree within FioToleranceS. fio stalls outside every migration
	// are named in the detail but not judged. fio's longest stall that no
	// pause window explains is its noise floor (FioNoiseFloor). A pair that
	// differs by more than the tolerance but no more than the tolerance
	// plus the noise floor makes the check inconclusive (the machine's own
	// stalls could explain it), as does a noise floor that brings the two
	// up to the pause bound; beyond the tolerance plus the floor it fails.
	CheckFioPauseAgreement = "fio-pause-agreement"
	// CheckFioDataIntegrity: fio's verify found no corrupted block.
	CheckFioDataIntegrity = "fio-data-integrity"
	// CheckFioIOErrors: fio saw no I/O error during the run (the errors the
	// FUSE layer returned while draining fio after the run excepted).
	CheckFioIOErrors = "fio-io-errors"
)

// FioMinToleranceS is the floor of FioToleranceS, seconds.
const FioMinToleranceS = 0.25

// FioToleranceS is the largest disagreement between fio's longest gap and
// the ANA pause that still counts as agreement: max(2 × sample interval,
// 0.25 s). Two sample intervals: a pause window is quantised to samples at
// both ends.
func FioToleranceS(plan record.Plan) float64 {
	return math.Max(2*plan.Params.SampleIntervalS, FioMinToleranceS)
}

// FioMissingEvidence returns why volume v's fio cannot be judged, or "":
// fio logged no completion within the run (its directory or per-I/O log
// is gone, or fio never ran), with v.Problems naming what could not be
// read. Every fio check treats such a volume the same way: not judged,
// named in the detail, and the check is inconclusive unless another volume
// fails it.
func FioMissingEvidence(v record.FioVolume) string {
	if v.Completions > 0 {
		return ""
	}
	return "fio logged no completion" + problems(v)
}

// FioGone returns the three fio checks of a --workload=fio run whose fio
// evidence is gone altogether (no fio/ directory or no fio/workload.json):
// each inconclusive with detail.
func FioGone(detail string) []record.CheckResult {
	var out []record.CheckResult
	for _, n := range []string{CheckFioPauseAgreement, CheckFioDataIntegrity, CheckFioIOErrors} {
		out = append(out, record.CheckResult{Name: n, Verdict: record.Inconclusive, Detail: detail})
	}
	return out
}

// CompareFio puts each volume's fio gaps beside the ANA pauses: every gap
// in v.Gaps is attributed, by its start, to the migration of the volume's
// NQN whose span holds it — the rule pause windows follow (first phase line
// to terminal phase plus plan.Params.AttributionMarginS; a migration whose
// phase lines span the start wins over one whose margin does, then the one
// that started last; a migration with NoCutover takes none), and set
// beside the longest ANA pause window of the host in that span — the
// migration's or a fault's (HostPauses.FaultWindows: fio's I/O waits in
// both alike; agreement is about what the samples saw, not whose pause it
// is). It returns one
// comparison per migration and volume,
// in migration then volume order — a pair whose migration reached no
// terminal phase or whose volume has no fio evidence (FioMissingEvidence)
// has NotJudged set and Agree false — and the gaps of at least FioToleranceS
// outside every migration, in time order. migs are the summary's
// migrations (checks.Judge).
func CompareFio(plan record.Plan, migs []record.MigrationSummary, vols []record.FioVolume) ([]record.FioComparison, []record.FioGap) {
	tol := FioToleranceS(plan)
	margin := plan.Params.AttributionMarginS
	attribute := func(nqn string, t float64) int {
		best, bestCore := -1, false
		for i, m := range migs {
			end := m.EndS
			if !record.IsTerminal(m.Outcome) {
				end = math.Inf(1)
			}
			if m.NQN != nqn || t < m.StartS || t > end+margin || m.NoCutover {
				continue
			}
			core := t <= end
			if best < 0 || (core && !bestCore) || (core == bestCore && m.StartS >= migs[best].StartS) {
				best, bestCore = i, core
			}
		}
		return best
	}
	type key struct{ mig, vol int }
	longest := map[key]record.FioGap{}
	unattributed := []record.FioGap{}
	for vi, v := range vols {
		for _, g := range v.Gaps {
			i := attribute(v.NQN, g.StartS)
			if i < 0 {
				if g.LengthS >= tol {
					g.Volume = v.Volume
					unattributed = append(unattributed, g)
				}
				continue
			}
			k := key{i, vi}
			if cur, ok := longest[k]; !ok || g.LengthS > cur.LengthS {
				longest[k] = g
			}
		}
	}
	var out []record.FioComparison
	for mi, m := range migs {
		for vi, v := range vols {
			if v.NQN != m.NQN {
				continue
			}
			c := record.FioComparison{Migration: m.ID, Volume: v.Volume, NQN: v.NQN, Host: v.Host,
				PauseS: m.Hosts[v.Host].LongestPauseS}
			for _, w := range m.Hosts[v.Host].FaultWindows {
				c.PauseS = math.Max(c.PauseS, record.RoundT(w[1]-w[0]))
			}
			if g, ok := longest[key{mi, vi}]; ok {
				g.Volume = v.Volume
				c.FioGapS, c.FioGap = g.LengthS, &g
			}
			c.DiffS = record.RoundT(c.FioGapS - c.PauseS)
			switch {
			case !record.IsTerminal(m.Outcome):
				c.NotJudged = fmt.Sprintf("%s reached no terminal phase (last phase %s)", m.ID, m.Outcome)
			case FioMissingEvidence(v) != "":
				c.NotJudged = v.Volume + ": " + FioMissingEvidence(v)
			default:
				c.Agree = math.Abs(c.DiffS) <= tol+1e-9
			}
			out = append(out, c)
		}
	}
	sort.SliceStable(unattributed, func(i, j int) bool { return unattributed[i].StartS < unattributed[j].StartS })
	return out, unattributed
}

// FioNoiseFloor returns fio's noise floor in this run: the longest closed
// gap (between two completions, not at the run's edge) of any volume with
// fio evidence that overlaps none of the pause windows its host saw on the
// volume's NQN — in its migrations (theirs and the faults' in their spans,
// HostPauses.FaultWindows) or outside every migration (sum.FaultWindows:
// a fault's, a silent stall's included; sum.Unattributed) — with its
// volume set; nil when there is none of at least the listing minimum
// (summary.json fio.min_gap_s). sum is the record's summary (checks.Judge).
//
// No ANA pause explains such a stall: on the simulator it is the harness
// machine's own scheduling (fio, the FUSE daemon or the world's driver
// starved of CPU; such stalls hit every volume's fio at once), measured in
// the same run as the pauses it is compared with. A stall that long may
// abut a cutover and lengthen fio's gap there, or delay the world's
// driver at one edge of the pause so that fio's gap is shorter than the
// pause the samples stamp, so the agreement check cannot tell a
// disagreement of up to FioToleranceS plus the noise floor from the
// machine's own noise (see CheckFioPauseAgreement). This is an inference
// from how the gaps arise on the simulator, not a sourced figure: one
// stall is assumed to touch a pause, not two. The floor is taken over the
// whole run rather than only outside migrations: measured on this 2-core
// machine at load 22, the longest stall outside the one migration of a run
// was 0.13 s while a 0.71 s one fell inside it, clear of its pause.
func FioNoiseFloor(sum record.Summary, vols []record.FioVolume) *record.FioGap {
	var floor *record.FioGap
	for _, v := range vols {
		if FioMissingEvidence(v) != "" {
			continue
		}
		var windows [][2]float64
		for _, m := range sum.Migrations {
			if m.NQN == v.NQN {
				windows = append(windows, m.Hosts[v.Host].Windows...)
				windows = append(windows, m.Hosts[v.Host].FaultWindows...)
			}
		}
		for _, w := range append(slices.Clone(sum.FaultWindows), sum.Unattributed...) {
			if w.NQN == v.NQN && w.Host == v.Host {
				windows = append(windows, w.Window)
			}
		}
	gaps:
		for _, g := range v.Gaps {
			if g.Open {
				continue
			}
			for _, w := range windows {
				if g.StartS < w[1] && g.EndS > w[0] {
					continue gaps
				}
			}
			if floor == nil || g.LengthS > floor.LengthS {
				g.Volume = v.Volume
				floor = &g
			}
		}
	}
	return floor
}

// FioChecks computes the fio checks of a --workload=fio run from its fio
// summary (see CompareFio for Comparisons and Unattributed): pause
// agreement, data integrity and I/O errors, in that order. plan gives the
// planned migration count.
func FioChecks(plan record.Plan, fs record.FioSummary) []record.CheckResult {
	return []record.CheckResult{fioAgreement(plan, fs), fioIntegrity(fs), fioIOErrors(fs)}
}

// FioPairClass is how CheckFioPauseAgreement classes one migration/volume
// pair of a fio summary (FioPairs); reports show it as the check does.
type FioPairClass string

const (
	// FioPairAgree: fio's gap and the ANA pause differ by at most the
	// tolerance.
	FioPairAgree FioPairClass = "agree"
	// FioPairWithinNoise: they differ by more than the tolerance but by
	// no more than the tolerance plus fio's noise floor; the machine's own
	// stalls could explain it, so the pair makes the check inconclusive.
	FioPairWithinNoise FioPairClass = "within-noise-floor"
	// FioPairDisagree: they differ by more than the tolerance plus the
	// noise floor; the pair fails the check.
	FioPairDisagree FioPairClass = "disagree"
	// FioPairNoEvidence: the volume's fio logged no completion
	// (FioMissingEvidence); not judged, the check is inconclusive.
	FioPairNoEvidence FioPairClass = "no-fio-evidence"
	// FioPairUnfinished: the migration reached no terminal phase; not
	// judged.
	FioPairUnfinished FioPairClass = "unfinished"
)

// FioPair is one comparison of a fio summary with its class and, for a
// pair left out, why (FioMissingEvidence or FioComparison.NotJudged).
type FioPair struct {
	record.FioComparison
	Class FioPairClass
	Why   string
}

// FioPairs classes every comparison of fs, in fs.Comparisons order, by
// the rule of CheckFioPauseAgreement: tolerance fs.ToleranceS, noise floor
// fs.NoiseFloorS (seconds).
func FioPairs(fs record.FioSummary) []FioPair {
	missing := map[string]string{}
	for _, v := range fs.Volumes {
		missing[v.Volume] = FioMissingEvidence(v)
	}
	wide := fs.ToleranceS + fs.NoiseFloorS
	out := make([]FioPair, 0, len(fs.Comparisons))
	for _, c := range fs.Comparisons {
		p := FioPair{FioComparison: c}
		switch {
		case missing[c.Volume] != "":
			p.Class, p.Why = FioPairNoEvidence, missing[c.Volume]
		case c.NotJudged != "":
			p.Class, p.Why = FioPairUnfinished, c.NotJudged
		case c.Agree:
			p.Class = FioPairAgree
		case math.Abs(c.DiffS) <= wide+1e-9:
			p.Class = FioPairWithinNoise
		default:
			p.Class = FioPairDisagree
		}
		out = append(out, p)
	}
	return out
}

func fioAgreement(plan record.Plan, fs record.FioSummary) record.CheckResult {
	res := record.CheckResult{Name: CheckFioPauseAgreement}
	tol, noise := fs.ToleranceS, fs.NoiseFloorS
	wide := tol + noise
	var bad, noisy, blind, unfinished []string
	worst, where, judged := -1.0, "", 0
	for _, c := range FioPairs(fs) {
		switch c.Class {
		case FioPairNoEvidence:
			blind = append(blind, c.Migration+" "+c.Volume+": "+c.Why)
			continue
		case FioPairUnfinished:
			unfinished = append(unfinished, c.Migration+" "+c.Volume)
			continue
		}
		judged++
		d := math.Abs(c.DiffS)
		if d > worst {
			worst, where = d, c.Migration+" "+c.Volume
		}
		if c.Class == FioPairAgree {
			continue
		}
		pair := fmt.Sprintf("%s %s on %s: fio gap %s vs ANA pause %s (off by %s", c.Migration, c.Volume, c.Host, fmtS(c.FioGapS), fmtS(c.PauseS), fmtS(d))
		switch {
		case c.Class == FioPairWithinNoise:
			noisy = append(noisy, pair+")")
		case noise > 0:
			bad = append(bad, fmt.Sprintf("%s > %s tolerance + %s noise floor)", pair, fmtS(tol), fmtS(noise)))
		default:
			bad = append(bad, fmt.Sprintf("%s > %s)", pair, fmtS(tol)))
		}
	}
	// fio stalls outside every migration are reported, not judged: no
	// migration (and no ANA pause) explains them, and on the simulator they
	// are the harness machine's own hiccups (CPU starvation of fio or of
	// the FUSE daemon) rather than the cluster's. fio's longest stall
	// clear of every pause window is its noise floor (FioNoiseFloor): a
	// disagreement no longer than the tolerance plus that floor could be
	// the machine's, not the cluster's, so it makes the check
	// inconclusive, not failed; and a floor that reaches the pause bound
	// leaves nothing the check could resolve.
	note := ""
	if len(unfinished) > 0 {
		note += fmt.Sprintf("; not judged: %d pair(s) of a migration with no terminal phase (%s)", len(unfinished), strings.Join(unfinished, ", "))
	}
	if n := len(fs.Unattributed); n > 0 {
		longest := fs.Unattributed[0]
		for _, g := range fs.Unattributed {
			if g.LengthS > longest.LengthS {
				longest = g
			}
		}
		note += fmt.Sprintf("; not judged: %d fio stall(s) of at least %s outside every migration, longest %s on %s at [%s, %s] s",
			n, fmtS(tol), fmtS(longest.LengthS), longest.Volume, record.FormatT(longest.StartS), record.FormatT(longest.EndS))
	}
	floor := fioNoiseFloorText(fs)
	crit := plan.Params.PauseCritS
	total := len(fs.Comparisons)
	switch {
	case len(bad) > 0:
		res.Verdict = record.Fail
		res.Detail = fmt.Sprintf("fio and the ANA samples disagree (tolerance %s) on %d of %d judged migration/volume pair(s): %s",
			fmtS(tol), len(bad), judged, strings.Join(bad, "; "))
		if len(noisy) > 0 {
			res.Detail += fmt.Sprintf("; within %s (tolerance + %s): %s", fmtS(wide), floor, strings.Join(noisy, "; "))
		}
		if len(blind) > 0 {
			res.Detail += fmt.Sprintf("; not judged, fio evidence missing: %s", strings.Join(blind, "; "))
		}
	case len(blind) > 0:
		res.Verdict = record.Inconclusive
		res.Detail = fmt.Sprintf("%d of %d migration/volume pair(s) not judged, fio evidence missing: %s", len(blind), total, strings.Join(blind, "; "))
		if judged > 0 {
			res.Detail += fmt.Sprintf("; the other %d agree within %s", judged, fmtS(tol))
		}
	case len(noisy) > 0:
		res.Verdict = record.Inconclusive
		res.Detail = fmt.Sprintf("fio and the ANA samples differ by more than the tolerance %s, but by no more than %s, on %d of %d judged migration/volume pair(s): %s; the machine's own stalls could account for that (%s), so this run cannot tell",
			fmtS(tol), fmtS(wide), len(noisy), judged, strings.Join(noisy, "; "), floor)
	case judged > 0 && noise > 0 && crit > 0 && wide >= crit:
		res.Verdict = record.Inconclusive
		res.Detail = fmt.Sprintf("%s: the tolerance %s plus that floor reaches the pause bound %s, so fio cannot tell a cutover within the bound from one beyond it on this machine; the %d judged pair(s) agree within %s",
			floor, fmtS(tol), fmtS(crit), judged, fmtS(tol))
	case judged == 0 && plan.Params.Migrations > 0:
		res.Verdict = record.Inconclusive
		res.Detail = "no finished migration of a volume that fio ran on"
	case judged == 0:
		res.Verdict = record.Pass
		res.Detail = "no migration to compare"
	default:
		res.Verdict = record.Pass
		res.Detail = fmt.Sprintf("fio's longest gap and the ANA pause agree within %s for %d migration/volume pair(s); largest difference %s (%s)",
			fmtS(tol), judged, fmtS(worst), where)
		if noise > 0 {
			res.Detail += "; " + floor
		}
	}
	res.Detail += note
	return res
}

// fioNoiseFloorText says what fio's noise floor in fs was, where, and the
// machine's load.
func fioNoiseFloorText(fs record.FioSummary) string {
	if fs.NoiseGap == nil {
		return "fio's noise floor " + fmtS(fs.NoiseFloorS)
	}
	g := fs.NoiseGap
	s := fmt.Sprintf("fio's noise floor %s (its longest stall clear of every pause window, %s at [%s, %s] s", fmtS(g.LengthS), g.Volume, record.FormatT(g.StartS), record.FormatT(g.EndS))
	if fs.Load != nil {
		s += fmt.Sprintf("; load average %.2f on %d CPU(s) at the end of the run", fs.Load.Avg1, fs.Load.CPUs)
	}
	return s + ")"
}

// fioBlind lists the volumes of fs without fio evidence
// (FioMissingEvidence) as "volume: why", and counts the others.
func fioBlind(fs record.FioSummary) (blind []string, judged int) {
	for _, v := range fs.Volumes {
		if why := FioMissingEvidence(v); why != "" {
			blind = append(blind, v.Volume+": "+why)
		} else {
			judged++
		}
	}
	return blind, judged
}

func fioIntegrity(fs record.FioSummary) record.CheckResult {
	res := record.CheckResult{Name: CheckFioDataIntegrity}
	var bad []string
	for _, v := range fs.Volumes {
		for _, f := range v.VerifyFailures {
			s := fmt.Sprintf("%s: %s verify failure at offset %d (%d bytes)", v.Volume, f.Kind, f.Offset, f.Length)
			if f.Reason != "" {
				s += ": " + f.Reason
			}
			bad = append(bad, s)
		}
	}
	failure := ""
	if len(bad) > 0 {
		failure = fmt.Sprintf("data integrity failure: %d corrupted block(s): %s", len(bad), strings.Join(bad, "; "))
	}
	return perVolumeResult(res.Name, fs, failure, "no corrupted block", "fio's verify found no corrupted block on %d volume(s)")
}

func fioIOErrors(fs record.FioSummary) record.CheckResult {
	res := record.CheckResult{Name: CheckFioIOErrors}
	var bad []string
	for _, v := range fs.Volumes {
		drain := v.DrainErrors
		var parts []string
		for _, e := range v.Errors {
			n := e.Count
			if fio.Errno(e.Errno) == fio.ENOTCONN {
				take := min(n, drain)
				n, drain = n-take, drain-take
			}
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%d × %s (%s)", n, errnoName(e), e.Class))
			}
		}
		if len(parts) > 0 {
			bad = append(bad, v.Volume+": "+strings.Join(parts, ", "))
		}
	}
	failure := ""
	if len(bad) > 0 {
		failure = "fio saw I/O errors: " + strings.Join(bad, "; ")
	}
	return perVolumeResult(res.Name, fs, failure, "no I/O error", "no I/O error on %d volume(s)")
}

// perVolumeResult is the verdict of a check judged per fio volume: fail
// with failure when it is not empty (naming the volumes whose evidence is
// missing too), inconclusive when some volume's fio evidence is missing,
// else pass. none says what the judged volumes were free of; passFmt takes
// the number of judged volumes.
func perVolumeResult(name string, fs record.FioSummary, failure, none, passFmt string) record.CheckResult {
	res := record.CheckResult{Name: name}
	blind, judged := fioBlind(fs)
	switch {
	case failure != "":
		res.Verdict = record.Fail
		res.Detail = failure
		if len(blind) > 0 {
			res.Detail += "; not judged, fio evidence missing: " + strings.Join(blind, "; ")
		}
	case len(blind) > 0:
		res.Verdict = record.Inconclusive
		res.Detail = fmt.Sprintf("%d of %d volume(s) not judged, fio evidence missing: %s; %s on the other %d",
			len(blind), len(fs.Volumes), strings.Join(blind, "; "), none, judged)
	default:
		res.Verdict = record.Pass
		res.Detail = fmt.Sprintf(passFmt, judged)
	}
	return res
}

func errnoName(e record.FioErrno) string {
	if e.Name != "" {
		return e.Name
	}
	return fmt.Sprintf("errno %d", e.Errno)
}

func problems(v record.FioVolume) string {
	if len(v.Problems) == 0 {
		return ""
	}
	return " (" + strings.Join(v.Problems, "; ") + ")"
}
