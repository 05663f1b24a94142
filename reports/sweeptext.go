package reports

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/fiomig/fiomig/record"
)

// maxFailingShown is how many failing seeds SweepText names on stdout;
// sweep.md names them all.
const maxFailingShown = 10

// SweepText prints the sweep's figures and the first failing seeds' rerun
// commands.
func SweepText(w io.Writer, dir string, sw record.Sweep, wall time.Duration, jobs int) {
	c, p, o := sw.Counts, sw.Pauses, sw.OverBound
	fmt.Fprintf(w, "seeds:   %d of %d ran: %d pass, %d fail, %d inconclusive, %d error (%s wall, %d at a time)\n",
		len(sw.Seeds), sw.SeedsListed, c.Pass, c.Fail, c.Inconclusive, c.Error, wall.Round(time.Millisecond), jobs)
	if cv := sw.Coverage; cv != nil && cv.Covered && len(sw.Seeds) > 0 {
		fmt.Fprintf(w, "coverage: reached — every fault kind × stage cell landed at least %d times within the first %d seeds (%d … %d), kept; the other %d listed seeds were dropped\n",
			cv.K, len(sw.Seeds), sw.Seeds[0].Seed, sw.Seeds[len(sw.Seeds)-1].Seed, sw.SeedsListed-len(sw.Seeds))
	} else if cv != nil {
		never := ""
		if len(cv.NeverLanded) > 0 {
			never = "; never landed: " + strings.Join(cv.NeverLanded, ", ")
		}
		fmt.Fprintf(w, "coverage: not reached — after the %d seeds that ran some cell landed fewer than %d times%s\n", len(sw.Seeds), cv.K, never)
	}
	fmt.Fprintf(w, "pauses:  longest pause per migration over %d migrations that cut over%s%s: p50 %s s, p90 %s s, p99 %s s, max %s s\n",
		p.Migrations, NoCutoverNote(p.NoCutover), MaskedNote(p.Masked), record.FormatT(p.P50S), record.FormatT(p.P90S), record.FormatT(p.P99S), record.FormatT(p.MaxS))
	fmt.Fprintf(w, "bound:   %d of %d migrations over %s s%s: %.4f, 95 %% interval [%.4f, %.4f] (Wilson score)\n",
		o.Over, o.Migrations, record.FormatT(o.PauseCritS), MaskedNote(o.Masked), o.Fraction, o.Low95, o.High95)
	shown := 0
	for _, s := range sw.Seeds {
		if s.Verdict != record.Fail {
			continue
		}
		if shown++; shown > maxFailingShown {
			fmt.Fprintf(w, "failing: %d more seeds, each with its rerun command in %s\n", c.Fail-maxFailingShown, record.SweepReportFile)
			break
		}
		fmt.Fprintf(w, "failing: seed %d (%s): %s\n", s.Seed, strings.Join(s.FailedChecks, ", "), s.Command)
	}
	fmt.Fprintf(w, "summary: %s\n", filepath.Join(dir, record.SweepReportFile))
}
