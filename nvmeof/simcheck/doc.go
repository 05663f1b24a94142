// Package simcheck holds no code: its test cross-checks sysfs trees rendered
// by the simulator (sim.Host.Sysfs) against an independent parser,
// github.com/prometheus/procfs v0.23.0's sysfs package, through nvmeof's
// reader. It lives apart from nvmeof so that nvmeof's own tests never depend
// on the simulator building (sim imports nvmeof).
//
// Imports: nothing (the test imports nvmeof, sim, procfs and go-cmp).
package simcheck
