package record

// Verdicts.
const (
	Pass         = "pass"
	Fail         = "fail"
	Inconclusive = "inconclusive"
	// Warn is a finding that does not fail the run (a pass with a warning).
	Warn = "warn"
)

// Summary is summary.json. Fields may be added, never renamed.
type Summary struct {
	Seed         int64              `json:"seed"`
	Verdict      string             `json:"verdict"`
	Checks       []CheckResult      `json:"checks"`
	Migrations   []MigrationSummary `json:"migrations"`
	Unattributed []HostWindow       `json:"unattributed_windows"`
	// FaultWindows are the pause windows an injected fault explains
	// (HostWindow.Cause): those outside every migration that cut over, and
	// those begun by a silent stall a landed fault made (HostWindow.Stall),
	// even inside a migration's span (HostWindow.Migration). Not findings,
	// and not counted by pause-bound or freezes. Added field.
	FaultWindows []HostWindow `json:"fault_windows"`
	// Stalls are the silent stalls of the run (docs/host-model.md "Silent
	// stalls"), by start, host and controller; the pause windows count
	// them. Added field (issue 28).
	Stalls            []Stall           `json:"stalls,omitempty"`
	LeakedControllers []Leak            `json:"leaked_controllers"`
	MissingEndpoints  []MissingEndpoint `json:"missing_endpoints"`
	Stats             Stats             `json:"stats"`
	// Fio is what real fio measured (fiomig run --workload=fio only;
	// absent otherwise). Added field.
	Fio *FioSummary `json:"fio,omitempty"`
	// Coverage says whether the timeline reaches the end of the settle
	// period (a run interrupted or cut short does not). Added field.
	Coverage *Coverage `json:"coverage,omitempty"`
	// SampleHoles are the stretches in which a host was not observed; the
	// checks over those hosts and times are inconclusive. Added field.
	SampleHoles []SampleHole `json:"sample_holes"`
	// Faults lists every fault of the run with where it was injected and
	// whether it landed; FaultMatrix counts them per kind and stage. Added
	// fields.
	Faults      []FaultOutcome `json:"faults"`
	FaultMatrix FaultMatrix    `json:"fault_matrix"`
	// Churn counts how the hosts' controllers came and went (written by
	// package reports from the timeline's samples). Added field.
	Churn *Churn `json:"churn,omitempty"`
	// Rejudged is set when the verdicts were computed from the stored
	// record with other bounds than the run's (fiomig report --pause-crit,
	// --freezes-allowed). Added field.
	Rejudged *Rejudged `json:"rejudged,omitempty"`
	// Interrupted is true when the run was stopped by SIGINT or SIGTERM
	// (exit 130): the checks then judged only what the timeline holds, and
	// the verdict is fail on a violation seen, else inconclusive. Added
	// field.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Churn is controller churn over the whole record, summed over hosts: a
// controller (host, kernel name, address) appearing after the host's
// first sample is created, one gone from a host's sample is removed, and a
// controller entering "connecting" from another state is a reconnect.
// NetCreatedMax is the largest created − removed on one host.
type Churn struct {
	Created       int `json:"controllers_created"`
	Removed       int `json:"controllers_removed"`
	Reconnects    int `json:"reconnects"`
	NetCreatedMax int `json:"net_created_max"`
}

// Rejudged names the bounds a re-judged summary used, the run's own and
// the command that re-judged it.
type Rejudged struct {
	PauseCritS        float64 `json:"pause_crit_s"`
	FreezesAllowed    int     `json:"freezes_allowed"`
	RunPauseCritS     float64 `json:"run_pause_crit_s"`
	RunFreezesAllowed int     `json:"run_freezes_allowed"`
	Command           string  `json:"command"`
}

// Coverage is how much of the run the timeline holds. Times are seconds
// since run start.
type Coverage struct {
	// LastSampleS is the time of the last sample line (0 without one).
	LastSampleS float64 `json:"last_sample_s"`
	// SettleEndS is when the settle period ends: the last migration's
	// terminal phase (the last phase line of a migration that never reached
	// one; 0 without migrations) plus plan.params.settle_s.
	SettleEndS float64 `json:"settle_end_s"`
	// Short is true when the record stops before SettleEndS (less one
	// settle sample interval of tolerance) or holds fewer migrations than
	// plan.params.migrations: leaks and completeness are then not judged.
	Short bool `json:"short"`
	// Note says the above in one sentence.
	Note string `json:"note"`
	// TruncatedLine is true when the timeline's last line was cut off
	// mid-write (set by the reader that saw it, e.g. fiomig report).
	TruncatedLine bool `json:"truncated_line,omitempty"`
}

// SampleHole is a stretch of time in which a host was not observed: the
// gap between two of its samples (or heartbeats) longer than HoleFactor
// sampling intervals, the time before its first or after its last, or the
// whole run for a host with no sample. Times are seconds since run start.
type SampleHole struct {
	Host string  `json:"host"`
	From float64 `json:"from_s"`
	To   float64 `json:"to_s"`
	// IntervalS is the sampling interval that applied there (the settle
	// interval in the settle period).
	IntervalS float64 `json:"interval_s"`
	// NoSample is true for a host with no sample at all.
	NoSample bool `json:"no_sample,omitempty"`
}

// HoleFactor: a gap between two observations of a host longer than
// HoleFactor × its sampling interval is a hole (docs/concepts.md "What the
// samples can see").
const HoleFactor = 3.0

// FaultOutcome is one injected (or scheduled and never injected) fault as
// the timeline shows it.
type FaultOutcome struct {
	Kind   string `json:"kind"`
	Target string `json:"target"`
	// Migration and Phase: the migration and stage (record.Stages, or
	// StageIdle) at injection, from the inject line.
	Migration string   `json:"migration,omitempty"`
	Phase     string   `json:"phase"`
	InjectedS float64  `json:"injected_s"`
	LandedS   *float64 `json:"landed_s,omitempty"`
	// RecoveredS is the time of its recover line (absent if none).
	RecoveredS *float64          `json:"recovered_s,omitempty"`
	Evidence   map[string]string `json:"evidence,omitempty"`
	// Status is "landed" (evidence recorded), "inconclusive" (injected, no
	// evidence) or "not-injected" (its trigger never came).
	Status string `json:"status"`
	// Reason is the fault lines' reason, if any.
	Reason string `json:"reason,omitempty"`
}

// Fault outcome statuses.
const (
	FaultLanded      = "landed"
	FaultNoEvidence  = "inconclusive"
	FaultNotInjected = "not-injected"
)

// FaultMatrix counts faults per kind and stage at injection.
type FaultMatrix struct {
	// Stages are the columns: record.Stages, then StageIdle and "other"
	// when a fault was injected there.
	Stages []string         `json:"stages"`
	Kinds  []FaultMatrixRow `json:"kinds"`
}

// FaultMatrixRow is one kind's row: one cell per FaultMatrix.Stages.
type FaultMatrixRow struct {
	Kind  string      `json:"kind"`
	Cells []FaultCell `json:"cells"`
}

// FaultCell counts the faults of a kind injected at a stage and how many of
// them landed.
type FaultCell struct {
	Injected int `json:"injected"`
	Landed   int `json:"landed"`
}

// CheckResult is one check's verdict.
type CheckResult struct {
	Name    string `json:"name"`
	Verdict string `json:"verdict"`
	Detail  string `json:"detail"`
	// Failing are the migrations (ids) a failing check failed on, sorted,
	// where the check judges per migration. Added field.
	Failing []string `json:"failing,omitempty"`
}

// MigrationSummary is one migration as the checks saw it.
type MigrationSummary struct {
	ID      string  `json:"id"`
	NQN     string  `json:"nqn"`
	Outcome string  `json:"outcome"` // terminal phase, or the last phase seen
	StartS  float64 `json:"start_s"`
	EndS    float64 `json:"end_s"`
	// CompletedS is the control plane's Completed time (absent otherwise).
	CompletedS *float64 `json:"completed_s,omitempty"`
	// Freezes is the most freezes any one host saw (HostPauses.Freezes).
	Freezes int                   `json:"freezes"`
	Hosts   map[string]HostPauses `json:"hosts"`
	// Reason is why a Failed or Aborted migration ended: its terminal
	// phase line's reason (the operator's message). Added field.
	Reason string `json:"reason,omitempty"`
	// NoCutover is true for a migration that ended Failed or Aborted
	// before its Running phase: it never started its cutover, so no pause
	// window is charged to it and the pause statistics leave it out.
	// Added field.
	NoCutover bool `json:"no_cutover,omitempty"`
}

// HostPauses is what one consumer host saw of one migration.
type HostPauses struct {
	LongestPauseS float64 `json:"longest_pause_s"`
	// Freezes counts Windows, and the fault window that holds the
	// host-observed cutover when MaskedBy is set: the host's I/O waited
	// through it once (docs/concepts.md "Pause window").
	Freezes int          `json:"freezes"`
	Windows [][2]float64 `json:"windows"`
	// OpenWindow is true when a window was still open at the last sample.
	OpenWindow bool `json:"open_window,omitempty"`
	// LongestSeenPauseS is set when a window of this host spans a hole in
	// its observations (SampleHole): the longest stretch of any of its
	// windows seen paused with no hole in it, in seconds. LongestPauseS
	// measures across the hole; pause-bound judges this instead. Added
	// field.
	LongestSeenPauseS *float64 `json:"longest_seen_pause_s,omitempty"`
	// LongestPauseMinS is set when the longest window holds a silent stall
	// known only from a keep-alive timeout (Stall.Estimate): its length if
	// the stall began as late as the evidence allows. Added field (issue
	// 28).
	LongestPauseMinS *float64 `json:"longest_pause_min_s,omitempty"`
	// Stalls are the silent stalls inside this host's windows, with the
	// fault that made each (Stall.Cause) when one did: a fault's stall
	// that lengthened a window the cutover began. Added field.
	Stalls []Stall `json:"stalls,omitempty"`
	// FaultWindows are the windows of this host within the migration's
	// span that a landed fault's silent stall began: the fault's
	// (Summary.FaultWindows names fault and stall), not counted in
	// Windows or LongestPauseS, nor in Freezes unless it holds the
	// cutover (MaskedBy). Added field.
	FaultWindows [][2]float64 `json:"fault_windows,omitempty"`
	// MaybeFaultWindows are the windows of Windows that a landed fault's
	// silent stall known only from a keep-alive timeout may have begun
	// (then they would be the fault's, not the migration's): pause-bound
	// and freezes are inconclusive when their verdict depends on them.
	// Added field.
	MaybeFaultWindows [][2]float64 `json:"maybe_fault_windows,omitempty"`
	// CutoverS is the host-observed cutover instant: the first sample with a
	// target path optimized and no source path optimized.
	CutoverS *float64 `json:"cutover_s,omitempty"`
	// CutoverLagS is CutoverS minus the control plane's Completed time.
	CutoverLagS *float64 `json:"cutover_lag_s,omitempty"`
	// MaskedBy is set when CutoverS lies inside a fault window of this
	// host and subsystem (Summary.FaultWindows, its start to its end
	// inclusive): the cutover's own pause was masked by the fault's and
	// could not be measured; the fault window's length bounds it.
	// pause-bound passes the pair when that bound is within the bound and
	// is inconclusive over it (docs/concepts.md "Pause window"). Added
	// field.
	MaskedBy *Masked `json:"masked_by,omitempty"`
	// Anatomy splits each of Windows, in the same order, into the steps
	// the record shows (written by package reports from the timeline;
	// absent without one). Added field.
	Anatomy []PauseAnatomy `json:"anatomy,omitempty"`
}

// Masked is the fault window that holds a host-observed cutover
// (HostPauses.MaskedBy). Seconds since run start.
type Masked struct {
	// Window is the fault window, [start_s, end_s].
	Window [2]float64 `json:"window"`
	// Fault names the landed fault it is charged to: "KIND on TARGET from
	// T s" (HostWindow.Cause, or its Stall's Cause).
	Fault string `json:"fault"`
	// BoundS is the window's length in seconds: an upper bound on the
	// cutover's own pause on that host.
	BoundS float64 `json:"bound_s"`
}

// Pause anatomy steps (PauseStep.Step), in the order a cutover passes them.
const (
	// StepSourceLost: the first paused sample — no source path of the
	// subsystem serves it (its ANA state or its controller's state).
	StepSourceLost = "source-path-lost"
	// StepTargetLive: the first sample with a target path's controller
	// live (often before the window: connected while Validating).
	StepTargetLive = "target-controller-live"
	// StepTargetAccessible: the first sample with a target path
	// optimized or non-optimized on a live controller.
	StepTargetAccessible = "target-ana-accessible"
	// StepFirstCompletion: fio's first completion after the window's I/O
	// gap (fio runs only).
	StepFirstCompletion = "first-io-completion"
	// StepSilentStall and StepStallEnded replace StepSourceLost for a
	// window that begins with a silent stall (Stall): a path live and
	// optimized that carried nothing, from the stall's start to its end
	// (the controller leaving live, or the keep-alive timeout).
	StepSilentStall = "silent-stall"
	StepStallEnded  = "stall-ended"
)

// PauseAnatomy is one pause window split into steps: when each was first
// seen and the sample before it, so each step happened in (AfterS, AtS].
type PauseAnatomy struct {
	Window [2]float64  `json:"window"`
	Steps  []PauseStep `json:"steps"`
	// EndedBy says what ended the window: "target" (a target path became
	// accessible), "source" (a source path came back), "other", or "open"
	// (still paused at the host's last sample).
	EndedBy string `json:"ended_by"`
}

// PauseStep is one step of a PauseAnatomy. Times are seconds since run
// start.
type PauseStep struct {
	Step string `json:"step"`
	// AtS is the first sample (fio: completion) showing the step; absent
	// when the record does not show it (Detail says why). AfterS is the
	// sample before it: the step happened in (AfterS, AtS].
	AtS    *float64 `json:"at_s,omitempty"`
	AfterS *float64 `json:"after_s,omitempty"`
	// SinceStartS is AtS minus the window's start (negative: before it).
	SinceStartS *float64 `json:"since_start_s,omitempty"`
	// InSampleHole is true when (AfterS, AtS] overlaps a hole in the
	// host's samples (SampleHole): the step's time is known only to the
	// hole's extent.
	InSampleHole bool   `json:"in_sample_hole,omitempty"`
	Detail       string `json:"detail"`
}

// Stall is one silent stall: host's controller (kernel name) of NQN was
// live with an optimized leg from StartS to EndS while nothing reached its
// target. Estimate marks a stall known only from the host's keep-alive
// timeout at EndS: it began between StartS (the earliest the kernel's
// detection window allows) and LatestStartS. Seconds since run start.
type Stall struct {
	Host         string   `json:"host"`
	Controller   string   `json:"controller"`
	NQN          string   `json:"nqn"`
	StartS       float64  `json:"start_s"`
	EndS         float64  `json:"end_s"`
	Estimate     bool     `json:"estimate,omitempty"`
	LatestStartS *float64 `json:"latest_start_s,omitempty"`
	// Address is the path's ip:port, Reason what silenced it (the stall
	// start line's reason; empty for an estimate). Added fields.
	Address string `json:"address,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Cause names the landed fault that silenced the path ("KIND on TARGET
	// from T s"), empty when no landed fault did. Added field.
	Cause string `json:"cause,omitempty"`
}

// HostWindow is a pause window on a host outside every migration.
type HostWindow struct {
	Host   string     `json:"host"`
	NQN    string     `json:"nqn"`
	Window [2]float64 `json:"window"`
	// Cause names the fault that explains the window (in FaultWindows):
	// "KIND on TARGET from T s". Added field.
	Cause string `json:"cause,omitempty"`
	// Stall is the silent stall of a landed fault that the window's start
	// lies in: the window is that fault's (Cause), not a migration's. Migration names the migration that cut over whose span
	// holds the window's start, if any. Added fields.
	Stall     *Stall `json:"stall,omitempty"`
	Migration string `json:"migration,omitempty"`
}

// Leak is one leaked controller after the settle period.
type Leak struct {
	Host       string `json:"host"`
	Controller string `json:"controller"`
	NQN        string `json:"nqn"`
	Address    string `json:"address"`
	State      string `json:"state"`
	// Kind is the nvmeof.Inspect defect kind (stale-endpoint,
	// controller-not-contributing, no-namespace) or "not-live".
	Kind string `json:"kind"`
}

// MissingEndpoint is a published endpoint with no controller on a consumer host.
type MissingEndpoint struct {
	Host     string `json:"host"`
	NQN      string `json:"nqn"`
	Endpoint string `json:"endpoint"` // ip:port
}

// Stats are distribution figures of the longest pause per migration and host.
type Stats struct {
	// PercentileMethod names how percentiles are computed.
	PercentileMethod string `json:"percentile_method"`
	Pauses           int    `json:"pauses"`
	// NoCutover counts the migrations left out because they never cut
	// over (MigrationSummary.NoCutover). Added field.
	NoCutover int `json:"no_cutover"`
	// Masked counts the (migration, host) pairs left out because the
	// host's cutover lies inside a fault window (HostPauses.MaskedBy):
	// its pause was not measured. Added field.
	Masked    int     `json:"masked,omitempty"`
	P50PauseS float64 `json:"p50_pause_s"`
	P95PauseS float64 `json:"p95_pause_s"`
	MaxPauseS float64 `json:"max_pause_s"`
}
