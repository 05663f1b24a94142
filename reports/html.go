package reports

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
)

//go:embed report.html.tmpl
var htmlSource string

// htmlTemplate is report.html's template. html/template escapes every
// string from the run record (NQNs, hosts, details are untrusted) for the
// context it lands in.
var htmlTemplate = template.Must(template.New("report.html").Parse(htmlSource))

// htmlView is report.html's data: the same figures as report.md, already
// formatted (secs, windows) and sorted, so the template only lays them out.
type htmlView struct {
	Verdict, VerdictUpper, VerdictClass string
	Seed                                int64
	Scenario, Backend, Command          string
	Crit, Margin, Settle                string
	FreezesAllowed                      int
	Nodes, Hosts, Volumes               int
	// Coverage: is the record complete, short, truncated.
	Coverage []CoverageItem
	// Legend lists every subsystem with its full NQN; tables show Short.
	LegendNote string
	Legend     []LegendRow

	Checks                                 []htmlCheck
	Migrations                             []htmlMigration
	Over                                   []string
	WithinBound                            string
	CutoverNote                            string
	Cutovers                               []htmlCutover
	Unattributed                           []htmlWindow
	FaultWindows                           []htmlWindow
	FaultWindowsNote                       string
	LeakVerdict, LeakClass                 string
	Leaks                                  []record.Leak
	LeakNone                               string
	CompletenessVerdict, CompletenessClass string
	Missing                                []record.MissingEndpoint
	MissingNone                            string
	Stats                                  record.Stats
	P50, P95, Max                          string
	// Unfinished names the migrations the statistics leave out.
	Unfinished string
	// Fio is the fio section (runs with real fio only; reports/fio.go).
	Fio *FioView

	// Sentence names the failing and inconclusive checks; Worst is the
	// worst cutover ("" without any (migration, host) pair).
	Sentence, Worst string
	// Anatomy is the worst cutover's longest pause window split into steps
	// (nil without one); NoSamples says why there is none (noSamplesNote).
	Anatomy   *AnatomyView
	NoSamples string
	// Figures are the plots (SVG embedded as data: URIs), Swimlanes the
	// per-migration ones among them.
	Figures, Swimlanes []htmlFigure
	Omitted            []template.HTML
	Rejudged           *record.Rejudged
	RunCrit            string
	Churn              string
	// Faults is the faults section (runs with faults only; reports/faults.go).
	Faults *FaultsView
}

// htmlFigure is one embedded plot.
type htmlFigure struct {
	ID, Kind, Title, Caption, PNG, SVG string
	Src                                template.URL
}

type htmlCheck struct{ Name, Verdict, Class, Detail string }

type htmlMigration struct {
	ID, NQN, Outcome string
	Hosts            []htmlHostPause
	Freezes          int
	Verdict, Class   string
	NoCutover        bool
}

type htmlHostPause struct {
	Host, Pause string
	Over, Open  bool
	// Masked is maskedNote: the fault window holding the host's cutover.
	Masked string
}

type htmlCutover struct{ ID, Host, Completed, Cutover, Lag string }

type htmlWindow struct{ Host, NQN, Window, Length, Migration, Cause string }

// HTML renders report.html: a self-contained page (inline CSS, no script,
// nothing fetched) with the content of report.md — header with verdict,
// seed, reproduce command, bounds and the record's coverage of the settle
// period; the checks; the volumes with their full NQNs (tables show the
// part after the last ':'); one row per migration
// with outcome, longest pause per consumer host, freezes and verdict; the
// over-bound list; host-observed cutovers; unattributed pauses; leaked
// controllers and missing endpoints; the pause statistics with the
// percentile method — and plotSVG (the bytes of plots/pause.svg) embedded
// as a data: URI image; with no plotSVG the page links plots/pause.png
// instead. Verdicts are coloured by class (pass green, fail red, anything
// else amber). Equal inputs give equal bytes; sum.Stats is used as given
// (see WithStats). The error is a template execution error, which the
// fixed template makes unexpected.
func HTML(plan record.Plan, sum record.Summary, plotSVG []byte) ([]byte, error) {
	figs := baseFigures(plan, sum)
	figs[0].embed, figs[0].mime = plotSVG, "image/svg+xml"
	return htmlPage(plan, sum, figs, nil)
}

// htmlPage renders report.html with figs (each embedded from its image
// bytes, else linked) and the notes of what was left out. Besides HTML's content it shows the verdict sentence and
// the worst cutover first, the swimlanes, the faults table (FaultsSection)
// and the rerun command last; the elements a browser test looks for carry ids:
// #verdict (data-verdict), figure.plot (data-plot = Figure.ID), #faults.
func htmlPage(plan record.Plan, sum record.Summary, figs []Figure, omitted []string) ([]byte, error) {
	p := plan.Params
	crit := p.PauseCritS
	verdicts := checksByName(sum)
	nqns := newNQNLegend(plan, sum)
	leak := verdictOf(verdicts, checks.CheckLeakedControllers)
	complete := verdictOf(verdicts, checks.CheckPathCompleteness)
	v := htmlView{
		Verdict: sum.Verdict, VerdictUpper: strings.ToUpper(sum.Verdict), VerdictClass: verdictClass(sum.Verdict),
		Seed: sum.Seed, Scenario: plan.Scenario, Backend: plan.Backend, Command: plan.Command,
		Crit: secs(crit), Margin: secs(p.AttributionMarginS), Settle: secs(p.SettleS), FreezesAllowed: p.FreezesAllowed,
		Nodes: len(plan.Topology.Nodes), Hosts: len(plan.Topology.Hosts), Volumes: len(plan.Topology.Volumes),
		Over: OverBound(plan, sum), WithinBound: withinBound(plan), CutoverNote: cutoverNote,
		Coverage: coverageItems(sum), LegendNote: legendNote, Legend: nqns.rows,
		LeakVerdict: leak, LeakClass: verdictClass(leak),
		LeakNone:            noFinding(verdicts, checks.CheckLeakedControllers, "None after the settle period.", nqns),
		CompletenessVerdict: complete, CompletenessClass: verdictClass(complete),
		MissingNone: noFinding(verdicts, checks.CheckPathCompleteness, "Every consumer host has a controller for every published ip:port endpoint.", nqns),
		Stats:       sum.Stats, P50: secs(sum.Stats.P50PauseS), P95: secs(sum.Stats.P95PauseS), Max: secs(sum.Stats.MaxPauseS),
		Unfinished: unfinishedNote(sum),
		Sentence:   verdictSentence(sum), Worst: strings.ReplaceAll(worstCutover(plan, sum, nqns), "**", ""),
		Omitted: codeSpans(omitted), Rejudged: sum.Rejudged,
	}
	if a, ok := worstAnatomy(sum); ok {
		v.Anatomy = &a
	}
	v.NoSamples = noSamplesNote(sum)
	if sum.Rejudged != nil {
		v.RunCrit = secs(sum.Rejudged.RunPauseCritS)
	}
	if sum.Churn != nil {
		v.Churn = churnSentence(*sum.Churn)
	}
	for _, f := range figs {
		hf := htmlFigure{ID: f.ID, Kind: f.Kind, Title: f.Title, Caption: f.Caption, PNG: f.PNG, SVG: f.SVG}
		if len(f.embed) > 0 {
			// Our own gonum/plot output, base64-encoded: safe as a data: URI.
			hf.Src = template.URL("data:" + f.mime + ";base64," + base64.StdEncoding.EncodeToString(f.embed))
		}
		if f.Kind == FigSwimlane || f.Kind == FigFio {
			v.Swimlanes = append(v.Swimlanes, hf)
		} else {
			v.Figures = append(v.Figures, hf)
		}
	}
	for _, c := range sum.Checks {
		v.Checks = append(v.Checks, htmlCheck{Name: c.Name, Verdict: c.Verdict, Class: verdictClass(c.Verdict), Detail: nqns.text(c.Detail)})
	}
	for _, l := range sum.LeakedControllers {
		l.NQN = nqns.name(l.NQN)
		v.Leaks = append(v.Leaks, l)
	}
	for _, m := range sum.MissingEndpoints {
		m.NQN = nqns.name(m.NQN)
		v.Missing = append(v.Missing, m)
	}
	for _, m := range sum.Migrations {
		hm := htmlMigration{ID: m.ID, NQN: nqns.name(m.NQN), Outcome: OutcomeText(m), Freezes: m.Freezes, Verdict: MigrationVerdict(plan, m), NoCutover: m.NoCutover}
		hm.Class = verdictClass(hm.Verdict)
		for _, h := range slices.Sorted(maps.Keys(m.Hosts)) {
			hp := m.Hosts[h]
			hm.Hosts = append(hm.Hosts, htmlHostPause{Host: h, Pause: secs(hp.LongestPauseS), Over: checks.JudgedPauseS(hp) > crit, Open: hp.OpenWindow, Masked: maskedNote(hp)})
			v.Cutovers = append(v.Cutovers, htmlCutover{ID: m.ID, Host: h, Completed: optTenths(m.CompletedS), Cutover: optSecs(hp.CutoverS), Lag: lagCell(m, hp)})
		}
		v.Migrations = append(v.Migrations, hm)
	}
	for _, w := range sum.Unattributed {
		v.Unattributed = append(v.Unattributed, htmlWindow{Host: w.Host, NQN: nqns.name(w.NQN),
			Window: windows([][2]float64{w.Window}), Length: secs(w.Window[1] - w.Window[0])})
	}
	for _, w := range sum.FaultWindows {
		v.FaultWindows = append(v.FaultWindows, htmlWindow{Host: w.Host, NQN: nqns.name(w.NQN), Window: windows([][2]float64{w.Window}),
			Length: secs(w.Window[1] - w.Window[0]), Migration: dash(w.Migration), Cause: w.Cause})
	}
	v.FaultWindowsNote = fmt.Sprintf("%d %s:", len(sum.FaultWindows), faultWindowsNote)
	v.Fio = FioSection(plan, sum)
	v.Faults = FaultsSection(sum)
	var b bytes.Buffer
	if err := htmlTemplate.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("render %s: %w", HTMLReportFile, err)
	}
	return b.Bytes(), nil
}

// verdictClass maps a verdict to its CSS class: pass, fail, inconclusive,
// or other for anything else (e.g. "not evaluated").
func verdictClass(v string) string {
	switch v {
	case record.Pass, record.Fail, record.Inconclusive:
		return v
	case record.Warn:
		return record.Inconclusive // coloured like a verdict to look at
	}
	return "other"
}

// codeSpans renders markdown-ish notes for HTML: each escaped, and a
// `backticked` span as <code> (report.md writes the same notes as
// markdown).
func codeSpans(notes []string) []template.HTML {
	out := make([]template.HTML, len(notes))
	for i, n := range notes {
		var b strings.Builder
		for k, part := range strings.Split(n, "`") {
			if k%2 == 1 {
				b.WriteString("<code>" + template.HTMLEscapeString(part) + "</code>")
			} else {
				b.WriteString(template.HTMLEscapeString(part))
			}
		}
		out[i] = template.HTML(b.String())
	}
	return out
}
