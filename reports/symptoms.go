package reports

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fiomig/fiomig/analysis"
	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
)

// BandsExitMeaning says what reproduce's exit code judges.
const BandsExitMeaning = "The exit code judges the bands (the incident file's expected figures, from the sources) and, " +
	"over seeds with both operators, the fix comparison: exit 0 means those held, not that the incident's symptoms were reproduced."

// SymptomsMarkdown is the incident's observed symptoms beside the model's
// values over the seeds run (analysis.Symptoms): a top line saying how
// many the model reproduces, one row per symptom, the rule, and with
// notes each symptom's source note. model names the model the runs ran
// (e.g. "the model as the incident file writes it").
func SymptomsMarkdown(t analysis.SymptomTable, model string, notes bool) []byte {
	var b strings.Builder
	b.WriteString("\n## The incident's symptoms beside the model\n\n")
	if !t.Declared {
		b.WriteString("The incident file lists no observed symptoms.\n")
		return []byte(b.String())
	}
	if len(t.Seeds) == 0 {
		fmt.Fprintf(&b, "Not compared: the incident ran the %s operator and no run of it was made (--operator).\n", t.Operator)
		return []byte(b.String())
	}
	fmt.Fprintf(&b, "**%s reproduces %d of the %d observed symptoms** (%d modelled, %d not modelled), over %s of the %s operator, the one the incident ran",
		capital(model), t.Reproduced, len(t.Rows), t.Modelled, t.NotModelled, SeedsText(t.Seeds), t.Operator)
	if t.Modelled > 0 {
		fmt.Fprintf(&b, "; distance of the symptom profile %s", intervalText(t.Distance, 2))
	}
	b.WriteString(".\n\n")
	model0 := "model, " + SeedsText(t.Seeds)
	if len(t.Seeds) > 1 {
		model0 = "model: mean [95 % interval] (min–max)"
	}
	fmt.Fprintf(&b, "| observed symptom | observed | source | %s | seeds within tolerance | |\n|---|---|---|---|---|---|\n", model0)
	for _, r := range t.Rows {
		o := r.Symptom
		val, shown := "—", "—"
		if r.Mark == analysis.Reproduced || r.Mark == analysis.NotReproduced {
			n := len(r.Values)
			val, shown = number(r.Value.Mean), fmt.Sprintf("%d of %d (miss %.2f)", r.Shown, n, r.Miss.Mean)
			if n > 1 {
				lo, hi := Wilson(r.Shown, n, 1.959964)
				val = fmt.Sprintf("%s (%s–%s)", intervalText(r.Value, 1), number(r.Min), number(r.Max))
				shown = fmt.Sprintf("%d of %d [%.2f, %.2f]", r.Shown, n, lo, hi)
			}
		}
		mark := r.Mark
		switch r.Mark {
		case analysis.Reproduced:
			mark = "**reproduced**"
		case analysis.NotModelled:
			mark = "not modelled: " + o.NotModelled
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", o.Name, number(o.Value), o.Source, val, shown, mark)
	}
	fmt.Fprintf(&b, "\nReproduced: %s; tolerance %g. The model's value: its mean over the seeds with a 95 %% t-interval; the "+
		"share of seeds within tolerance: a 95 %% Wilson interval.", analysis.MissRule, t.Tolerance)
	if t.Modelled > 0 {
		fmt.Fprintf(&b, " Distance: %s.", analysis.DistanceRule)
	}
	b.WriteString(" The symptoms are described, never judged.\n")
	if notes {
		b.WriteString("\nSources of the observed values:\n\n")
		for _, r := range t.Rows {
			if r.Symptom.Note != "" {
				fmt.Fprintf(&b, "- %s (%s): %s\n", r.Symptom.Name, r.Symptom.Source, r.Symptom.Note)
			}
		}
	}
	return []byte(b.String())
}

// HypothesesMarkdown is fiomig reproduce --hypotheses' report: every
// combination of the incident's hypotheses ranked by the distance of its
// symptom profile to the observed one, each symptom's model value and
// mark, the fix judged against the prefix operator under each, then the
// combinations that reproduce every modelled symptom (or that none does),
// what would confirm each alternative on a lab, and the rules. hs are
// ranked (analysis.RankHypotheses).
func HypothesesMarkdown(inc incidents.Incident, command string, seeds []int64, hs []analysis.HypothesisResult) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: which hypotheses produce what was observed (%s)\n\n`%s`\n\n%s\n\n", inc.Name, SeedsText(seeds), command, inc.Summary)
	var match []analysis.HypothesisResult
	for _, h := range hs {
		if h.Reproduces {
			match = append(match, h)
		}
	}
	switch {
	case len(hs) == 0:
		b.WriteString("No combination ran.\n")
		return []byte(b.String())
	case len(match) == 0:
		fmt.Fprintf(&b, "**None of the %d combinations reproduces every modelled symptom.** The closest is %s (%s), distance %s.\n\n",
			len(hs), hs[0].ID, hs[0].Label, intervalText(hs[0].Symptoms.Distance, 2))
	default:
		ids := make([]string, len(match))
		for i, h := range match {
			ids[i] = h.ID + " (" + h.Label + ")"
		}
		verb := "reproduce"
		if len(match) == 1 {
			verb = "reproduces"
		}
		fmt.Fprintf(&b, "**%d of the %d combinations %s every modelled symptom:** %s.\n\n", len(match), len(hs), verb, strings.Join(ids, ", "))
	}
	fmt.Fprintf(&b, "%s.\n", capital(analysis.NotEvidence))
	if len(hs) > 1 && hs[0].Symptoms.Distance.Overlaps(hs[1].Symptoms.Distance) {
		fmt.Fprintf(&b, "\n%s's distance interval overlaps %s's: these seeds do not order the first two.\n", hs[0].ID, hs[1].ID)
	}
	// The table: one row per combination, one column per unknown, then
	// the distance, each modelled symptom and the fix.
	var syms []analysis.SymptomRow
	for _, r := range hs[0].Symptoms.Rows {
		if r.Symptom.Modelled() {
			syms = append(syms, r)
		}
	}
	b.WriteString("\n## Ranked by the distance of the symptom profile to the observed one\n\n| rank | hypothesis |")
	for _, u := range inc.Hypotheses {
		b.WriteString(" " + u.Unknown + " |")
	}
	b.WriteString(" distance [95 %] | reproduced |")
	for i := range syms {
		fmt.Fprintf(&b, " S%d |", i+1)
	}
	b.WriteString(" fix against prefix |\n|" + strings.Repeat("---|", 4+len(inc.Hypotheses)+len(syms)+1) + "\n")
	b.WriteString("| | observed | " + strings.Repeat("| ", len(inc.Hypotheses)) + "0 | |")
	for _, r := range syms {
		b.WriteString(" " + number(r.Symptom.Value) + " |")
	}
	b.WriteString(" |\n")
	for _, h := range hs {
		id := h.ID
		if h.Combination.AsWritten {
			id += " (as the file)"
		}
		fmt.Fprintf(&b, "| %d | %s |", h.Rank, id)
		for _, ch := range h.Combination.Choices {
			b.WriteString(" " + ch.Name + " |")
		}
		fmt.Fprintf(&b, " %s | %d of %d |", intervalText(h.Symptoms.Distance, 2), h.Symptoms.Reproduced, h.Symptoms.Modelled)
		for _, r := range h.Symptoms.Rows {
			if !r.Symptom.Modelled() {
				continue
			}
			mark := "✗"
			if r.Mark == analysis.Reproduced {
				mark = "✓"
			}
			fmt.Fprintf(&b, " %s %s |", number(r.Value.Mean), mark)
		}
		fmt.Fprintf(&b, " %s |\n", fixText(h.Fix))
	}
	b.WriteString("\nSymptoms (the model's mean over the seeds of the " + hs[0].Symptoms.Operator + " operator, the one the incident ran; " +
		"✓ reproduced, ✗ not):\n\n")
	for i, r := range syms {
		fmt.Fprintf(&b, "- S%d: %s (observed %s, %s)\n", i+1, r.Symptom.Name, number(r.Symptom.Value), r.Symptom.Source)
	}
	for _, r := range hs[0].Symptoms.Rows {
		if !r.Symptom.Modelled() {
			fmt.Fprintf(&b, "- not modelled: %s (observed %s) — %s\n", r.Symptom.Name, number(r.Symptom.Value), r.Symptom.NotModelled)
		}
	}
	b.WriteString("\nThe fix against prefix (fixed − prefix, by cause, over the seeds; the incident file's comparison): the verdict and " +
		"the total's mean D with its 95 % paired t-interval. It is judged under every combination, but says something about " +
		"the incident only under one that reproduces the symptoms.\n")
	for _, h := range match {
		fmt.Fprintf(&b, "\n## %s: %s — reproduces every modelled symptom\n\n", h.ID, h.Label)
		for _, ch := range h.Combination.Choices {
			fmt.Fprintf(&b, "- %s: %s [%s] — would be confirmed on a lab by %s\n", ch.Unknown, ch.Name, ch.Source, ch.Confirm.Text())
		}
		if h.Fix != nil {
			for _, e := range inc.Expected {
				if e.Compare != "" {
					b.Write(SeedsComparisonMarkdown(*h.Fix, e))
					break
				}
			}
		}
	}
	b.WriteString("\n## What would confirm each alternative on a lab\n\n| unknown | alternative | why the switch exists | confirm by |\n|---|---|---|---|\n")
	for _, u := range inc.Hypotheses {
		for _, a := range u.Alternatives {
			why := string(a.Source)
			if a.Note != "" {
				why += ": " + a.Note
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", u.Unknown, a.Name, cell(why), cell(a.Confirm.Text()))
		}
	}
	fmt.Fprintf(&b, "\nMethod. Reproduced: %s; tolerance %g (%s). Distance: %s. Ranked by the mean distance, then its upper bound.\n",
		analysis.MissRule, hs[0].Symptoms.Tolerance, inc.Symptoms.Tolerance.Source, analysis.DistanceRule)
	fmt.Fprintf(&b, "\nEach combination's runs are in H<n>/seed-N/ (plan.json with its rerun command, summary.json); rerun one with "+
		"`fiomig reproduce %s --hypothesis H<n> --seed N`.\n", inc.Name)
	return []byte(b.String())
}

// fixText is a combination's fix comparison in one cell.
func fixText(c *analysis.SeedsComparison) string {
	if c == nil {
		return "not judged (one operator)"
	}
	v := c.Verdict
	if c.Intervals == record.Fail {
		v += "; intervals fail"
	}
	for _, r := range c.Rows {
		if r.Class == analysis.ClassTotal {
			return fmt.Sprintf("%s (D %+.1f [%+.1f, %+.1f])", v, r.Mean, r.Lo, r.Hi)
		}
	}
	return v
}

// SeedsText is a seed list as ranges: "seeds 1–5, 9", "seed 3".
func SeedsText(seeds []int64) string {
	if len(seeds) == 1 {
		return "seed " + strconv.FormatInt(seeds[0], 10)
	}
	var parts []string
	for i := 0; i < len(seeds); {
		j := i
		for j+1 < len(seeds) && seeds[j+1] == seeds[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d–%d", seeds[i], seeds[j]))
		} else {
			parts = append(parts, strconv.FormatInt(seeds[i], 10))
		}
		i = j + 1
	}
	return "seeds " + strings.Join(parts, ", ")
}

// intervalText is "m [lo, hi]" with prec decimals, or "m" with one seed.
func intervalText(in analysis.Interval, prec int) string {
	if in.N < 2 {
		return strconv.FormatFloat(in.Mean, 'f', prec, 64)
	}
	return fmt.Sprintf("%.*f [%.*f, %.*f]", prec, in.Mean, prec, in.Lo, prec, in.Hi)
}

// number is v rounded to one decimal, without trailing zeros.
func number(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
