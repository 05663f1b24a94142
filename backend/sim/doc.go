// Package sim adapts the deterministic simulator (package sim) to the
// backend.Cluster interface: the world's events become run-record timeline
// lines, its hosts become backend.Host values whose Sysfs is the rendered
// kernel tree.
//
// FioCluster (workload.go) runs the same world on the wall clock with one
// real fio process per volume on a FUSE file whose I/O follows the
// simulated host's multipath head (fiomig run --workload=fio).
//
// Imports: backend, record, nvmeof, sim, workload and the standard library
// (docs/architecture.md: backend <- leaves, sim, workload). It prints
// nothing; the CLI prints.
package sim
