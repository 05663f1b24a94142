package incidents

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/fiomig/fiomig/record"
)

// MaxCombinations bounds how many combinations the hypotheses of one
// incident may make (the product of every unknown's alternatives): each
// runs over every seed, with both operators.
const MaxCombinations = 64

// Unknown is one thing no source establishes about the incident (the
// first failure's cause, the kernel's reconnect-counter reset, a
// persistent zero-namespace source, ...), with the alternatives that
// would explain it. fiomig reproduce --hypotheses runs every combination
// of one alternative per unknown.
type Unknown struct {
	// Unknown names it, short ("first failure", "reconnect reset").
	Unknown string `json:"unknown"`
	Note    string `json:"note,omitempty"`
	// Alternatives are what it could have been; at least one.
	Alternatives []Alternative `json:"alternatives"`
}

// Alternative is one unverified hypothesis: the switches that model it
// (Set, by record.Model's plan.json names, as the topology, model and
// kernel blocks take them), or the faults that replace the incident's
// (Faults; given with no seeded or scheduled fault it means none), the
// source the switch exists for, and what would confirm it on a lab.
type Alternative struct {
	Name   string   `json:"name"`
	Set    Settings `json:"set,omitempty"`
	Faults *Faults  `json:"faults,omitempty"`
	// Source and Note say why the switch exists (a cited defect, a field
	// claim, an assumption) — not that it happened.
	Source  Source  `json:"source"`
	Note    string  `json:"note,omitempty"`
	Confirm Confirm `json:"confirm"`
}

// Confirm says what would confirm an alternative on a lab cluster: at
// least one of a kernel version, a log line, a sysfs reading or a
// command's output.
type Confirm struct {
	KernelVersion string `json:"kernel_version,omitempty"`
	LogLine       string `json:"log_line,omitempty"`
	Sysfs         string `json:"sysfs,omitempty"`
	Command       string `json:"command,omitempty"`
}

// Text is c in one line: "kernel version: ...; log line: ...".
func (c Confirm) Text() string {
	var parts []string
	for _, kv := range [][2]string{{"kernel version", c.KernelVersion}, {"log line", c.LogLine}, {"sysfs", c.Sysfs}, {"command", c.Command}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+": "+kv[1])
		}
	}
	return strings.Join(parts, "; ")
}

// Choice is one unknown's alternative in a combination.
type Choice struct {
	Unknown string
	Alternative
}

// Combination is one alternative per unknown: a world the incident could
// have run in.
type Combination struct {
	// ID is "H1", "H2", ... in declaration order (the first unknown varies
	// slowest).
	ID      string
	Choices []Choice
	// AsWritten: the combination's world and faults are the incident
	// file's own, for every operator (the sourced model as written).
	AsWritten bool
	// Incident is the incident with the choices applied: its World and
	// Faults are the combination's.
	Incident Incident
}

// Label is the alternatives' names, " · " between them.
func (c Combination) Label() string {
	names := make([]string, len(c.Choices))
	for i, ch := range c.Choices {
		names[i] = ch.Name
	}
	return strings.Join(names, " · ")
}

// Combinations are every combination of one alternative per unknown of
// inc.Hypotheses, in declaration order (the first unknown varies
// slowest); nil when the file declares none.
func (inc Incident) Combinations() []Combination {
	if len(inc.Hypotheses) == 0 {
		return nil
	}
	var out []Combination
	idx := make([]int, len(inc.Hypotheses))
	for {
		c := Combination{ID: fmt.Sprintf("H%d", len(out)+1), Incident: inc}
		c.Incident.overlays = nil
		for u, i := range idx {
			h := inc.Hypotheses[u]
			a := h.Alternatives[i]
			c.Choices = append(c.Choices, Choice{Unknown: h.Unknown, Alternative: a})
			c.Incident.overlays = append(c.Incident.overlays, overlay{
				block: fmt.Sprintf("hypotheses[%d].alternatives[%d].set", u, i), s: a.Set})
			if a.Faults != nil {
				c.Incident.Faults = *a.Faults
			}
		}
		c.AsWritten = sameWorld(inc, c.Incident)
		out = append(out, c)
		// The next index, the last unknown fastest.
		u := len(idx) - 1
		for ; u >= 0; u-- {
			if idx[u]++; idx[u] < len(inc.Hypotheses[u].Alternatives) {
				break
			}
			idx[u] = 0
		}
		if u < 0 {
			return out
		}
	}
}

// sameWorld: b simulates what a does, for every operator of a.
func sameWorld(a, b Incident) bool {
	if !reflect.DeepEqual(a.Faults, b.Faults) {
		return false
	}
	for _, op := range a.OperatorList() {
		wa, errA := a.World(op)
		wb, errB := b.World(op)
		if errA != nil || errB != nil || wa != wb {
			return false
		}
	}
	return true
}

// overlay is a set of settings applied over an incident's world after
// its blocks (a hypothesis' alternative); block names it in errors.
type overlay struct {
	block string
	s     Settings
}

// combinations is how many combinations hyps make (capped past
// MaxCombinations).
func combinations(hyps []Unknown) int {
	n := 1
	for _, h := range hyps {
		n *= max(1, len(h.Alternatives))
		if n > MaxCombinations {
			return n
		}
	}
	return n
}

// validateHypotheses reports every bad field of the hypotheses: each
// unknown named and with alternatives of distinct names, each alternative
// with a source, something to confirm it by, and switches that are model
// settings (not the operator, which the reproduction sets); no two
// unknowns may set the same switch or both replace the faults; every
// combination's world must be valid for every operator.
func (inc Incident) validateHypotheses(bad func(string, ...any), src func(string, Source), add func(error)) {
	failed := false
	bad0 := bad
	bad = func(format string, a ...any) { failed = true; bad0(format, a...) }
	setBy := map[string]string{} // switch -> the unknown that sets it
	faultsBy := ""
	names := map[string]bool{}
	for u, h := range inc.Hypotheses {
		f := fmt.Sprintf("hypotheses[%d]", u)
		switch {
		case h.Unknown == "":
			bad("%s.unknown: missing", f)
		case names[h.Unknown]:
			bad("%s.unknown: %q declared twice", f, h.Unknown)
		}
		names[h.Unknown] = true
		if len(h.Alternatives) == 0 {
			bad("%s.alternatives: none", f)
		}
		alts := map[string]bool{}
		for i, a := range h.Alternatives {
			af := fmt.Sprintf("%s.alternatives[%d]", f, i)
			src(af, a.Source)
			switch {
			case a.Name == "":
				bad("%s.name: missing", af)
			case alts[a.Name]:
				bad("%s.name: %q twice in %s", af, a.Name, h.Unknown)
			}
			alts[a.Name] = true
			if a.Confirm.Text() == "" {
				bad("%s.confirm: give what would confirm it on a lab (kernel_version, log_line, sysfs or command)", af)
			}
			if a.Set.Source != "" || a.Set.Note != "" {
				bad("%s.set: source and note belong to the alternative, not its switches", af)
			}
			var m record.Model
			if err := a.Set.into(af+".set", &m, map[string]string{}); err != nil {
				failed = true
				add(err)
			} else if err := m.Validate(); err != nil {
				bad("%s.set: %v", af, err)
			}
			for _, k := range a.Set.keys {
				if k == "operator" {
					bad("%s.set.operator: the operator is operators.value's (prefix, fixed or both)", af)
				}
				if other, ok := setBy[k]; ok && other != h.Unknown {
					bad("%s.set.%s: unknown %q sets it too (each switch belongs to one unknown)", af, k, other)
				}
				setBy[k] = h.Unknown
				if _, own := a.Set.tags[k]; own {
					src(af+".set."+k, a.Set.SourceOf(k))
				}
			}
			if a.Faults != nil {
				if faultsBy != "" && faultsBy != h.Unknown {
					bad("%s.faults: unknown %q replaces the faults too (only one unknown may)", af, faultsBy)
				}
				faultsBy = h.Unknown
				a.Faults.validate(af+".faults", inc.Pacing.Migrations, bad, src)
			}
		}
	}
	if n := combinations(inc.Hypotheses); n > MaxCombinations {
		bad("hypotheses: more than %d combinations (the product of every unknown's alternatives; each runs over every seed)", MaxCombinations)
	}
	if failed {
		return
	}
	// Each combination's world, checked whole (consumers within hosts,
	// ranges): the first error, named by the combination.
	for _, c := range inc.Combinations() {
		for _, op := range []string{record.OperatorPrefix, record.OperatorFixed} {
			if _, err := c.Incident.World(op); err != nil {
				add(fmt.Errorf("hypotheses: %s (%s), operator %s: %w", c.ID, c.Label(), op, err))
				return
			}
		}
	}
}
