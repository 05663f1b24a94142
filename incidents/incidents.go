package incidents

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/fiomig/fiomig/record"
)

//go:embed *.yaml
var catalogue embed.FS

// Default is the catalogue's first incident, the one fiomig set out to
// reproduce (the examples of fiomig reproduce name it).
const Default = "fio-mig-1787159565"

// Source says where a modelled behaviour or an expected figure comes from
// (docs/sources.md marks every fact the same way).
type Source string

// The three sources.
const (
	Sourced    Source = "sourced"    // a cited document or line of code says so
	Inference  Source = "inference"  // follows from sourced facts by an argument stated in the note
	Assumption Source = "assumption" // nothing establishes it; chosen and labelled
)

// Incident is one catalogue file. Every section that models something
// carries a Source and a Note citing it.
type Incident struct {
	// Name is the incident's id (the run name it reproduces); it must equal
	// the file's base name without ".yaml".
	Name string `json:"name"`
	// Summary is one paragraph: what happened, in the sources' words.
	Summary string `json:"summary"`
	// References cite the sources (REV:path:line or document §).
	References []string `json:"references,omitempty"`
	// Topology (nodes, hosts, hosts_are_nodes, volumes, ..., pods), Model
	// (the control plane's switches, the cutover, release_sources) and
	// Kernel (reconnect_reset, kernel_dnr, target_dnr) set the simulated
	// world by record.Model's names (World); each value may carry its own
	// source.
	Topology Settings `json:"topology"`
	Model    Settings `json:"model"`
	// Operators are the operator variants reproduced by default
	// ("prefix", "fixed"); --operator overrides.
	Operators Operators `json:"operators"`
	Kernel    Settings  `json:"kernel"`
	Pacing    Pacing    `json:"pacing"`
	Faults    Faults    `json:"faults"`
	// Expected are the bands and check verdicts the reproduction must show;
	// reproduce exits 0 only when every one holds.
	Expected []Expectation `json:"expected"`
	// Symptoms are the incident's own observed figures, shown beside the
	// model's (never judged); nil when the file lists none.
	Symptoms *Symptoms `json:"symptoms,omitempty"`
	// Notes are this incident's own context for the notes printed under a
	// run (analysis.IncidentNotes); another incident prints only the
	// generic note.
	Notes Notes `json:"notes,omitzero"`
	// Hypotheses are the unknowns no source settles, each with the
	// alternatives that could explain the symptoms (fiomig reproduce
	// --hypotheses runs every combination, Combinations).
	Hypotheses []Unknown `json:"hypotheses,omitempty"`

	// File is where the incident was read from (not in the YAML); Text is
	// the file as Parse read it (what a seed farm sends its pods, which
	// cannot read the file: docs/farm.md).
	File string `json:"-"`
	Text []byte `json:"-"`
	// overlays are a combination's alternatives, set over the world's
	// blocks (Combinations).
	overlays []overlay
}

// Notes extend two of a run's notes with the incident's own context, each
// one clause citing its source.
type Notes struct {
	// PodsSurvived follows, in parentheses, "no fio pod died: no pause
	// exceeded the pods' tolerance" (a run with fio pods, none killed).
	PodsSurvived string `json:"pods_survived,omitempty"`
	// KernelRemoved replaces "(max_reconnects = ctrl_loss_tmo /
	// reconnect_delay)" in "the kernel removed N controllers after
	// max_reconnects …" (no connecting leak left, the upstream counter).
	KernelRemoved string `json:"kernel_removed,omitempty"`
}

// Operators are the operator variants: Value "prefix", "fixed" or "both".
type Operators struct {
	Value  string `json:"value"`
	Source Source `json:"source"`
	Note   string `json:"note,omitempty"`
}

// Pacing is the migrations' schedule, the durations of the steps the
// harness waits on, and the sampling, seconds. Source and Note tag the
// block; Tags tag single values whose source differs (docs/sources.md
// §9.5 lists the incident's pacing as an assumption, while some of its
// values, e.g. the seed harness's 15 s gap, are sourced on their own).
type Pacing struct {
	// Migrations is how many migrations run, one at a time.
	Migrations int `json:"migrations"`
	// GapS is the wait between one migration's end and the next start
	// (the seed harness's --migration-gap).
	GapS float64 `json:"gap_s"`
	// JobStartS is a path Job's start, [min, max]: pod scheduling, image
	// pull and container start of every validation and release Job, drawn
	// uniformly (sim.Config.JobStartMinS/JobStartMaxS). Absent: the
	// simulator's default, 1-3 s.
	JobStartS []float64 `json:"job_start_s,omitempty"`
	// SyncS is the control plane's data sync after continue, [min, max]:
	// the cutover starts a uniform draw later (sim.Config.SyncMinS/SyncMaxS).
	// Absent: the simulator's default, 3-8 s.
	SyncS []float64 `json:"sync_s,omitempty"`
	// MigrationTimeoutS is how long the harness waits for one migration
	// (the seed harness's --migration-timeout): past it the run moves on to
	// the gap and the next migration, and migration-outcomes counts the
	// migration as timed out. Absent (0): the run waits up to 3600 s and
	// migration-outcomes counts from 420 s (record.SeedThresholds).
	MigrationTimeoutS float64 `json:"migration_timeout_s,omitempty"`
	// SampleIntervalS is the hosts' sampling interval during the
	// migrations; the pause checks judge only when it is at most a tenth
	// of the pause bound (checks.ResolutionFraction).
	SampleIntervalS float64 `json:"sample_interval_s"`
	// SettleS is how long the run goes on after the last migration before
	// the leak and completeness checks look, sampled every
	// SettleSampleIntervalS.
	SettleS               float64 `json:"settle_s"`
	SettleSampleIntervalS float64 `json:"settle_sample_interval_s"`
	Source                Source  `json:"source"`
	Note                  string  `json:"note,omitempty"`
	// Tags give a value its own source, keyed by the value's field name
	// (e.g. "gap_s"); a value without a tag has the block's Source.
	Tags map[string]Tag `json:"tags,omitempty"`
}

// Tag is the source of one value and the note citing it.
type Tag struct {
	Source Source `json:"source"`
	Note   string `json:"note,omitempty"`
}

// pacingFields are Pacing's value fields by their file names.
var pacingFields = []string{"migrations", "gap_s", "job_start_s", "sync_s", "migration_timeout_s",
	"sample_interval_s", "settle_s", "settle_sample_interval_s"}

// SourceOf is the source of the pacing value named field (its file name):
// its tag's, else the block's.
func (p Pacing) SourceOf(field string) Source {
	if t, ok := p.Tags[field]; ok {
		return t.Source
	}
	return p.Source
}

// validate reports each bad pacing value, naming its field.
func (p Pacing) validate(bad func(string, ...any), src func(string, Source)) {
	src("pacing", p.Source)
	if p.Migrations < 1 {
		bad("pacing.migrations: %d: want at least 1", p.Migrations)
	}
	for _, f := range []struct {
		name     string
		v        float64
		positive bool
	}{
		{"gap_s", p.GapS, false}, {"sample_interval_s", p.SampleIntervalS, true},
		{"settle_s", p.SettleS, false}, {"settle_sample_interval_s", p.SettleSampleIntervalS, true},
		{"migration_timeout_s", p.MigrationTimeoutS, false},
	} {
		switch {
		case math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0:
			bad("pacing.%s: %g: want a finite number of seconds ≥ 0", f.name, f.v)
		case f.positive && f.v == 0:
			bad("pacing.%s: 0: want seconds > 0", f.name)
		}
	}
	for _, r := range []struct {
		name string
		v    []float64
	}{{"job_start_s", p.JobStartS}, {"sync_s", p.SyncS}} {
		if r.v == nil {
			continue
		}
		if len(r.v) != 2 || !(r.v[0] >= 0) || !(r.v[1] >= r.v[0]) || !(r.v[1] > 0) || math.IsInf(r.v[1], 0) {
			bad("pacing.%s: %v: want [min, max] seconds with 0 ≤ min ≤ max and max > 0", r.name, r.v)
		}
	}
	set := map[string]bool{"migrations": true, "gap_s": true, "sample_interval_s": true, "settle_s": true,
		"settle_sample_interval_s": true, "job_start_s": p.JobStartS != nil, "sync_s": p.SyncS != nil,
		"migration_timeout_s": p.MigrationTimeoutS > 0}
	for _, k := range slices.Sorted(maps.Keys(p.Tags)) {
		switch {
		case !slices.Contains(pacingFields, k):
			bad("pacing.tags.%s: not a pacing value (known: %s)", k, strings.Join(pacingFields, ", "))
		case !set[k]:
			bad("pacing.tags.%s: tags a value the file does not set", k)
		default:
			src("pacing.tags."+k, p.Tags[k].Source)
		}
	}
}

// Faults are the incident's faults: a seeded family and/or an explicit
// schedule. Where no source says what triggered something, the trigger is
// a fault labelled assumption.
type Faults struct {
	Seeded    *Seeded            `json:"seeded,omitempty"`
	Scheduled []record.FaultSpec `json:"scheduled,omitempty"`
	Source    Source             `json:"source"`
	Note      string             `json:"note,omitempty"`
}

// Seeded draws Count faults of Kinds from the seed, each injected AfterS
// (a [min, max] range, seconds) into Phase of one of the migrations
// FirstMigration..LastMigration (1-based), lasting ForS ([min, max]).
type Seeded struct {
	Count          int        `json:"count"`
	Kinds          []string   `json:"kinds"`
	Phase          string     `json:"phase"`
	AfterS         [2]float64 `json:"after_s"`
	ForS           [2]float64 `json:"for_s"`
	FirstMigration int        `json:"first_migration"`
	LastMigration  int        `json:"last_migration"`
}

// Expectation is a band over a figure (Figure with Min and/or Max), a
// check's verdict (Check with Verdict and, optionally, the exact set of
// migrations it fails on), or a cross-operator judgement's verdict
// (Compare with Verdict).
type Expectation struct {
	// Figure names a reproduce figure (a json field of scenario's
	// IncidentFigures, e.g. "validation_failed", "leaked").
	Figure string   `json:"figure,omitempty"`
	Min    *float64 `json:"min,omitempty"`
	Max    *float64 `json:"max,omitempty"`
	// Check names a check (summary.json checks[].name); Verdict is its
	// expected verdict; Failing, when given, the exact migrations it must
	// fail on (no more, no fewer).
	Check   string   `json:"check,omitempty"`
	Verdict string   `json:"verdict,omitempty"`
	Failing []string `json:"failing,omitempty"`
	// Compare names a judgement across the operators over seeds (judged
	// only when both ran on at least 2 seeds), e.g.
	// "fixed-le-prefix-confined" (scenario's JudgeOverSeeds); Verdict is
	// its expected verdict and Margin its equivalence margin (required).
	Compare string  `json:"compare,omitempty"`
	Margin  *Margin `json:"margin,omitempty"`
	// Operator limits the expectation to one operator ("" = every one).
	Operator string `json:"operator,omitempty"`
	Source   Source `json:"source"`
	Note     string `json:"note,omitempty"`
}

// Margin is a comparison's equivalence margin δ, failures per run: a mean
// paired difference whose 95 % interval lies within [−δ, +δ] counts as no
// difference. Source and Note say why this δ.
type Margin struct {
	Value  float64 `json:"value"`
	Source Source  `json:"source"`
	Note   string  `json:"note,omitempty"`
}

// Range renders the band, e.g. "0–3", "≥ 1", "≤ 0".
func (e Expectation) Range() string {
	switch {
	case e.Compare != "" && e.Margin != nil:
		return fmt.Sprintf("%s (δ = %g per run)", e.Verdict, e.Margin.Value)
	case e.Compare != "":
		return e.Verdict
	case e.Check != "":
		s := e.Verdict
		if len(e.Failing) > 0 {
			s += " on exactly " + strings.Join(e.Failing, ", ")
		}
		return s
	case e.Min != nil && e.Max != nil && *e.Min == *e.Max:
		return fmt.Sprintf("%g", *e.Min)
	case e.Min != nil && e.Max != nil:
		return fmt.Sprintf("%g–%g", *e.Min, *e.Max)
	case e.Min != nil:
		return fmt.Sprintf("≥ %g", *e.Min)
	case e.Max != nil:
		return fmt.Sprintf("≤ %g", *e.Max)
	}
	return "any"
}

// Parse reads one incident from b; file names it in errors. Unknown
// fields are rejected (the error names the file and the field), and so is
// every missing or unknown source tag.
func Parse(file string, b []byte) (Incident, error) {
	var inc Incident
	if err := yaml.UnmarshalStrict(b, &inc); err != nil {
		return Incident{}, fmt.Errorf("%s: %w", file, cleanYAMLError(err, b))
	}
	inc.File, inc.Text = file, b
	if err := inc.validate(); err != nil {
		return Incident{}, fmt.Errorf("%s: %w", file, withLines(err, b))
	}
	return inc, nil
}

// cleanYAMLError drops sigs.k8s.io/yaml's wrapping ("error unmarshaling
// JSON: while decoding JSON: json: ") so the field name leads, and adds the
// line of an unknown field (the first line that sets it) or of a value of
// the wrong type (named by its path from the top: topology.nodes).
func cleanYAMLError(err error, b []byte) error {
	s := err.Error()
	for _, p := range []string{"error unmarshaling JSON: ", "while decoding JSON: ", "json: "} {
		s = strings.TrimPrefix(s, p)
	}
	s = strings.TrimPrefix(s, "error converting YAML to JSON: ")
	if m := typeError.FindStringSubmatch(s); m != nil {
		// "cannot unmarshal string into Go struct field Topology.topology.nodes
		// of type int": the field's path from the file's top, and its line.
		value, field, goType := m[1], m[2], m[3]
		s = fmt.Sprintf("%s: want %s, got %s", field, goType, value)
		var doc yamlv3.Node
		if yamlv3.Unmarshal(b, &doc) == nil {
			if n := lineOf(&doc, field, goType); n > 0 {
				s = fmt.Sprintf("line %d: %s", n, s)
			}
		}
	} else if f, ok := strings.CutPrefix(s, "unknown field "); ok {
		key := strings.Trim(f, `"`)
		for i, l := range strings.Split(string(b), "\n") {
			l = strings.TrimLeft(strings.TrimSpace(l), "- ")
			if strings.HasPrefix(l, key+":") {
				s = fmt.Sprintf("line %d: %s", i+1, s)
				break
			}
		}
	}
	return errors.New(s)
}

// typeError matches encoding/json's UnmarshalTypeError text (after the
// "json: " prefix): the value's JSON kind, the Go struct, the field's path
// from the document's top (json tags joined by dots) and the Go type.
var typeError = regexp.MustCompile(`^cannot unmarshal (.+) into Go struct field [^. ]+\.(\S+) of type (\S+)$`)

func validSource(s Source) bool { return s == Sourced || s == Inference || s == Assumption }

func (inc Incident) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	src := func(field string, s Source) {
		if !validSource(s) {
			bad("%s: source %q: want sourced, inference or assumption", field, s)
		}
	}
	if inc.Name == "" {
		bad("name: missing")
	} else if base := strings.TrimSuffix(filepath.Base(inc.File), ".yaml"); base != inc.Name {
		bad("name: %q differs from the file's name %q", inc.Name, base)
	}
	for _, blk := range []struct {
		name string
		s    Settings
	}{{"topology", inc.Topology}, {"model", inc.Model}, {"kernel", inc.Kernel}} {
		if blk.name != "kernel" {
			src(blk.name, blk.s.Source)
		}
		for _, k := range blk.s.keys {
			if _, own := blk.s.tags[k]; own || blk.name == "kernel" {
				src(blk.name+"."+k, blk.s.SourceOf(k))
			}
		}
	}
	for _, k := range []string{"nodes", "hosts", "volumes", "consumers_per_volume"} {
		if !inc.Topology.Has(k) {
			bad("topology.%s: missing", k)
		}
	}
	src("operators", inc.Operators.Source)
	if len(inc.OperatorList()) == 0 {
		bad("operators.value: %q: want prefix, fixed or both", inc.Operators.Value)
	}
	for _, op := range inc.OperatorList() {
		m, err := inc.World(op)
		if err != nil {
			errs = append(errs, err)
			break
		}
		if m.Nodes < 1 || m.Hosts < 1 || m.Volumes < 1 || m.ConsumersPerVolume < 1 {
			bad("topology: nodes, hosts, volumes and consumers_per_volume must each be at least 1")
			break
		}
	}
	p := inc.Pacing
	p.validate(bad, src)
	inc.Faults.validate("faults", p.Migrations, bad, src)
	if len(inc.Expected) == 0 {
		bad("expected: no expectation (an incident with nothing to judge proves nothing)")
	}
	for i, e := range inc.Expected {
		f := fmt.Sprintf("expected[%d]", i)
		src(f, e.Source)
		given := 0
		for _, x := range []string{e.Figure, e.Check, e.Compare} {
			if x != "" {
				given++
			}
		}
		switch {
		case given != 1:
			bad("%s: give exactly one of figure, check or compare", f)
		case e.Compare != "" && (e.Min != nil || e.Max != nil || len(e.Failing) > 0 || e.Operator != ""):
			bad("%s: compare takes a verdict only (it judges both operators)", f)
		case e.Compare != "" && e.Verdict != record.Pass && e.Verdict != record.Fail && e.Verdict != record.Inconclusive:
			bad("%s: verdict %q: want pass, fail or inconclusive", f, e.Verdict)
		case e.Compare != "" && (e.Margin == nil || !(e.Margin.Value > 0)):
			bad("%s: compare needs margin.value > 0 (the equivalence margin, failures per run)", f)
		case e.Compare == "" && e.Margin != nil:
			bad("%s: margin belongs to a compare", f)
		case e.Figure != "" && e.Min == nil && e.Max == nil:
			bad("%s: figure %q without min or max", f, e.Figure)
		case e.Figure != "" && (e.Verdict != "" || len(e.Failing) > 0):
			bad("%s: verdict and failing belong to a check", f)
		case e.Check != "" && e.Verdict != record.Pass && e.Verdict != record.Fail && e.Verdict != record.Inconclusive:
			bad("%s: verdict %q: want pass, fail or inconclusive", f, e.Verdict)
		case e.Check != "" && (e.Min != nil || e.Max != nil):
			bad("%s: min and max belong to a figure", f)
		}
		if e.Margin != nil {
			src(f+".margin", e.Margin.Source)
		}
		if e.Min != nil && e.Max != nil && *e.Min > *e.Max {
			bad("%s: min %g > max %g", f, *e.Min, *e.Max)
		}
		if e.Operator != "" && e.Operator != "prefix" && e.Operator != "fixed" {
			bad("%s: operator %q: want prefix or fixed", f, e.Operator)
		}
	}
	inc.Symptoms.validate(bad, src)
	inc.validateHypotheses(bad, src, func(err error) { errs = append(errs, err) })
	return errors.Join(errs...)
}

// validate reports bad faults, named field (faults, or an alternative's):
// a source when any is given, and a seeded family within the pacing's
// migrations.
func (fs Faults) validate(field string, migrations int, bad func(string, ...any), src func(string, Source)) {
	if fs.Seeded != nil || len(fs.Scheduled) > 0 {
		src(field, fs.Source)
	}
	if s := fs.Seeded; s != nil {
		if s.Count < 1 || len(s.Kinds) == 0 || s.FirstMigration < 1 || s.LastMigration < s.FirstMigration || s.LastMigration > migrations {
			bad("%s.seeded: count ≥ 1, kinds, and 1 ≤ first_migration ≤ last_migration ≤ pacing.migrations", field)
		}
	}
}

// Headline is the summary's first sentence (up to its first ". " or
// "; "), for one-line listings.
func (inc Incident) Headline() string {
	s := strings.Join(strings.Fields(inc.Summary), " ")
	for _, end := range []string{". ", "; "} {
		if i := strings.Index(s, end); i > 0 {
			s = s[:i]
		}
	}
	return strings.TrimSuffix(s, ".")
}

// HypothesisSwitches are the model settings (plan.json names) some
// alternative of the hypotheses sets, sorted.
func (inc Incident) HypothesisSwitches() []string {
	set := map[string]bool{}
	for _, h := range inc.Hypotheses {
		for _, a := range h.Alternatives {
			for _, k := range a.Set.keys {
				set[k] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// OperatorList is Operators.Value as a list: "both" is prefix and fixed.
func (inc Incident) OperatorList() []string {
	switch inc.Operators.Value {
	case "both":
		return []string{"prefix", "fixed"}
	case "prefix", "fixed":
		return []string{inc.Operators.Value}
	}
	return nil
}

// Names lists the embedded catalogue, sorted.
func Names() []string {
	ents, _ := fs.ReadDir(catalogue, ".")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Catalogue reads every embedded incident and every *.yaml in dirs (a
// later one of the same name replaces an earlier one), sorted by name.
func Catalogue(dirs ...string) ([]Incident, error) {
	byName := map[string]Incident{}
	for _, n := range Names() {
		b, err := fs.ReadFile(catalogue, n+".yaml")
		if err != nil {
			return nil, err
		}
		inc, err := Parse(path.Join("incidents", n+".yaml"), b)
		if err != nil {
			return nil, err
		}
		byName[n] = inc
	}
	for _, d := range dirs {
		files, err := filepath.Glob(filepath.Join(d, "*.yaml"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			inc, err := LoadFile(f)
			if err != nil {
				return nil, err
			}
			byName[inc.Name] = inc
		}
	}
	var out []Incident
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[n])
	}
	return out, nil
}

// LoadFile reads one incident file.
func LoadFile(file string) (Incident, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return Incident{}, fmt.Errorf("read incident: %w", err)
	}
	return Parse(file, bytes.TrimPrefix(b, []byte("\ufeff")))
}

// Find returns the incident named name from the catalogue (embedded plus
// dirs), or, when name ends in ".yaml", the file at that path.
func Find(name string, dirs ...string) (Incident, error) {
	if strings.HasSuffix(name, ".yaml") {
		return LoadFile(name)
	}
	all, err := Catalogue(dirs...)
	if err != nil {
		return Incident{}, err
	}
	var names []string
	for _, inc := range all {
		if inc.Name == name {
			return inc, nil
		}
		names = append(names, inc.Name)
	}
	return Incident{}, fmt.Errorf("unknown incident %q (known: %s; see fiomig reproduce --list)", name, strings.Join(names, ", "))
}
