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

	"github.com/fiomig/fiomig/record"
)

// The figures of incident fio-mig-1787159565 (DESIGN.md "The incident to
// reproduce"), computed from a run record alone, and the shape each
// operator variant is expected to show (issue 4, acceptance).

// IncidentFigures are what the incident report compares: computed from
// plan.json, timeline.jsonl and summary.json only.
type IncidentFigures struct {
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
	// LeaksRemovedByKernel counts controllers the kernel removed after
	// max_reconnects ("Removing controller" kernel lines) — leaks that
	// expired before the end.
	LeaksRemovedByKernel int `json:"leaks_removed_by_kernel"`

	// LeakCausedSameVolume counts the leak-caused failures whose leaking
	// migration moved the same volume (subsystem).
	LeakCausedSameVolume int `json:"leak_caused_same_volume"`
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
	// LongestPauseS is the longest pause window of the run, attributed or not.
	LongestPauseS float64 `json:"longest_pause_s"`
	// FaultsInjected counts fault inject lines with evidence.
	FaultsInjected int `json:"faults_injected"`
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
	LeakCaused bool   `json:"leak_caused"`
	Detail     string `json:"detail"`
}

// RejectionWindowS is the stretch at the end of the run over which CONNECT
// rejections per minute are measured, seconds.
const RejectionWindowS = 600.0

var (
	reHost = regexp.MustCompile(`on (?:host )?([A-Za-z0-9._-]+):`)
	reCtrl = regexp.MustCompile(`\b(nvme\d+)\b`)
)

// IncidentLines reads from a timeline.jsonl only the lines the incident's
// figures need — phase, endpoints, fault and target lines, kernel lines of
// controllers created, reconnected or removed, io lines of killed pods, each host's last
// sample, and the last line — skipping the rest by a look at their bytes
// (the writer's field order is fixed), so that a run of hundreds of
// megabytes reads in a fraction of a second. Errors name the file and line.
func IncidentLines(path string) ([]record.Line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read timeline: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var (
		out      []record.Line
		lastLine []byte
		samples  = map[string][]byte{}
		hosts    []string
	)
	decode := func(b []byte, n int) error {
		var l record.Line
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, l)
		return nil
	}
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
			lastLine = append(lastLine[:0], b...)
			switch kindOf(b) {
			case record.KindSample:
				h := fieldValue(b, `"host":"`)
				if _, ok := samples[h]; !ok {
					hosts = append(hosts, h)
				}
				samples[h] = append(samples[h][:0], b...)
			case record.KindKernel:
				if bytes.Contains(b, []byte(`"message":"new ctrl`)) || bytes.Contains(b, []byte(`"message":"Removing controller`)) ||
					bytes.Contains(b, []byte(`"message":"Successfully reconnected`)) {
					if derr := decode(b, n); derr != nil {
						return nil, derr
					}
				}
			case record.KindIO:
				if bytes.Contains(b, []byte(`"pod_state":"killed"`)) {
					if derr := decode(b, n); derr != nil {
						return nil, derr
					}
				}
			default:
				if derr := decode(b, n); derr != nil {
					return nil, derr
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	for _, h := range hosts {
		if err := decode(samples[h], 0); err != nil {
			return nil, err
		}
	}
	if len(lastLine) > 0 {
		if err := decode(lastLine, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// kindOf is the value of a timeline line's "kind" field.
func kindOf(b []byte) string { return fieldValue(b, `"kind":"`) }

// fieldValue is the string value following key (`"name":"`) in b, "" if none.
func fieldValue(b []byte, key string) string {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return ""
	}
	rest := b[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// ComputeIncidentFigures computes the figures from a run record: plan.json,
// the timeline's lines (all of them, or those IncidentLines keeps) and
// summary.json.
func ComputeIncidentFigures(plan record.Plan, lines []record.Line, sum record.Summary) IncidentFigures {
	f := IncidentFigures{Operator: plan.Params.Extra["operator"], Seed: plan.Seed,
		ReconnectReset: plan.Params.Extra["reconnect_reset"], Outcomes: map[string]int{},
		ControllersPerHost: map[string]int{}, ExpectedPerHost: map[string]int{}, LeakedByState: map[string]int{},
		RejectionWindowS: RejectionWindowS, Failures: []ValidationFailure{}}

	// Migration spans, by NQN, for attributing controllers to migrations.
	type span struct {
		id       string
		nqn      string
		from, to float64
		ended    bool
		outcome  string
	}
	var spans []*span
	byID := map[string]*span{}
	last := map[string]record.Line{}
	var lastT float64
	published := map[string][]string{}
	// newCtrl: host/ctrl -> times of "new ctrl" lines (controller names are reused).
	type birth struct {
		t   float64
		nqn string
	}
	births := map[string][]birth{}
	rejected := map[string][]record.Line{}
	killed := map[string]bool{}
	reconnected := map[string][]float64{}
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
			if record.IsTerminal(l.Phase) && !s.ended {
				s.to, s.ended = l.T, true
			}
			if l.Phase == record.PhaseFailed && strings.Contains(l.Reason, "path validation") {
				f.Failures = append(f.Failures, failureOf(l))
			}
		case record.KindSample:
			last[l.Host] = l
		case record.KindEndpoints:
			published[l.NQN] = l.Endpoints
		case record.KindKernel:
			if strings.HasPrefix(l.Message, "new ctrl") {
				nqn := ""
				if i := strings.Index(l.Message, `NQN "`); i >= 0 {
					rest := l.Message[i+5:]
					if j := strings.IndexByte(rest, '"'); j >= 0 {
						nqn = rest[:j]
					}
				}
				k := l.Host + "/" + l.Controller
				births[k] = append(births[k], birth{l.T, nqn})
			}
			if strings.HasPrefix(l.Message, "Removing controller") {
				f.LeaksRemovedByKernel++
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
			}
		case record.KindFault:
			if l.Action == "inject" && len(l.Evidence) > 0 {
				f.FaultsInjected++
			}
		}
	}
	f.Migrations = len(spans)
	f.Volumes = len(plan.Topology.Volumes)
	for _, s := range spans {
		f.Outcomes[s.outcome]++
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
			if o, ok := byID[v.Origin]; ok && o.nqn == v.NQN {
				f.LeakCausedSameVolume++
			}
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
			if runNQN[c.NQN] {
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
	for _, l := range sum.LeakedControllers {
		f.LeakedByState[l.State]++
		switch {
		case l.State == "connecting":
			f.LeakedConnecting++
		case noNS[l.Host+"/"+l.Controller]:
			f.LeakedLiveNoNamespace++
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

// Shape is whether a run shows the shape its operator variant is expected
// to show (issue 4 acceptance), with the reasons when it does not and notes
// on which mechanism or switch a missing shape needs.
type Shape struct {
	OK      bool     `json:"ok"`
	Missing []string `json:"missing,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// Expected shape bounds (issue 4 acceptance; the incident had 16 of 23
// failed, ~18 leaked, ~146 rejections/min).
const (
	ShapeMinLeaked       = 10
	ShapeMaxLeaked       = 30
	ShapeMinRejectionsPM = 50
	ShapeMaxRejectionsPM = 400
)

// JudgeShape: prefix must show the cascade — at least half of the
// migrations fail path validation, most of them (more than half) because
// of controllers leaked by earlier migrations, 10 to 30 leaked controllers
// at the end, 50 to 400 CONNECT rejections per minute; fixed must show zero
// leaked controllers and no leak-caused validation failure. Notes name the
// kernel switch or the mechanism a missing shape needs, from what the
// record shows.
func JudgeShape(f IncidentFigures) Shape {
	var s Shape
	miss := func(format string, a ...any) { s.Missing = append(s.Missing, fmt.Sprintf(format, a...)) }
	note := func(format string, a ...any) { s.Notes = append(s.Notes, fmt.Sprintf(format, a...)) }
	if f.Operator == "fixed" {
		if f.Leaked != 0 {
			miss("%d leaked controllers at the end, want 0", f.Leaked)
		}
		if f.LeakCaused != 0 {
			miss("%d validation failures caused by leaked controllers, want 0", f.LeakCaused)
		}
		s.OK = len(s.Missing) == 0
		return s
	}
	half := (f.Migrations + 1) / 2
	if f.ValidationFailed < half {
		miss("%d of %d migrations failed path validation, want at least %d", f.ValidationFailed, f.Migrations, half)
	}
	if f.ValidationFailed == 0 || 2*f.LeakCaused <= f.ValidationFailed {
		miss("%d of %d validation failures caused by earlier migrations' leaks, want most", f.LeakCaused, f.ValidationFailed)
	}
	if f.Leaked < ShapeMinLeaked || f.Leaked > ShapeMaxLeaked {
		miss("%d leaked controllers at the end, want %d to %d", f.Leaked, ShapeMinLeaked, ShapeMaxLeaked)
	}
	if f.RejectionsPerMin < ShapeMinRejectionsPM || f.RejectionsPerMin > ShapeMaxRejectionsPM {
		miss("%.0f CONNECT rejections/min at the end, want %d to %d", f.RejectionsPerMin, ShapeMinRejectionsPM, ShapeMaxRejectionsPM)
	}
	s.OK = len(s.Missing) == 0
	if f.ReconnectReset != "partial" && f.LeakedConnecting == 0 && f.LeaksRemovedByKernel > 0 {
		note("the kernel removed %d controllers after max_reconnects (upstream counter reset: ctrl_loss_tmo 3600 / "+
			"reconnect_delay 2 = 1800 attempts, about 1 h); connecting leaks still there 2.5 h later need "+
			"--reconnect-reset=partial (or endpoints that came back)", f.LeaksRemovedByKernel)
	}
	if f.ReconnectReset == "partial" && f.LeakedConnecting > 0 {
		note("the %d connecting leaks outlive the 1 h upstream reconnect budget only because of --reconnect-reset=partial "+
			"(the counter resets on every rejected CONNECT)", f.LeakedConnecting)
	}
	if f.ValidationFailed < half {
		if f.LeakCaused > 0 && f.LeakCausedSameVolume == f.LeakCaused {
			note("mechanism missing for the cascade: every leak-caused failure (%d) hit a later migration of the volume "+
				"whose migration leaked the controller — validation asks nvmeof.Inspect about its own subsystem only, as "+
				"the real operator's VerifyMigrationPaths does (simplyblock-operator internal/volumemigration), and "+
				"%d migrations over %d volumes migrate each volume only about %.1f times; a leak cannot fail another "+
				"volume's validation unless volumes share a subsystem (max_namespace_per_subsys > 1, not this scenario)",
				f.LeakCaused, f.Migrations, f.Volumes, float64(f.Migrations)/float64(max(1, f.Volumes)))
		}
		if f.LeaksHealed > 0 {
			note("%d leaked controllers reconnected live when a later migration of their volume re-added a listener at "+
				"their endpoint (the endpoint came back), which ends those leaks", f.LeaksHealed)
		}
	}
	if f.PodsKilled == 0 {
		note("no fio pod died: no pause exceeded the pods' 5 s tolerance (the incident's 6 s and 8 s pauses that " +
			"killed 8 of 10 pods are a separate finding: retried cutovers, not modelled by this schedule)")
	}
	return s
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
	add("  of which caused by earlier leaks", func(f IncidentFigures) string { return strconv.Itoa(f.LeakCaused) })
	add("controllers at the end / expected", func(f IncidentFigures) string {
		return fmt.Sprintf("%d / %d", f.Controllers, f.Expected)
	})
	add("  per host", func(f IncidentFigures) string {
		var parts []string
		for _, h := range slices.Sorted(maps.Keys(f.ControllersPerHost)) {
			parts = append(parts, fmt.Sprintf("%s %d/%d", h, f.ControllersPerHost[h], f.ExpectedPerHost[h]))
		}
		return strings.Join(parts, ", ")
	})
	add("leaked controllers", func(f IncidentFigures) string {
		return fmt.Sprintf("%d (%d connecting, %d live no namespace)", f.Leaked, f.LeakedConnecting, f.LeakedLiveNoNamespace)
	})
	add("CONNECT rejections/min at the end", func(f IncidentFigures) string { return fmt.Sprintf("%.0f", f.RejectionsPerMin) })
	add("pods killed", func(f IncidentFigures) string { return strconv.Itoa(f.PodsKilled) })
	add("longest pause", func(f IncidentFigures) string { return fmt.Sprintf("%.1f s", f.LongestPauseS) })
	add("expected shape", func(f IncidentFigures) string {
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
	fmt.Fprintf(w, "(incident fio-mig-1787159565: 16 of 23 failed validation; 32 controllers where ~18 were expected, 18 leaked; ~146 rejections/min; 8 of 10 pods killed)\n")
}

// IncidentMarkdown renders one run's reproduce report: the figures, the
// expected shape, and the table of validation failures naming the
// controller that failed each migration and the migration that leaked it.
func IncidentMarkdown(f IncidentFigures, s Shape, all []IncidentFigures, shapes []Shape) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Reproduction of fio-mig-1787159565 — operator %s, seed %d\n\n", f.Operator, f.Seed)
	fmt.Fprintf(&b, "Kernel reconnect counter reset: %s.\n\n", orDefault(f.ReconnectReset, "full"))
	if s.OK {
		fmt.Fprintf(&b, "**Expected shape: yes.**\n\n")
	} else {
		fmt.Fprintf(&b, "**Expected shape: NO.**\n\n")
		for _, m := range s.Missing {
			fmt.Fprintf(&b, "- %s\n", m)
		}
		b.WriteString("\n")
	}
	for _, n := range s.Notes {
		fmt.Fprintf(&b, "Note: %s\n\n", n)
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
		b.WriteString("| migration | at | host | controller | endpoint | state | leaked by | detail |\n|---|---|---|---|---|---|---|---|\n")
		for _, v := range f.Failures {
			origin := orDefault(v.Origin, "—")
			if v.LeakCaused {
				origin = "**" + origin + "**"
			}
			fmt.Fprintf(&b, "| %s | %.1f s | %s | %s | %s | %s | %s | %s |\n", v.Migration, v.AtS, orDefault(v.Host, "—"),
				orDefault(v.Controller, "—"), orDefault(v.Endpoint, "—"), orDefault(v.State, "—"), origin, strings.ReplaceAll(v.Detail, "|", "\\|"))
		}
		b.WriteString("\n\"leaked by\" is the migration whose validation created that controller (bold: an earlier migration, i.e. a leak); " +
			"\"csi\" is a volume path of the CSI driver.\n")
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
