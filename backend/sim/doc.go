// Package sim adapts the deterministic simulator (package sim) to the
// backend.Cluster interface: the world's events become run-record timeline
// lines, its hosts become backend.Host values whose Sysfs is the rendered
// kernel tree.
//
// Imports: backend, record, nvmeof, sim and the standard library
// (DESIGN.md "Packages": backend <- leaves, sim). It prints nothing; the CLI
// prints.
package sim
