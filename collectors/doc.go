// Package collectors samples hosts on the backend's clock and turns what
// their kernels show into timeline lines (docs/run-record.md).
//
// One collector per file, each behind the tiny Collector interface, in the
// style of node_exporter. The NVMe collector reads a host's sysfs tree
// through nvmeof.ReadHost — the same parser that reads a real /sys — so the
// simulator is observed exactly as a real host would be. A tree whose
// backend.Versioned version did not change is not parsed again
// (backend.HostReader); a real-host backend gets the same by implementing
// Versioned cheaply (a hash of the capture an agent sent, say).
//
// Sampler.ChangeOnly (timeline format version 2, record/FORMAT.md) appends
// a host's sample line only when its state changed and names the hosts
// sampled unchanged in one heartbeat line per tick — backend-neutral, for
// any Collector over any backend.Host.
//
// collectors may import backend, record, nvmeof, fio and the standard library
// (docs/architecture.md "Import direction", kept by architecture_test.go).
package collectors
