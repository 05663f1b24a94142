package faults

// The knobs a backend offers to faults. A backend.Cluster implements the
// ones it supports; injecting a fault whose knob the cluster lacks is an
// error (recorded as an injection without evidence). Evidence maps are
// what the backend observed changing, keyed by short snake_case names; the
// values are strings as in the timeline.

// TargetRestarter stops and starts the NVMe-oF target of a storage node.
type TargetRestarter interface {
	// StopTarget stops the target of the storage node named node: every port
	// of the node stops listening (TCP connects are refused) and every host
	// controller connected to it loses its connection. It returns what
	// changed (e.g. ports stopped, listeners vanished, controllers
	// disconnected); an already stopped target changes nothing and returns
	// an empty map. An unknown node is an error.
	StopTarget(node string) (evidence map[string]string, err error)
	// StartTarget starts a stopped target again with every listener it had.
	// Idempotent: a running target, or a node that no longer exists (a
	// vanished target counts as recovered), returns an empty map and no
	// error.
	StartTarget(node string) (evidence map[string]string, err error)
}

// ConnectDropper drops the Fabrics CONNECTs arriving at a node.
type ConnectDropper interface {
	// DropConnects starts dropping every CONNECT (first connects and
	// reconnect attempts) to target — a storage node's name, or an
	// "ip:port" endpoint: each gets no answer. Existing connections are
	// untouched. An unknown target, or one already being dropped, is an
	// error.
	DropConnects(target string) (evidence map[string]string, err error)
	// StopDroppingConnects stops dropping CONNECTs to target and returns how
	// many were dropped since DropConnects. Idempotent: a target not being
	// dropped returns 0 and no error.
	StopDroppingConnects(target string) (dropped int64, err error)
}

// ConnectDropCounter is a ConnectDropper that can read the count of a
// window without stopping it (kube: the nftables rule's counter, read
// through its helper pod). DroppedConnects.Landed then reads it instead of
// stopping and restarting the drop.
type ConnectDropCounter interface {
	// DroppedConnects returns how many CONNECTs to target were dropped
	// since DropConnects; a target not being dropped returns 0.
	DroppedConnects(target string) (int64, error)
}

// MigrationAborter aborts migrations and kills their validation Jobs, going
// through the operator's own paths.
type MigrationAborter interface {
	// AbortMigration aborts migration id from whatever non-terminal phase it
	// is in (the operator cancels at the control plane and marks it
	// Aborted) and returns the phase it was in. Aborting a terminal
	// migration is an error.
	AbortMigration(id, reason string) (from string, err error)
	// KillValidationJob kills the validation Job of migration id on the
	// consumer host named host while the migration is Validating (a pod
	// killed mid-round), and returns what it observed (e.g. the round the
	// Job was in, the host's target-path controllers then).
	KillValidationJob(id, host string) (evidence map[string]string, err error)
}

// EventStepper lets the injector advance a discrete-event cluster one event
// time at a time while a phase trigger is armed, so that a fault fires at
// the exact instant a migration enters its phase. Clusters driven by wall
// time (kube) do not implement it: a phase trigger then fires at the end
// of the AdvanceTo that reported the phase line.
type EventStepper interface {
	// NextEventTime is the cluster time of the next scheduled event, and
	// whether there is one.
	NextEventTime() (float64, bool)
}
