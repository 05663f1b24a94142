package framework

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/fiomig/fiomig/backend"
	"github.com/fiomig/fiomig/backend/kube"
	simbackend "github.com/fiomig/fiomig/backend/sim"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
	"github.com/fiomig/fiomig/scenario"
)

// Backend is what the shared specs need of a backend: a cluster per run
// and the id its n-th migration (1-based) will get.
type Backend struct {
	Name        string
	New         func(ctx context.Context, seed int64, p record.Params) (backend.Cluster, error)
	MigrationID func(n int) string
}

// Sim is the embedded simulator shaped like the kube suites' stand-in: 3
// storage nodes that are also the consumer hosts, p.Model.Volumes volumes;
// every other part of the model is p.Model's (scenario.DefaultParams: the
// same switches fiomig run runs with).
func Sim() Backend {
	return Backend{
		Name: "sim",
		New: func(_ context.Context, seed int64, p record.Params) (backend.Cluster, error) {
			m := p.Model
			m.Nodes, m.Hosts, m.HostsAreNodes = 3, 3, true
			return simbackend.New(simbackend.Config{Seed: seed, Model: m})
		},
		MigrationID: func(n int) string { return fmt.Sprintf("mig-%04d", n) },
	}
}

// KubeBackend runs on e as the harness account, every run with run id id.
func (e *KubeEnv) KubeBackend(id string) Backend {
	return Backend{
		Name: "kube",
		New: func(ctx context.Context, seed int64, p record.Params) (backend.Cluster, error) {
			return e.NewKubeCluster(ctx, id, seed, p.Model.Volumes)
		},
		MigrationID: func(n int) string { return fmt.Sprintf("%s-mig-%d", id, n) },
	}
}

// Run runs the migrations scenario on b with the fault schedule, writing
// the run directory under outDir. The cluster is closed (on kube: every
// object of the run removed) before it returns.
func Run(ctx context.Context, b Backend, outDir string, seed int64, p record.Params, schedule []record.FaultSpec) (res scenario.Result, err error) {
	c, err := b.New(ctx, seed, p)
	if err != nil {
		return res, fmt.Errorf("%s backend: %w", b.Name, err)
	}
	in, err := faults.NewInjector(c, schedule)
	if err != nil {
		c.Close()
		return res, err
	}
	defer func() {
		if cerr := in.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("%s backend: close: %w", b.Name, cerr)
		}
	}()
	res, err = scenario.Run(ctx, in, scenario.Config{
		Plan: record.Plan{Tool: "fiomig", Scenario: "migrations", Seed: seed,
			Command: fmt.Sprintf("fiomig suites (%s backend, seed %d)", b.Name, seed), Params: p, Faults: schedule},
		OutDir: outDir, Progress: ginkgo.GinkgoWriter,
	})
	if err != nil {
		return res, err
	}
	if kc, ok := c.(*kube.Cluster); ok {
		return kubeFio(ctx, kc, res)
	}
	return res, nil
}

// kubeFio is what fiomig run --backend kube does after the migrations:
// it stops the fio pods, brings their files back through the pod proxy
// (kube.Cluster.CollectFio, the path a lab run takes) and judges them
// (scenario.FioEvaluate), rewriting the reports.
func kubeFio(ctx context.Context, c *kube.Cluster, res scenario.Result) (scenario.Result, error) {
	if err := c.StopFio(ctx); err != nil {
		return res, err
	}
	if _, err := c.CollectFio(ctx, res.Dir, 85*time.Second); err != nil {
		fmt.Fprintf(ginkgo.GinkgoWriter, "fio results incomplete: %v\n", err)
	}
	lines, err := record.ReadTimeline(filepath.Join(res.Dir, record.TimelineFile))
	if err != nil {
		return res, err
	}
	sum, err := scenario.FioEvaluate(res.Dir, res.Plan, lines, res.Summary)
	if err != nil {
		return res, err
	}
	if err := reports.WriteRun(res.Dir, reports.Input{Plan: res.Plan, Summary: sum, Timeline: lines, FioSeconds: scenario.FioSeconds(res.Dir)}); err != nil {
		return res, err
	}
	res.Summary = reports.WithStats(sum)
	return res, nil
}
