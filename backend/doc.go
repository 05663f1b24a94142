// Package backend defines the Cluster interface a scenario runs against:
// the world's clock, its hosts' sysfs trees, the control plane's published
// endpoints and migrations. backend/sim adapts the embedded simulator;
// backend/kube (later) drives a real cluster with client-go.
//
// backend and its sub-packages may import record, nvmeof, fio, sim and
// workload.
package backend
