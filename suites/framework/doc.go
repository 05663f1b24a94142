// Package framework is the glue between the Ginkgo suites and the harness:
// it runs scenarios on a backend with the main job's defaults and says
// where JUnit reports go. With suites/ it is the only non-test code that
// imports Ginkgo or Gomega.
//
// framework may import scenario, backend, record and Ginkgo/Gomega.
package framework
