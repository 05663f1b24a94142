package suites_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/scenario"
	"github.com/fiomig/fiomig/suites/framework"
)

// haveCheck matches a summary holding the named check with the verdict.
func haveCheck(name, verdict string) types.GomegaMatcher {
	return WithTransform(func(s record.Summary) []record.CheckResult { return s.Checks },
		ContainElement(And(HaveField("Name", name), HaveField("Verdict", verdict))))
}

var _ = Describe("Migrations on the embedded simulator", Label("sim"), func() {
	var res scenario.Result

	When("the main job runs with its defaults", func() {
		BeforeEach(func() {
			var err error
			res, err = framework.SimRun(GinkgoT().TempDir(), 1, scenario.DefaultParams())
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() {
				if CurrentSpecReport().Failed() {
					AddReportEntry("run directory", res.Dir)
				}
			})
		})

		It("keeps every cutover pause within CUTOVER_PAUSE_CRIT_S with at most one freeze", func() {
			Expect(res.Summary).To(haveCheck("pause-bound", record.Pass))
			Expect(res.Summary).To(haveCheck("freezes", record.Pass))
			Expect(res.Summary.Migrations).To(HaveLen(23))
			for _, m := range res.Summary.Migrations {
				Expect(m.Freezes).To(BeNumerically("<=", 1), "migration %s", m.ID)
				for host, hp := range m.Hosts {
					Expect(hp.LongestPauseS).To(BeNumerically("<=", 5.0), "migration %s host %s", m.ID, host)
				}
			}
		})

		It("leaves zero leaked controllers", func() {
			Expect(res.Summary).To(haveCheck("leaked-controllers", record.Pass))
			Expect(res.Summary.LeakedControllers).To(BeEmpty())
		})

		It("has a controller for every published ip:port on every consumer host", func() {
			Expect(res.Summary).To(haveCheck("path-completeness", record.Pass))
			Expect(res.Summary.MissingEndpoints).To(BeEmpty())
		})

		It("releases the source paths (nothing reconnects into \"does not allow host\") and passes every check", func() {
			Expect(res.Summary).To(haveCheck("target-log-pattern", record.Pass))
			Expect(res.Summary.Verdict).To(Equal(record.Pass), "%v", res.Summary.Checks)
		})
	})

	// The fixed operator as sourced (simplyblock-operator 5aa711cc)
	// touches no host after Completed, so without fiomig's extra release
	// each completed migration's source paths reconnect into "does not
	// allow host" until ctrl_loss_tmo 60 s removes them: about 30
	// rejections per path (incidents/fixed-operator-source-paths.yaml).
	When("the fixed operator does not release the source paths (--release-sources=false)", func() {
		It("fails target-log-pattern, on the source paths left reconnecting, and leaks nothing", func() {
			p := scenario.DefaultParams()
			p.Model.ReleaseSources = false
			res, err := framework.SimRun(GinkgoT().TempDir(), 1, p)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Summary.Verdict).To(Equal(record.Fail))
			Expect(res.Summary).To(haveCheck("target-log-pattern", record.Fail))
			// ctrl_loss_tmo removes them long before the settle ends.
			Expect(res.Summary).To(haveCheck("leaked-controllers", record.Pass))
			Expect(res.Summary).To(haveCheck("path-completeness", record.Pass))
		})
	})

	When("the cutover keeps every path inaccessible for 7 s", func() {
		It("fails the pause bound and names the pauses over it", func() {
			p := scenario.DefaultParams()
			p.Migrations, p.Model.CutoverPauseS = 3, 7
			p.Faults = record.FaultsNone // every pause is the cutover's
			res, err := framework.SimRun(GinkgoT().TempDir(), 1, p)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Summary).To(haveCheck("pause-bound", record.Fail))
			Expect(res.Summary.Verdict).To(Equal(record.Fail))
			for _, m := range res.Summary.Migrations {
				longest := 0.0
				for _, hp := range m.Hosts {
					longest = max(longest, hp.LongestPauseS)
				}
				Expect(longest).To(BeNumerically(">", p.PauseCritS), fmt.Sprintf("migration %s", m.ID))
			}
		})
	})
})
