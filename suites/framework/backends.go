package framework

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"

	"github.com/fiomig/fiomig/backend"
	"github.com/fiomig/fiomig/backend/kube"
	simbackend "github.com/fiomig/fiomig/backend/sim"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/harness"
	"github.com/fiomig/fiomig/record"
)

// Backend is what the shared specs need of a backend: the world it runs
// (World: what plan.json records of p.Model), a cluster per run and the id
// its n-th migration (1-based) will get.
type Backend struct {
	Name        string
	World       func(record.Model) record.Model
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
		World: func(m record.Model) record.Model {
			m.Nodes, m.Hosts, m.HostsAreNodes = 3, 3, true
			return m
		},
		New: func(_ context.Context, seed int64, p record.Params) (backend.Cluster, error) {
			return simbackend.New(simbackend.Config{Seed: seed, Model: p.Model})
		},
		MigrationID: func(n int) string { return fmt.Sprintf("mig-%04d", n) },
	}
}

// KubeBackend runs on e as the harness account, every run with run id id.
func (e *KubeEnv) KubeBackend(id string) Backend {
	return Backend{
		Name: "kube",
		// The stand-in's world: 3 hosts that are its storage nodes.
		World: func(m record.Model) record.Model {
			return record.Model{Nodes: 3, Hosts: 3, HostsAreNodes: true, Volumes: m.Volumes}
		},
		New: func(ctx context.Context, seed int64, p record.Params) (backend.Cluster, error) {
			return e.NewKubeCluster(ctx, id, seed, p.Model.Volumes)
		},
		MigrationID: func(n int) string { return fmt.Sprintf("%s-mig-%d", id, n) },
	}
}

// Run runs fiomig run's spec with seed, p and the fault schedule on b
// (harness.RunOn), writing the run directory under outDir. The cluster is
// closed (on kube: every object of the run removed) before it returns.
func Run(ctx context.Context, b Backend, outDir string, seed int64, p record.Params, schedule []record.FaultSpec) (res harness.Result, err error) {
	p.Model = b.World(p.Model)
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
	s := harness.DefaultSpec()
	s.Seed, s.Params, s.Schedule, s.Out = seed, p, schedule, outDir
	o := harness.Options{Progress: ginkgo.GinkgoWriter, Command: fmt.Sprintf("fiomig suites (%s backend, seed %d)", b.Name, seed)}
	res, err = harness.RunOn(ctx, in, s, o)
	if kc, ok := c.(*kube.Cluster); ok && err == nil && !res.Interrupted {
		// fio's results come back as on a lab cluster (the pod proxy).
		return harness.KubeFio(ctx, kc, res, o)
	}
	return res, err
}
