// Package backend defines the Cluster interface a scenario runs against:
// the world's clock, its hosts' sysfs trees, the control plane's published
// endpoints and migrations. backend/sim adapts the embedded simulator;
// backend/kube drives a real cluster with client-go and e2e-framework
// (backend/kube/agent is what runs inside the cluster; internal/standin
// plays simplyblock, kubelet and scheduler on a real API server in tests).
//
// backend and its sub-packages may import record, nvmeof, fio, sim and
// workload (backend/kube also client-go, apimachinery and e2e-framework).
package backend
