package suites_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/reporters"
	. "github.com/onsi/gomega"

	"github.com/fiomig/fiomig/suites/framework"
)

func TestSuites(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "fiomig suites")
}

var _ = ReportAfterSuite("JUnit report", func(r Report) {
	path := framework.JUnitPath("suites.xml")
	Expect(reporters.GenerateJUnitReport(r, path)).To(Succeed())
	GinkgoWriter.Printf("JUnit report: %s\n", path)
})
