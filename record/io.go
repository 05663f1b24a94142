package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// File names inside a run directory (docs/run-record.md).
const (
	PlanFile     = "plan.json"
	TimelineFile = "timeline.jsonl"
	SummaryFile  = "summary.json"
)

// CreateRunDir creates parent/fio-mig-<unixSeconds>, or the first free
// fio-mig-<unixSeconds>-2, -3, ... when the name is taken, and returns its path.
// parent is created when missing.
func CreateRunDir(parent string, unixSeconds int64) (string, error) {
	return CreateUniqueDir(parent, "fio-mig-"+strconv.FormatInt(unixSeconds, 10), "run")
}

// CreateUniqueDir creates parent/base, or the first free base-2, base-3, ...
// when the name is taken, and returns its path; parent is created when
// missing. what names the directory in errors ("run", "sweep", "shrink").
func CreateUniqueDir(parent, base, what string) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("create output directory: %w", err)
	}
	for i := 1; i < 10000; i++ {
		name := base
		if i > 1 {
			name = base + "-" + strconv.Itoa(i)
		}
		dir := filepath.Join(parent, name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("create %s directory: %w", what, err)
		}
	}
	return "", fmt.Errorf("create %s directory: every name %s-N under %s is taken", what, base, parent)
}

// WriteJSON writes v as indented JSON with a trailing newline to path,
// through a temporary file renamed into place. Equal values give equal bytes.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	b = append(b, '\n')
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadPlan reads plan.json (see ParsePlan). Errors name the file.
func ReadPlan(path string) (Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Plan{}, fmt.Errorf("read plan: %w", err)
	}
	return ParsePlan(b, path)
}

// ParsePlan decodes a plan.json document and validates it (Validate); name
// is used in errors, which start "name: ". A field plan.json does not have
// is an error naming it (a misspelt threshold would otherwise be judged
// with its zero value), as is anything after the JSON object.
func ParsePlan(b []byte, name string) (Plan, error) {
	var p Plan
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			return p, fmt.Errorf("%s: %w: not a plan.json field (see record.Plan)", name, err)
		}
		return p, fmt.Errorf("%s: %w", name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return p, fmt.Errorf("%s: trailing data after the JSON object", name)
	}
	if err := p.validate(presentParams(b)); err != nil {
		return p, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// presentParams returns the keys of plan.json's "params" object that are
// present with a non-null value (nil when params itself is absent).
func presentParams(b []byte) map[string]bool {
	var raw struct {
		Params map[string]json.RawMessage `json:"params"`
	}
	if json.Unmarshal(b, &raw) != nil {
		return nil
	}
	out := map[string]bool{}
	for k, v := range raw.Params {
		if string(bytes.TrimSpace(v)) != "null" {
			out[k] = true
		}
	}
	return out
}

// Validate checks the thresholds and the topology a run record is judged
// with; the error names the offending field. Its rules:
// params.sample_interval_s > 0; params.settle_sample_interval_s >= 0
// (0 = the sample interval); params.pause_crit_s (CUTOVER_PAUSE_CRIT_S)
// > 0; params.freezes_allowed (CUTOVER_FREEZES_ALLOWED) >= 0;
// params.settle_s and params.attribution_margin_s >= 0; every number
// finite; params.seed_checks' min_completed and max_timed_out in [0, 1],
// its seconds >= 0, its counts >= 0 and max_not_allowed >= 1; when
// params.migrations > 0, topology.hosts and topology.volumes
// are non-empty; every volume's consumers are hosts of topology.hosts.
func (p Plan) Validate() error { return p.validate(nil) }

// validate is Validate; present, when non-nil, holds the params keys that
// plan.json carries with a value, so that a missing or null threshold is
// named as such rather than as 0.
func (p Plan) validate(present map[string]bool) error {
	pr := p.Params
	got := func(key string, v float64) string {
		if present != nil && !present[key] {
			return "it is missing or null"
		}
		return fmt.Sprintf("got %v", v)
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !(pr.SampleIntervalS > 0) || !finite(pr.SampleIntervalS):
		return fmt.Errorf("params.sample_interval_s must be > 0 seconds, %s", got("sample_interval_s", pr.SampleIntervalS))
	case !(pr.SettleSampleIntervalS >= 0) || !finite(pr.SettleSampleIntervalS):
		return fmt.Errorf("params.settle_sample_interval_s must be >= 0 seconds (0 = sample_interval_s), got %v", pr.SettleSampleIntervalS)
	case !(pr.PauseCritS > 0) || !finite(pr.PauseCritS):
		return fmt.Errorf("params.pause_crit_s (CUTOVER_PAUSE_CRIT_S) must be > 0 seconds, %s", got("pause_crit_s", pr.PauseCritS))
	case present != nil && !present["freezes_allowed"]:
		return fmt.Errorf("params.freezes_allowed (CUTOVER_FREEZES_ALLOWED) must be >= 0, %s", got("freezes_allowed", 0))
	case pr.FreezesAllowed < 0:
		return fmt.Errorf("params.freezes_allowed (CUTOVER_FREEZES_ALLOWED) must be >= 0, got %d", pr.FreezesAllowed)
	case !(pr.SettleS >= 0) || !finite(pr.SettleS):
		return fmt.Errorf("params.settle_s must be >= 0 seconds, got %v", pr.SettleS)
	case !(pr.AttributionMarginS >= 0) || !finite(pr.AttributionMarginS):
		return fmt.Errorf("params.attribution_margin_s must be >= 0 seconds, got %v", pr.AttributionMarginS)
	case pr.Migrations < 0:
		return fmt.Errorf("params.migrations must be >= 0, got %d", pr.Migrations)
	case !(pr.Seed.MinCompleted >= 0 && pr.Seed.MinCompleted <= 1) || !(pr.Seed.MaxTimedOut >= 0 && pr.Seed.MaxTimedOut <= 1):
		return fmt.Errorf("params.seed_checks.min_completed and max_timed_out must be fractions in [0, 1], got %v and %v", pr.Seed.MinCompleted, pr.Seed.MaxTimedOut)
	case !(pr.Seed.MigrationTimeoutS >= 0) || !(pr.Seed.OutageS >= 0) || !(pr.Seed.VerifyLagS >= 0) || !finite(pr.Seed.MigrationTimeoutS+pr.Seed.OutageS+pr.Seed.VerifyLagS):
		return fmt.Errorf("params.seed_checks: migration_timeout_s, outage_s and verify_lag_s must be finite and >= 0 seconds, got %v, %v, %v", pr.Seed.MigrationTimeoutS, pr.Seed.OutageS, pr.Seed.VerifyLagS)
	case pr.Seed.MaxNetControllers < 0 || pr.Seed.MaxReconnects < 0 || pr.Seed.MaxCtrlLossTmoS < 0 || pr.Seed.MaxPaths < 0:
		return fmt.Errorf("params.seed_checks: max_net_controllers, max_reconnects, max_ctrl_loss_tmo_s and max_paths must be >= 0, got %+v", pr.Seed)
	case pr.Seed.MaxNotAllowed < 1:
		return fmt.Errorf("params.seed_checks.max_not_allowed must be >= 1 (target-log-pattern fails at >= it; 1 allows none), got %d", pr.Seed.MaxNotAllowed)
	}
	if pr.Migrations > 0 {
		if len(p.Topology.Hosts) == 0 {
			return fmt.Errorf("topology.hosts is empty (or null) but params.migrations is %d: no consumer host to judge", pr.Migrations)
		}
		if len(p.Topology.Volumes) == 0 {
			return fmt.Errorf("topology.volumes is empty (or null) but params.migrations is %d: no volume to judge", pr.Migrations)
		}
	}
	hosts := map[string]bool{}
	for i, h := range p.Topology.Hosts {
		if h.Name == "" {
			return fmt.Errorf("topology.hosts[%d] has no name", i)
		}
		hosts[h.Name] = true
	}
	for i, v := range p.Topology.Volumes {
		for _, c := range v.Consumers {
			if !hosts[c] {
				return fmt.Errorf("topology.volumes[%d] (%s) has consumer %q, which is not in topology.hosts", i, v.Name, c)
			}
		}
	}
	return nil
}

// TimelineWriter appends lines to timeline.jsonl. Unbatched (the default),
// each Append is one write of one complete line, so a killed run keeps
// every line appended before it died. Batched (SetBatched), Append encodes
// into a buffer and Flush writes every buffered line in one write: a
// sampling tick's lines, flushed before the clock moves on, so a killed run
// keeps every tick it completed. Times are rounded to the microsecond.
type TimelineWriter struct {
	// Keep, when set, makes the writer also keep each appended line whose
	// kind it accepts, exactly as encoded (times rounded), for Kept.
	Keep func(kind string) bool
	// KeepLine, when set, is asked instead of Keep with the whole line.
	KeepLine func(Line) bool
	kept     []Line
	// OnAppend, when set, is called with each appended line exactly as
	// encoded (times rounded), in order: a streaming consumer such as the
	// checks. Its error fails the Append.
	OnAppend func(Line) error

	w       io.Writer
	c       io.Closer
	buf     bytes.Buffer
	enc     *json.Encoder
	path    string
	batched bool
}

// CreateTimeline creates (or truncates) path for appending timeline lines.
func CreateTimeline(path string) (*TimelineWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create timeline: %w", err)
	}
	tw := NewTimelineWriter(f, path)
	tw.c = f
	return tw, nil
}

// NewTimelineWriter appends timeline lines to w (io.Discard for benchmarks);
// name is used in errors.
func NewTimelineWriter(w io.Writer, name string) *TimelineWriter {
	tw := &TimelineWriter{w: w, path: name}
	tw.enc = json.NewEncoder(&tw.buf)
	tw.enc.SetEscapeHTML(false)
	return tw
}

// SetBatched switches the writer to batched writes: lines are written by
// Flush (and Close), one write for all lines appended since the last one.
func (tw *TimelineWriter) SetBatched(on bool) { tw.batched = on }

// RoundT rounds a time in seconds to the microsecond, the timeline's resolution.
func RoundT(t float64) float64 { return math.Round(t*1e6) / 1e6 }

// FormatT formats seconds t rounded by RoundT in the shortest decimal form,
// no exponent and no unit ("2.5", "0.000001"): how checks' details,
// reports and fault evidence print times and durations.
func FormatT(t float64) string { return strconv.FormatFloat(RoundT(t), 'f', -1, 64) }

// Append writes one line (batched: buffers it). It rejects a line without kind.
func (tw *TimelineWriter) Append(l Line) error {
	if l.Kind == "" {
		return fmt.Errorf("%s: timeline line at t=%v has no kind", tw.path, l.T)
	}
	l.T = RoundT(l.T)
	if l.StartS != nil {
		s := RoundT(*l.StartS)
		l.StartS = &s
	}
	if !tw.batched {
		tw.buf.Reset()
	}
	// The flat lines (most of a timeline) are encoded without reflection;
	// the others by encoding/json, to the same bytes (appendLine).
	if b, ok := appendLine(tw.buf.AvailableBuffer(), &l); ok {
		tw.buf.Write(append(b, '\n'))
	} else if err := tw.enc.Encode(l); err != nil {
		return fmt.Errorf("%s: encode %s line: %w", tw.path, l.Kind, err)
	}
	if !tw.batched {
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	switch {
	case tw.KeepLine != nil:
		if tw.KeepLine(l) {
			tw.kept = append(tw.kept, l)
		}
	case tw.Keep != nil && tw.Keep(l.Kind):
		tw.kept = append(tw.kept, l)
	}
	if tw.OnAppend != nil {
		if err := tw.OnAppend(l); err != nil {
			return err
		}
	}
	return nil
}

// Flush writes the buffered lines in one write (nothing when none).
func (tw *TimelineWriter) Flush() error {
	if tw.buf.Len() == 0 {
		return nil
	}
	_, err := tw.w.Write(tw.buf.Bytes())
	tw.buf.Reset()
	if err != nil {
		return fmt.Errorf("%s: append: %w", tw.path, err)
	}
	return nil
}

// Kept returns the lines Keep accepted, in order.
func (tw *TimelineWriter) Kept() []Line { return tw.kept }

// Close flushes what is buffered and closes the underlying file, if the
// writer opened one.
func (tw *TimelineWriter) Close() error {
	ferr := tw.Flush()
	if tw.c == nil {
		return ferr
	}
	if err := tw.c.Close(); ferr == nil {
		ferr = err
	}
	return ferr
}

// ErrTruncated marks a timeline whose last line is incomplete (the run was
// killed while writing it). The lines before it are returned with it.
var ErrTruncated = errors.New("last line is truncated")

// ScanTimeline reads timeline lines from r one by one and calls fn for each.
// name is used in errors, which carry "name:line: ...". Every line needs
// "t", a known "kind" (Kinds) and the fields that identify it (a sample's
// host; a phase's migration, nqn and phase; a fault's fault and action; an
// io line's volume; a kernel line's host and message; a target line's
// node; an endpoints line's nqn). A final line with
// no newline that does not parse gives an error wrapping ErrTruncated. The
// timeline is append-only, so a line whose t is less than the previous
// line's t is an error ("t went backwards"); equal times are fine.
func ScanTimeline(r io.Reader, name string, fn func(Line) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	prevT := 0.0
	for n := 1; ; n++ {
		b, err := br.ReadBytes('\n')
		if len(b) == 0 && err == io.EOF {
			return nil
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
		complete := err == nil
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			if complete {
				continue
			}
			return nil
		}
		var l Line
		if jerr := json.Unmarshal(b, &l); jerr != nil {
			if !complete {
				return fmt.Errorf("%s:%d: %w: %v", name, n, ErrTruncated, jerr)
			}
			return fmt.Errorf("%s:%d: not a JSON timeline line: %w", name, n, jerr)
		}
		if l.Kind == "" {
			return fmt.Errorf("%s:%d: line has no \"kind\"", name, n)
		}
		if !slices.Contains(Kinds, l.Kind) {
			return fmt.Errorf("%s:%d: unknown kind %q (want one of %s)", name, n, l.Kind, strings.Join(Kinds, ", "))
		}
		// The writer puts "t" first; any other line is checked for it.
		if !bytes.HasPrefix(b, []byte(`{"t":`)) {
			var hasT struct {
				T *float64 `json:"t"`
			}
			if json.Unmarshal(b, &hasT) != nil || hasT.T == nil {
				return fmt.Errorf("%s:%d: %s line has no field \"t\" (seconds since run start)", name, n, l.Kind)
			}
		}
		if missing := requiredFields(l); len(missing) > 0 {
			return fmt.Errorf("%s:%d: %s line has no %s", name, n, l.Kind, strings.Join(quoteAll(missing), ", "))
		}
		if math.IsNaN(l.T) || l.T < 0 {
			return fmt.Errorf("%s:%d: field \"t\" must be seconds >= 0, got %v", name, n, l.T)
		}
		if l.T < prevT {
			return fmt.Errorf("%s:%d: t went backwards: %v after %v (the timeline is append-only)", name, n, l.T, prevT)
		}
		prevT = l.T
		if err := fn(l); err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
		if !complete {
			return nil
		}
	}
}

func quoteAll(fields []string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = strconv.Quote(f)
	}
	return out
}

// ReadTimeline reads a whole timeline.jsonl, of either format version, as
// ScanStates yields it: every host's state at every tick it was observed
// (version-2 heartbeats expanded into sample lines). On error it returns the
// lines read before the bad one as well. It holds the whole run in memory;
// ScanStates streams.
func ReadTimeline(path string) ([]Line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read timeline: %w", err)
	}
	defer f.Close()
	var lines []Line
	err = ScanStates(f, path, func(l Line) error {
		lines = append(lines, l)
		return nil
	})
	return lines, err
}
