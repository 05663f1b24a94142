package scenario

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// scaleRun is `fiomig run` without the CLI: the default faults on a sim
// cluster of the given size, timeline format version format.
func scaleRun(tb testing.TB, seed int64, hosts, volumes, migrations, format int) Result {
	return scaleRunReport(tb, seed, hosts, volumes, migrations, format, true)
}

// scaleRunReport is scaleRun; report false writes summary.json only.
func scaleRunReport(tb testing.TB, seed int64, hosts, volumes, migrations, format int, report bool) Result {
	tb.Helper()
	p := DefaultParams()
	p.Model.Hosts, p.Model.Volumes, p.Migrations, p.TimelineFormat = hosts, volumes, migrations, format
	// release_sources: a clean system, as defaultRun.
	p.Model.ControlPlane, p.Model.ReleaseSources = "fixed-cancel", true
	c, err := SimCluster(seed, p)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	sched, err := FaultSchedule(seed, p, c.Topology(), nil, "")
	if err != nil {
		tb.Fatal(err)
	}
	res, err := Run(context.Background(), c, Config{Plan: record.Plan{Tool: "fiomig", Scenario: "migrations", Seed: seed, Params: p, Faults: sched},
		OutDir: tb.TempDir(), StartUnix: 1, SummaryOnly: !report})
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// byTick sorts the lines of each instant by kind and host, so that two
// timelines that differ only in the order of one tick's hosts compare equal.
func byTick(lines []record.Line) []record.Line {
	out := slices.Clone(lines)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.T != b.T {
			return a.T < b.T
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Host < b.Host
	})
	return out
}

// TestChangeOnlySamplesAgreeWithFullSamples (issue 15): on seeds 1-20 of
// the main job, the change-only timeline (format version 2, the default)
// is under 2 MB and gives the same summary.json (verdicts, details, pause
// windows and figures) as full samples (version 1); on seeds 1-3 it also
// expands back (record.ReadTimeline) to exactly the states the
// full-sample timeline wrote at every tick.
func TestChangeOnlySamplesAgreeWithFullSamples(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			// Seeds 1-3 also write the reports (summary.json with churn,
			// from the per-tick states) and compare line by line; the
			// others compare the summaries alone, to keep make test light.
			deep := seed <= 3
			full := scaleRunReport(t, seed, 3, 10, 23, record.FormatFull, deep)
			co := scaleRunReport(t, seed, 3, 10, 23, record.FormatChangeOnly, deep)
			if d := cmp.Diff(full.Summary, co.Summary); d != "" {
				t.Errorf("summary differs, full samples (-) vs change-only (+):\n%s", d)
			}
			fi, err := os.Stat(filepath.Join(co.Dir, record.TimelineFile))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() >= 2<<20 {
				t.Errorf("change-only timeline is %d bytes, want < 2 MB", fi.Size())
			}
			sa, _ := os.ReadFile(filepath.Join(full.Dir, record.SummaryFile))
			sb, _ := os.ReadFile(filepath.Join(co.Dir, record.SummaryFile))
			if !bytes.Equal(sa, sb) {
				t.Error("summary.json differs between the formats")
			}
			if !deep {
				return
			}
			a, err := record.ReadTimeline(filepath.Join(full.Dir, record.TimelineFile))
			if err != nil {
				t.Fatal(err)
			}
			b, err := record.ReadTimeline(filepath.Join(co.Dir, record.TimelineFile))
			if err != nil {
				t.Fatal(err)
			}
			if b[0].Kind != record.KindFormat || b[0].Version != record.FormatChangeOnly {
				t.Fatalf("change-only timeline starts with %+v, want its format line", b[0])
			}
			b = b[1:]
			for i := range b {
				b[i].Repeat = false
			}
			if d := cmp.Diff(byTick(a), byTick(b)); d != "" {
				t.Errorf("expanded change-only timeline differs from the full one:\n%s", d)
			}
			// And the judge agrees on the two formats read back from disk, and
			// with what it said while the run streamed (checks.TestJudgeEqualsReference
			// holds it to an independent implementation).
			if d := cmp.Diff(checks.Evaluate(full.Plan, a), checks.Evaluate(co.Plan, b)); d != "" {
				t.Errorf("Evaluate differs between the formats:\n%s", d)
			}
			ref := reports.WithStats(checks.Evaluate(full.Plan, a))
			if d := cmp.Diff(ref, co.Summary); d != "" {
				t.Errorf("the run's streamed summary (+) differs from Evaluate over the whole record (-):\n%s", d)
			}
		})
	}
}

// BenchmarkScalePerMigration (issue 15): a run's cost per migration
// (ns/migration) from 10 to 1,000 migrations on 10 hosts and 100 volumes,
// default faults, timeline format 2, summary.json only (the report's plots
// are not the record's cost). A run has fixed costs (setup, the default
// fault schedule, the settle period) that the average spreads over its
// migrations, so the average falls with n; the figure that must stay flat
// is the marginal cost of a migration, reported for n > 10 as
// marginal-cpu-ns/migration = (CPU per run at n − CPU per run at 10) / (n − 10)
// (sub-benchmarks run in order, 10 first). Nothing the run keeps grows
// with its length but the findings.
func BenchmarkScalePerMigration(b *testing.B) {
	var base float64 // CPU ns per run at the smallest n
	sizes := []int{10, 100, 1000}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("migrations=%d", n), func(b *testing.B) {
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				scaleRunReport(b, 1, 10, 100, n, record.FormatChangeOnly, false)
			}
			perRun := float64(cpuTime()-cpu0) / float64(b.N)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/migration")
			b.ReportMetric(perRun/float64(n), "cpu-ns/migration")
			if n == sizes[0] {
				base = perRun
			} else if base > 0 {
				b.ReportMetric((perRun-base)/float64(n-sizes[0]), "marginal-cpu-ns/migration")
			}
		})
	}
}

// BenchmarkScale100Hosts is 100 hosts and 1,000 volumes: the per-tick cost
// of sampling, recording and judging many hosts (ns/migration).
func BenchmarkScale100Hosts(b *testing.B) {
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		scaleRunReport(b, 1, 100, 1000, 10, record.FormatChangeOnly, false)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10), "ns/migration")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*10), "cpu-ns/migration")
}

// cpuTime is this process's user + system CPU time in nanoseconds: on a
// machine shared with other work, the figure wall time cannot give.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
