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
	// StartTarget starts a stopped target again with what the storage system
	// re-creates (the simulator: sbcli's lvol subsystems and listeners; a
	// migration's target listeners only at its cutover).
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

// NodeCrasher crashes a storage node and boots it again.
type NodeCrasher interface {
	// CrashNode makes node stop answering anything, as a machine that lost
	// power: no TCP reset, so hosts notice only by keep-alive timeout and
	// their CONNECTs get no answer. Already crashed: no change, no error.
	// An unknown node is an error.
	CrashNode(node string) (evidence map[string]string, err error)
	// BootNode boots a crashed node (its target starts with its listeners).
	// Idempotent: a node not crashed, or vanished, returns no error.
	BootNode(node string) (evidence map[string]string, err error)
}

// Partitioner cuts the network between a consumer host and a storage node
// in both directions (kube: nftables drop rules on both, from a helper pod).
type Partitioner interface {
	// Partition drops every packet between host and node both ways.
	// Already partitioned: no change, no error. Unknown host or node: error.
	Partition(host, node string) (evidence map[string]string, err error)
	// Heal removes the partition. Idempotent.
	Heal(host, node string) (evidence map[string]string, err error)
}

// ConnectRejecter makes a target reject Fabrics CONNECTs with "does not
// allow host … to connect at this address" (kube: remove the host from the
// subsystem's allowed hosts, or its listener, through the storage API).
type ConnectRejecter interface {
	// RejectConnects starts rejecting CONNECTs to target (node or ip:port)
	// from host ("" = every host); existing connections are untouched. A
	// rule already in place is an error.
	RejectConnects(target, host string) (evidence map[string]string, err error)
	// StopRejectingConnects ends the rule and returns how many CONNECTs it
	// rejected. Idempotent: no such rule returns 0.
	StopRejectingConnects(target, host string) (rejected int64, err error)
	// RejectedConnects is how many CONNECTs the rule has rejected so far.
	RejectedConnects(target, host string) int64
}

// OperatorRestarter stops and starts the migration operator (the control
// plane's reconciler; kube: scale its Deployment to 0 and back, or delete
// its pod and hold the new one).
type OperatorRestarter interface {
	// StopOperator stops the operator; reconciles wait until it is back.
	// Already stopped: no change, no error.
	StopOperator() (evidence map[string]string, err error)
	// StartOperator starts it again. Idempotent.
	StartOperator() (evidence map[string]string, err error)
	// DeferredReconciles counts the reconciles that had to wait since the
	// last StopOperator.
	DeferredReconciles() int64
}

// ControllerResetter resets a host's NVMe controllers, as
// `echo 1 > /sys/class/nvme/nvmeN/reset_controller` (nvme reset) does.
type ControllerResetter interface {
	// ResetControllers resets every live controller of host, or only those
	// at node's address when node is not "". The evidence names them.
	ResetControllers(host, node string) (evidence map[string]string, err error)
}

// ANAFlapper makes a storage node's listeners report ANA inaccessible for a
// while (kube: the storage API's ANA state of the node's listeners).
type ANAFlapper interface {
	// ForceANAInaccessible makes every listener of node report
	// inaccessible. Already forced: no change, no error.
	ForceANAInaccessible(node string) (evidence map[string]string, err error)
	// RestoreANA lets the listeners report their own state again. Idempotent.
	RestoreANA(node string) (evidence map[string]string, err error)
}

// StageReporter tells which stage of record.Stages a migration is in, so
// that a fault can fire at the cutover window (in-freeze) or after it.
type StageReporter interface {
	// MigrationStage is one of record.Stages, or "" when migration id is in
	// none (pending, over, or unknown).
	MigrationStage(id string) string
}
