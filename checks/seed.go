package checks

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/record"
)

// The checks fiomig took from the operator's seed harness
// (fio_migration_test.py) and its successor sbtest (docs/sources.md §8). Each
// is a self-contained function of the plan and the record's lines; its
// threshold is plan.Params.Seed (record.SeedThresholds, flag in
// `fiomig run`).
const (
	CheckMigrationOutcomes = "migration-outcomes"
	CheckIOOutage          = "io-outage"
	CheckDataIntegrity     = "data-integrity"
	CheckControllerChurn   = "controller-churn"
	CheckLossTimeout       = "loss-timeout"
	CheckPathsPerSubsystem = "paths-per-subsystem"
	CheckDirtyStart        = "dirty-start"
	CheckTargetLogPattern  = "target-log-pattern"
)

// TargetLogPattern is the target log pattern target-log-pattern counts
// (sbtest logs.pattern: SPDK "does not allow host .* to connect at this
// address"), read from target lines' not_allowed_connects counter.
const TargetLogPattern = "does not allow host"

// DataIntegrityErrnos are the fio errnos data-integrity fails on (seed
// harness): 84 EILSEQ (verify/checksum), 5 EIO, 28 ENOSPC, 30 EROFS.
var DataIntegrityErrnos = map[int]string{84: "EILSEQ", 5: "EIO", 28: "ENOSPC", 30: "EROFS"}

// migSpan is a migration's first phase line, terminal phase and outcome.
type migSpan struct {
	id, nqn    string
	start, end float64
	outcome    string
	terminal   bool
}

// migrationSpans reads the phase lines, in order of first appearance.
func migrationSpans(lines []record.Line) []migSpan {
	idx := map[string]int{}
	var out []migSpan
	for _, l := range lines {
		if l.Kind != record.KindPhase {
			continue
		}
		i, ok := idx[l.Migration]
		if !ok {
			i = len(out)
			idx[l.Migration] = i
			out = append(out, migSpan{id: l.Migration, nqn: l.NQN, start: l.T, end: l.T})
		}
		m := &out[i]
		if !m.terminal {
			m.outcome, m.end, m.terminal = l.Phase, l.T, record.IsTerminal(l.Phase)
		}
	}
	return out
}

// MigrationOutcomes is the check "migration-outcomes" (sbtest
// migration.outcomes): at least MinCompleted of the migrations reach
// Completed within MigrationTimeoutS of their first phase line, and at most
// MaxTimedOut of them do not reach a terminal phase within it (the seed
// harness's "TIMEOUT"). Failing lists the migrations that did not complete.
func MigrationOutcomes(plan record.Plan, lines []record.Line) record.CheckResult {
	return migrationOutcomes(plan, lines, "")
}

// migrationOutcomes is MigrationOutcomes; with short (a short record's
// coverage note) a migration with no terminal phase whose record ends
// within MigrationTimeoutS of its start is still running, not timed out:
// the harness did not see its end. The check then fails only if it would
// fail even were every running one to complete in time, passes only if it
// would pass even were every one to time out, and is inconclusive
// otherwise, saying so.
func migrationOutcomes(plan record.Plan, lines []record.Line, short string) record.CheckResult {
	th := plan.Params.Seed
	r := record.CheckResult{Name: CheckMigrationOutcomes}
	migs := migrationSpans(lines)
	if len(migs) == 0 {
		r.Verdict, r.Detail = record.Inconclusive, "no migration in the record"
		return r
	}
	end := lastT(lines)
	completed, timedOut := 0, 0
	var failing, running []string
	for _, m := range migs {
		in := m.terminal && m.end-m.start <= th.MigrationTimeoutS
		switch {
		case in && m.outcome == record.PhaseCompleted:
			completed++
			continue
		case short != "" && !m.terminal && end-m.start <= th.MigrationTimeoutS:
			running = append(running, m.id)
			continue
		case !in:
			timedOut++
		}
		failing = append(failing, m.id)
	}
	// On a short record the planned migrations not in it have not started
	// yet: each could still complete or time out, like a running one, and
	// the fractions are over the planned count.
	unstarted := 0
	if short != "" {
		unstarted = max(0, plan.Params.Migrations-len(migs))
	}
	n := float64(len(migs) + unstarted)
	u := len(running) + unstarted
	fc, ft := float64(completed)/float64(len(migs)), float64(timedOut)/float64(len(migs))
	r.Detail = fmt.Sprintf("%d of %d completed within %s (%.2f, want >= %.2f), %d timed out (%.2f, want <= %.2f)",
		completed, len(migs), fmtS(th.MigrationTimeoutS), fc, th.MinCompleted, timedOut, ft, th.MaxTimedOut)
	if len(running) > 0 {
		r.Detail += fmt.Sprintf(", %d still running when the record ends at %s, less than %s after their start (%s)",
			len(running), fmtS(end), fmtS(th.MigrationTimeoutS), strings.Join(running, ", "))
	}
	if unstarted > 0 {
		r.Detail += fmt.Sprintf(", %d of the %d planned migrations not started", unstarted, len(migs)+unstarted)
	}
	if u > 0 {
		r.Detail += ": " + short
	}
	// Fail if even every running (or unstarted) migration completing in
	// time would fail.
	if float64(completed+u)/n < th.MinCompleted || float64(timedOut)/n > th.MaxTimedOut {
		r.Verdict, r.Failing = record.Fail, failing
		r.Detail += "; not completed: " + strings.Join(failing, ", ")
		return r
	}
	// Pass if even every running (or unstarted) migration timing out would
	// pass.
	if float64(completed)/n >= th.MinCompleted && float64(timedOut+u)/n <= th.MaxTimedOut {
		r.Verdict = record.Pass
		return r
	}
	r.Verdict = record.Inconclusive
	return r
}

// podKey names one workload stream: a pod, else volume@host.
func podKey(l record.Line) string {
	if l.Pod != "" {
		return l.Pod
	}
	return l.Volume + "@" + l.Host
}

// hasWorkload: the record has io lines, or the plan says it ran pods.
func hasWorkload(plan record.Plan, lines []record.Line) bool {
	if plan.Params.Model.Pods {
		return true
	}
	for _, l := range lines {
		if l.Kind == record.KindIO {
			return true
		}
	}
	return false
}

// lastT is the last time in the record.
func lastT(lines []record.Line) float64 {
	if len(lines) == 0 {
		return 0
	}
	return lines[len(lines)-1].T
}

// IOOutage is the check "io-outage" (seed harness --outage-seconds, sbtest
// fio.outage): no I/O completed on a volume for OutageS or longer fails.
// An outage is a run of consecutive io lines of one pod with completed 0,
// as long as the number of lines times their spacing (1 s when a run has a
// single line: fio's per-second log); a pod that was killed is out from
// its last io line to the end of the record. ok is false when the record
// has no workload (the check is then not made).
func IOOutage(plan record.Plan, lines []record.Line) (res record.CheckResult, ok bool) {
	if !hasWorkload(plan, lines) {
		return res, false
	}
	th := plan.Params.Seed
	res.Name = CheckIOOutage
	type run struct {
		first, last float64
		n           int
	}
	open := map[string]*run{}
	streams := map[string]bool{}
	var found []string
	longest := 0.0
	judge := func(k string, r *run, end float64) {
		d := r.last - r.first
		if r.n > 1 {
			d += d / float64(r.n-1)
		} else {
			d = 1
		}
		if end > 0 {
			d = end - r.first
		}
		longest = max(longest, d)
		if d >= th.OutageS {
			found = append(found, fmt.Sprintf("%s %s from %s", k, fmtS(d), fmtS(r.first)))
		}
	}
	end := lastT(lines)
	for _, l := range lines {
		if l.Kind != record.KindIO {
			continue
		}
		k := podKey(l)
		streams[k] = true
		if l.PodState == "killed" {
			r := open[k]
			if r == nil {
				r = &run{first: l.T, last: l.T, n: 1}
			}
			judge(k+" (killed)", r, end)
			open[k] = nil
			delete(open, k)
			continue
		}
		if l.Completed != nil && *l.Completed == 0 {
			if r := open[k]; r != nil {
				r.last, r.n = l.T, r.n+1
			} else {
				open[k] = &run{first: l.T, last: l.T, n: 1}
			}
			continue
		}
		if r := open[k]; r != nil {
			judge(k, r, 0)
			delete(open, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(open)) {
		judge(k+" (to the end)", open[k], 0)
	}
	switch {
	case len(streams) == 0:
		res.Verdict, res.Detail = record.Inconclusive, "the run had a workload but the record has no io line"
	case len(found) > 0:
		res.Verdict = record.Fail
		res.Detail = fmt.Sprintf("%d outage(s) of no I/O >= %s: %s", len(found), fmtS(th.OutageS), strings.Join(found, "; "))
	default:
		res.Verdict = record.Pass
		res.Detail = fmt.Sprintf("longest run without I/O %s < %s over %d workload stream(s)", fmtS(longest), fmtS(th.OutageS), len(streams))
	}
	return res, true
}

// DataIntegrity is the check "data-integrity" (seed harness
// VERIFY_LAG_S, sbtest fio.checksum): an io line with a verify failure
// (verify_errors > 0) or an errno of DataIntegrityErrnos fails. Each is
// charged to the migration of its subsystem that started last before it
// and ended at most VerifyLagS before it (fio detects lost writes 3–34 s
// later); Failing lists those migrations, and the detail names any failure
// no migration explains. ok is false when the record has no workload.
func DataIntegrity(plan record.Plan, lines []record.Line) (res record.CheckResult, ok bool) {
	if !hasWorkload(plan, lines) {
		return res, false
	}
	th := plan.Params.Seed
	res.Name = CheckDataIntegrity
	migs := migrationSpans(lines)
	charged := map[string]int64{}
	var loose []string
	bad := 0
	pods := map[string]bool{}
	for _, l := range lines {
		if l.Kind != record.KindIO {
			continue
		}
		pods[podKey(l)] = true
		name, isBad := DataIntegrityErrnos[l.Errno]
		blocks := int64(0)
		if l.VerifyErrors != nil {
			blocks = *l.VerifyErrors
		}
		if !isBad && blocks == 0 {
			continue
		}
		bad++
		if name == "" {
			name = "verify"
		}
		var by *migSpan
		for i := range migs {
			m := &migs[i]
			if m.nqn == l.NQN && m.start <= l.T && l.T <= m.end+th.VerifyLagS {
				by = m
			}
		}
		if by == nil {
			loose = append(loose, fmt.Sprintf("%s %s at %s", podKey(l), name, fmtS(l.T)))
			continue
		}
		charged[by.id] += max(blocks, 1)
	}
	switch {
	case len(pods) == 0:
		res.Verdict, res.Detail = record.Inconclusive, "the run had a workload but the record has no io line"
	case bad > 0:
		res.Verdict = record.Fail
		var parts []string
		for _, id := range slices.Sorted(maps.Keys(charged)) {
			parts = append(parts, fmt.Sprintf("%s %d block(s)", id, charged[id]))
			res.Failing = append(res.Failing, id)
		}
		res.Detail = fmt.Sprintf("%d io interval(s) with a verify failure or errno %s; within %s of a migration: %s",
			bad, errnoList(), fmtS(th.VerifyLagS), orNone(strings.Join(parts, ", ")))
		if len(loose) > 0 {
			res.Detail += "; outside every migration: " + strings.Join(loose, ", ")
		}
	default:
		res.Verdict = record.Pass
		res.Detail = fmt.Sprintf("no verify failure and no errno %s on %d workload stream(s)", errnoList(), len(pods))
	}
	return res, true
}

func errnoList() string {
	var s []string
	for _, e := range slices.Sorted(maps.Keys(DataIntegrityErrnos)) {
		s = append(s, fmt.Sprintf("%d %s", e, DataIntegrityErrnos[e]))
	}
	return strings.Join(s, "/")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ControllerChurn is the check "controller-churn" (sbtest
// nvme.controller-churn), from the kernel lines: more controllers created
// ("new ctrl") than removed ("Removing ctrl"/"Removing controller") per
// subsystem and host than MaxNetControllers fails, and so does a
// controller whose reconnect attempt count ("Failed reconnect attempt N",
// the kernel's counter, as sbtest's dmesg pattern reads it) exceeds
// MaxReconnects. ok is false when the record has no kernel line (the
// backend does not log the host kernel): the check is then not made.
func ControllerChurn(plan record.Plan, lines []record.Line) (res record.CheckResult, ok bool) {
	th := plan.Params.Seed
	r := record.CheckResult{Name: CheckControllerChurn}
	c, ok := tallyChurn(plan, lines)
	if !ok {
		return r, false
	}
	if found := append(c.net, c.reconnects...); len(found) > 0 {
		r.Verdict = record.Fail
		r.Detail = fmt.Sprintf("%d finding(s) over %d net controllers per subsystem and host or %d reconnect attempts: %s",
			len(found), th.MaxNetControllers, th.MaxReconnects, strings.Join(found, "; "))
		return r, true
	}
	r.Verdict = record.Pass
	r.Detail = fmt.Sprintf("at most %d net controllers created per subsystem and host (<= %d); no controller past %d reconnect attempts",
		c.mostNet, th.MaxNetControllers, th.MaxReconnects)
	return r, true
}

// churnTally is what controller-churn reads from the kernel lines: net
// (hosts and subsystems over MaxNetControllers controllers created minus
// removed by the record's last line), reconnects (controllers past
// MaxReconnects attempts, whenever seen) and the most net controllers of
// one subsystem on one host.
type churnTally struct {
	net, reconnects []string
	mostNet         int
}

// tallyChurn tallies lines for controller-churn; ok is false when the
// record has no kernel line.
func tallyChurn(plan record.Plan, lines []record.Line) (c churnTally, ok bool) {
	th := plan.Params.Seed
	type key struct{ host, nqn string }
	net := map[key]int{}
	nqnOf := map[key]string{} // (host, controller) -> nqn
	over := map[key]bool{}    // (host, "controller nqn") past MaxReconnects
	seen := 0
	for _, l := range lines {
		if l.Kind != record.KindKernel {
			continue
		}
		seen++
		ck := key{l.Host, l.Controller}
		switch e := l.Event(); e.Kind {
		case record.KernelNewCtrl:
			nqnOf[ck] = e.NQN
			net[key{l.Host, e.NQN}]++
		case record.KernelRemoved, record.KernelDisconnected:
			if nqn, ok := nqnOf[ck]; ok {
				net[key{l.Host, nqn}]--
				delete(nqnOf, ck)
			}
		case record.KernelReconnectFailed:
			if e.Attempt > th.MaxReconnects {
				over[key{l.Host, l.Controller + " " + nqnOf[ck]}] = true
			}
		}
	}
	if seen == 0 {
		return c, false
	}
	byHostNQN := func(a, b key) int { return cmp.Or(cmp.Compare(a.host, b.host), cmp.Compare(a.nqn, b.nqn)) }
	for _, k := range slices.SortedFunc(maps.Keys(net), byHostNQN) {
		c.mostNet = max(c.mostNet, net[k])
		if net[k] > th.MaxNetControllers {
			c.net = append(c.net, fmt.Sprintf("%s: %d net controllers created for %s", k.host, net[k], k.nqn))
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(over), byHostNQN) {
		c.reconnects = append(c.reconnects, fmt.Sprintf("%s %s: more than %d reconnect attempts", k.host, strings.TrimSpace(k.nqn), th.MaxReconnects))
	}
	return c, true
}

// notJudgedShort makes the seed checks judged on the state at the end of
// the record inconclusive when the record is short (cov.Short: a killed or
// interrupted run stops before the end of the settle period, or holds
// fewer migrations than planned), as leaked-controllers and
// path-completeness are: the harness did not see the end. A migration
// still running at the record's end is not counted as timed out
// (migrationOutcomes). Mid-migration a
// host holds the source's and the target's controllers and the kernel has
// created controllers it has not removed yet, so paths-per-subsystem (each
// host's last sample) and controller-churn's net controllers (created
// minus removed by the last line) are not judged; their detail gives the
// reason and what the last line showed. What was seen is kept: a
// controller past MaxReconnects reconnect attempts still fails
// controller-churn. A check SeedChecks did not make for want of its lines
// (controller-churn, loss-timeout, target-log-pattern) is made
// inconclusive instead: on a short record the lines may not have come yet,
// so re-judging a killed run's (or an empty) timeline lists every check
// (issue 27). lines are the ones SeedChecks read; it returns results
// changed and completed.
func notJudgedShort(results []record.CheckResult, plan record.Plan, lines []record.Line, cov record.Coverage) []record.CheckResult {
	if !cov.Short {
		return results
	}
	th := plan.Params.Seed
	for i, r := range results {
		switch r.Name {
		case CheckMigrationOutcomes:
			results[i] = migrationOutcomes(plan, lines, "not judged: "+cov.Note)
		case CheckPathsPerSubsystem:
			if r.Verdict == record.Inconclusive {
				continue
			}
			results[i].Verdict = record.Inconclusive
			results[i].Detail = fmt.Sprintf("not judged: %s; the last samples would %s: %s", cov.Note, r.Verdict, r.Detail)
		case CheckControllerChurn:
			c, _ := tallyChurn(plan, lines)
			netNote := fmt.Sprintf("net controllers not judged: %s; by its last line at most %d net controllers per subsystem and host (bound %d)",
				cov.Note, c.mostNet, th.MaxNetControllers)
			if len(c.net) > 0 {
				netNote += ": " + strings.Join(c.net, "; ")
			}
			if len(c.reconnects) > 0 {
				results[i].Verdict = record.Fail
				results[i].Detail = fmt.Sprintf("%d controller(s) over %d reconnect attempts: %s; %s",
					len(c.reconnects), th.MaxReconnects, strings.Join(c.reconnects, "; "), netNote)
				continue
			}
			results[i].Verdict, results[i].Detail = record.Inconclusive, netNote
		}
	}
	for _, m := range []struct{ name, lines string }{
		{CheckControllerChurn, "no kernel line"},
		{CheckLossTimeout, "no controller's ctrl_loss_tmo"},
		{CheckTargetLogPattern, "no target line with the not_allowed_connects counter"},
	} {
		if slices.ContainsFunc(results, func(c record.CheckResult) bool { return c.Name == m.name }) {
			continue
		}
		at := len(results)
		for i, c := range results {
			if slices.Index(seedOrder, c.Name) > slices.Index(seedOrder, m.name) {
				at = i
				break
			}
		}
		results = slices.Insert(results, at, record.CheckResult{Name: m.name, Verdict: record.Inconclusive,
			Detail: fmt.Sprintf("not judged: %s; the record has %s", cov.Note, m.lines)})
	}
	return results
}

// firstLastSamples are each host's first and last sample line.
func firstLastSamples(lines []record.Line) (first, last map[string]record.Line) {
	first, last = map[string]record.Line{}, map[string]record.Line{}
	for _, l := range lines {
		if l.Kind != record.KindSample {
			continue
		}
		if _, ok := first[l.Host]; !ok {
			first[l.Host] = l
		}
		last[l.Host] = l
	}
	return first, last
}

// LossTimeout is the check "loss-timeout" (sbtest nvme.loss-timeout): a
// controller whose ctrl_loss_tmo is above MaxCtrlLossTmoS, or off (-1,
// retry forever), in any sample warns; such a controller keeps retrying a
// gone endpoint for that long. ok is false when no sample carries a
// ctrl_loss_tmo (the check is then not made).
func LossTimeout(plan record.Plan, lines []record.Line) (res record.CheckResult, ok bool) {
	acc := lossAcc{over: map[string]int{}}
	for _, l := range lines {
		if l.Kind == record.KindSample {
			acc.add(l, plan)
		}
	}
	return acc.result(plan)
}

// lossAcc is LossTimeout over samples fed one by one (the streaming Judge
// feeds each changed state once): the controllers over the bound, by
// "host name (address)", with the last value seen over it.
type lossAcc struct {
	over map[string]int
	read int
}

func (a *lossAcc) add(l record.Line, plan record.Plan) {
	th := plan.Params.Seed
	for _, c := range l.Controllers {
		if c.CtrlLossTmo == nil {
			continue
		}
		a.read++
		if t := *c.CtrlLossTmo; t > th.MaxCtrlLossTmoS || t < 0 {
			a.over[fmt.Sprintf("%s %s (%s)", l.Host, c.Name, c.Address)] = t
		}
	}
}

func (a *lossAcc) result(plan record.Plan) (record.CheckResult, bool) {
	th := plan.Params.Seed
	r := record.CheckResult{Name: CheckLossTimeout}
	over := a.over
	switch {
	case a.read == 0:
		return r, false
	case len(over) > 0:
		var s []string
		for _, k := range slices.Sorted(maps.Keys(over)) {
			s = append(s, fmt.Sprintf("%s %d s", k, over[k]))
		}
		r.Verdict = record.Warn
		r.Detail = fmt.Sprintf("%d controller(s) with ctrl_loss_tmo above %d s (or off): %s", len(over), th.MaxCtrlLossTmoS, strings.Join(s, ", "))
	default:
		r.Verdict, r.Detail = record.Pass, fmt.Sprintf("every controller's ctrl_loss_tmo <= %d s", th.MaxCtrlLossTmoS)
	}
	return r, true
}

// PathsPerSubsystem is the check "paths-per-subsystem" (sbtest
// nvme.stale-controllers, expected_paths_per_subsystem 3): more than
// MaxPaths controllers of one subsystem on a host in its last sample warns.
func PathsPerSubsystem(plan record.Plan, lines []record.Line) record.CheckResult {
	th := plan.Params.Seed
	r := record.CheckResult{Name: CheckPathsPerSubsystem}
	_, last := firstLastSamples(lines)
	if len(last) == 0 {
		r.Verdict, r.Detail = record.Inconclusive, "no sample in the record"
		return r
	}
	var found []string
	most := 0
	for _, h := range slices.Sorted(maps.Keys(last)) {
		n := map[string]int{}
		for _, c := range last[h].Controllers {
			n[c.NQN]++
		}
		for _, nqn := range slices.Sorted(maps.Keys(n)) {
			most = max(most, n[nqn])
			if n[nqn] > th.MaxPaths {
				found = append(found, fmt.Sprintf("%s: %d controllers for %s", h, n[nqn], nqn))
			}
		}
	}
	if len(found) > 0 {
		r.Verdict = record.Warn
		r.Detail = fmt.Sprintf("more than %d paths per subsystem at the end: %s", th.MaxPaths, strings.Join(found, "; "))
		return r
	}
	r.Verdict, r.Detail = record.Pass, fmt.Sprintf("at most %d paths per subsystem and host at the end (<= %d)", most, th.MaxPaths)
	return r
}

// DirtyStart is the check "dirty-start" (sbtest nvme.dirty-start): a
// controller in a host's first sample that is connecting or resetting, or
// live with no leg (serving no namespace), was leaked before the run: the
// run cannot tell its own leaks from those, so it is inconclusive.
func DirtyStart(plan record.Plan, lines []record.Line) record.CheckResult {
	r := record.CheckResult{Name: CheckDirtyStart}
	first, _ := firstLastSamples(lines)
	if len(first) == 0 {
		r.Verdict, r.Detail = record.Inconclusive, "no sample in the record"
		return r
	}
	var found []string
	for _, h := range slices.Sorted(maps.Keys(first)) {
		for _, c := range first[h].Controllers {
			if c.State == "connecting" || c.State == "resetting" || (c.State == "live" && len(c.Legs) == 0) {
				found = append(found, fmt.Sprintf("%s %s (%s, %s, %d legs)", h, c.Name, c.Address, c.State, len(c.Legs)))
			}
		}
	}
	if len(found) > 0 {
		r.Verdict = record.Inconclusive
		r.Detail = fmt.Sprintf("dirty start: %d controller(s) leaked before the run: %s", len(found), strings.Join(found, ", "))
		return r
	}
	r.Verdict, r.Detail = record.Pass, fmt.Sprintf("clean start: the first sample of %d host(s) shows no controller left connecting or without a namespace", len(first))
	return r
}

// TargetLogPatternCheck is the check "target-log-pattern" (sbtest
// logs.pattern): MaxNotAllowed or more target rejections logged as
// TargetLogPattern over the run (the growth of every node's
// not_allowed_connects) fails. ok is false when no target line carries
// that counter (the check is then not made).
func TargetLogPatternCheck(plan record.Plan, lines []record.Line) (res record.CheckResult, ok bool) {
	th := plan.Params.Seed
	r := record.CheckResult{Name: CheckTargetLogPattern}
	first, last := map[string]int64{}, map[string]int64{}
	for _, l := range lines {
		if l.Kind != record.KindTarget || l.NotAllowedConnects == nil {
			continue
		}
		if _, ok := first[l.Node]; !ok {
			first[l.Node] = *l.NotAllowedConnects
		}
		last[l.Node] = *l.NotAllowedConnects
	}
	if len(last) == 0 {
		return r, false
	}
	var total int64
	var per []string
	for _, n := range slices.Sorted(maps.Keys(last)) {
		d := last[n] - first[n]
		total += d
		if d > 0 {
			per = append(per, fmt.Sprintf("%s %d", n, d))
		}
	}
	r.Detail = fmt.Sprintf("%d \"%s\" rejection(s) logged (fail at >= %d)", total, TargetLogPattern, th.MaxNotAllowed)
	if len(per) > 0 {
		r.Detail += ": " + strings.Join(per, ", ")
	}
	r.Verdict = record.Pass
	if total >= int64(th.MaxNotAllowed) {
		r.Verdict = record.Fail
	}
	return r, true
}

// seedOrder is the order SeedChecks makes the seed harness's checks in.
var seedOrder = []string{CheckMigrationOutcomes, CheckIOOutage, CheckDataIntegrity, CheckControllerChurn,
	CheckLossTimeout, CheckPathsPerSubsystem, CheckDirtyStart, CheckTargetLogPattern}

// SeedChecks are the seed harness's checks in their order. A check whose
// lines the record does not carry at all is not made (like the fio checks
// outside fio runs): io-outage and data-integrity without a workload,
// controller-churn without kernel lines, loss-timeout without
// ctrl_loss_tmo in the samples, target-log-pattern without the target's
// not_allowed_connects counter. The embedded simulator records them all.
func SeedChecks(plan record.Plan, lines []record.Line) []record.CheckResult {
	out := []record.CheckResult{MigrationOutcomes(plan, lines)}
	for _, f := range []func(record.Plan, []record.Line) (record.CheckResult, bool){IOOutage, DataIntegrity, ControllerChurn, LossTimeout} {
		if r, ok := f(plan, lines); ok {
			out = append(out, r)
		}
	}
	out = append(out, PathsPerSubsystem(plan, lines), DirtyStart(plan, lines))
	if r, ok := TargetLogPatternCheck(plan, lines); ok {
		out = append(out, r)
	}
	return out
}

// JudgesLine returns the filter of the lines the Judge reads for plan:
// every kind Judges accepts, plus what the seed harness's checks read —
// target lines; kernel lines of controllers created or removed, keep-alive
// timeouts (which the Judge reads too), the one reconnect attempt of a
// controller that crosses MaxReconnects, and each host's first kernel line
// (the Judge's sign that the record has the host's kernel log, unheard.go); io
// lines except plain running intervals with I/O completed (a pod's first
// line, and the first plain line after a non-plain one, are kept). The
// checks give the same result on the filtered lines as on the whole
// timeline. The filter keeps state: one per timeline.
func JudgesLine(plan record.Plan) func(record.Line) bool {
	cross := plan.Params.Seed.MaxReconnects + 1
	prevPlain := map[string]bool{}
	kernelSeen := map[string]bool{}
	return func(l record.Line) bool {
		switch l.Kind {
		case record.KindTarget:
			return true
		case record.KindKernel:
			if !kernelSeen[l.Host] {
				kernelSeen[l.Host] = true
				return true
			}
			switch e := l.Event(); e.Kind {
			case record.KernelReconnectFailed:
				return e.Attempt == cross
			case record.KernelNewCtrl, record.KernelRemoved, record.KernelDisconnected, record.KernelKeepAliveTimeout:
				return true
			}
			return false
		case record.KindIO:
			k := podKey(l)
			was, seen := prevPlain[k]
			plain := l.Completed != nil && *l.Completed > 0 && l.Errno == 0 && (l.VerifyErrors == nil || *l.VerifyErrors == 0) && l.PodState != "killed"
			prevPlain[k] = plain
			return !seen || !plain || !was
		}
		return Judges(l.Kind)
	}
}
