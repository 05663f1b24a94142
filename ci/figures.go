package ci

import (
	"math"

	"github.com/montanaflynn/stats"

	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// Figure names: the numbers a run or a sweep is tracked by across nightly
// runs — JUnit properties, metrics.txt gauges (prefixed "fiomig_"), and the
// figures `fiomig history` stores, plots and searches for change points.
const (
	FigPauseP50         = "pause_p50_seconds"
	FigPauseP95         = "pause_p95_seconds"
	FigPauseMax         = "pause_max_seconds"
	FigOverBound        = "over_bound_fraction"
	FigLeaked           = "leaked_controllers"
	FigMissingEndpoints = "missing_endpoints"
	FigReconnects       = "reconnects"
	FigFailedRuns       = "failed_runs_fraction"
	FigMigrations       = "migrations"
	FigPauseCrit        = "pause_crit_seconds"
)

// Figure is one number of a run set.
type Figure struct {
	// Name is one of the Fig* constants; Unit is "seconds" or "" (a count
	// or a fraction), as OpenMetrics names units (a unit must end the
	// name).
	Name, Unit string
	// Help says what it is, in one sentence.
	Help  string
	Value float64
	// Known is false when the runs do not hold the figure (no cutover to
	// take a pause quantile of, no churn recorded): Value is then 0 and
	// the figure is left out of metrics.txt and history's series.
	Known bool
}

// FigureNames are every figure Figures computes, in its order.
var FigureNames = []string{FigPauseP50, FigPauseP95, FigPauseMax, FigOverBound, FigLeaked, FigMissingEndpoints, FigReconnects, FigFailedRuns, FigMigrations, FigPauseCrit}

// Figures computes the figures of runs (one run, or a sweep's seeds):
//   - pause_p50/p95/max_seconds: quantiles of the longest pause per
//     (migration, consumer host) pooled over every run's migrations that
//     reached a terminal phase (reports.Pauses), by reports.PercentileMethod;
//   - over_bound_fraction: of the migrations that cut over, the fraction
//     whose longest pause over its consumer hosts exceeds the run's bound
//     (plan.json pause_crit_s; the figure fiomig sweep's over_bound counts);
//   - leaked_controllers, missing_endpoints, reconnects: mean per run
//     (reconnects unknown when a summary has no churn);
//   - failed_runs_fraction: runs whose verdict is fail, over runs;
//   - migrations: migrations per run (mean), to read the others against;
//   - pause_crit_seconds: the bound (plan.json pause_crit_s; the largest
//     of the runs', which a sweep's share).
//
// Values are rounded to the microsecond (record.RoundT). With no runs every
// figure is unknown.
func Figures(runs []reports.StoredRun) []Figure {
	figs := []Figure{
		{Name: FigPauseP50, Unit: "seconds", Help: "median of the longest pause per (migration, consumer host)"},
		{Name: FigPauseP95, Unit: "seconds", Help: "95th percentile of the longest pause per (migration, consumer host)"},
		{Name: FigPauseMax, Unit: "seconds", Help: "longest pause of any (migration, consumer host)"},
		{Name: FigOverBound, Help: "fraction of the migrations that cut over whose longest pause exceeds CUTOVER_PAUSE_CRIT_S"},
		{Name: FigLeaked, Help: "leaked controllers after the settle period, mean per run"},
		{Name: FigMissingEndpoints, Help: "published ip:port endpoints without a controller, mean per run"},
		{Name: FigReconnects, Help: "controllers entering connecting, mean per run"},
		{Name: FigFailedRuns, Help: "fraction of runs whose verdict is fail"},
		{Name: FigMigrations, Help: "migrations per run, mean"},
		{Name: FigPauseCrit, Unit: "seconds", Help: "CUTOVER_PAUSE_CRIT_S, the pause bound the runs were judged with (the largest, should they differ)"},
	}
	if len(runs) == 0 {
		return figs
	}
	set := func(name string, v float64) {
		for i := range figs {
			if figs[i].Name == name {
				figs[i].Value, figs[i].Known = record.RoundT(v), true
			}
		}
	}
	var longest stats.Float64Data
	cut, over := 0, 0
	leaked, missing, reconnects, failed, migrations := 0, 0, 0, 0, 0
	churnKnown := true
	crit := 0.0
	for _, r := range runs {
		crit = math.Max(crit, r.Plan.Params.PauseCritS)
		longest = append(longest, reports.Pauses(r.Summary).Longest...)
		for _, m := range r.Summary.Migrations {
			migrations++
			if m.NoCutover || !record.IsTerminal(m.Outcome) {
				continue
			}
			cut++
			worst := 0.0
			for _, hp := range m.Hosts {
				worst = math.Max(worst, hp.LongestPauseS)
			}
			if worst > r.Plan.Params.PauseCritS {
				over++
			}
		}
		leaked += len(r.Summary.LeakedControllers)
		missing += len(r.Summary.MissingEndpoints)
		if r.Summary.Churn == nil {
			churnKnown = false
		} else {
			reconnects += r.Summary.Churn.Reconnects
		}
		if r.Summary.Verdict == record.Fail {
			failed++
		}
	}
	n := float64(len(runs))
	if len(longest) > 0 {
		// Errors are impossible: the data is non-empty and the percents in (0, 100].
		p50, _ := stats.Percentile(longest, 50)
		p95, _ := stats.Percentile(longest, 95)
		mx, _ := stats.Max(longest)
		set(FigPauseP50, p50)
		set(FigPauseP95, p95)
		set(FigPauseMax, mx)
	}
	if cut > 0 {
		set(FigOverBound, float64(over)/float64(cut))
	}
	set(FigLeaked, float64(leaked)/n)
	set(FigMissingEndpoints, float64(missing)/n)
	if churnKnown {
		set(FigReconnects, float64(reconnects)/n)
	}
	set(FigFailedRuns, float64(failed)/n)
	set(FigMigrations, float64(migrations)/n)
	set(FigPauseCrit, crit)
	return figs
}

// FigureValue returns the named figure of figs and whether it is known.
func FigureValue(figs []Figure, name string) (float64, bool) {
	for _, f := range figs {
		if f.Name == name {
			return f.Value, f.Known
		}
	}
	return 0, false
}
