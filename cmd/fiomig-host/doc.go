// Command fiomig-host is fiomig's host tools as a lean binary: hosts,
// inspect, release and reap (package nvmeof/hostcmd), without the
// harness's simulator, Kubernetes client or report renderers, so that it
// starts as fast as nvme-cli when scripts run it per host and per sample.
// "fiomig inspect" and "fiomig-host inspect" run the same code and print
// the same output (with their own program name).
//
// Imports: the standard library and nvmeof/hostcmd only
// (architecture_test.go).
package main
