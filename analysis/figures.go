package scenario

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
)

// The figures of incident fio-mig-1787159565 (DESIGN.md "The incident to
// reproduce"), computed from a run record alone, and the shape each
// operator variant is expected to show (issue 4, acceptance).

// IncidentFigures are what the incident report compares: computed from
// plan.json, timeline.jsonl and summary.json only.
type IncidentFigures struct {
	// Incident is the catalogue name reproduced (plan params.extra.incident).
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
	// The validation failures by cause class (incident.md §6.2), for bands:
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
	// PodsKilled are the fio pods that died (io lines with pod_state killed).
	PodsKilled     int      `json:"pods_killed"`
	PodsKilledList []string `json:"pods_killed_list,omitempty"`
	// PodKills say why each killed pod's volume stopped serving it
	// (podKillCause), in kill order.
	PodKills []PodKill `json:"pod_kills,omitempty"`
	// LongestPauseS is the longest pause window of the run, attributed or not.
	LongestPauseS float64 `json:"longest_pause_s"`
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
	// Cause is why, one of the Cause* names of research/incident.md §6.2
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
		for _, p := range [...]string{"new ctrl", "Removing controller", "Successfully reconnected", subsysRejectMsg} {
			if strings.HasPrefix(l.Message, p) {
				k.out = append(k.out, l)
				break
			}
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
// summary.json.
func ComputeIncidentFigures(plan record.Plan, lines []record.Line, sum record.Summary) IncidentFigures {
	f := IncidentFigures{Incident: plan.Params.Extra["incident"], Operator: plan.Params.Extra["operator"], Seed: plan.Seed,
		ReconnectReset: plan.Params.Extra["reconnect_reset"], Outcomes: map[string]int{},
		ControllersPerHost: map[string]int{}, ExpectedPerHost: map[string]int{}, LeakedByState: map[string]int{},
		RejectionWindowS: RejectionWindowS, Failures: []ValidationFailure{}, LeakedKinds: map[string]int{},
		LeakOrigins: map[string]int{}, FailureCauses: map[string]int{}, MissingEndpoints: []record.MissingEndpoint{},
		Plans: map[string]string{}}

	// Migration spans, by NQN, for attributing controllers to migrations.
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
	var spans []*span
	byID := map[string]*span{}
	last := map[string]record.Line{}
	var lastT float64
	published := map[string][]string{}
	// newCtrl: host/ctrl -> times of "new ctrl" lines (controller names are reused).
	type birth struct {
		t    float64
		nqn  string
		addr string
	}
	type removal struct {
		t          float64
		host, ctrl string
	}
	var removals []removal
	births := map[string][]birth{}
	rejected := map[string][]record.Line{}
	killed := map[string]bool{}
	var landed []record.Line // fault lines with evidence (inject or landed)
	reconnected := map[string][]float64{}
	// samples: each host's samples in time order (the legs of a failure's
	// controller); subsysRejects: host/ctrl -> times the target answered
	// its CONNECT "Could not find subsystem".
	samples := map[string][]record.Line{}
	subsysRejects := map[string][]float64{}
	// hostSubsysRejects: host -> its "Could not find subsystem" answers
	// (a failed first connect's controller is never born, so only the host
	// and the NQN name it).
	type subsysReject struct {
		t   float64
		nqn string
	}
	hostSubsysRejects := map[string][]subsysReject{}
	firstPublished := map[string][]string{}
	for _, l := range lines {
		lastT = max(lastT, l.T)
		switch l.Kind {
		case record.KindPhase:
			s, ok := byID[l.Migration]
			if !ok {
				s = &span{id: l.Migration, nqn: l.NQN, from: l.T}
				byID[l.Migration] = s
				spans = append(spans, s)
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
		case record.KindSample:
			last[l.Host] = l
			samples[l.Host] = append(samples[l.Host], l)
		case record.KindEndpoints:
			published[l.NQN] = l.Endpoints
			if _, ok := firstPublished[l.NQN]; !ok {
				firstPublished[l.NQN] = l.Endpoints
			}
		case record.KindKernel:
			if strings.HasPrefix(l.Message, "new ctrl") {
				nqn := ""
				if i := strings.Index(l.Message, `NQN "`); i >= 0 {
					rest := l.Message[i+5:]
					if j := strings.IndexByte(rest, '"'); j >= 0 {
						nqn = rest[:j]
					}
				}
				addr := ""
				if i := strings.Index(l.Message, "addr "); i >= 0 {
					addr, _, _ = strings.Cut(l.Message[i+5:], ",")
				}
				k := l.Host + "/" + l.Controller
				births[k] = append(births[k], birth{l.T, nqn, addr})
			}
			if strings.HasPrefix(l.Message, "Removing controller") {
				f.LeaksRemovedByKernel++
				removals = append(removals, removal{l.T, l.Host, l.Controller})
			}
			if strings.HasPrefix(l.Message, subsysRejectMsg) {
				subsysRejects[l.Host+"/"+l.Controller] = append(subsysRejects[l.Host+"/"+l.Controller], l.T)
				hostSubsysRejects[l.Host] = append(hostSubsysRejects[l.Host], subsysReject{l.T, strings.Trim(strings.TrimPrefix(l.Message, subsysRejectMsg), ` "`)})
			}
			if strings.HasPrefix(l.Message, "Successfully reconnected") {
				reconnected[l.Host+"/"+l.Controller] = append(reconnected[l.Host+"/"+l.Controller], l.T)
			}
		case record.KindTarget:
			rejected[l.Node] = append(rejected[l.Node], l)
		case record.KindIO:
			if l.PodState == "killed" && !killed[l.Pod] {
				killed[l.Pod] = true
				f.PodsKilledList = append(f.PodsKilledList, l.Pod)
				f.PodKills = append(f.PodKills, PodKill{Pod: l.Pod, Host: l.Host, NQN: l.NQN, AtS: l.T})
			}
		case record.KindFault:
			if (l.Action == "inject" || l.Action == "landed") && len(l.Evidence) > 0 {
				f.FaultsInjected++
				landed = append(landed, l)
			}
		}
	}
	f.Migrations = len(spans)
	f.Volumes = len(plan.Topology.Volumes)
	f.FaultsOutlasted = faultsOutlasted(lines, landed, f.Failures)
	for _, s := range spans {
		f.Outcomes[s.outcome]++
	}
	// cancelledBefore is the first migration of nqn cancelled before
	// continue (Failed or Aborted, never Running) that ended before t and
	// satisfies ok (nil: any); latestCancelBefore the last one.
	isCancel := func(s *span, nqn string, t float64) bool {
		return s.nqn == nqn && s.ended && s.to < t && !s.running && (s.outcome == record.PhaseFailed || s.outcome == record.PhaseAborted)
	}
	cancelledBefore := func(nqn string, t float64, ok func(*span) bool) *span {
		for _, s := range spans {
			if isCancel(s, nqn, t) && (ok == nil || ok(s)) {
				return s
			}
		}
		return nil
	}
	latestCancelBefore := func(nqn string, t float64, ok func(*span) bool) *span {
		var out *span
		for _, s := range spans {
			if isCancel(s, nqn, t) && (ok == nil || ok(s)) {
				out = s
			}
		}
		return out
	}
	nodeName := map[string]string{}
	for _, n := range plan.Topology.Nodes {
		nodeName[n.IP] = n.Name
	}
	faults := faultWindows(lines, lastT)
	// sampleAt is host's last sample at or before t.
	sampleAt := func(host string, t float64) record.Line {
		var out record.Line
		for _, l := range samples[host] {
			if l.T > t {
				break
			}
			out = l
		}
		return out
	}
	// subsystemMissing: the failure shows the endpoint's node lacked the
	// subsystem — the target said so in the failing connect, or the
	// failing controller's last reconnect was answered so.
	subsystemMissing := func(v ValidationFailure) bool {
		if strings.Contains(v.Detail, "Could not find subsystem") || strings.Contains(v.Detail, subsysRejectMsg) {
			return true
		}
		if v.Controller != "" {
			for _, t := range subsysRejects[v.Host+"/"+v.Controller] {
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
		for _, r := range hostSubsysRejects[v.Host] {
			if r.nqn == v.NQN && r.t >= from && r.t <= v.AtS {
				heard = true
			}
		}
		return heard && notFoundRose(rejected[nodeName[endpointNode(v.Endpoint)]], from, v.AtS)
	}
	// Attribute each failure's controller.
	for i := range f.Failures {
		v := &f.Failures[i]
		if s, ok := byID[v.Migration]; ok {
			v.NQN = s.nqn
		}
		if v.Origin != "" {
			v.OriginSource = "record"
		} else if v.Controller != "" {
			// The last "new ctrl" of that name on that host before the
			// failure, dated into a migration's span of the same NQN.
			var b *birth
			for k, x := range births[v.Host+"/"+v.Controller] {
				if x.t <= v.AtS {
					b = &births[v.Host+"/"+v.Controller][k]
				}
			}
			if b != nil {
				v.OriginSource = "timeline"
				v.Origin = "csi"
				for _, s := range spans {
					if s.nqn == b.nqn && b.t >= s.from && (!s.ended || b.t <= s.to) {
						v.Origin = s.id
					}
				}
			}
		}
		v.LeakCaused = v.Origin == "leftover" || (strings.HasPrefix(v.Origin, "mig-") && v.Origin != v.Migration)
		if v.LeakCaused {
			f.LeakCaused++
		}
		v.Signal = failureSignal(*v)
		restart := ""
		if s, ok := byID[v.Migration]; ok {
			counted := func(from float64) bool {
				return notAllowedRose(rejected[nodeName[endpointNode(v.Endpoint)]], from, v.AtS)
			}
			restart = restartLostListener(*v, s.dst, s.created, faults, nodeName, counted)
		}
		switch {
		case faultOn(*v, faults, nodeName) != "":
			v.Cause = CauseFault + " (" + faultOn(*v, faults, nodeName) + ")"
		case subsystemMissing(*v):
			v.Cause = CauseUnexplained + " (subsystem missing, no earlier cancel)"
			if c := latestCancelBefore(v.NQN, v.AtS, func(s *span) bool { return slices.Contains(endpointNodes(s.src), endpointNode(v.Endpoint)) }); c != nil {
				v.CancelledBy, v.Cause = c.id, CauseSubsystemLoss
			}
		case restart != "":
			v.Cause = CauseFault + " (" + restart + RestartListenerQualifier + ")"
		case v.LeakCaused:
			o, ok := byID[v.Origin]
			v.Cause = leakCause(*v, ok && o.outcome == record.PhaseCompleted, sampleAt(v.Host, v.AtS))
		default:
			v.Cause = CauseUnexplained + " (" + v.Signal + ")"
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
	// Leaks that healed: born during a migration that failed or was
	// aborted, then reconnected live before the name was reused.
	for k, bs := range births {
		for i, b := range bs {
			leaked := false
			for _, s := range spans {
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
			for _, rt := range reconnected[k] {
				if rt > b.t && rt < until {
					f.LeaksHealed++
					break
				}
			}
		}
	}
	f.ValidationFailed = len(f.Failures)
	// Why each killed pod's volume stopped serving it.
	for i := range f.PodKills {
		k := &f.PodKills[i]
		serving, cutover := firstPublished[k.NQN], ""
		for _, s := range spans {
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
			for key, bs := range births {
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
				for _, t := range subsysRejects[key] {
					if t <= k.AtS && t >= k.AtS-podOutageLookbackS {
						return true
					}
				}
			}
			return false
		}
		k.Cause = podKillCause(*k, serving, cutover, faults, nodeName, missing)
	}

	// Controllers per host at the end, against expected.
	runNQN := map[string]bool{}
	for _, v := range plan.Topology.Volumes {
		runNQN[v.NQN] = true
		for _, h := range v.Consumers {
			f.ExpectedPerHost[h] += len(published[v.NQN])
		}
	}
	for _, h := range plan.Topology.Hosts {
		n := 0
		for _, c := range last[h.Name].Controllers {
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
	// Leaks (the leak check's findings), with the incident's two kinds.
	noNS := map[string]bool{} // host/ctrl live with no namespace
	for h, l := range last {
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
	f.Leaked = len(sum.LeakedControllers)
	lastBirth := func(host, ctrl string) (birth, bool) {
		bs := births[host+"/"+ctrl]
		if len(bs) == 0 {
			return birth{}, false
		}
		return bs[len(bs)-1], true
	}
	leakedCounted := 0
	for _, l := range sum.LeakedControllers {
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
			leakedCounted++
		}
		origin := "volume path (csi)"
		b, ok := lastBirth(l.Host, l.Controller)
		if ok {
			for _, s := range spans {
				if s.nqn == b.nqn && b.t >= s.from && (!s.ended || b.t <= s.to) {
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
		if l.State == "connecting" && slices.Contains(published[l.NQN], l.Address) {
			if c := cancelledBefore(l.NQN, lastT, func(s *span) bool { return slices.Contains(s.src, l.Address) && (!ok || b.t <= s.to) }); c != nil {
				f.CancelLosses = append(f.CancelLosses, CancelLoss{What: "leaked", Host: l.Host, Controller: l.Controller,
					NQN: l.NQN, Endpoint: l.Address, Migration: c.id, AtS: c.to})
			}
		}
	}
	f.Healthy = f.Controllers - leakedCounted
	lastBirthBefore := func(bs []birth, t float64) (birth, bool) {
		var b birth
		ok := false
		for _, x := range bs {
			if x.t <= t {
				b, ok = x, true
			}
		}
		return b, ok
	}
	f.MissingEndpoints = append(f.MissingEndpoints, sum.MissingEndpoints...)
	for _, m := range sum.MissingEndpoints {
		// The kernel removed the controller at that endpoint after a
		// cancel listed it as a source endpoint.
		for _, r := range removals {
			b, ok := lastBirthBefore(births[r.host+"/"+r.ctrl], r.t)
			if r.host != m.Host || !ok || b.nqn != m.NQN || b.addr != m.Endpoint {
				continue
			}
			if c := cancelledBefore(m.NQN, r.t, func(s *span) bool { return slices.Contains(s.src, m.Endpoint) && b.t <= s.to }); c != nil {
				f.CancelLosses = append(f.CancelLosses, CancelLoss{What: "missing", Host: m.Host, Controller: r.ctrl,
					NQN: m.NQN, Endpoint: m.Endpoint, Migration: c.id, AtS: c.to})
				break
			}
		}
	}
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
	// CONNECT rejections per minute over the last window.
	from := math.Max(0, lastT-RejectionWindowS)
	var delta int64
	for _, ls := range rejected {
		at := func(t float64) int64 {
			var v int64
			for _, l := range ls {
				if l.T <= t && l.RejectedConnects != nil {
					v = *l.RejectedConnects
				}
			}
			return v
		}
		delta += at(lastT) - at(from)
	}
	if w := lastT - from; w > 0 {
		f.RejectionWindowS = w
		f.RejectionsPerMin = float64(delta) / (w / 60)
	}
	sort.Strings(f.PodsKilledList)
	f.PodsKilled = len(f.PodsKilledList)
	f.LongestPauseS = sum.Stats.MaxPauseS
	for _, w := range sum.Unattributed {
		f.LongestPauseS = math.Max(f.LongestPauseS, w.Window[1]-w.Window[0])
	}
	return f
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

// IncidentNotes explain a run's figures from its record: the validation
// failures by cause, where the leaked controllers came from, the CONNECT
// rejection rate, controllers the kernel removed, published endpoints
// without a controller, and the kernel switch a connecting leak 2.5 h
// later needs. They judge nothing (the incident file's bands do).
func IncidentNotes(f IncidentFigures) []string {
	var notes []string
	note := func(format string, a ...any) { notes = append(notes, fmt.Sprintf(format, a...)) }
	note("%s", causesNote(f))
	if f.Leaked > 0 || f.LeaksRemovedByKernel > 0 {
		note("%s", leaksNote(f))
	}
	if len(f.MissingEndpoints) > 0 {
		note("%s", missingNote(f))
	}
	note("%s", rejectionsNote(f))
	if f.ReconnectReset != "partial" && f.LeakedConnecting == 0 && f.LeaksRemovedByKernel > 0 {
		note("the kernel removed %d controllers after max_reconnects (upstream counter reset: ctrl_loss_tmo 3600 / "+
			"reconnect_delay 2 = 1800 attempts, about 1 h); connecting leaks still there 2.5 h later need "+
			"--reconnect-reset=partial (or endpoints that came back)", f.LeaksRemovedByKernel)
	}
	if f.ReconnectReset == "partial" && f.LeakedConnecting > 0 {
		note("the %d connecting leaks outlive the 1 h upstream reconnect budget only because of --reconnect-reset=partial "+
			"(the counter resets on every rejected CONNECT)", f.LeakedConnecting)
	}
	if f.PodsKilled == 0 {
		note("no fio pod died: no pause exceeded the pods' tolerance (the incident's 6 s and 8 s pauses that " +
			"killed 8 of 10 pods have no sourced cause in the model, incident.md §6.2)")
	} else {
		note("%s", podKillsNote(f.PodKills))
	}
	return notes
}

// causeText explains each cause class.
var causeText = map[string]string{
	CauseSubsystemLoss: "the endpoint's node lacked the volume's subsystem (\"Could not find subsystem\") after an earlier " +
		"migration of the volume was cancelled before continue: sbcli's _cleanup_created deletes it on the source's " +
		"tertiary (migration_controller.py:247-311) until the lvol monitor repairs it; a connecting leak at the " +
		"migration's own target address is only its symptom",
	CauseZeroLegLeak:       "a live controller an earlier failed validation left, serving no or only some namespaces",
	CauseParkedLeak:        "a live controller an earlier failed validation left, every leg inaccessible",
	CauseConnectingLeak:    "a connecting controller an earlier failed validation left, while its node held the subsystem",
	CauseServingLeak:       "a live controller an earlier failed validation left, with an accessible leg",
	CauseCompletedPathLeak: "a controller a completed migration left (no operator releases those)",
	CauseFault:             "an injected fault was active on the endpoint's node or port",
	CauseUnexplained:       "none of the above (the signal says how it failed)",
}

// restartListenerText explains a cause restartLostListener names.
const restartListenerText = "a restart of the endpoint's node spanned the migration's create and lost its target " +
	"listener, which sbcli restores only right before the cutover (tasks_runner_lvol_migration.py:723-800), so SPDK " +
	"answered \"does not allow host ... to connect at this address\" there for the rest of the validation"

// faultsOutlasted names each fault (first line with evidence) that landed
// while some migration was Validating (from its Validating phase line to
// its next phase line) when that migration is not among the validation
// failures.
func faultsOutlasted(lines, landed []record.Line, failures []ValidationFailure) []string {
	type window struct {
		id       string
		from, to float64
	}
	var ws []window
	open := map[string]int{}
	for _, l := range lines {
		if l.Kind != record.KindPhase {
			continue
		}
		if k, ok := open[l.Migration]; ok {
			ws[k].to = l.T
			delete(open, l.Migration)
		}
		if l.Phase == record.PhaseValidating {
			open[l.Migration] = len(ws)
			ws = append(ws, window{id: l.Migration, from: l.T, to: math.Inf(1)})
		}
	}
	failed := map[string]bool{}
	for _, v := range failures {
		failed[v.Migration] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range landed {
		key := l.Fault + " " + l.Target
		if seen[key] {
			continue
		}
		for _, w := range ws {
			if l.T >= w.from && l.T <= w.to {
				seen[key] = true
				if !failed[w.id] {
					out = append(out, key+" during "+w.id)
				}
				break
			}
		}
	}
	return out
}

// causesNote breaks the validation failures down by cause (CauseOrder),
// naming the cancels behind subsystem-loss ones, and names the faults that
// landed during a validation which still passed.
func causesNote(f IncidentFigures) string {
	outlasted := ""
	if n := len(f.FaultsOutlasted); n > 0 {
		outlasted = fmt.Sprintf("; %d fault(s) landed during a validation that still passed (%s): the validation Job "+
			"retries connect+verify up to 3 times, 2 s apart (simplyblock-rebalancer validate-migration), so a fault "+
			"fails a validation only when it outlasts that budget (a dropped CONNECT blocks each attempt for the 60 s "+
			"admin_timeout)", n, strings.Join(f.FaultsOutlasted, ", "))
	}
	if f.ValidationFailed == 0 {
		return "no migration failed path validation: no fault, leak or cancel disturbed a validation enough to fail it" + outlasted
	}
	var parts []string
	for _, c := range sortedCauses(f.FailureCauses) {
		text := causeText[CauseClass(c)]
		if strings.HasSuffix(c, RestartListenerQualifier+")") {
			text = restartListenerText
		}
		p := fmt.Sprintf("%d %s — %s", f.FailureCauses[c], c, text)
		if c == CauseSubsystemLoss {
			var by []string
			for _, v := range f.Failures {
				if v.Cause == c && !slices.Contains(by, v.CancelledBy) {
					by = append(by, v.CancelledBy)
				}
			}
			slices.Sort(by)
			p += fmt.Sprintf(" (after the cancels of %s)", strings.Join(by, ", "))
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("the %d validation failures by cause: %s", f.ValidationFailed, strings.Join(parts, "; ")) + outlasted
}

// leakedKindsText is the leak breakdown, every kind, summing to Leaked.
func leakedKindsText(f IncidentFigures) string {
	parts := []string{
		fmt.Sprintf("%d connecting", f.LeakedKinds["connecting"]),
		fmt.Sprintf("%d live no namespace", f.LeakedKinds["live no namespace"]),
	}
	for _, k := range slices.Sorted(maps.Keys(f.LeakedKinds)) {
		if k != "connecting" && k != "live no namespace" {
			parts = append(parts, fmt.Sprintf("%d %s", f.LeakedKinds[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

// leaksNote explains the leaked controllers' count from where they came from.
func leaksNote(f IncidentFigures) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(f.LeakOrigins)) {
		parts = append(parts, fmt.Sprintf("%d from a %s", f.LeakOrigins[k], k))
	}
	b := fmt.Sprintf("the %d leaked controllers (%s)", f.Leaked, leakedKindsText(f))
	if len(parts) > 0 {
		b += " came: " + strings.Join(parts, ", ")
	}
	b += fmt.Sprintf("; %d of %d migrations failed or were aborted (each failed validation can leave the target "+
		"paths it connected)", f.Outcomes[record.PhaseFailed]+f.Outcomes[record.PhaseAborted], f.Migrations)
	if f.LeaksRemovedByKernel > 0 {
		b += fmt.Sprintf("; the kernel removed %d controllers after max_reconnects", f.LeaksRemovedByKernel)
	}
	if f.LeaksHealed > 0 {
		b += fmt.Sprintf("; %d leaks reconnected live when their endpoint came back", f.LeaksHealed)
	}
	if n, migs := cancelLosses(f, "leaked"); n > 0 {
		b += fmt.Sprintf("; %d of them sit connecting at a published endpoint of their volume, created before the cancel of "+
			"%s (before continue), whose source listed that endpoint: the cancel deleted the volume's subsystem on that "+
			"node — sbcli's cancel path (migration_controller.py _cleanup_created) deletes the subsystem on a target "+
			"primary/secondary that was the source's tertiary, the volume's own path there included; the control plane "+
			"still publishes the endpoint and the target rejects every reconnect", n, strings.Join(migs, ", "))
	}
	return b
}

// missingNote explains published endpoints without a controller.
func missingNote(f IncidentFigures) string {
	n, migs := cancelLosses(f, "missing")
	b := fmt.Sprintf("%d published endpoints have no controller on a consumer host", len(f.MissingEndpoints))
	if n > 0 {
		b += fmt.Sprintf("; at %d of them the kernel removed the volume path after max_reconnects of rejected "+
			"reconnects, because the cancel of %s (before continue) deleted the volume's subsystem on that node — "+
			"sbcli's cancel path (migration_controller.py _cleanup_created) deletes it on a target primary/secondary "+
			"that was the source's tertiary, while the control plane still publishes the endpoint: a control-plane "+
			"defect the operator fix does not touch", n, strings.Join(migs, ", "))
	}
	if r := len(f.MissingEndpoints) - n; r > 0 {
		b += fmt.Sprintf("; %d not explained by the record (no removal after a cancel found)", r)
	}
	return b
}

// cancelLosses counts f.CancelLosses of a kind and names their migrations.
func cancelLosses(f IncidentFigures, what string) (int, []string) {
	n := 0
	var migs []string
	for _, c := range f.CancelLosses {
		if c.What == what {
			n++
			if !slices.Contains(migs, c.Migration) {
				migs = append(migs, c.Migration)
			}
		}
	}
	slices.Sort(migs)
	return n, migs
}

// rejectionsNote explains the CONNECT rejection rate: every connecting
// controller whose target listens at its ip:port but no longer exposes
// its subsystem there sends one CONNECT per reconnect_delay (2 s in the
// control plane's connect strings: 30 per minute), each rejected.
func rejectionsNote(f IncidentFigures) string {
	if f.LeakedConnecting == 0 && f.RejectionsPerMin > 0 {
		return fmt.Sprintf("%.0f rejections/min over the run's last %.0f s, though no connecting controller was left at the end: "+
			"controllers that were connecting during that window sent them and were gone (removed or live again) by the end; "+
			"the window reaches back into the migrations when the settle is shorter than it "+
			"(each connecting controller at a port that listens adds 30/min, one CONNECT every reconnect_delay 2 s)", f.RejectionsPerMin, f.RejectionWindowS)
	}
	if f.LeakedConnecting == 0 {
		return fmt.Sprintf("%.0f rejections/min: no connecting controller was left at the end, so nothing reconnects "+
			"(each connecting leak at a port that listens adds 30/min, one CONNECT every reconnect_delay 2 s)", f.RejectionsPerMin)
	}
	want := float64(f.LeakedConnecting) * 30
	b := fmt.Sprintf("rejections/min = connecting leaks × 30/min per controller (one CONNECT every reconnect_delay 2 s, "+
		"each rejected): %d × 30 = %.0f, measured %.0f", f.LeakedConnecting, want, f.RejectionsPerMin)
	if d := want - f.RejectionsPerMin; d >= 30 {
		b += fmt.Sprintf(" (about %.0f connecting leaks send no CONNECT: nothing listens at their ip:port, TCP is refused)", d/30)
	}
	return b
}

// WriteIncidentTable prints the figures of several runs side by side.
func WriteIncidentTable(w io.Writer, figs []IncidentFigures, shapes []Shape) {
	cols := make([]string, len(figs))
	for i, f := range figs {
		cols[i] = f.Operator
	}
	rows := [][]string{append([]string{""}, cols...)}
	add := func(name string, val func(IncidentFigures) string) {
		r := []string{name}
		for _, f := range figs {
			r = append(r, val(f))
		}
		rows = append(rows, r)
	}
	add("migrations failed on path validation", func(f IncidentFigures) string {
		return fmt.Sprintf("%d of %d", f.ValidationFailed, f.Migrations)
	})
	add("  sbcli subsystem-loss window", func(f IncidentFigures) string { return strconv.Itoa(f.FailedSubsystemLoss) })
	add("  leak kinds the fix removes", func(f IncidentFigures) string { return strconv.Itoa(f.FailedFixRemovedLeak) })
	add("  injected fault", func(f IncidentFigures) string { return strconv.Itoa(f.FailedInjectedFault) })
	add("  other (see causes)", func(f IncidentFigures) string {
		return strconv.Itoa(f.ValidationFailed - f.FailedSubsystemLoss - f.FailedFixRemovedLeak - f.FailedInjectedFault)
	})
	add("controllers at the end / expected", func(f IncidentFigures) string {
		return fmt.Sprintf("%d / %d", f.Controllers, f.Expected)
	})
	add("  healthy + leaked; endpoints missing", func(f IncidentFigures) string {
		return fmt.Sprintf("%d + %d; %d", f.Healthy, f.Controllers-f.Healthy, len(f.MissingEndpoints))
	})
	add("  per host", func(f IncidentFigures) string {
		var parts []string
		for _, h := range slices.Sorted(maps.Keys(f.ControllersPerHost)) {
			parts = append(parts, fmt.Sprintf("%s %d/%d", h, f.ControllersPerHost[h], f.ExpectedPerHost[h]))
		}
		return strings.Join(parts, ", ")
	})
	add("leaked controllers", func(f IncidentFigures) string {
		return fmt.Sprintf("%d (%s)", f.Leaked, leakedKindsText(f))
	})
	add("CONNECT rejections/min at the end", func(f IncidentFigures) string { return fmt.Sprintf("%.0f", f.RejectionsPerMin) })
	add("pods killed", func(f IncidentFigures) string { return strconv.Itoa(f.PodsKilled) })
	add("longest pause", func(f IncidentFigures) string { return fmt.Sprintf("%.1f s", f.LongestPauseS) })
	add("every expectation holds", func(f IncidentFigures) string {
		for i := range figs {
			if figs[i].Operator == f.Operator && i < len(shapes) {
				if shapes[i].OK {
					return "yes"
				}
				return "NO"
			}
		}
		return "?"
	})
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	for _, r := range rows {
		for i, c := range r {
			if i == 0 {
				fmt.Fprintf(w, "%-*s", width[i], c)
			} else {
				fmt.Fprintf(w, "  %-*s", width[i], c)
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "(controllers: of the run's subsystems in each host's last sample, every state but deleting/dead — what the "+
		"leak check inspects; expected: one per published ip:port endpoint of each volume the host consumes; healthy: not named by "+
		"the leak check; endpoints missing: published endpoints with no controller, path-completeness)\n")
}

// IncidentMarkdown renders one run's reproduce report: the figures, the
// expected shape, and the table of validation failures naming the
// controller that failed each migration and the migration that leaked it.
func IncidentMarkdown(f IncidentFigures, s Shape, all []IncidentFigures, shapes []Shape) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Reproduction of %s — operator %s, seed %d\n\n", orDefault(f.Incident, IncidentID), f.Operator, f.Seed)
	fmt.Fprintf(&b, "Kernel reconnect counter reset: %s.\n\n", orDefault(f.ReconnectReset, "full"))
	if s.OK {
		fmt.Fprintf(&b, "**Every expectation of the incident file holds: yes.**\n\n")
	} else {
		fmt.Fprintf(&b, "**Every expectation of the incident file holds: NO.**\n\n")
		for _, m := range s.Missing {
			fmt.Fprintf(&b, "- %s\n", m)
		}
		b.WriteString("\n")
	}
	for _, n := range s.Notes {
		fmt.Fprintf(&b, "Note: %s\n\n", n)
	}
	if f.FaultsCheck.Verdict == record.Inconclusive {
		fmt.Fprintf(&b, "**Faults: inconclusive** — %s. A fault that left no evidence proves nothing about its effect: "+
			"this run's shape cannot be trusted either way.\n\n", f.FaultsCheck.Detail)
	} else if f.FaultsCheck.Verdict != "" {
		fmt.Fprintf(&b, "Faults: %s — %s.\n\n", f.FaultsCheck.Verdict, f.FaultsCheck.Detail)
	}
	b.WriteString("## Side by side\n\n```\n")
	if len(all) == 0 {
		all, shapes = []IncidentFigures{f}, []Shape{s}
	}
	WriteIncidentTable(&b, all, shapes)
	b.WriteString("```\n\n## Migrations that failed path validation\n\n")
	if len(f.Failures) == 0 {
		b.WriteString("None.\n")
	} else {
		b.WriteString("| migration | at | host | controller | endpoint | state | origin | signal | cause | detail |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, v := range f.Failures {
			origin := orDefault(v.Origin, "—")
			if v.LeakCaused {
				origin = "**" + origin + "**"
			}
			cause := v.Cause
			if v.CancelledBy != "" {
				cause += " (after " + v.CancelledBy + "'s cancel)"
			}
			fmt.Fprintf(&b, "| %s | %.1f s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v.Migration, v.AtS, orDefault(v.Host, "—"),
				orDefault(v.Controller, "—"), orDefault(v.Endpoint, "—"), orDefault(v.State, "—"), origin, v.Signal, cause,
				strings.ReplaceAll(v.Detail, "|", "\\|"))
		}
		b.WriteString("\n\"origin\" is the migration whose validation created that controller (bold: an earlier migration, i.e. a leak); " +
			"\"csi\" is a volume path of the CSI driver. \"signal\" is how the validation failed, \"cause\" why " +
			"(research/incident.md §6.2).\n")
		b.WriteString("\nBy cause:\n\n")
		for _, c := range sortedCauses(f.FailureCauses) {
			fmt.Fprintf(&b, "- %d %s\n", f.FailureCauses[c], c)
		}
	}
	if len(f.PodsKilledList) > 0 {
		fmt.Fprintf(&b, "\nPods killed: %s.\n", strings.Join(f.PodsKilledList, ", "))
	}
	return []byte(b.String())
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
