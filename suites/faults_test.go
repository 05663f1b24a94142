package suites_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/scenario"
	"github.com/fiomig/fiomig/suites/framework"
)

// faultParams: 6 migrations of 3 volumes on 3 hosts (the storage nodes),
// sampled every 0.5 s (one pod-proxy GET per host per sample on kube), a
// 35 s settle that outlasts the 30 s attribution margin.
func faultParams() record.Params {
	p := scenario.DefaultParams()
	p.Migrations, p.Model.Volumes, p.Model.Hosts, p.GapS = 6, 3, 3, 2
	p.SampleIntervalS, p.SettleSampleIntervalS = 0.5, 0.5
	p.SettleS, p.AttributionMarginS = 35, 30
	return p
}

const faultSeed = 1

// faultSchedule hits migrations 2, 4 and 5 with every fault kind the kube
// backend can inject: while migration 2 runs, CONNECTs to storage-3 are
// dropped for 8 s and its target restarts inside that window (so the
// hosts' reconnects are what gets dropped); migration 4 is aborted while
// Validating; migration 5's validation Job on its consumer host is killed.
func faultSchedule(b framework.Backend) []record.FaultSpec {
	return []record.FaultSpec{
		{Fault: faults.KindDroppedConnects, Target: "storage-3", Phase: record.PhaseRunning, Migration: b.MigrationID(2), ForS: 8},
		{Fault: faults.KindTargetRestart, Target: "storage-3", Phase: record.PhaseRunning, Migration: b.MigrationID(2), ForS: 2},
		{Fault: faults.KindAbortedValidation, Target: b.MigrationID(4), Params: map[string]string{"mode": faults.ModeAbort}},
		{Fault: faults.KindAbortedValidation, Target: b.MigrationID(5), Params: map[string]string{"mode": faults.ModeKillJob}},
	}
}

// faultSpecs are the specs both backends run: the same scenario, the same
// schedule, the same expectations.
// It returns the run's result once BeforeAll has run.
func faultSpecs(backend func() framework.Backend, params func() record.Params) func() scenario.Result {
	var (
		res   scenario.Result
		lines []record.Line
	)
	BeforeAll(func(ctx SpecContext) {
		b := backend()
		var err error
		out := os.Getenv("FIOMIG_SUITE_OUT") // keep the run directories there (default: a temporary directory)
		if out == "" {
			out = GinkgoT().TempDir()
		}
		res, err = framework.Run(ctx, b, out, faultSeed, params(), faultSchedule(b))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Interrupted).To(BeFalse())
		lines, err = record.ReadTimeline(filepath.Join(res.Dir, record.TimelineFile))
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("run directory", res.Dir)
		AddReportEntry("verdict", fmt.Sprintf("%s %v", res.Summary.Verdict, res.Summary.Checks))
	})

	It("writes the run directory and the report", func() {
		for _, f := range []string{record.PlanFile, record.TimelineFile, "summary.json", "report.md", "report.html"} {
			Expect(filepath.Join(res.Dir, f)).To(BeAnExistingFile())
		}
	})

	It("runs 6 migrations of 3 volumes sampled on 3 hosts", func() {
		Expect(res.Plan.Topology.Hosts).To(HaveLen(3))
		Expect(res.Plan.Topology.Volumes).To(HaveLen(3))
		Expect(res.Summary.Migrations).To(HaveLen(6))
		hosts := map[string]bool{}
		for _, l := range lines {
			if l.Kind == record.KindSample {
				hosts[l.Host] = true
			}
		}
		Expect(hosts).To(HaveLen(3))
	})

	It("restarts a target and records the evidence", Label("fault:"+faults.KindTargetRestart), func() {
		Expect(landed(lines, faults.KindTargetRestart)).To(BeTrue(), "no inject line with evidence:\n%s", faultLines(lines))
	})

	It("drops CONNECTs and counts them", Label("fault:"+faults.KindDroppedConnects), func() {
		Expect(landed(lines, faults.KindDroppedConnects)).To(BeTrue(), "no landed line:\n%s", faultLines(lines))
	})

	It("aborts a validation and kills a validation Job", Label("fault:"+faults.KindAbortedValidation), func() {
		var modes int
		for _, l := range lines {
			if l.Kind == record.KindFault && l.Fault == faults.KindAbortedValidation && l.Action == faults.ActionInject && len(l.Evidence) > 0 {
				modes++
			}
		}
		Expect(modes).To(Equal(2), "%s", faultLines(lines))
		Expect(res.Summary).To(haveCheck("faults-landed", record.Pass))
	})
	return func() scenario.Result { return res }
}

// landed reports whether a fault of kind left evidence on an inject or
// landed line.
func landed(lines []record.Line, kind string) bool {
	for _, l := range lines {
		if l.Kind == record.KindFault && l.Fault == kind && (l.Action == faults.ActionInject || l.Action == faults.ActionLanded) && len(l.Evidence) > 0 && l.Reason == "" {
			return true
		}
	}
	return false
}

func faultLines(lines []record.Line) string {
	s := ""
	for _, l := range lines {
		if l.Kind == record.KindFault {
			s += fmt.Sprintf("  t=%.3f %s %s %s %v %s\n", l.T, l.Fault, l.Action, l.Target, l.Evidence, l.Reason)
		}
	}
	return s
}

var _ = Describe("Migrations with every kube fault kind, on the embedded simulator", Label("sim"), Ordered, func() {
	faultSpecs(framework.Sim, faultParams)
})

var _ = Describe("Migrations with every kube fault kind, on Kubernetes", Label("kube"), Ordered, func() {
	var (
		env *framework.KubeEnv
		id  = "fiomig-suite-faults"
	)
	// A world of its own: the verdicts are compared with the simulator's
	// on the same seed, which must not depend on other specs.
	BeforeAll(func() { env = freshKubeEnv() })
	kubeRes := faultSpecs(func() framework.Backend { return env.KubeBackend(id) }, faultParams)

	It("leaves no object labelled with the run id on the API server", func(ctx SpecContext) {
		Expect(env.Labelled(ctx, id)).To(BeEmpty())
	})

	kubeRunSpecs(func() *framework.KubeEnv { return env }, kubeRes)

	It("gives the same verdict as the simulator backend on the same seed", func(ctx SpecContext) {
		sim := framework.Sim()
		simRes, err := framework.Run(context.Background(), sim, GinkgoT().TempDir(), faultSeed, standInWorld(env.KubeBackend(id), faultParams()), faultSchedule(sim))
		Expect(err).NotTo(HaveOccurred())
		kubeSum := kubeRes().Summary
		diff := verdictDiff(simRes.Summary, kubeSum)
		AddReportEntry("sim vs kube check verdicts", diff)
		Expect(kubeSum.Verdict).To(Equal(simRes.Summary.Verdict), "check verdicts differ:\n%s", diff)
	})
})

// verdictDiff lists each check whose verdict differs between two runs.
func verdictDiff(a, b record.Summary) string {
	s := ""
	bv := map[string]record.CheckResult{}
	for _, c := range b.Checks {
		bv[c.Name] = c
	}
	for _, c := range a.Checks {
		if o := bv[c.Name]; o.Verdict != c.Verdict {
			s += fmt.Sprintf("  %s: sim %s (%s), kube %s (%s)\n", c.Name, c.Verdict, c.Detail, o.Verdict, o.Detail)
		}
	}
	if s == "" {
		s = "  none"
	}
	return s
}

// kubeRunSpecs are the specs of a kube fault run beyond the shared ones.
func kubeRunSpecs(env func() *framework.KubeEnv, res func() scenario.Result) {
	// The harness announces each migration's target endpoints when it
	// creates the VolumeMigration (the target's lvolPort on every storage
	// node's data address) and writes them again only where the
	// operator's status.connections, at Validating, differ: no migration
	// may need that correction.
	It("announces each migration's target endpoints where the operator puts them (data addresses, the target's lvolPort)", func() {
		lines, err := record.ReadTimeline(filepath.Join(res().Dir, record.TimelineFile))
		Expect(err).NotTo(HaveOccurred())
		seen := map[string]bool{}
		validated := 0
		var corrected []string
		for _, l := range lines {
			if l.Kind != record.KindPhase {
				continue
			}
			if !seen[l.Migration] {
				seen[l.Migration] = true
				continue
			}
			if l.Phase == record.PhaseValidating {
				validated++
			}
			if len(l.TargetEndpoints) > 0 {
				corrected = append(corrected, fmt.Sprintf("%s at %s: %v", l.Migration, l.Phase, l.TargetEndpoints))
			}
		}
		Expect(validated).To(BeNumerically(">", 0), "no migration reached Validating, where the operator writes status.connections")
		Expect(corrected).To(BeEmpty(), "the operator's status.connections differ from the announced target")
	})

	It("shows the cluster secret in no file of the run directory", func() {
		Expect(secretNowhere(res().Dir, env().StandIn.ClusterSecret())).To(Succeed())
	})
}

// secretNowhere walks dir and fails naming the first file holding secret.
func secretNowhere(dir, secret string) error {
	if secret == "" {
		return fmt.Errorf("no secret to look for")
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(secret)) {
			return fmt.Errorf("%s holds the cluster secret", p)
		}
		return err
	})
}

// standInWorld is p with the world the stand-in plays (kb.World: the
// simulator's defaults, its sourced operator and control plane, with no
// release of source paths, lvol monitor or CSI path restore), so that the
// simulator backend it is compared with runs the same world; fiomig run's
// defaults switch those three on (scenario.DefaultParams).
func standInWorld(kb framework.Backend, p record.Params) record.Params {
	p.Model = kb.World(p.Model)
	return p
}
