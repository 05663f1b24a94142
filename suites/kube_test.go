package suites_test

import (
	"context"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fiomig/fiomig/internal/kubetest"
	"github.com/fiomig/fiomig/internal/standin"
	"github.com/fiomig/fiomig/internal/tooltest"
	"github.com/fiomig/fiomig/suites/framework"
)

// The kube specs share one control plane and stand-in, started by the
// e2e-framework env func framework.StartKube in a setup node the first
// time a kube spec runs and stopped by framework.StopKube after the
// suite. Which backends run is chosen by label: -ginkgo.label-filter=sim,
// =kube, or 'fault:dropped-connects'.
var (
	kubeCtx     context.Context
	kubeStarted bool
	kubeErr     error
)

// kubeEnv returns the suite's KubeEnv, starting it on first use. Without
// the cached kube-apiserver/etcd (make kube-bins) or root for the
// stand-in's network namespace, the spec is skipped with the reason, or
// fails when FIOMIG_REQUIRE_TOOLS=1 (internal/tooltest's rule).
func kubeEnv() *framework.KubeEnv {
	GinkgoHelper()
	if !kubeStarted {
		kubeStarted = true
		if _, err := kubetest.BinDir(); err != nil {
			kubeErr = err
		} else if err := standin.NetnsAvailable(); err != nil {
			kubeErr = err
		} else {
			kubeCtx, kubeErr = framework.StartKube(context.Background(), nil)
			if kubeErr != nil {
				kubeErr = fatalKube{kubeErr}
			}
		}
	}
	if f, ok := kubeErr.(fatalKube); ok {
		Fail("kube env: " + f.err.Error())
	}
	if kubeErr != nil {
		if tooltest.Required() {
			Fail(tooltest.Env + "=1 but the kube env cannot start: " + kubeErr.Error())
		}
		Skip("skipping: " + kubeErr.Error() + " (make kube-bins; " + tooltest.Env + "=1 makes this a failure)")
	}
	return framework.Kube(kubeCtx)
}

// freshKubeEnv starts a KubeEnv of its own for the calling spec or
// container (stopped by DeferCleanup), for specs whose verdicts must not
// depend on what other specs did to the shared one: its simulated cluster
// keeps their effects (a killed validation Job or an interrupted run loses
// a subsystem on a storage node until the lvol monitor, off here, repairs
// it, and the next migration of that volume to that node fails, as on a
// real cluster), and Ginkgo runs top-level containers in random order.
func freshKubeEnv() *framework.KubeEnv {
	GinkgoHelper()
	kubeEnv() // the tools are there, or the spec is skipped (or fails) with the reason
	ctx, err := framework.StartKube(context.Background(), nil)
	DeferCleanup(func() {
		_, err := framework.StopKube(ctx, nil)
		Expect(err).NotTo(HaveOccurred())
	})
	Expect(err).NotTo(HaveOccurred())
	return framework.Kube(ctx)
}

type fatalKube struct{ err error }

func (f fatalKube) Error() string { return f.err.Error() }

var _ = AfterSuite(func() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	if kubeCtx != nil {
		_, err := framework.StopKube(kubeCtx, nil)
		Expect(err).NotTo(HaveOccurred())
	}
})
