package record

// FioDir is the run directory's subdirectory with what the real fio
// processes of a --workload=fio run wrote: FioWorkloadFile and one
// directory per volume (job.fio, result.json, stderr.txt, lat_lat.1.log).
const FioDir = "fio"

// FioWorkloadFile (inside FioDir) describes the workload: which volume's
// fio ran on which host's multipath head, and where fio's clock puts the
// run's start.
const FioWorkloadFile = "workload.json"

// FioWorkload is fio/workload.json.
type FioWorkload struct {
	// EpochMs is the run's t = 0 as Unix epoch ms: fio's per-I/O logs
	// (log_unix_epoch) are placed on the timeline with it.
	EpochMs int64 `json:"epoch_ms"`
	// RateIOPS is each fio job's rate_iops.
	RateIOPS int `json:"rate_iops"`
	// Volumes are the fio processes, one per volume.
	Volumes []FioWorkloadVolume `json:"volumes"`
	// Stop says how the workload was stopped: whether held I/O had to be
	// drained (failed with ENOTCONN) and which fio had to be killed or had
	// exited on its own before the end.
	Drained bool     `json:"drained"`
	Killed  []string `json:"killed,omitempty"`
	Exited  []string `json:"exited_early,omitempty"`
	// Corruptions are the blocks deliberately stored corrupted underneath
	// fio (a test of the verify path), with their byte offsets.
	Corruptions []FioBlock `json:"corruptions,omitempty"`
	// Load is the harness machine's load when the run ended (absent when
	// it could not be read). Added field.
	Load *MachineLoad `json:"load,omitempty"`
}

// MachineLoad is the harness machine's 1-minute load average
// (/proc/loadavg) and its CPU count.
type MachineLoad struct {
	Avg1 float64 `json:"avg1"`
	CPUs int     `json:"cpus"`
}

// FioWorkloadVolume is one volume's fio process.
type FioWorkloadVolume struct {
	Volume string `json:"volume"`
	NQN    string `json:"nqn"`
	NSID   int    `json:"nsid"`
	// Host is the consumer host whose multipath head the volume's I/O
	// follows (the volume's first consumer).
	Host string `json:"host"`
	// Dir is fio's directory, relative to the run directory.
	Dir      string `json:"dir"`
	ExitCode int    `json:"exit_code"`
	// FUSE counters: I/O served, failed with EIO by the head, failed by the
	// drain, and held (waited for a path) as the FUSE layer counted them.
	FUSECompleted   int64 `json:"fuse_completed"`
	FUSEErrors      int64 `json:"fuse_errors"`
	FUSEDrainErrors int64 `json:"fuse_drain_errors"`
	FUSEHeld        int64 `json:"fuse_held"`
}

// FioBlock is a byte range of a volume's file.
type FioBlock struct {
	Volume string `json:"volume"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
}

// FioSummary is summary.json "fio": what the real fio processes measured,
// and fio's I/O gaps beside the pause windows the ANA samples gave.
type FioSummary struct {
	// ToleranceS is the largest disagreement between fio's longest gap and
	// the ANA pause that still counts as agreement: max(2 × sample
	// interval, 0.25 s).
	ToleranceS float64 `json:"tolerance_s"`
	// MinGapS: fio gaps shorter than this are not listed; a migration
	// with none reports a fio gap of 0.
	MinGapS float64 `json:"min_gap_s"`
	// Volumes are the fio processes' findings, one per volume.
	Volumes []FioVolume `json:"volumes"`
	// Comparisons hold one row per migration and volume with fio.
	Comparisons []FioComparison `json:"comparisons"`
	// Unattributed are fio gaps of at least ToleranceS outside every
	// migration of their volume: a stall the ANA samples did not explain.
	Unattributed []FioGap `json:"unattributed_gaps"`
	// NoiseFloorS is the longest closed fio gap that overlaps no pause
	// window of its volume's host and NQN (0 when none was listed),
	// NoiseGap that gap: fio's own stalls on this machine in this run
	// (checks.FioNoiseFloor). Added field.
	NoiseFloorS float64 `json:"noise_floor_s"`
	NoiseGap    *FioGap `json:"noise_gap,omitempty"`
	// Load is FioWorkload.Load. Added field.
	Load *MachineLoad `json:"load,omitempty"`
}

// FioVolume is one volume's fio as read back from its files. Times are
// seconds since run start.
type FioVolume struct {
	Volume string `json:"volume"`
	NQN    string `json:"nqn"`
	Host   string `json:"host"`
	Dir    string `json:"dir"`
	// ExitCode is fio's exit status (0 or 128 = stopped in order by
	// SIGINT; -1 = killed).
	ExitCode int `json:"exit_code"`
	// Completions are the I/Os fio's per-I/O log holds within the run.
	Completions int64 `json:"completions"`
	// LongestGap is the longest interval without a completion within the
	// run (first to last sample); Gaps every one of at least MinGapS.
	LongestGap FioGap   `json:"longest_gap"`
	Gaps       []FioGap `json:"gaps"`
	// ZeroSeconds counts whole seconds without a completion.
	ZeroSeconds int `json:"zero_seconds"`
	// Errors are fio's io_u errors by errno (from its stderr).
	Errors []FioErrno `json:"errors"`
	// DrainErrors are the errors the FUSE layer returned while draining
	// fio after the run (ENOTCONN); they are not the migration's.
	DrainErrors int64 `json:"drain_errors"`
	// VerifyFailures are the blocks fio's verify found corrupted.
	VerifyFailures []FioVerifyFailure `json:"verify_failures"`
	// TotalErr and ExitError are fio's own JSON figures.
	TotalErr  int64 `json:"total_err"`
	ExitError int   `json:"exit_error"`
	// Problems are what could not be read (missing or truncated files).
	Problems []string `json:"problems,omitempty"`
}

// FioGap is an interval without an fio completion, seconds since run start.
type FioGap struct {
	Volume  string  `json:"volume,omitempty"`
	StartS  float64 `json:"start_s"`
	EndS    float64 `json:"end_s"`
	LengthS float64 `json:"length_s"`
	// Open: one end is the run's edge, not a completion.
	Open bool `json:"open,omitempty"`
}

// FioErrno is how many of a volume's I/Os failed with one errno.
type FioErrno struct {
	Errno int    `json:"errno"`
	Name  string `json:"name"`
	Class string `json:"class"` // fio.ErrorClass: path-loss, io-error, data-integrity, ...
	Count int64  `json:"count"`
}

// FioVerifyFailure is one block fio's verify found corrupted: a
// data-integrity failure (from fio's verify report, never from an errno).
type FioVerifyFailure struct {
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
	Kind   string `json:"kind"` // md5, crc32c, verify (header), ...
	Reason string `json:"reason,omitempty"`
}

// FioComparison is one migration and one volume with fio: the ANA pause
// and fio's gap side by side.
type FioComparison struct {
	Migration string `json:"migration"`
	Volume    string `json:"volume"`
	NQN       string `json:"nqn"`
	Host      string `json:"host"`
	// PauseS is the longest ANA pause window of the migration on Host, or
	// of a fault in its span (HostPauses.FaultWindows) when longer.
	PauseS float64 `json:"pause_s"`
	// FioGapS is the longest fio gap attributed to the migration (0 when
	// none was at least MinGapS); FioGap is that gap.
	FioGapS float64 `json:"fio_gap_s"`
	FioGap  *FioGap `json:"fio_gap,omitempty"`
	// DiffS is FioGapS - PauseS; Agree is |DiffS| <= ToleranceS (false
	// when NotJudged).
	DiffS float64 `json:"diff_s"`
	Agree bool    `json:"agree"`
	// NotJudged, when set, says why the pair is left out of the agreement
	// check: the migration reached no terminal phase, or the volume's fio
	// evidence is missing (checks.FioMissingEvidence). Added field.
	NotJudged string `json:"not_judged,omitempty"`
}
