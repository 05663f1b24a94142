// Package suites holds fiomig's Ginkgo v2 suites: declared in containers,
// initialised in setup nodes, selected by labels ("sim", "kube",
// "fault:<kind>", "janitor", "interrupt"), JUnit written by the suite itself
// (see framework.JUnitPath). The same fault specs run on both backends
// (faults_test.go): the embedded simulator, and a real kube-apiserver with
// RBAC where internal/standin plays simplyblock, kubelet, scheduler and
// provisioner, set up by the e2e-framework env funcs framework.StartKube and
// StopKube from Ginkgo setup nodes.
//
// Run them with `make test` (JUnit in out/junit/suites.xml) or
// `go test ./suites -ginkgo.label-filter=sim -ginkgo.v` (or =kube, or
// 'fault:dropped-connects'). Kube specs skip (with the reason) without the
// cached binaries of `make kube-bins` or root, and fail then when
// FIOMIG_REQUIRE_TOOLS=1.
//
// suites may import suites/framework, scenario, record and Ginkgo/Gomega.
package suites
