package analysis

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
)

// The figures of incident fio-mig-1787159565 (docs/sources.md §9.1,
// docs/incidents.md), computed from a run record alone, and the shape each
// operator variant is expected to show (issue 4, acceptance).

// IncidentFigures are what the incident report compares: computed from
// plan.json, timeline.jsonl and summary.json only.
type IncidentFigures struct {
	// Incident is the catalogue name reproduced (plan params.incident).
	Incident string `json:"incident,omitempty"`
	Operator string `json:"operator"`
	Seed     int64  `json:"seed"`
	// ReconnectReset is the kernel switch the run used ("full" = upstream).
	ReconnectReset string `json:"reconnect_reset"`

	Migrations int `json:"migrations"`
	Volumes    int `json:"volumes"`
	// Outcomes counts migrations by outcome (terminal phase or last phase).
	Outcomes map[string]int `json:"outcomes"`
	// ValidationFailed are the migrations that failed on NVMe path validation.
	ValidationFailed int `json:"validation_failed"`
	// LeakCaused are those whose failing controller an earlier migration
	// (or a dirty start) had created and left behind.
	LeakCaused int `json:"leak_caused"`
	// Failures are the validation failures, in time order.
	Failures []ValidationFailure `json:"failures"`

	// ControllersPerHost and ExpectedPerHost are each host's controllers
	// (of the run's subsystems, any state) in its last sample, and what it
	// should have: one per published endpoint of each volume it consumes.
	ControllersPerHost map[string]int `json:"controllers_per_host"`
	ExpectedPerHost    map[string]int `json:"expected_per_host"`
	Controllers        int            `json:"controllers"`
	Expected           int            `json:"expected"`
	// Leaked are the leak check's findings after the settle period
	// (summary.json leaked_controllers); LeakedByState counts them by state.
	Leaked        int            `json:"leaked"`
	LeakedByState map[string]int `json:"leaked_by_state"`
	// LeakedConnecting and LeakedLiveNoNamespace are the incident's two
	// kinds: connecting, or live with no namespace.
	LeakedConnecting      int `json:"leaked_connecting"`
	LeakedLiveNoNamespace int `json:"leaked_live_no_namespace"`
	// LeakedConnectingOrNoNamespace is their sum: the incident's "connecting
	// or live with zero namespaces".
	LeakedConnectingOrNoNamespace int `json:"leaked_connecting_or_no_namespace"`
	// LeakedKinds counts every leak once, so that the parts sum to Leaked:
	// "connecting" (any leak kind), "live no namespace", and otherwise
	// "<state> <leak kind>" from summary.json (e.g. "live stale-endpoint").
	LeakedKinds map[string]int `json:"leaked_kinds"`
	// LeakOrigins counts the leaks by where their controller came from:
	// "validation of a failed migration", "path of a completed migration",
	// "volume path (csi)".
	LeakOrigins map[string]int `json:"leak_origins"`
	// Healthy are the Controllers the leak check does not name;
	// MissingEndpoints the published endpoints with no controller on a
	// consumer host (summary.json missing_endpoints).
	Healthy          int                      `json:"healthy"`
	MissingEndpoints []record.MissingEndpoint `json:"missing_endpoints"`
	// LeakCheck and CompletenessCheck are the run's own verdicts of the
	// leaked-controllers and path-completeness checks (summary.json).
	LeakCheck         record.CheckResult `json:"leak_check"`
	CompletenessCheck record.CheckResult `json:"completeness_check"`
	// Plans are each migration's plan from its Pending line: "NQN
	// source endpoints -> target endpoints" (DescribePair finds where the
	// two operators' plans diverge).
	Plans map[string]string `json:"plans"`
	// FailureCauses counts the validation failures by ValidationFailure.Cause.
	FailureCauses map[string]int `json:"failure_causes"`
	// The validation failures by cause class (docs/sources.md §9.4), for bands:
	// the sbcli subsystem-loss window; a leak kind the fix removes
	// (FixRemovedCauses); an injected fault; unexplained.
	FailedSubsystemLoss  int `json:"failed_subsystem_loss"`
	FailedFixRemovedLeak int `json:"failed_fix_removed_leak"`
	FailedInjectedFault  int `json:"failed_injected_fault"`
	FailedUnexplained    int `json:"failed_unexplained"`
	// CancelLosses are controllers and paths of a volume lost at an
	// endpoint of its source that a migration of the same volume, cancelled
	// before continue (Failed or Aborted without Running), listed — what
	// sbcli's cancel path does when it deletes the subsystem on a target
	// node that was the source's tertiary.
	CancelLosses []CancelLoss `json:"cancel_losses,omitempty"`
	// LeaksRemovedByKernel counts controllers the kernel removed after
	// max_reconnects ("Removing controller" kernel lines) — leaks that
	// expired before the end.
	LeaksRemovedByKernel int `json:"leaks_removed_by_kernel"`

	// LeaksHealed counts controllers created during a migration that then
	// failed or was aborted (leaks) that later reconnected live ("Successfully
	// reconnected"): their endpoint came back.
	LeaksHealed int `json:"leaks_healed"`

	// RejectionsPerMin is the targets' CONNECT rejections per minute over
	// the last RejectionWindowS seconds of the run (all nodes).
	RejectionsPerMin float64 `json:"rejections_per_min"`
	RejectionWindowS float64 `json:"rejection_window_s"`
	// Pods: the run had fio pods (plan params.model.pods); PodsKilled
	// are those that died (io lines with pod_state killed).
	Pods           bool     `json:"pods,omitempty"`
	PodsKilled     int      `json:"pods_killed"`
	PodsKilledList []string `json:"pods_killed_list,omitempty"`
	// PodKills say why each killed pod's volume stopped serving it
	// (podKillCause), in kill order.
	PodKills []PodKill `json:"pod_kills,omitempty"`
	// LongestPauseS is the longest pause window of the run, attributed or not.
	LongestPauseS float64 `json:"longest_pause_s"`
	// MigrationsRefrozen counts the migrations whose cutover froze a
	// volume more than once (summary.json migrations[].freezes > 1).
	MigrationsRefrozen int `json:"migrations_refrozen"`
	// FaultsInjected counts faults that left evidence (inject lines with
	// evidence, and landed lines of faults whose effect came later).
	FaultsInjected int `json:"faults_injected"`
	// FaultsCheck is the run's faults-landed check (summary.json):
	// inconclusive when a fault left no evidence.
	FaultsCheck record.CheckResult `json:"faults_check"`
	// FaultsOutlasted are the faults that landed (left evidence) while a
	// migration was Validating and whose migration did not fail its path
	// validation: the validation Job's retries (3 attempts, 2 s apart)
	// outlasted them. One entry per fault, "<fault> <target> during <migration>".
	FaultsOutlasted []string `json:"faults_outlasted,omitempty"`
}

// ValidationFailure is one migration that failed path validation: the
// controller that failed it and where that controller came from.
type ValidationFailure struct {
	Migration  string  `json:"migration"`
	NQN        string  `json:"nqn"`
	AtS        float64 `json:"at_s"`
	Host       string  `json:"host"`
	Controller string  `json:"controller,omitempty"`
	Endpoint   string  `json:"endpoint,omitempty"`
	State      string  `json:"state,omitempty"`
	// Origin is the migration that created the controller (its validation
	// connected it), "csi" for a volume path, "leftover" for a dirty
	// start, "" when unknown or when no controller was blamed.
	Origin string `json:"origin,omitempty"`
	// OriginSource says where Origin comes from: "record" (the phase
	// line's details) or "timeline" (the kernel's "new ctrl" line of that
	// controller dated into a migration's span).
	OriginSource string `json:"origin_source,omitempty"`
	// LeakCaused: Origin is an earlier migration or a leftover.
	LeakCaused bool `json:"leak_caused"`
	// Signal is how it failed: "leak" (a controller an earlier migration
	// left), "own controller" (one this validation created), "volume path"
	// (a CSI controller), "no-answer" (CONNECT unanswered: dropped
	// CONNECTs), "refused" (TCP refused: nothing listens at that ip:port),
	// "rejected" (the target listens but does not expose the subsystem
	// there to the host), "other".
	Signal string `json:"signal"`
	// Cause is why, one of the Cause* names of docs/sources.md §9.4
	// (reproduce_causes.go): the sbcli subsystem-loss window, a leak kind,
	// an injected fault (with its kind), or unexplained (with the signal).
	Cause string `json:"cause"`
	// CancelledBy is, for a subsystem-loss failure, the latest earlier
	// migration of the same volume cancelled before continue whose source
	// listed the failing node (its cancel deleted the subsystem there).
	CancelledBy string `json:"cancelled_by,omitempty"`
	Detail      string `json:"detail"`
}

// CancelLoss is one controller or path a volume lost to a cancel (see
// IncidentFigures.CancelLosses).
type CancelLoss struct {
	// What is "leaked" (a connecting controller left at a published
	// endpoint) or "missing" (the kernel removed it: the endpoint has no
	// controller).
	What       string `json:"what"`
	Host       string `json:"host"`
	Controller string `json:"controller,omitempty"`
	NQN        string `json:"nqn"`
	Endpoint   string `json:"endpoint"`
	// Migration is the cancelled migration, AtS when it ended.
	Migration string  `json:"migration"`
	AtS       float64 `json:"at_s"`
}

// RejectionWindowS is the stretch at the end of the run over which CONNECT
// rejections per minute are measured, seconds.
const RejectionWindowS = 600.0

var (
	reHost = regexp.MustCompile(`on (?:host )?([A-Za-z0-9._-]+):`)
	reCtrl = regexp.MustCompile(`\b(nvme\d+)\b`)
)

// IncidentLines reads a timeline.jsonl and returns the lines the
// incident's figures need (IncidentKeeper's selection). A run keeps them
// while it writes them (ReproduceOptions through Config.OnLine), so this
// is for a timeline read back from disk. Errors name the file and line.
func IncidentLines(path string) ([]record.Line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read timeline: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var k IncidentKeeper
	for n := 1; ; n++ {
		b, err := br.ReadSlice('\n')
		for err == bufio.ErrBufferFull {
			// A line longer than the buffer: gather it whole.
			long := append([]byte(nil), b...)
			for err == bufio.ErrBufferFull {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if len(bytes.TrimSpace(b)) > 0 {
			var l record.Line
			if derr := json.Unmarshal(b, &l); derr != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n, derr)
			}
			k.Add(l)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return k.Lines(), nil
}

// IncidentKeeper keeps, from a run's timeline lines given in order, only
// those the incident's figures need: phase, endpoints, fault, target,
// format and heartbeat lines, kernel lines of controllers created,
// reconnected, removed or rejected by subsystem NQN, io lines of killed
// pods, each host's sample before a failed migration (the legs of the
// controller that failed it) and each host's last sample, and the last
// line. The zero value is ready; memory: the kept lines and one sample
// per host.
type IncidentKeeper struct {
	out     []record.Line
	samples map[string]record.Line
	emitted map[string]bool // samples[h] is already in out
	hosts   []string
	last    record.Line
	any     bool
}

// Add takes the next timeline line.
func (k *IncidentKeeper) Add(l record.Line) {
	k.last, k.any = l, true
	switch l.Kind {
	case record.KindSample:
		if k.samples == nil {
			k.samples, k.emitted = map[string]record.Line{}, map[string]bool{}
		}
		if _, ok := k.samples[l.Host]; !ok {
			k.hosts = append(k.hosts, l.Host)
		}
		k.samples[l.Host] = l
		k.emitted[l.Host] = false
	case record.KindKernel:
		switch l.Event().Kind {
		case record.KernelNewCtrl, record.KernelRemoved, record.KernelReconnected, record.KernelSubsysNotFound:
			k.out = append(k.out, l)
		}
	case record.KindIO:
		if l.PodState == "killed" {
			k.out = append(k.out, l)
		}
	default:
		if l.Kind == record.KindPhase && l.Phase == record.PhaseFailed {
			for _, h := range k.hosts {
				if !k.emitted[h] {
					k.emitted[h] = true
					k.out = append(k.out, k.samples[h])
				}
			}
		}
		k.out = append(k.out, l)
	}
}

// Lines are the kept lines: in timeline order, then each host's last
// sample not yet kept, then the last line.
func (k *IncidentKeeper) Lines() []record.Line {
	out := slices.Clip(k.out)
	for _, h := range k.hosts {
		if !k.emitted[h] {
			out = append(out, k.samples[h])
		}
	}
	if k.any {
		out = append(out, k.last)
	}
	return out
}

// ComputeIncidentFigures computes the figures from a run record: plan.json,
// the timeline's lines (all of them, or those IncidentLines keeps) and
// summary.json. One pass indexes the lines (indexRun); each figure is then
// derived from the index in its own step.
func ComputeIncidentFigures(plan record.Plan, lines []record.Line, sum record.Summary) IncidentFigures {
	f := IncidentFigures{Incident: plan.Params.Incident, Operator: plan.Params.Model.Operator, Seed: plan.Seed,
		ReconnectReset: plan.Params.Model.ReconnectReset, Pods: plan.Params.Model.Pods, Outcomes: map[string]int{},
		ControllersPerHost: map[string]int{}, ExpectedPerHost: map[string]int{}, LeakedByState: map[string]int{},
		RejectionWindowS: RejectionWindowS, Failures: []ValidationFailure{}, LeakedKinds: map[string]int{},
		LeakOrigins: map[string]int{}, FailureCauses: map[string]int{}, MissingEndpoints: []record.MissingEndpoint{},
		Plans: map[string]string{}}
	x := indexRun(plan, lines, &f)
	f.Migrations = len(x.spans)
	f.Volumes = len(plan.Topology.Volumes)
	f.FaultsOutlasted = faultsOutlasted(lines, x.landed, f.Failures)
	for _, s := range x.spans {
		f.Outcomes[s.outcome]++
	}
	for i := range f.Failures {
		x.explainFailure(&f.Failures[i])
		f.count(f.Failures[i])
	}
	f.LeaksHealed = x.leaksHealed()
	f.ValidationFailed = len(f.Failures)
	for i := range f.PodKills {
		x.explainPodKill(&f.PodKills[i])
	}
	x.controllersAtEnd(&f)
	x.leaks(&f, sum.LeakedControllers)
	f.MissingEndpoints = append(f.MissingEndpoints, sum.MissingEndpoints...)
	f.CancelLosses = append(f.CancelLosses, x.missingCancelLosses(sum.MissingEndpoints)...)
	for _, c := range sum.Checks {
		switch c.Name {
		case checks.CheckLeakedControllers:
			f.LeakCheck = c
		case checks.CheckPathCompleteness:
			f.CompletenessCheck = c
		case checks.CheckFaultsLanded:
			f.FaultsCheck = c
		}
	}
	if w, perMin, ok := x.rejectionsPerMin(); ok {
		f.RejectionWindowS, f.RejectionsPerMin = w, perMin
	}
	sort.Strings(f.PodsKilledList)
	f.PodsKilled = len(f.PodsKilledList)
	f.LongestPauseS = sum.Stats.MaxPauseS
	for _, m := range sum.Migrations {
		if m.Freezes > 1 {
			f.MigrationsRefrozen++
		}
	}
	for _, w := range sum.Unattributed {
		f.LongestPauseS = math.Max(f.LongestPauseS, w.Window[1]-w.Window[0])
	}
	return f
}

// span is one migration as the record shows it, for attributing
// controllers, failures and kills to migrations.
type span struct {
	id       string
	nqn      string
	from, to float64
	ended    bool
	outcome  string
	running  bool     // entered Running (the control plane's continue)
	src      []string // source endpoints (Pending line)
	dst      []string // target endpoints (Pending line)
	created  float64  // CreateMigration: the Validating line
}

// cancelledBefore: s is a migration of nqn cancelled before continue
// (Failed or Aborted, never Running) that ended before t.
func (s *span) cancelledBefore(nqn string, t float64) bool {
	return s.nqn == nqn && s.ended && s.to < t && !s.running && (s.outcome == record.PhaseFailed || s.outcome == record.PhaseAborted)
}

// holds: t falls in s's span (an open one has no end).
func (s *span) holds(t float64) bool { return t >= s.from && (!s.ended || t <= s.to) }

// birth is a "new ctrl" kernel line: when, for which NQN, at which address.
type birth struct {
	t    float64
	nqn  string
	addr string
}

// removal is a "Removing controller" kernel line.
type removal struct {
	t          float64
	host, ctrl string
}

// subsysReject is a host's "Could not find subsystem" answer for an NQN
// (a failed first connect's controller is never born, so only the host and
// the NQN name it).
type subsysReject struct {
	t   float64
	nqn string
}

// runIndex is one pass over a run's lines: what the figures look up.
// Controller names are reused, so controllers are keyed host/ctrl with
// every birth kept in time order.
type runIndex struct {
	lastT    float64
	spans    []*span
	byID     map[string]*span
	last     map[string]record.Line   // each host's last sample
	samples  map[string][]record.Line // each host's samples, in time order
	nodeName map[string]string        // node ip -> name
	// published and firstPublished: each NQN's endpoints, last and first.
	published, firstPublished map[string][]string
	births                    map[string][]birth // host/ctrl
	removals                  []removal
	rejected                  map[string][]record.Line // node -> its target lines
	reconnected               map[string][]float64     // host/ctrl -> "Successfully reconnected" times
	// subsysRejects: host/ctrl -> times the target answered its CONNECT
	// "Could not find subsystem"; hostSubsysRejects: the same per host.
	subsysRejects     map[string][]float64
	hostSubsysRejects map[string][]subsysReject
	landed            []record.Line // fault lines with evidence (inject or landed)
	faults            []faultWindow
	topo              record.Topology
}

// indexRun reads lines once. The figures that are lists in record order
// (Plans, Failures, PodKills, PodsKilledList, LeaksRemovedByKernel,
// FaultsInjected) are filled into f as the lines come.
func indexRun(plan record.Plan, lines []record.Line, f *IncidentFigures) *runIndex {
	x := &runIndex{byID: map[string]*span{}, last: map[string]record.Line{}, samples: map[string][]record.Line{},
		nodeName: map[string]string{}, published: map[string][]string{}, firstPublished: map[string][]string{},
		births: map[string][]birth{}, rejected: map[string][]record.Line{}, reconnected: map[string][]float64{},
		subsysRejects: map[string][]float64{}, hostSubsysRejects: map[string][]subsysReject{}, topo: plan.Topology}
	killed := map[string]bool{}
	for _, l := range lines {
		x.lastT = max(x.lastT, l.T)
		switch l.Kind {
		case record.KindPhase:
			x.phase(l, f)
		case record.KindSample:
			x.last[l.Host] = l
			x.samples[l.Host] = append(x.samples[l.Host], l)
		case record.KindEndpoints:
			x.published[l.NQN] = l.Endpoints
			if _, ok := x.firstPublished[l.NQN]; !ok {
				x.firstPublished[l.NQN] = l.Endpoints
			}
		case record.KindKernel:
			x.kernel(l, f)
		case record.KindTarget:
			x.rejected[l.Node] = append(x.rejected[l.Node], l)
		case record.KindIO:
			if l.PodState == "killed" && !killed[l.Pod] {
				killed[l.Pod] = true
				f.PodsKilledList = append(f.PodsKilledList, l.Pod)
				f.PodKills = append(f.PodKills, PodKill{Pod: l.Pod, Host: l.Host, NQN: l.NQN, AtS: l.T})
			}
		case record.KindFault:
			if (l.Action == "inject" || l.Action == "landed") && len(l.Evidence) > 0 {
				f.FaultsInjected++
				x.landed = append(x.landed, l)
			}
		}
	}
	for _, n := range plan.Topology.Nodes {
		x.nodeName[n.IP] = n.Name
	}
	x.faults = faultWindows(lines, x.lastT)
	return x
}

// phase indexes one phase line: the migration's span, its plan, and a
// failed path validation.
func (x *runIndex) phase(l record.Line, f *IncidentFigures) {
	s, ok := x.byID[l.Migration]
	if !ok {
		s = &span{id: l.Migration, nqn: l.NQN, from: l.T}
		x.byID[l.Migration] = s
		x.spans = append(x.spans, s)
	}
	s.outcome = l.Phase
	if l.Phase == record.PhaseRunning {
		s.running = true
	}
	if len(l.SourceEndpoints) > 0 {
		s.src = l.SourceEndpoints
	}
	if len(l.TargetEndpoints) > 0 {
		s.dst = l.TargetEndpoints
	}
	if l.Phase == record.PhaseValidating {
		s.created = l.T
	}
	if l.Phase == record.PhasePending {
		f.Plans[l.Migration] = l.NQN + " " + strings.Join(l.SourceEndpoints, ",") + " -> " + strings.Join(l.TargetEndpoints, ",")
	}
	if record.IsTerminal(l.Phase) && !s.ended {
		s.to, s.ended = l.T, true
	}
	if l.Phase == record.PhaseFailed && strings.Contains(l.Reason, "path validation") {
		f.Failures = append(f.Failures, failureOf(l))
	}
}

// kernel indexes one kernel line: controller births, removals, reconnects
// and "Could not find subsystem" answers.
func (x *runIndex) kernel(l record.Line, f *IncidentFigures) {
	key := l.Host + "/" + l.Controller
	switch e := l.Event(); e.Kind {
	case record.KernelNewCtrl:
		x.births[key] = append(x.births[key], birth{l.T, e.NQN, e.Addr})
	case record.KernelRemoved:
		f.LeaksRemovedByKernel++
		x.removals = append(x.removals, removal{l.T, l.Host, l.Controller})
	case record.KernelSubsysNotFound:
		x.subsysRejects[key] = append(x.subsysRejects[key], l.T)
		x.hostSubsysRejects[l.Host] = append(x.hostSubsysRejects[l.Host], subsysReject{l.T, e.NQN})
	case record.KernelReconnected:
		x.reconnected[key] = append(x.reconnected[key], l.T)
	}
}

// latestCancelBefore is the last migration of nqn cancelled before
// continue that ended before t and satisfies ok; cancelledBefore the
// first; nil if none.
func (x *runIndex) latestCancelBefore(nqn string, t float64, ok func(*span) bool) *span {
	var out *span
	for _, s := range x.spans {
		if s.cancelledBefore(nqn, t) && ok(s) {
			out = s
		}
	}
	return out
}

func (x *runIndex) cancelledBefore(nqn string, t float64, ok func(*span) bool) *span {
	for _, s := range x.spans {
		if s.cancelledBefore(nqn, t) && ok(s) {
			return s
		}
	}
	return nil
}

// sampleAt is host's last sample at or before t.
func (x *runIndex) sampleAt(host string, t float64) record.Line {
	var out record.Line
	for _, l := range x.samples[host] {
		if l.T > t {
			break
		}
		out = l
	}
	return out
}

// lastBirthBefore is the last birth of host/ctrl at or before t.
func (x *runIndex) lastBirthBefore(key string, t float64) (birth, bool) {
	var b birth
	ok := false
	for _, y := range x.births[key] {
		if y.t <= t {
			b, ok = y, true
		}
	}
	return b, ok
}

// subsystemMissing: the failure shows the endpoint's node lacked the
// subsystem — the target said so in the failing connect, or the failing
// controller's last reconnect was answered so.
func (x *runIndex) subsystemMissing(v ValidationFailure) bool {
	if strings.Contains(v.Detail, "Could not find subsystem") || strings.Contains(v.Detail, subsysRejectMsg) {
		return true
	}
	if v.Controller != "" {
		for _, t := range x.subsysRejects[v.Host+"/"+v.Controller] {
			if t <= v.AtS && t >= v.AtS-subsystemLossWindowS {
				return true
			}
		}
		return false
	}
	// No controller (the connect did not take effect): the host was
	// answered "Could not find subsystem" for this NQN during the
	// validation, and the endpoint's node counted such an answer then.
	from := v.AtS - validationSpanS
	heard := false
	for _, r := range x.hostSubsysRejects[v.Host] {
		if r.nqn == v.NQN && r.t >= from && r.t <= v.AtS {
			heard = true
		}
	}
	return heard && notFoundRose(x.rejected[x.nodeName[endpointNode(v.Endpoint)]], from, v.AtS)
}

// explainFailure attributes a validation failure's controller to the
// migration that created it (Origin), and says how (Signal) and why
// (Cause) it failed.
func (x *runIndex) explainFailure(v *ValidationFailure) {
	if s, ok := x.byID[v.Migration]; ok {
		v.NQN = s.nqn
	}
	if v.Origin != "" {
		v.OriginSource = "record"
	} else if v.Controller != "" {
		// The last "new ctrl" of that name on that host before the
		// failure, dated into a migration's span of the same NQN.
		if b, ok := x.lastBirthBefore(v.Host+"/"+v.Controller, v.AtS); ok {
			v.OriginSource = "timeline"
			v.Origin = "csi"
			for _, s := range x.spans {
				if s.nqn == b.nqn && s.holds(b.t) {
					v.Origin = s.id
				}
			}
		}
	}
	v.LeakCaused = v.Origin == "leftover" || (strings.HasPrefix(v.Origin, "mig-") && v.Origin != v.Migration)
	v.Signal = failureSignal(*v)
	restart := ""
	if s, ok := x.byID[v.Migration]; ok {
		counted := func(from float64) bool {
			return notAllowedRose(x.rejected[x.nodeName[endpointNode(v.Endpoint)]], from, v.AtS)
		}
		restart = restartLostListener(*v, s.dst, s.created, x.faults, x.nodeName, counted)
	}
	switch fault := faultOn(*v, x.faults, x.nodeName); {
	case fault != "":
		v.Cause = CauseFault + " (" + fault + ")"
	case x.subsystemMissing(*v):
		v.Cause = CauseUnexplained + " (subsystem missing, no earlier cancel)"
		onNode := func(s *span) bool { return slices.Contains(endpointNodes(s.src), endpointNode(v.Endpoint)) }
		if c := x.latestCancelBefore(v.NQN, v.AtS, onNode); c != nil {
			v.CancelledBy, v.Cause = c.id, CauseSubsystemLoss
		}
	case restart != "":
		v.Cause = CauseFault + " (" + restart + RestartListenerQualifier + ")"
	case v.LeakCaused:
		o, ok := x.byID[v.Origin]
		v.Cause = leakCause(*v, ok && o.outcome == record.PhaseCompleted, x.sampleAt(v.Host, v.AtS))
	case v.Controller != "" && (strings.Contains(v.Detail, "is live with no leg to namespace") ||
		v.State == "live" && legsKind(x.sampleAt(v.Host, v.AtS), v.Controller) == "zero/partial"):
		v.Cause = CauseMissingLegs
	default:
		v.Cause = CauseUnexplained + " (" + v.Signal + ")"
	}
}

// count adds an explained failure to the counts by origin, cause and
// cause class.
func (f *IncidentFigures) count(v ValidationFailure) {
	if v.LeakCaused {
		f.LeakCaused++
	}
	f.FailureCauses[v.Cause]++
	switch {
	case v.Cause == CauseSubsystemLoss:
		f.FailedSubsystemLoss++
	case slices.Contains(FixRemovedCauses, v.Cause):
		f.FailedFixRemovedLeak++
	case CauseClass(v.Cause) == CauseFault:
		f.FailedInjectedFault++
	case CauseClass(v.Cause) == CauseUnexplained:
		f.FailedUnexplained++
	}
}

// leaksHealed counts the leaks that healed: controllers born during a
// migration that failed or was aborted that then reconnected live before
// their name was reused.
func (x *runIndex) leaksHealed() int {
	n := 0
	for k, bs := range x.births {
		for i, b := range bs {
			leaked := false
			for _, s := range x.spans {
				if s.nqn == b.nqn && s.ended && b.t >= s.from && b.t <= s.to &&
					(s.outcome == record.PhaseFailed || s.outcome == record.PhaseAborted) {
					leaked = true
				}
			}
			if !leaked {
				continue
			}
			until := math.Inf(1)
			if i+1 < len(bs) {
				until = bs[i+1].t
			}
			for _, rt := range x.reconnected[k] {
				if rt > b.t && rt < until {
					n++
					break
				}
			}
		}
	}
	return n
}

// explainPodKill says why a killed pod's volume stopped serving it.
func (x *runIndex) explainPodKill(k *PodKill) {
	serving, cutover := x.firstPublished[k.NQN], ""
	for _, s := range x.spans {
		if s.nqn != k.NQN || s.from > k.AtS {
			continue
		}
		serving = s.src
		if s.ended && s.to <= k.AtS && s.outcome == record.PhaseCompleted {
			serving = s.dst
		}
		if s.running && (!s.ended || s.to >= k.AtS-podOutageLookbackS) {
			cutover = s.id
		}
	}
	// missing: the host's controller at ep was answered "Could not
	// find subsystem" shortly before the kill.
	missing := func(ep string) bool {
		for key, bs := range x.births {
			host, _, _ := strings.Cut(key, "/")
			if host != k.Host {
				continue
			}
			addr := ""
			for _, b := range bs {
				if b.t <= k.AtS && b.nqn == k.NQN {
					addr = b.addr
				}
			}
			if addr != ep {
				continue
			}
			for _, t := range x.subsysRejects[key] {
				if t <= k.AtS && t >= k.AtS-podOutageLookbackS {
					return true
				}
			}
		}
		return false
	}
	k.Cause = podKillCause(*k, serving, cutover, x.faults, x.nodeName, missing)
}

// controllersAtEnd counts each host's controllers of the run's subsystems
// in its last sample against what it should have: one per published
// endpoint of each volume it consumes.
func (x *runIndex) controllersAtEnd(f *IncidentFigures) {
	runNQN := map[string]bool{}
	for _, v := range x.topo.Volumes {
		runNQN[v.NQN] = true
		for _, h := range v.Consumers {
			f.ExpectedPerHost[h] += len(x.published[v.NQN])
		}
	}
	for _, h := range x.topo.Hosts {
		n := 0
		for _, c := range x.last[h.Name].Controllers {
			// What the leak check inspects: the run's subsystems, every
			// state but those on their way out.
			if runNQN[c.NQN] && !goingAway(c.State) {
				n++
			}
		}
		f.ControllersPerHost[h.Name] = n
		f.Controllers += n
		f.Expected += f.ExpectedPerHost[h.Name]
	}
}

// leaks counts the leak check's findings (summary.json
// leaked_controllers) by state, by the incident's two kinds and by where
// the controller came from, and names the volume paths left connecting
// at an endpoint a cancel of their volume's migration listed as source.
func (x *runIndex) leaks(f *IncidentFigures, leaked []record.Leak) {
	noNS := map[string]bool{} // host/ctrl live with no namespace
	for h, l := range x.last {
		nsids := map[string]int{}
		for _, s := range l.Subsystems {
			nsids[s.NQN] = len(s.NSIDs)
		}
		for _, c := range l.Controllers {
			if c.State == "live" && (len(c.Legs) == 0 || nsids[c.NQN] == 0) {
				noNS[h+"/"+c.Name] = true
			}
		}
	}
	f.Leaked = len(leaked)
	counted := 0
	for _, l := range leaked {
		f.LeakedByState[l.State]++
		switch {
		case l.State == "connecting":
			f.LeakedConnecting++
			f.LeakedKinds["connecting"]++
		case l.State == "live" && (noNS[l.Host+"/"+l.Controller] || l.Kind == "no-namespace"):
			f.LeakedLiveNoNamespace++
			f.LeakedKinds["live no namespace"]++
		default:
			f.LeakedKinds[l.State+" "+l.Kind]++
		}
		if !goingAway(l.State) {
			counted++
		}
		origin := "volume path (csi)"
		bs := x.births[l.Host+"/"+l.Controller]
		var b birth
		born := len(bs) > 0
		if born {
			b = bs[len(bs)-1]
			for _, s := range x.spans {
				if s.nqn == b.nqn && s.holds(b.t) {
					if s.outcome == record.PhaseCompleted {
						origin = "path of a completed migration"
					} else {
						origin = "validation of a failed migration"
					}
				}
			}
		}
		f.LeakOrigins[origin]++
		// A volume path left connecting at a published endpoint after a
		// cancel of its volume's migration listed that endpoint as source.
		if l.State == "connecting" && slices.Contains(x.published[l.NQN], l.Address) {
			listed := func(s *span) bool { return slices.Contains(s.src, l.Address) && (!born || b.t <= s.to) }
			if c := x.cancelledBefore(l.NQN, x.lastT, listed); c != nil {
				f.CancelLosses = append(f.CancelLosses, CancelLoss{What: "leaked", Host: l.Host, Controller: l.Controller,
					NQN: l.NQN, Endpoint: l.Address, Migration: c.id, AtS: c.to})
			}
		}
	}
	f.Healthy = f.Controllers - counted
	f.LeakedConnectingOrNoNamespace = f.LeakedConnecting + f.LeakedLiveNoNamespace
}

// missingCancelLosses are the published endpoints without a controller
// (summary.json missing_endpoints) whose controller the kernel removed
// after a cancel listed the endpoint as a source endpoint.
func (x *runIndex) missingCancelLosses(missing []record.MissingEndpoint) []CancelLoss {
	var out []CancelLoss
	for _, m := range missing {
		for _, r := range x.removals {
			b, ok := x.lastBirthBefore(r.host+"/"+r.ctrl, r.t)
			if r.host != m.Host || !ok || b.nqn != m.NQN || b.addr != m.Endpoint {
				continue
			}
			listed := func(s *span) bool { return slices.Contains(s.src, m.Endpoint) && b.t <= s.to }
			if c := x.cancelledBefore(m.NQN, r.t, listed); c != nil {
				out = append(out, CancelLoss{What: "missing", Host: m.Host, Controller: r.ctrl,
					NQN: m.NQN, Endpoint: m.Endpoint, Migration: c.id, AtS: c.to})
				break
			}
		}
	}
	return out
}

// rejectionsPerMin is the targets' CONNECT rejections per minute over the
// run's last RejectionWindowS seconds (all nodes) and the window measured;
// ok is false for a record of no length.
func (x *runIndex) rejectionsPerMin() (windowS, perMin float64, ok bool) {
	from := math.Max(0, x.lastT-RejectionWindowS)
	var delta int64
	for _, ls := range x.rejected {
		at := func(t float64) int64 {
			var v int64
			for _, l := range ls {
				if l.T <= t && l.RejectedConnects != nil {
					v = *l.RejectedConnects
				}
			}
			return v
		}
		delta += at(x.lastT) - at(from)
	}
	w := x.lastT - from
	if w <= 0 {
		return 0, 0, false
	}
	return w, float64(delta) / (w / 60), true
}

// validationSpanS bounds how long before its failure a validation Job
// connected: 3 rounds 2 s apart, each waiting up to atlas's 10 s path
// timeout per existing path (sim/operator.go), with a margin.
const validationSpanS = 40.0

// notFoundRose: a node's target lines (cumulative rejected and not-allowed
// CONNECT counters, reported every 10 s when they change) show a CONNECT
// answered "Could not find subsystem" (rejected but not "not allowed")
// between from and the first report at or after to.
func notFoundRose(ls []record.Line, from, to float64) bool {
	return counterRose(ls, from, to, func(l record.Line) (int64, bool) {
		if l.RejectedConnects == nil {
			return 0, false
		}
		n := *l.RejectedConnects
		if l.NotAllowedConnects != nil {
			n -= *l.NotAllowedConnects
		}
		return n, true
	})
}

// counterRose: the cumulative counter that count reads from a node's
// target lines (ok false where a line carries none) rose between from and
// to: the latest report from from on, up to and including the first report
// at or after to, is higher than the last report before from.
func counterRose(ls []record.Line, from, to float64, count func(record.Line) (int64, bool)) bool {
	var before, after int64
	seenAfter := false
	for _, l := range ls {
		n, ok := count(l)
		if !ok {
			continue
		}
		if l.T < from {
			before = n
			continue
		}
		after, seenAfter = n, true
		if l.T >= to {
			break
		}
	}
	return seenAfter && after > before
}

// subsysRejectMsg begins the kernel's line for a CONNECT the target
// answered "Could not find subsystem" (drivers/nvme/host/fabrics.c,
// NVME_SC_CONNECT_INVALID_PARAM on the subsysnqn).
const subsysRejectMsg = "Connect Invalid Data Parameter, subsysnqn"

// failureSignal is how a validation failed (ValidationFailure.Signal),
// from its origin and the connect error the operator reported.
func failureSignal(v ValidationFailure) string {
	switch {
	case v.LeakCaused:
		return "leak"
	case v.Origin != "" && v.Origin == v.Migration:
		return "own controller"
	case v.Origin == "csi":
		return "volume path"
	case strings.Contains(v.Detail, "no-answer"):
		return "no-answer"
	case strings.Contains(v.Detail, "refused"):
		return "refused"
	case strings.Contains(v.Detail, "rejected"):
		return "rejected"
	}
	return "other"
}

// endpointNode is the ip of an "ip:port" endpoint.
func endpointNode(ep string) string {
	if i := strings.LastIndexByte(ep, ':'); i >= 0 {
		return ep[:i]
	}
	return ep
}

func endpointNodes(eps []string) []string {
	out := make([]string, len(eps))
	for i, ep := range eps {
		out[i] = endpointNode(ep)
	}
	return out
}

// goingAway: a controller state the leak check does not judge (deleting,
// deleting (no IO), dead).
func goingAway(state string) bool {
	return strings.HasPrefix(state, "deleting") || state == "dead"
}

// failureOf reads a Failed phase line: details when the backend recorded
// them, else the host and controller named in the reason.
func failureOf(l record.Line) ValidationFailure {
	v := ValidationFailure{Migration: l.Migration, NQN: l.NQN, AtS: l.T, Detail: l.Reason}
	if d := l.Details; len(d) > 0 {
		v.Host, v.Controller, v.Endpoint, v.State, v.Origin = d["host"], d["controller"], d["endpoint"], d["state"], d["origin"]
		if d["detail"] != "" {
			v.Detail = d["detail"]
		}
		return v
	}
	if m := reHost.FindStringSubmatch(l.Reason); m != nil {
		v.Host = m[1]
	}
	if m := reCtrl.FindStringSubmatch(l.Reason); m != nil {
		v.Controller = m[1]
	}
	return v
}

// Shape is whether a run shows what its incident file expects (every
// judged band holds), with the bands that do not and notes explaining the
// figures' mechanisms from the record.
type Shape struct {
	OK      bool     `json:"ok"`
	Missing []string `json:"missing,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}
