package reports

import (
	"html"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
)

// fioFixture is the fixture with a real-fio section: m2 paused 7.25 s on
// host-b and fio's log shows 7.31 s; vol1's fio found a corrupted block.
func fioFixture() (record.Plan, record.Summary) {
	plan, sum := fixture()
	sum.Checks = append(sum.Checks,
		record.CheckResult{Name: "fio-pause-agreement", Verdict: record.Pass, Detail: "agree"},
		record.CheckResult{Name: "fio-data-integrity", Verdict: record.Fail, Detail: "data integrity failure"},
		record.CheckResult{Name: "fio-io-errors", Verdict: record.Pass, Detail: "none"},
	)
	sum.Fio = &record.FioSummary{
		ToleranceS: 0.5, MinGapS: 0.05,
		Volumes: []record.FioVolume{
			{Volume: "vol1", Host: "host-a", Completions: 5120, LongestGap: record.FioGap{StartS: 20.01, EndS: 22.04, LengthS: 2.03},
				VerifyFailures: []record.FioVerifyFailure{{Offset: 1052672, Length: 4096, Kind: "md5"}}, ExitCode: 128},
			{Volume: "vol2", Host: "host-b", Completions: 4800, LongestGap: record.FioGap{StartS: 70.2, EndS: 77.51, LengthS: 7.31}, ExitCode: 128,
				Errors: []record.FioErrno{{Errno: 107, Name: "ENOTCONN", Class: "path-loss", Count: 1}}, DrainErrors: 1},
		},
		Comparisons: []record.FioComparison{
			{Migration: "m1", Volume: "vol1", Host: "host-a", PauseS: 2, FioGapS: 2.03, FioGap: &record.FioGap{StartS: 20.01, EndS: 22.04, LengthS: 2.03}, DiffS: 0.03, Agree: true},
			{Migration: "m2", Volume: "vol2", Host: "host-a", PauseS: 7.25, FioGapS: 7.31, FioGap: &record.FioGap{StartS: 70.2, EndS: 77.51, LengthS: 7.31}, DiffS: 0.06, Agree: true},
		},
		Unattributed: []record.FioGap{},
	}
	return plan, sum
}

func TestFioSectionInReports(t *testing.T) {
	plan, sum := fioFixture()
	md := string(Markdown(plan, sum))
	for _, want := range []string{
		"## fio beside the ANA samples — pass",
		"| m2 | vol2 | host-a | **7.25 s** | **7.31 s** | [70.2, 77.51] s | +0.06 s | yes |",
		"| m1 | vol1 | host-a | 2 s | 2.03 s | [20.01, 22.04] s | +0.03 s | yes |",
		"I/O errors pass, data integrity fail",
		"vol1: data integrity failure — md5 verify failed at offset 1052672 (0x101000), 4096 bytes",
		"1 × ENOTCONN (path-loss), of which 1 ENOTCONN from draining fio after the run",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q; fio section:\n%s", want, md[strings.Index(md, "## fio"):])
		}
	}
	if i, j := strings.Index(md, "## fio beside"), strings.Index(md, "## Plot"); i < 0 || j < i {
		t.Errorf("fio section at %d, plot at %d: want the fio section before the plot", i, j)
	}
	page, err := HTML(plan, sum, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := html.UnescapeString(string(page))
	for _, want := range []string{"fio beside the ANA samples", "7.31 s", "[70.2, 77.51] s", "md5 verify failed at offset 1052672"} {
		if !strings.Contains(h, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

func TestNoFioSectionWithoutFio(t *testing.T) {
	plan, sum := fixture()
	if md := string(Markdown(plan, sum)); strings.Contains(md, "fio beside") {
		t.Error("report.md has a fio section for a run without real fio")
	}
	if FioSection(plan, sum) != nil || FioMarkdown(plan, sum) != nil {
		t.Error("fio section built without sum.Fio")
	}
}

// An interrupted run's last migration stopped in Validating: no terminal
// phase, nothing measured. It is inconclusive in the Migrations table (not
// a pass with 0 s), left out of the pause statistics, and its fio pair is
// shown as not judged. Over the bound it still fails: that pause happened.
func TestUnfinishedMigrationIsInconclusive(t *testing.T) {
	plan, sum := fioFixture()
	m2 := &sum.Migrations[1]
	m2.Outcome, m2.CompletedS, m2.Freezes = record.PhaseValidating, nil, 0
	m2.Hosts = map[string]record.HostPauses{"host-a": {Windows: [][2]float64{}}, "host-b": {Windows: [][2]float64{}}}
	sum.Fio.Comparisons[1] = record.FioComparison{Migration: "m2", Volume: "vol2", Host: "host-a",
		NotJudged: "m2 reached no terminal phase (last phase Validating)"}
	if v := MigrationVerdict(plan, *m2); v != record.Inconclusive {
		t.Errorf("unfinished m2: verdict %q, want inconclusive", v)
	}
	over := *m2
	over.Hosts = map[string]record.HostPauses{"host-a": {LongestPauseS: 9}}
	if v := MigrationVerdict(plan, over); v != record.Fail {
		t.Errorf("unfinished m2 paused 9 s: verdict %q, want fail", v)
	}
	// m1's two pairs only: 2 and 2.25 s.
	want := record.Stats{PercentileMethod: PercentileMethod, Pauses: 2, P50PauseS: 2.125, P95PauseS: 2.2375, MaxPauseS: 2.25}
	if got := Stats(sum); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	md := string(Markdown(plan, WithStats(sum)))
	for _, want := range []string{
		"| Validating | host-a 0 s, host-b 0 s | 0 | **inconclusive** |",
		"Longest pause per (migration, host), 2 pair(s)",
		"left out: m2 (no terminal phase, last phase Validating)",
		"| m2 | vol2 | host-a | 0 s | 0 s | — | — | not judged: m2 reached no terminal phase (last phase Validating) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	page, err := HTML(plan, WithStats(sum), nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := html.UnescapeString(string(page)); !strings.Contains(h, "left out: m2 (no terminal phase, last phase Validating)") {
		t.Error("report.html does not name the migration left out of the statistics")
	}
}

// fio's exit 128 on every volume is fiomig's own SIGINT at the end of the
// run and must say so; "zero seconds" is defined where it is shown; the
// preamble fio writes before its JSON ("fio: terminating on signal 2") is
// named as skipped.
func TestFioVolumesTableExplainsItself(t *testing.T) {
	plan, sum := fioFixture()
	sum.Fio.Volumes[1].ExitCode = -1
	md := string(Markdown(plan, sum))
	page, err := HTML(plan, sum, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := html.UnescapeString(string(page))
	for _, want := range []string{
		"128 (stopped by fiomig, SIGINT)",
		"-1 (killed, no exit status)",
		"Zero seconds: whole seconds of the run (first to last sample) in which fio logged no completion",
		`fio: terminating on signal 2`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md[strings.Index(md, "### fio per volume"):])
		}
		if !strings.Contains(h, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// A pair off by more than the tolerance but within tolerance + noise floor
// is what fio-pause-agreement calls inconclusive, and its report row says
// so; a pair beyond tolerance + floor fails the check and its row says no.
// The verdicts come from checks.FioChecks on the same summary.
func TestFioRowsSayWhatTheAgreementCheckSays(t *testing.T) {
	plan, sum := fioFixture()
	plan.Params.PauseCritS = 0 // judge agreement only, not the pause bound
	fs := sum.Fio
	fs.NoiseFloorS = 0.4
	fs.NoiseGap = &record.FioGap{Volume: "vol1", StartS: 40, EndS: 40.4, LengthS: 0.4}
	m2 := &fs.Comparisons[1]
	for _, tc := range []struct {
		name    string
		fioGapS float64
		verdict string
		agree   string
	}{
		// tolerance 0.5, floor 0.4: off by 0.8 is within 0.9.
		{"within-noise-floor", 8.05, record.Inconclusive, "| +0.8 s | inconclusive: within tolerance + noise floor |"},
		{"beyond-noise-floor", 8.35, record.Fail, "| +1.1 s | **no** |"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m2.FioGapS, m2.DiffS, m2.Agree = tc.fioGapS, tc.fioGapS-m2.PauseS, false
			m2.FioGap = &record.FioGap{StartS: 70.2, EndS: 70.2 + tc.fioGapS, LengthS: tc.fioGapS}
			got := checks.FioChecks(plan, *fs)[0]
			if got.Name != checks.CheckFioPauseAgreement || got.Verdict != tc.verdict {
				t.Fatalf("%s: %s, want %s (%s)", got.Name, got.Verdict, tc.verdict, got.Detail)
			}
			s := sum
			s.Checks = append([]record.CheckResult(nil), sum.Checks...)
			for i := range s.Checks {
				if s.Checks[i].Name == got.Name {
					s.Checks[i] = got
				}
			}
			md := string(Markdown(plan, s))
			if !strings.Contains(md, "## fio beside the ANA samples — "+tc.verdict) || !strings.Contains(md, tc.agree) {
				t.Errorf("report.md: want verdict %s and row ending %q:\n%s", tc.verdict, tc.agree, md[strings.Index(md, "## fio"):])
			}
			page, err := HTML(plan, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			h := html.UnescapeString(string(page))
			noisy := strings.Contains(h, "inconclusive: within tolerance + noise floor")
			if noisy != (tc.verdict == record.Inconclusive) {
				t.Errorf("report.html shows the row as within the noise floor: %v, want %v", noisy, tc.verdict == record.Inconclusive)
			}
		})
	}
}
