package record

// Timeline line kinds. They are a contract (docs/run-record.md):
// fields may be added, never renamed.
const (
	KindSample    = "sample"    // one line per host per sample
	KindPhase     = "phase"     // a migration entering a phase
	KindFault     = "fault"     // a fault injected or recovered, with evidence
	KindIO        = "io"        // per workload interval: completions and errors
	KindKernel    = "kernel"    // kernel-log-like events of a host's NVMe initiator
	KindTarget    = "target"    // target-side counters, cumulative
	KindEndpoints = "endpoints" // the endpoints the control plane publishes for a subsystem
	// KindHeartbeat: the host was sampled and had not changed since its
	// last sample line (a later format version writes samples only on
	// change); the checks count it as an observation of the host.
	KindHeartbeat = "heartbeat"
	// KindFormat: the first line of a format-version-2 timeline, naming
	// its version (FORMAT.md); a timeline without it is version 1.
	KindFormat = "format"
	// KindStall: a silent stall of one host's path — its controller was
	// live and showed an optimized leg while nothing reached its target
	// (docs/host-model.md "Silent stalls"); action "start" when it began,
	// "end" (with start_s) when it ended.
	KindStall = "stall"
)

// Stall actions (Line.Action of a stall line).
const (
	StallStart = "start"
	StallEnd   = "end"
)

// Timeline format versions (record/FORMAT.md). Version 1 writes every
// host's whole state at every sampling tick; version 2 writes a host's
// state only when it changed, and one heartbeat line per tick naming the
// hosts sampled unchanged.
const (
	FormatFull       = 1
	FormatChangeOnly = 2
)

// Kinds are every line kind a timeline may hold, in the order above.
var Kinds = []string{KindSample, KindPhase, KindFault, KindIO, KindKernel, KindTarget, KindEndpoints, KindHeartbeat, KindFormat, KindStall}

// requiredFields are, per kind, the JSON fields that identify what a line
// is about; a line without one cannot be judged (ScanTimeline rejects it).
func requiredFields(l Line) []string {
	var missing []string
	need := func(field, v string) {
		if v == "" {
			missing = append(missing, field)
		}
	}
	switch l.Kind {
	case KindSample:
		need("host", l.Host)
	case KindHeartbeat:
		if len(l.Hosts) == 0 {
			need("host", l.Host)
		}
	case KindFormat:
		if l.Version == 0 {
			missing = append(missing, "version")
		}
	case KindPhase:
		need("migration", l.Migration)
		need("nqn", l.NQN)
		need("phase", l.Phase)
	case KindFault:
		need("fault", l.Fault)
		need("action", l.Action)
	case KindIO:
		need("volume", l.Volume)
	case KindKernel:
		need("host", l.Host)
		need("message", l.Message)
	case KindTarget:
		need("node", l.Node)
	case KindEndpoints:
		need("nqn", l.NQN)
	case KindStall:
		need("host", l.Host)
		need("controller", l.Controller)
		need("nqn", l.NQN)
		need("action", l.Action)
		if l.Action == StallEnd && l.StartS == nil {
			missing = append(missing, "start_s")
		}
	}
	return missing
}

// Migration phases (simplyblock VolumeMigration). Completed, Failed and
// Aborted are terminal.
const (
	PhasePending    = "Pending"
	PhaseValidating = "Validating"
	PhaseRunning    = "Running"
	PhaseCompleted  = "Completed"
	PhaseFailed     = "Failed"
	PhaseAborted    = "Aborted"
)

// IsTerminal reports whether phase ends a migration.
func IsTerminal(phase string) bool {
	return phase == PhaseCompleted || phase == PhaseFailed || phase == PhaseAborted
}

// Line is one line of timeline.jsonl. Every line has T (seconds since run
// start, float64; virtual in sim, monotonic wall time in kube) and Kind; the
// other fields are set according to Kind and omitted otherwise. Field order
// is fixed by this struct, so equal lines encode to equal bytes.
type Line struct {
	T    float64 `json:"t"`
	Kind string  `json:"kind"`

	// sample, io, kernel; heartbeat (format version 1: one host a line)
	Host string `json:"host,omitempty"`
	// heartbeat (format version 2): the hosts sampled at T whose state had
	// not changed since their last sample line, in host order.
	Hosts []string `json:"hosts,omitempty"`
	// format: the timeline format version (FormatFull, FormatChangeOnly)
	// and, for version 2, the heartbeat interval in seconds (every sampling
	// tick: the sample interval in force).
	Version            int     `json:"version,omitempty"`
	HeartbeatIntervalS float64 `json:"heartbeat_interval_s,omitempty"`
	// sample: every controller of the host (kernel class/nvme), sorted by name.
	Controllers []Controller `json:"controllers,omitempty"`
	// sample: every subsystem the host has attached, with its namespaces
	// (multipath heads) — needed to tell "no namespace" from "no leg".
	Subsystems []Subsystem `json:"subsystems,omitempty"`

	// phase; fault (inject lines): the migration in progress at injection
	Migration string `json:"migration,omitempty"`
	// phase, io, endpoints
	NQN string `json:"nqn,omitempty"`
	// phase: one of the Phase* constants. fault (inject lines): the stage
	// that migration was in at injection (Stages, or StageIdle).
	Phase string `json:"phase,omitempty"`
	// phase: why a migration failed or was aborted (operator's message).
	// fault: why an injection or recovery failed or left no evidence.
	Reason string `json:"reason,omitempty"`
	// phase (on the migration's first line, Pending): the canonical ip:port
	// endpoints of the subsystem's source listeners and of the target
	// listeners the migration adds; they tell source legs from target legs.
	// TargetEndpoints on a later line replace the first's (on kube the
	// operator's status.connections, written at Validating).
	SourceEndpoints []string `json:"source_endpoints,omitempty"`
	TargetEndpoints []string `json:"target_endpoints,omitempty"`

	// fault; stall
	Fault    string            `json:"fault,omitempty"`
	Action   string            `json:"action,omitempty"` // fault: "inject", "landed" or "recover"; stall: StallStart or StallEnd
	Target   string            `json:"target,omitempty"`
	Evidence map[string]string `json:"evidence,omitempty"`

	// io
	Volume    string `json:"volume,omitempty"`
	Completed *int64 `json:"completed,omitempty"`
	Errors    *int64 `json:"errors,omitempty"`
	Queued    *int64 `json:"queued,omitempty"`
	// io: the fio errno of the interval's first error (84 EILSEQ = a
	// verify/checksum failure, 5 EIO, 28 ENOSPC, 30 EROFS, ...) and the
	// blocks whose verify failed in the interval. Added fields.
	Errno        int    `json:"errno,omitempty"`
	VerifyErrors *int64 `json:"verify_errors,omitempty"`

	// kernel, stall
	Controller string `json:"controller,omitempty"`
	Message    string `json:"message,omitempty"`

	// target
	Node             string `json:"node,omitempty"`
	RejectedConnects *int64 `json:"rejected_connects,omitempty"`
	// target: cumulative count of the rejections the target logs as
	// "Subsystem … does not allow host … to connect" (SPDK lib/nvmf/ctrlr.c;
	// "Could not find subsystem" is not among them). Added field.
	NotAllowedConnects *int64 `json:"not_allowed_connects,omitempty"`

	// endpoints: the canonical ip:port endpoints (IPv6 bracketed) published
	// for NQN, sorted; replaces any earlier endpoints line for that NQN.
	Endpoints []string `json:"endpoints,omitempty"`

	// phase (Failed): what failed the migration's path validation — keys
	// host, controller, endpoint, state, origin (the migration whose
	// validation created that controller, "csi" or "leftover") and detail.
	// Added field (backend/sim).
	Details map[string]string `json:"details,omitempty"`
	// io: the modelled fio pod and its state, "running" or "killed" (then
	// Reason says why). Added fields (backend/sim).
	Pod      string `json:"pod,omitempty"`
	PodState string `json:"pod_state,omitempty"`

	// stall (with host, controller, nqn, action; reason: what silenced the
	// path on a start line, what ended the stall on an end line). Address
	// is the path's canonical ip:port; NSIDs (start) the namespaces whose
	// leg on the path was optimized; StartS (end) when the stall began,
	// seconds since run start. Added fields (issue 28).
	Address string   `json:"address,omitempty"`
	NSIDs   []int    `json:"nsids,omitempty"`
	StartS  *float64 `json:"start_s,omitempty"`

	// Repeat is set (never written) on a sample line that Expander made
	// from a version-2 heartbeat: the host's state repeated from its last
	// sample line, sharing that line's Controllers and Subsystems slices
	// (read them, never modify them).
	Repeat bool `json:"-"`
}

// Controller is one NVMe controller as a host's kernel showed it in a sample
// (kernel /sys/class/nvme/nvmeN).
type Controller struct {
	Name    string `json:"name"`    // kernel name, "nvme3"
	NQN     string `json:"nqn"`     // subsysnqn
	Address string `json:"address"` // canonical ip:port of traddr/trsvcid, IPv6 bracketed
	State   string `json:"state"`   // kernel state string: live, connecting, ...
	// Transport is the transport file (tcp, rdma, ...); added field.
	Transport string `json:"transport,omitempty"`
	// CtrlLossTmo is the ctrl_loss_tmo file in seconds (-1 = off, retry
	// forever); absent when the file was not read. Added field.
	CtrlLossTmo *int  `json:"ctrl_loss_tmo,omitempty"`
	Legs        []Leg `json:"legs"` // path legs nvmeScCnH under the controller, sorted by NSID
}

// Leg is one path leg of a controller to a namespace.
type Leg struct {
	NSID int    `json:"nsid"` // from the leg's nsid file
	ANA  string `json:"ana"`  // ana_state: optimized, non-optimized, inaccessible, ...
}

// Subsystem is one kernel subsystem instance a host has attached.
type Subsystem struct {
	NQN   string `json:"nqn"`
	NSIDs []int  `json:"nsids"` // namespaces (multipath heads), sorted
}

// Int64 returns a pointer to v, for the optional counters of Line.
func Int64(v int64) *int64 { return &v }
