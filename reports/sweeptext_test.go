package reports

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/fiomig/fiomig/record"
)

// TestSweepTextSaysWhetherCovered: a --until-covered sweep's console
// summary says whether the coverage was reached, with the seeds kept and
// how many listed seeds were dropped, or which cells never landed —
// not only "87 of 300 ran".
func TestSweepTextSaysWhetherCovered(t *testing.T) {
	seeds := func(xs ...int64) []record.SweepSeed {
		var out []record.SweepSeed
		for _, x := range xs {
			out = append(out, record.SweepSeed{Seed: x, Verdict: record.Pass})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		sw   record.Sweep
		want string
	}{
		{"covered", record.Sweep{SeedsListed: 300, Seeds: seeds(1, 2, 3), Coverage: &record.SweepCoverage{K: 3, Covered: true}},
			"coverage: reached — every fault kind × stage cell landed at least 3 times within the first 3 seeds (1 … 3), kept; the other 297 listed seeds were dropped\n"},
		{"not covered", record.Sweep{SeedsListed: 2, Seeds: seeds(1, 2), Coverage: &record.SweepCoverage{K: 1,
			NeverLanded: []string{"dropped-connects × after-cutover"}}},
			"coverage: not reached — after the 2 seeds that ran some cell landed fewer than 1 times; never landed: dropped-connects × after-cutover\n"},
		{"no coverage asked", record.Sweep{SeedsListed: 2, Seeds: seeds(1, 2)}, ""},
	} {
		var b bytes.Buffer
		SweepText(&b, "out/sweep-1", tc.sw, time.Second, 2)
		got := b.String()
		if tc.want == "" && strings.Contains(got, "coverage:") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: want %q in:\n%s", tc.name, tc.want, got)
		}
	}
}
