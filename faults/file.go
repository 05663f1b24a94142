package faults

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/fiomig/fiomig/record"
)

// A fault file is a fault schedule written by hand (fiomig run
// --fault-file) or by a tool (fiomig shrink), in YAML or JSON:
//
//	# fiomig fault file
//	faults:
//	- kind: target-restart      # one of Kinds
//	  target: storage-2         # a node, host, host:node, ip:port, migration or "operator", per kind
//	  when: in-freeze           # a stage, a VolumeMigration phase, or a time in seconds
//	  migration: "#3"           # optional: whose phase ("#N" = the N-th migration started, or an id)
//	  duration: 10              # seconds until recovery
//	  params: {after_s: 0.5}    # optional, per kind; after_s delays the injection
//
// when is one of record.Stages (in-validation, before-cutover, in-freeze,
// after-cutover), a VolumeMigration phase (Pending, Validating, Running,
// Completed, Failed, Aborted), or a time since run start: a number of
// seconds (30, 12.5), "30s" or "t=30". Without migration, a phase or
// stage trigger fires on the first migration to enter it. A top-level list
// of entries (without "faults:") is accepted too. Unknown fields and kinds
// are errors naming the file, the entry and the field.

// FileEntry is one entry of a fault file.
type FileEntry struct {
	Kind      string         `json:"kind"`
	Target    string         `json:"target"`
	When      When           `json:"when"`
	Migration string         `json:"migration,omitempty"`
	Duration  float64        `json:"duration,omitempty"` // seconds
	Params    map[string]any `json:"params,omitempty"`
}

// When is a fault file's trigger: a stage or phase name, or a time in
// seconds since run start (AtS, when Phase is "").
type When struct {
	Phase string
	AtS   float64
}

// UnmarshalJSON accepts a number of seconds or a string (a stage, a phase,
// "30s", "t=30" or "30").
func (w *When) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] != '"' {
		var f float64
		if err := json.Unmarshal(b, &f); err != nil {
			return fmt.Errorf("field \"when\": want a stage, a phase or seconds, got %s", b)
		}
		*w = When{AtS: f}
		return w.check()
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	t := strings.TrimSpace(s)
	if p, ok := whenPhase(t); ok {
		*w = When{Phase: p}
		return nil
	}
	num := strings.TrimSuffix(strings.TrimPrefix(t, "t="), "s")
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return fmt.Errorf("field \"when\": %q is not a stage (%s), a phase (%s) or a time in seconds (30, \"30s\", \"t=30\")",
			s, strings.Join(record.Stages, ", "), strings.Join(migrationPhases, ", "))
	}
	*w = When{AtS: f}
	return w.check()
}

func (w When) check() error {
	if math.IsNaN(w.AtS) || math.IsInf(w.AtS, 0) || w.AtS < 0 {
		return fmt.Errorf("field \"when\": time %v: want finite seconds >= 0", w.AtS)
	}
	return nil
}

// MarshalJSON writes the phase, or the time as a number of seconds.
func (w When) MarshalJSON() ([]byte, error) {
	if w.Phase != "" {
		return json.Marshal(w.Phase)
	}
	return json.Marshal(w.AtS)
}

var migrationPhases = []string{record.PhasePending, record.PhaseValidating, record.PhaseRunning,
	record.PhaseCompleted, record.PhaseFailed, record.PhaseAborted}

// whenPhase recognises a stage or a VolumeMigration phase (phases
// case-insensitively, returned in their canonical spelling).
func whenPhase(s string) (string, bool) {
	if slices.Contains(record.Stages, s) {
		return s, true
	}
	for _, p := range migrationPhases {
		if strings.EqualFold(p, s) {
			return p, true
		}
	}
	return "", false
}

type fileDoc struct {
	Faults []json.RawMessage `json:"faults"`
}

// fileFields are the known fields of an entry, from FileEntry's json tags.
func fileFields() []string {
	var out []string
	t := reflect.TypeOf(FileEntry{})
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// ParseFile reads a fault file (YAML or JSON) and returns its schedule.
// Errors name the file, the entry (1-based) and the field.
func ParseFile(path string) ([]record.FaultSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fault file: %w", err)
	}
	return Parse(data, path)
}

// Parse parses a fault file's contents; name is used in errors.
func Parse(data []byte, name string) ([]record.FaultSpec, error) {
	// Strict: a key given twice in one mapping (YAML forbids it; JSON is
	// read by the same parser) is an error, not a silent last-one-wins
	// that would drop a fault or change its target unseen.
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", name, yamlErr(err))
	}
	js = bytes.TrimSpace(js)
	var raw []json.RawMessage
	switch {
	case len(js) == 0 || string(js) == "null":
		return nil, fmt.Errorf("%s: empty fault file (want \"faults:\" and a list of entries)", name)
	case js[0] == '[':
		if err := json.Unmarshal(js, &raw); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	case js[0] == '{':
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		var doc fileDoc
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("%s: %s (the top level holds only \"faults\")", name, jsonErr(err))
		}
		raw = doc.Faults
	default:
		return nil, fmt.Errorf("%s: want \"faults:\" and a list of entries", name)
	}
	out := make([]record.FaultSpec, 0, len(raw))
	for i, r := range raw {
		where := fmt.Sprintf("%s: fault %d", name, i+1)
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		var e FileEntry
		if err := dec.Decode(&e); err != nil {
			msg := jsonErr(err)
			if strings.Contains(msg, "unknown field") {
				msg += " (known fields: " + strings.Join(fileFields(), ", ") + ")"
			}
			return nil, fmt.Errorf("%s: %s", where, msg)
		}
		s, err := e.Spec()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// yamlErr makes the YAML reader's errors one line in the file's terms:
// a duplicate key names its line, a .nan or .inf says so.
func yamlErr(err error) string {
	var uv *json.UnsupportedValueError
	if errors.As(err, &uv) {
		return fmt.Sprintf("a number is %s: want finite numbers (not .nan or .inf)", uv.Str)
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "yaml: unmarshal errors:"); ok {
		var lines []string
		for _, l := range strings.Split(rest, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				l = strings.Replace(l, "already set in map", "given twice", 1)
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "; ")
	}
	return "not YAML or JSON: " + msg
}

// jsonErr makes encoding/json's errors read in the file's terms: a type
// error says "want a list, got a mapping", not the Go type.
func jsonErr(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := map[reflect.Kind]string{reflect.Slice: "a list", reflect.Map: "a mapping", reflect.Struct: "a mapping",
			reflect.String: "a string", reflect.Bool: "true or false", reflect.Float64: "a number"}[te.Type.Kind()]
		got := map[string]string{"object": "a mapping", "array": "a list", "string": "a string", "number": "a number",
			"bool": "true or false"}[te.Value]
		return fmt.Sprintf("field %q: want %s, got %s", te.Field, cmp.Or(want, te.Type.String()), cmp.Or(got, te.Value))
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if strings.HasPrefix(msg, "unknown field ") {
		return msg
	}
	return msg
}

// Spec converts a fault file entry to the schedule entry it means, and
// checks it (FromSpec). Errors name the field.
func (e FileEntry) Spec() (record.FaultSpec, error) {
	if e.Kind == "" {
		return record.FaultSpec{}, errors.New("field \"kind\": missing (want one of " + strings.Join(Kinds, ", ") + ")")
	}
	if !slices.Contains(Kinds, e.Kind) {
		return record.FaultSpec{}, fmt.Errorf("field \"kind\": unknown fault kind %q (want one of %s)", e.Kind, strings.Join(Kinds, ", "))
	}
	if math.IsNaN(e.Duration) || math.IsInf(e.Duration, 0) || e.Duration < 0 {
		return record.FaultSpec{}, fmt.Errorf("field \"duration\": %v: want finite seconds >= 0", e.Duration)
	}
	s := record.FaultSpec{Fault: e.Kind, Target: e.Target, Phase: e.When.Phase, AtS: e.When.AtS,
		Migration: e.Migration, ForS: e.Duration}
	if len(e.Params) > 0 {
		s.Params = map[string]string{}
		for k, v := range e.Params {
			switch x := v.(type) {
			case string:
				s.Params[k] = x
			case float64:
				s.Params[k] = strconv.FormatFloat(x, 'f', -1, 64)
			case bool:
				s.Params[k] = strconv.FormatBool(x)
			default:
				return record.FaultSpec{}, fmt.Errorf("field \"params\": %q: want a string, number or boolean", k)
			}
		}
	}
	if _, err := FromSpec(s); err != nil {
		return record.FaultSpec{}, err
	}
	return s, nil
}

// resultParams are the params the Injector adds to the executed schedule
// (Executed); a fault file keeps only what was planned.
var resultParams = []string{"injected_at_s", "recovered_at_s", "overlap", "planned_migration"}

// Entry converts a schedule entry to a fault file entry, dropping the
// params that report what happened (injected_at_s, recovered_at_s,
// overlap, planned_migration), so that an executed schedule (plan.json) writes as the
// schedule that reruns it.
func Entry(s record.FaultSpec) FileEntry {
	e := FileEntry{Kind: s.Fault, Target: s.Target, When: When{Phase: s.Phase, AtS: s.AtS},
		Migration: s.Migration, Duration: s.ForS}
	for k, v := range s.Params {
		if slices.Contains(resultParams, k) {
			continue
		}
		if e.Params == nil {
			e.Params = map[string]any{}
		}
		e.Params[k] = v
	}
	return e
}

// Marshal renders a schedule as a fault file (YAML) that Parse reads back
// to the same schedule (less the result params, see Entry).
func Marshal(schedule []record.FaultSpec) ([]byte, error) {
	entries := make([]FileEntry, len(schedule))
	for i, s := range schedule {
		entries[i] = Entry(s)
	}
	// The entries' order is the schedule's; params are sorted by yaml.
	body, err := yaml.Marshal(struct {
		Faults []FileEntry `json:"faults"`
	}{entries})
	if err != nil {
		return nil, fmt.Errorf("fault file: %w", err)
	}
	head := "# fiomig fault file: kind, target, when (stage, phase or seconds), migration, duration (s), params.\n" +
		"# Kinds: " + strings.Join(Kinds, ", ") + ".\n"
	return append([]byte(head), body...), nil
}

// WriteFile writes schedule to path as a fault file (Marshal).
func WriteFile(path string, schedule []record.FaultSpec) error {
	b, err := Marshal(schedule)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("fault file: %w", err)
	}
	return nil
}
