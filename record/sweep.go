package record

import (
	"encoding/json"
	"fmt"
	"os"
)

// Files of a sweep directory (fiomig sweep): sweep-<unix seconds>[-N]/
// holds SweepFile, SweepReportFile and one run directory per seed,
// seed-<N>/ (a normal run directory; its timeline.jsonl may have been
// dropped, see SweepSeed.TimelineKept).
const (
	SweepFile       = "sweep.json"
	SweepReportFile = "sweep.md"
)

// SweepFormat is the version of sweep.json written by this code. Fields may
// be added without a new version, never renamed; a change of meaning gets a
// new version.
const SweepFormat = 1

// Sweep is sweep.json: one `fiomig sweep` over many seeds of the same run
// flags. It is deterministic: the same sweep command gives the same bytes
// (no wall-clock figure is recorded). Fields may be added, never renamed.
type Sweep struct {
	// Format is SweepFormat.
	Format int    `json:"format"`
	Tool   string `json:"tool"` // "fiomig"
	// Command is the sweep's own command line (the flags that were given).
	Command string `json:"command"`
	// SeedsArg is the --seeds argument as given, e.g. "1-100" or "1,5,9-12".
	SeedsArg string `json:"seeds_arg"`
	// RunArgs are the `fiomig run` flags every seed ran with, besides
	// --seed and --out, as --name=value.
	RunArgs []string `json:"run_args"`
	// Seeds are the seeds that ran to a verdict, in the order listed in
	// --seeds (an interrupted sweep lists fewer than it was asked for).
	Seeds []SweepSeed `json:"seeds"`
	// SeedsListed is how many seeds --seeds names.
	SeedsListed int `json:"seeds_listed"`
	// Counts are the seeds per verdict.
	Counts SweepCounts `json:"counts"`
	// Pauses is the distribution of the longest pause per migration over
	// every migration of every seed in Seeds.
	Pauses SweepPauses `json:"pauses"`
	// OverBound is the fraction of those migrations whose longest pause is
	// over the pause bound, with its 95 % interval.
	OverBound SweepOverBound `json:"over_bound"`
	// Interrupted is true when the sweep stopped before every listed seed
	// ran: on SIGINT/SIGTERM, or when its first seeds were all refused as
	// bad usage by fiomig run (the rest would have been too). A sweep
	// that stopped on coverage (Coverage.Covered) is not interrupted.
	Interrupted bool `json:"interrupted"`
	// Determinism is the self-check: a share of the seeds run twice and
	// their summary.json compared. Added field.
	Determinism *SweepDeterminism `json:"determinism,omitempty"`
	// Coverage is the fault coverage of fiomig sweep --until-covered.
	// Added field.
	Coverage *SweepCoverage `json:"coverage,omitempty"`
}

// SweepDeterminism is a sweep's determinism self-check: the seeds at
// every 1/Share-th place of the seed list ran a second time, in another
// run (another pod of a farm, or another run of the same process), and
// each second run's summary.json was compared with the first's by SHA-256.
// Which seeds, and what they gave, does not depend on where they ran, so
// a farm and a local sweep of the same seeds record the same value.
type SweepDeterminism struct {
	// Share is the share of seeds rerun (fiomig sweep --self-check).
	Share float64 `json:"share"`
	// Seeds are the seeds rerun, in seed-list order (those of Seeds only).
	Seeds []int64 `json:"seeds"`
	// Mismatches are the seeds whose two runs gave different summaries:
	// the sweep fails on any.
	Mismatches []SweepMismatch `json:"mismatches"`
}

// SweepMismatch is one seed whose two runs differed: the SHA-256 (hex) of
// each run's summary.json.
type SweepMismatch struct {
	Seed   int64  `json:"seed"`
	First  string `json:"first_sha256"`
	Second string `json:"second_sha256"`
}

// SweepCoverage is the kind × stage fault coverage of a sweep run with
// --until-covered K: the cells are those the seeds' fault schedules place
// a fault in (kind, stage at injection) for at least one listed seed, each
// with how many faults landed there (left evidence) over Seeds. The sweep
// ran the shortest prefix of the seed list after which every cell had
// landed at least K times (Covered), or every seed when none did.
type SweepCoverage struct {
	K       int         `json:"k"`
	Covered bool        `json:"covered"`
	Cells   []SweepCell `json:"cells"`
	// NeverLanded are the cells with no landed fault, as "kind × stage".
	NeverLanded []string `json:"never_landed"`
}

// SweepCell is one cell of SweepCoverage.
type SweepCell struct {
	Kind   string `json:"kind"`
	Stage  string `json:"stage"`
	Landed int    `json:"landed"`
}

// SweepCounts are a sweep's seeds per verdict. Error counts seeds whose run
// ended without a verdict (a backend or I/O failure; SweepSeed.Error).
type SweepCounts struct {
	Pass         int `json:"pass"`
	Fail         int `json:"fail"`
	Inconclusive int `json:"inconclusive"`
	Error        int `json:"error"`
}

// SweepSeed is one seed's run.
type SweepSeed struct {
	Seed int64 `json:"seed"`
	// Verdict is the run's summary.json verdict (pass, fail,
	// inconclusive), or "error" when the run ended without one.
	Verdict string `json:"verdict"`
	// ExitCode is what `fiomig run` with this seed exits with.
	ExitCode int `json:"exit_code"`
	// Dir is the seed's run directory, relative to the sweep directory
	// ("seed-7"); "" when the run left none.
	Dir string `json:"dir"`
	// Command is the one command line that reruns this seed (plan.json's
	// "command"; `fiomig run` with every parameter explicit).
	Command string `json:"command"`
	// FailedChecks and InconclusiveChecks name the checks with that
	// verdict (summary.json "checks"), in summary order.
	FailedChecks       []string `json:"failed_checks"`
	InconclusiveChecks []string `json:"inconclusive_checks"`
	// PauseCritS is the pause bound (plan.json params.pause_crit_s).
	PauseCritS float64 `json:"pause_crit_s"`
	// Migrations are the seed's migrations in summary.json order.
	Migrations []SweepMigration `json:"migrations"`
	// TimelineKept says whether Dir still holds timeline.jsonl (fiomig
	// sweep --timelines, --max-timelines); without it `fiomig report` cannot re-judge the
	// run, and Command reruns it.
	TimelineKept bool `json:"timeline_kept"`
	// Error says why the run ended without a verdict.
	Error string `json:"error,omitempty"`
}

// SweepMigration is one migration of a seed.
type SweepMigration struct {
	ID      string `json:"id"`
	Outcome string `json:"outcome"`
	// LongestPauseS is the longest pause window any consumer host saw
	// during the migration (the maximum of summary.json's per-host
	// longest_pause_s), seconds; 0 when no host saw a pause.
	LongestPauseS float64 `json:"longest_pause_s"`
	// OverBound is LongestPauseS > the seed's PauseCritS (what makes the
	// pause-bound check fail).
	OverBound bool `json:"over_bound"`
	// NoCutover is summary.json's no_cutover: the migration ended Failed
	// or Aborted before Running, so the sweep's figures leave it out.
	// Added field.
	NoCutover bool `json:"no_cutover,omitempty"`
	// Masked is true when a consumer host's cutover lies inside a fault
	// window (summary.json hosts.<h>.masked_by): the migration's longest
	// pause is not known, so the sweep's percentiles leave it out, and so
	// does the fraction over the bound unless OverBound (a pause seen over
	// the bound is over whatever the masked one was). Added field.
	Masked bool `json:"masked,omitempty"`
}

// SweepPauses is the distribution of SweepMigration.LongestPauseS over
// every migration of a sweep that cut over (Migrations; NoCutover counts
// the others, which have no cutover pause), seconds rounded to the
// microsecond (all 0 when Migrations is 0).
type SweepPauses struct {
	Migrations int `json:"migrations"`
	// NoCutover counts the migrations left out (SweepMigration.NoCutover).
	// Added field.
	NoCutover int `json:"no_cutover"`
	// Masked counts the migrations that cut over left out for a cutover
	// inside a fault window (SweepMigration.Masked). Added field.
	Masked           int     `json:"masked,omitempty"`
	PercentileMethod string  `json:"percentile_method"`
	P50S             float64 `json:"p50_s"`
	P90S             float64 `json:"p90_s"`
	P99S             float64 `json:"p99_s"`
	MaxS             float64 `json:"max_s"`
}

// SweepOverBound is how many of a sweep's migrations that cut over were
// over the pause bound: Over of Migrations, Fraction = Over/Migrations,
// and the two-sided 95 % interval [Low95, High95] of the underlying
// proportion computed by IntervalMethod (all 0 when Migrations is 0).
type SweepOverBound struct {
	// PauseCritS is the bound (CUTOVER_PAUSE_CRIT_S) of the sweep's first
	// seed; every seed runs with the same flags, so the same bound.
	PauseCritS float64 `json:"pause_crit_s"`
	Migrations int     `json:"migrations"`
	// NoCutover counts the migrations left out of Migrations: no cutover,
	// no cutover pause to be over the bound. Added field.
	NoCutover int `json:"no_cutover"`
	// Masked counts the migrations that cut over left out for a cutover
	// inside a fault window and no pause seen over the bound
	// (SweepMigration.Masked without OverBound). Added field.
	Masked         int     `json:"masked,omitempty"`
	Over           int     `json:"over"`
	Fraction       float64 `json:"fraction"`
	Low95          float64 `json:"low95"`
	High95         float64 `json:"high95"`
	IntervalMethod string  `json:"interval_method"`
}

// ReadSweep reads a sweep.json. Errors name the file; a file of another
// format version is refused.
func ReadSweep(path string) (Sweep, error) {
	var s Sweep
	b, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("read sweep: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	if s.Format != SweepFormat {
		return s, fmt.Errorf("%s: format %d, want %d", path, s.Format, SweepFormat)
	}
	return s, nil
}
