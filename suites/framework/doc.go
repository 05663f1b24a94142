// Package framework is the glue between the Ginkgo suites and the harness:
// it runs scenarios on a backend (Backend: Sim, or KubeEnv.KubeBackend)
// with a fault schedule, says where JUnit reports go, and sets up the kube
// suites' world with e2e-framework env funcs (StartKube, StopKube: a real
// etcd + kube-apiserver from internal/kubetest, deploy/rbac and
// deploy/agent applied, internal/standin running) and lists what the
// API server still holds of a run (KubeEnv.Labelled). With suites/ it is
// the only non-test code that imports Ginkgo or Gomega.
//
// framework may import anything (architecture_test.go: suites -> *).
package framework
