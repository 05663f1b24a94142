package reports

import (
	"github.com/montanaflynn/stats"

	"github.com/fiomig/fiomig/record"
)

// PercentileMethod names how p50 and p95 are computed: montanaflynn/stats
// v0.14.0 Percentile, which ranks at (p/100)·(n−1) over the sorted values
// and interpolates linearly between the two closest ranks (Hyndman & Fan
// type 7, the default of R, NumPy and Excel PERCENTILE.INC).
const PercentileMethod = "linear interpolation between closest ranks, rank = p/100*(n-1) (Hyndman & Fan type 7; montanaflynn/stats v0.14.0 Percentile)"

// Counted reports whether a migration's pauses count in the pause
// distributions (Stats, Pauses, SweepFigures): it reached a terminal phase
// (record.IsTerminal of its Outcome; one still running at an interrupted
// run's end has not had all its pause seen) and it cut over (a migration
// with NoCutover has no cutover pause: counting it as 0 s would pull the
// figures down).
func Counted(m record.MigrationSummary) bool { return record.IsTerminal(m.Outcome) && !m.NoCutover }

// Stats computes the distribution of the longest pause per (migration,
// consumer host) pair of sum over the Counted migrations: count, p50, p95
// and max, in seconds rounded to the microsecond; NoCutover counts the
// migrations left out for having no cutover, Masked the pairs left out
// for a cutover inside a fault window (HostPauses.MaskedBy: its pause was
// not measured, so 0 s or its other windows would pull the figures down).
// With no pair the figures are 0 and Pauses is 0.
func Stats(sum record.Summary) record.Stats {
	var data stats.Float64Data
	st := record.Stats{PercentileMethod: PercentileMethod}
	for _, m := range sum.Migrations {
		if m.NoCutover {
			st.NoCutover++
		}
		if !Counted(m) {
			continue
		}
		for _, hp := range m.Hosts {
			if hp.MaskedBy != nil {
				st.Masked++
				continue
			}
			data = append(data, hp.LongestPauseS)
		}
	}
	st.Pauses = len(data)
	if len(data) == 0 {
		return st
	}
	// Errors are impossible here: the data is non-empty and the percents
	// are within (0, 100].
	p50, _ := stats.Percentile(data, 50)
	p95, _ := stats.Percentile(data, 95)
	mx, _ := stats.Max(data)
	st.P50PauseS, st.P95PauseS, st.MaxPauseS = record.RoundT(p50), record.RoundT(p95), record.RoundT(mx)
	return st
}

// WithStats returns sum with Stats filled in (see Stats).
func WithStats(sum record.Summary) record.Summary {
	sum.Stats = Stats(sum)
	return sum
}
