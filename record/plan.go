package record

// Plan is plan.json: everything needed to replay a run exactly.
type Plan struct {
	Tool     string   `json:"tool"`     // "fiomig"
	Scenario string   `json:"scenario"` // scenario name, e.g. "migrations"
	Backend  string   `json:"backend"`  // "sim" or "kube"
	Seed     int64    `json:"seed"`
	Command  string   `json:"command"` // the one command line that reproduces this run
	Params   Params   `json:"params"`
	Topology Topology `json:"topology"`
	// Faults is the fault schedule as executed.
	Faults []FaultSpec `json:"faults"`
}

// Params are the run's parameters, thresholds included: with the seed and
// the fault schedule, the typed spec a rerun starts from (nothing of it is
// parsed back from the command line). Seconds are float64.
type Params struct {
	Migrations      int     `json:"migrations"`
	SampleIntervalS float64 `json:"sample_interval_s"`
	// SettleSampleIntervalS is the sampling interval during the settle period.
	SettleSampleIntervalS float64 `json:"settle_sample_interval_s"`
	// PauseCritS is CUTOVER_PAUSE_CRIT_S: the bound on the longest pause window.
	PauseCritS float64 `json:"pause_crit_s"`
	// FreezesAllowed is CUTOVER_FREEZES_ALLOWED: pause windows allowed per migration.
	FreezesAllowed int `json:"freezes_allowed"`
	// SettleS is how long the run settles after the last migration before the
	// leak and completeness checks look at the hosts.
	SettleS float64 `json:"settle_s"`
	// AttributionMarginS extends a migration's span after its terminal phase
	// for attributing pause windows; served-after-cutover is judged at its end.
	AttributionMarginS float64 `json:"attribution_margin_s"`
	// TimelineFormat is timeline.jsonl's format version (FormatFull or
	// FormatChangeOnly; absent = FormatFull), as its first line states
	// for version 2 (record/FORMAT.md).
	TimelineFormat int `json:"timeline_format,omitempty"`
	// HeartbeatIntervalS is, for format version 2, the seconds between a
	// host's heartbeats while it is unchanged: every sampling tick, so
	// sample_interval_s (settle_sample_interval_s in the settle period).
	HeartbeatIntervalS float64 `json:"heartbeat_interval_s,omitempty"`
	// Thresholds of the seed harness's checks (docs/sources.md), each as
	// given, 0 included; absent from plan.json = the default
	// (SeedThresholds).
	Seed SeedThresholds `json:"seed_checks"`
	// GapS is the wait between one migration's terminal phase and the
	// next one's start, seconds. MigrationWaitS bounds the wait for one
	// migration: past it the run moves on and the migration keeps its last
	// phase as outcome (0 = 3600 s; an incident's pacing sets the seed
	// harness's 420 s).
	GapS           float64 `json:"gap_s"`
	MigrationWaitS float64 `json:"migration_wait_s,omitempty"`
	// Faults is the fault selection the schedule was drawn from:
	// FaultsDefault, FaultsNone, a comma-separated list of fault kinds, or
	// FaultsFilePrefix + the fault file's path ("" = default).
	Faults string `json:"faults,omitempty"`
	// Workload is WorkloadSim (the simulator's modelled I/O; "" too) or
	// WorkloadFio (real fio through FUSE on the wall clock, or fio pods on
	// the kube backend); FioRateIOPS caps each volume's fio job and
	// FioCorruptWrite (test only) corrupts that write of the first volume.
	Workload        string `json:"workload,omitempty"`
	FioRateIOPS     int    `json:"fio_rate_iops,omitempty"`
	FioCorruptWrite int64  `json:"fio_corrupt_write,omitempty"`
	// Incident is the catalogued incident a fiomig reproduce run replays,
	// and FaultSchedule where its faults came from ("incident", or "none
	// (...)" when they were dropped).
	Incident      string `json:"incident,omitempty"`
	FaultSchedule string `json:"fault_schedule,omitempty"`
	// Kube is where a --backend kube run ran.
	Kube *KubeParams `json:"kube,omitempty"`
	// Model is the simulated world: its shape and every switch (Model).
	Model Model `json:"model"`
}

// Fault selections (Params.Faults).
const (
	FaultsDefault    = "default"
	FaultsNone       = "none"
	FaultsFilePrefix = "file:"
)

// Workloads (Params.Workload).
const (
	WorkloadSim = "sim"
	WorkloadFio = "fio"
)

// IsFio reports whether p is a real-fio run (its report carries the fio
// checks, whatever is left of its fio/ directory).
func (p Params) IsFio() bool { return p.Workload == WorkloadFio }

// KubeParams are a --backend kube run's settings (fiomig run's kube flags
// but the kubeconfig, a path of the machine that ran it) and the run id
// its objects were labelled with.
type KubeParams struct {
	Namespace        string `json:"namespace"`
	StorageNamespace string `json:"storage_namespace"`
	// ControlPlaneNamespace and SPDKNamespace: "" = StorageNamespace.
	ControlPlaneNamespace string  `json:"control_plane_namespace,omitempty"`
	SPDKNamespace         string  `json:"spdk_namespace,omitempty"`
	StorageClass          string  `json:"storage_class"`
	VolumeSize            string  `json:"volume_size"`
	FioImage              string  `json:"fio_image"`
	HelperImage           string  `json:"helper_image"`
	SetupTimeoutS         float64 `json:"setup_timeout_s"`
	FioResults            bool    `json:"fio_results"`
	RunID                 string  `json:"run_id,omitempty"`
}

// Topology is the world the run used.
type Topology struct {
	Nodes   []Node       `json:"nodes"`
	Hosts   []HostInfo   `json:"hosts"`
	Volumes []VolumeInfo `json:"volumes"`
}

// Node is a storage node.
type Node struct {
	Name string `json:"name"`
	IP   string `json:"ip"`
}

// HostInfo is a consumer host, identified by its host NQN.
type HostInfo struct {
	Name    string `json:"name"`
	HostNQN string `json:"hostnqn"`
}

// VolumeInfo is one volume: one subsystem, consumed by Consumers (host names).
type VolumeInfo struct {
	Name      string   `json:"name"`
	NQN       string   `json:"nqn"`
	NSIDs     []int    `json:"nsids"`
	Consumers []string `json:"consumers"`
}

// FaultSpec is one scheduled fault.
type FaultSpec struct {
	Fault     string            `json:"fault"`
	Target    string            `json:"target"`
	AtS       float64           `json:"at_s,omitempty"`  // virtual time, when scheduled by time
	Phase     string            `json:"phase,omitempty"` // migration phase that triggers it
	Migration string            `json:"migration,omitempty"`
	ForS      float64           `json:"for_s,omitempty"` // duration before recovery
	Params    map[string]string `json:"params,omitempty"`
}

// Migration stages a fault can be injected at (FaultSpec.Phase, the
// "phase" of a fault's inject line). They refine the VolumeMigration
// phases by what the data path is doing:
//
//   - in-validation: Validating — the validation Jobs connect and verify
//     the target paths;
//   - before-cutover: Running before the cutover — the data sync, every
//     source path still accessible;
//   - in-freeze: the cutover window, every path of the subsystem
//     inaccessible (about Params.Model.CutoverPauseS);
//   - after-cutover: the target serves, until the migration ends (the
//     source paths are released and removed then).
//
// StageIdle is recorded for an injection while no migration is in progress.
const (
	StageInValidation  = "in-validation"
	StageBeforeCutover = "before-cutover"
	StageInFreeze      = "in-freeze"
	StageAfterCutover  = "after-cutover"
	StageIdle          = "idle"
)

// Stages are the migration stages in the order a migration goes through them.
var Stages = []string{StageInValidation, StageBeforeCutover, StageInFreeze, StageAfterCutover}

// SeedThresholds are the thresholds of the checks fiomig took from the
// operator's seed harness and its successor sbtest (docs/sources.md §8).
// Every field is the bound as given, 0 included (--max-timed-out 0 allows
// no timeout); DefaultSeedThresholds are the defaults in the comments.
// plan.json writes every field; one it lacks (plan.json of older runs,
// which left out zeros and, older still, the whole section) reads as its
// default (Params.UnmarshalJSON), which is what that run was judged with.
type SeedThresholds struct {
	// MinCompleted is the least fraction of migrations that must complete
	// within MigrationTimeoutS (0.8); MaxTimedOut the most that may time
	// out (0.1); MigrationTimeoutS the harness's wait (420 s).
	MinCompleted      float64 `json:"min_completed"`
	MaxTimedOut       float64 `json:"max_timed_out"`
	MigrationTimeoutS float64 `json:"migration_timeout_s"`
	// OutageS: no I/O completed on a volume for this long fails (30 s).
	OutageS float64 `json:"outage_s"`
	// VerifyLagS: a verify failure up to this long after a migration ends
	// is that migration's (45 s; fio detects lost writes 3–34 s later).
	VerifyLagS float64 `json:"verify_lag_s"`
	// MaxNetControllers: more controllers created than removed per
	// subsystem and host fails (4); MaxReconnects: more reconnect attempts
	// of one controller fails (100).
	MaxNetControllers int `json:"max_net_controllers"`
	MaxReconnects     int `json:"max_reconnects"`
	// MaxCtrlLossTmoS: a controller with ctrl_loss_tmo above this (or off)
	// warns (60 s); MaxPaths: more controllers per subsystem on a host at
	// the end warns (3).
	MaxCtrlLossTmoS int `json:"max_ctrl_loss_tmo_s"`
	MaxPaths        int `json:"max_paths"`
	// MaxNotAllowed: this many target rejections logged as "does not allow
	// host" or more fails (50; at least 1, which allows none).
	MaxNotAllowed int `json:"max_not_allowed"`
}

// DefaultSeedThresholds are the seed harness's thresholds (docs/sources.md
// §8), each named in its field's comment.
func DefaultSeedThresholds() SeedThresholds {
	return SeedThresholds{MinCompleted: 0.8, MaxTimedOut: 0.1, MigrationTimeoutS: 420, OutageS: 30, VerifyLagS: 45,
		MaxNetControllers: 4, MaxReconnects: 100, MaxCtrlLossTmoS: 60, MaxPaths: 3, MaxNotAllowed: 50}
}
