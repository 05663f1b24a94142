// Package collectors samples hosts on the backend's clock and turns what
// their kernels show into timeline lines (DESIGN.md "The run record").
//
// One collector per file, each behind the tiny Collector interface, in the
// style of node_exporter. The NVMe collector reads a host's sysfs tree
// through nvmeof.ReadHost — the same parser that reads a real /sys — so the
// simulator is observed exactly as a real host would be.
//
// collectors may import backend, record, nvmeof, fio and the standard library
// (DESIGN.md "Packages", kept by architecture_test.go).
package collectors
