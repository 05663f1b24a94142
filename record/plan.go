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

// Params are the run's parameters, thresholds included. Seconds are float64.
type Params struct {
	Migrations         int     `json:"migrations"`
	Volumes            int     `json:"volumes"`
	Hosts              int     `json:"hosts"`
	ConsumersPerVolume int     `json:"consumers_per_volume"`
	SampleIntervalS    float64 `json:"sample_interval_s"`
	// SettleSampleIntervalS is the sampling interval during the settle period.
	SettleSampleIntervalS float64 `json:"settle_sample_interval_s"`
	// CutoverPauseS is the simulated all-inaccessible window of a cutover.
	CutoverPauseS float64 `json:"cutover_pause_s"`
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
	// Extra holds backend- or scenario-specific parameters (operator variant,
	// kernel switches, pod tolerance, ...), keyed by flag name.
	Extra map[string]string `json:"extra,omitempty"`
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
//     inaccessible (about Params.CutoverPauseS);
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
