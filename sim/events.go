package sim

// Event kinds: what the world reports from AdvanceTo. They mirror the run
// record's timeline kinds (docs/run-record.md); backend/sim turns
// each Event into one record.Line.
const (
	EventPhase     = "phase"     // a migration entered a phase
	EventEndpoints = "endpoints" // the control plane's published endpoints of a subsystem changed
	EventKernel    = "kernel"    // a kernel-log line of a host's NVMe initiator
	EventTarget    = "target"    // a storage node's cumulative target counters
	EventIO        = "io"        // a modelled fio pod's interval counters
	EventFault     = "fault"     // a fault injected or recovered, with evidence
	EventStall     = "stall"     // a silent stall of a host's path began or ended (hostnet.go)
)

// Stall actions (Event.Action of EventStall).
const (
	StallStart = "start"
	StallEnd   = "end"
)

// Migration phases (simplyblock VolumeMigration); Completed, Failed and
// Aborted are terminal.
const (
	PhasePending    = "Pending"
	PhaseValidating = "Validating"
	PhaseRunning    = "Running"
	PhaseCompleted  = "Completed"
	PhaseFailed     = "Failed"
	PhaseAborted    = "Aborted"
)

func isTerminal(phase string) bool {
	return phase == PhaseCompleted || phase == PhaseFailed || phase == PhaseAborted
}

// Event is one thing that happened in the world at virtual time T (seconds
// since run start). Only the fields of its Kind are set.
type Event struct {
	T    float64
	Kind string

	// phase
	Migration string
	NQN       string // phase, endpoints, io
	Phase     string
	Reason    string // phase Failed/Aborted: the operator's message; io (pod killed): why
	// phase Pending: the canonical ip:port endpoints of the source listeners
	// and of the target listeners the migration adds.
	SourceEndpoints []string
	TargetEndpoints []string

	// phase Failed: what failed validation (host, controller, endpoint,
	// state, origin — the migration that created that controller — and
	// detail).
	Details map[string]string

	// endpoints: what the control plane now publishes for NQN, sorted.
	Endpoints []string

	// kernel, io
	Host string
	// kernel
	Controller string // "nvme3"
	Message    string // kernel log text without the "nvme nvmeN: " prefix

	// target
	Node             string
	RejectedConnects int64
	// Errno and VerifyErrors (io): the interval's fio errno and blocks
	// whose verify failed (lost writes).
	Errno        int
	VerifyErrors int64
	// NotAllowedConnects (target): the rejections logged as "does not
	// allow host" (cumulative).
	NotAllowedConnects int64

	// io
	Volume    string
	Completed int64
	Errors    int64
	Queued    int64
	Pod       string // the modelled fio pod
	PodState  string // "running" or "killed" (Reason says why)

	// fault
	Fault    string
	Action   string // fault: "inject" or "recover"; stall: StallStart or StallEnd
	Target   string
	Evidence map[string]string

	// stall (also Host, Controller, NQN; Reason: what silenced the path on
	// start, what ended the stall on end)
	Address string   // the path's canonical ip:port
	NSIDs   []int    // start: the namespaces whose leg on the path was optimized
	StartS  *float64 // end: when the stall began, seconds since run start
}
