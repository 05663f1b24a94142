// Package hostcmd is the host tools' command line: hosts, inspect, release
// and reap judge or repair one host's kernel NVMe-oF state (a live sysfs
// tree or a capture) with the nvmeof code the harness judges runs with.
// Run dispatches one tool by name and Main is a whole binary's entry
// point; the lean binary cmd/fiomig-host is Main, and cmd/fiomig
// delegates the same four commands to Run, so both print and decide alike.
//
// It is the library half of a kubectl-style cmd -> library split, kept
// small on purpose: a host tool is run per host and per sample by scripts,
// so its process must start as fast as nvme-cli's (no Kubernetes client,
// plotting or simulator packages linked in).
//
// Imports: the standard library and nvmeof only (architecture_test.go
// keeps it so, and keeps cmd/fiomig-host to this package). It never reads
// the wall clock or global randomness.
package hostcmd
