package backend

import (
	"io/fs"

	"github.com/fiomig/fiomig/record"
)

// Cluster is one world a scenario runs in: the embedded simulator
// (backend/sim) or a real Kubernetes cluster (backend/kube).
//
// Time is seconds since run start as float64 (virtual in sim, monotonic wall
// time in kube). A Cluster is driven by one goroutine.
type Cluster interface {
	// Name is "sim" or "kube".
	Name() string
	// Now is the cluster clock, seconds since run start.
	Now() float64
	// AdvanceTo runs the world until time t (>= Now) and returns the
	// timeline lines (phase, kernel, io, target, endpoints, fault — never
	// sample) of what happened on the way, in time order, in a slice the
	// caller owns (faults.Injector appends to it).
	AdvanceTo(t float64) ([]record.Line, error)
	// Topology is the world's nodes, hosts and volumes.
	Topology() record.Topology
	// Hosts are the hosts to sample.
	Hosts() []Host
	// Endpoints returns the canonical ip:port endpoints the control plane
	// currently publishes for the subsystem nqn, sorted.
	Endpoints(nqn string) []string
	// StartMigration asks the control plane to migrate the volume with
	// subsystem nqn to another node and returns the migration's id; its
	// progress appears as phase lines from AdvanceTo.
	StartMigration(nqn string) (string, error)
	// MigrationPhase is the migration's current phase and whether it is terminal.
	MigrationPhase(id string) (phase string, terminal bool)
	// Close releases what the cluster holds (mounts, processes, pods).
	Close() error
}

// Host is one consumer host as a collector sees it.
type Host interface {
	// Name is the host's name (Kubernetes node name).
	Name() string
	// HostNQN identifies the host: only controllers whose hostnqn equals it
	// are this host's.
	HostNQN() string
	// Sysfs is the host's sysfs tree (root = the "sys" directory) at Now.
	Sysfs() fs.FS
}

// Versioned is a Host that can tell when its sysfs tree is unchanged: equal
// Version values mean an identical tree (the simulator's hosts do this).
type Versioned interface {
	Version() uint64
}
