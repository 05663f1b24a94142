// Package suites holds fiomig's Ginkgo v2 suites: declared in containers,
// initialised in setup nodes, selected by labels ("sim", "kube" later),
// JUnit written by the suite itself (see framework.JUnitPath).
//
// Run them with `make test` (JUnit in out/junit/suites.xml) or
// `go test ./suites -ginkgo.label-filter=sim -ginkgo.v`.
//
// suites may import suites/framework, scenario, record and Ginkgo/Gomega.
package suites
