package suites_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/internal/kubenode"
	"github.com/fiomig/fiomig/internal/tooltest"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/suites/framework"
)

// nodeKubeEnv starts the kube world on real kubelets (framework.
// StartKubeNode) for the calling container, stopped by DeferCleanup, which
// fails if anything of the real cluster is left on the machine. Without
// root, the binaries (make kube-bins kube-node-bins), the node's runtime
// (make node-tools) or the images (make images), the spec is skipped with
// the reason, or fails under FIOMIG_REQUIRE_TOOLS=1.
func nodeKubeEnv() *framework.KubeEnv {
	GinkgoHelper()
	opts, err := framework.NodeOptions()
	if err == nil {
		err = kubenode.Available(opts)
	}
	if err != nil {
		if tooltest.Required() {
			Fail(tooltest.Env + "=1 but a real node cannot start: " + err.Error())
		}
		Skip("skipping: " + err.Error() + " (" + tooltest.Env + "=1 makes this a failure)")
	}
	env, err := framework.StartKubeNode(context.Background())
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		Expect(env.StopKubeNode()).To(Succeed())
	})
	return env
}

// nodeFaultParams are faultParams sampled every 1 s: on real pods a sample
// is a pod-proxy GET per host to an agent reading its simulated sysfs over
// FUSE, and creating a VolumeMigration (and its port-forwarded
// control-plane reads) holds the run's loop for up to ~2 s on this loaded
// 2-core machine; at 0.5 s those stretches are holes (> 3 intervals) that
// leave the pause checks inconclusive.
func nodeFaultParams() record.Params {
	p := faultParams()
	p.SampleIntervalS, p.SettleSampleIntervalS = 1, 1
	return p
}

var _ = Describe("Migrations with every kube fault kind, on real kubelets", Label("kube", "node"), Ordered, func() {
	var (
		env   *framework.KubeEnv
		watch *framework.PodWatch
		id    = "fiomig-suite-node"
	)
	BeforeAll(func() {
		env = nodeKubeEnv()
		watch = framework.WatchPods(env.Admin, map[string]int{"agent": 3, "fio": 3})
		DeferCleanup(watch.Stop)
	})
	res := faultSpecs(func() framework.Backend { return env.KubeBackend(id) }, nodeFaultParams)

	It("runs the agents, fio pods, nft helper, validation Jobs, SPDK and control-plane pods as containers on the real nodes", func() {
		wide := watch.Wide()
		AddReportEntry("kubectl get pods -A -o wide (while fio ran)", wide)
		Expect(wide).NotTo(BeEmpty(), "the 3 agent and 3 fio pods never ran together")
		ran := map[string]map[string]bool{} // kind -> nodes
		for _, p := range watch.Seen() {
			if p.Kind == "" || !p.Ran {
				continue
			}
			for c, cid := range p.ContainerIDs {
				Expect(cid).To(HavePrefix("containerd://"), "pod %s/%s container %s", p.Namespace, p.Name, c)
			}
			if ran[p.Kind] == nil {
				ran[p.Kind] = map[string]bool{}
			}
			ran[p.Kind][p.Node] = true
		}
		AddReportEntry("pods that ran, by kind and node", fmt.Sprint(ran))
		all := map[string]bool{"storage-1": true, "storage-2": true, "storage-3": true}
		Expect(ran["agent"]).To(Equal(all))
		Expect(ran["fio"]).To(Equal(all))
		Expect(ran["spdk"]).To(Equal(all))
		Expect(ran).To(HaveKey("webappapi"))
		Expect(ran).To(HaveKey("nft-helper"))
		Expect(ran).To(HaveKey("validation-job"))
	})

	It("judges fio's pauses against the simulated ones (fio-pause-agreement passes or fails)", func() {
		sum := res().Summary
		var verdict, detail string
		for _, c := range sum.Checks {
			if c.Name == checks.CheckFioPauseAgreement {
				verdict, detail = c.Verdict, c.Detail
			}
		}
		AddReportEntry("fio-pause-agreement", verdict+": "+detail)
		Expect(verdict).To(BeElementOf(record.Pass, record.Fail), detail)
		for _, f := range []string{"result.json", "lat_lat.1.log"} {
			matches, _ := filepath.Glob(filepath.Join(res().Dir, record.FioDir, "*", f))
			Expect(matches).To(HaveLen(3), "%s of each volume's fio", f)
		}
	})

	It("leaves no object labelled with the run id on the API server", func(ctx SpecContext) {
		Expect(env.Labelled(ctx, id)).To(BeEmpty())
	})

	kubeRunSpecs(func() *framework.KubeEnv { return env }, res)

	It("gives the same verdict as the simulator backend on the same seed", func(ctx SpecContext) {
		sim := framework.Sim()
		simRes, err := framework.Run(context.Background(), sim, GinkgoT().TempDir(), faultSeed, standInWorld(env.KubeBackend(id), nodeFaultParams()), faultSchedule(sim))
		Expect(err).NotTo(HaveOccurred())
		diff := verdictDiff(simRes.Summary, res().Summary)
		AddReportEntry("sim vs real-node check verdicts", diff)
		Expect(res().Summary.Verdict).To(Equal(simRes.Summary.Verdict), "check verdicts differ:\n%s", diff)
	})

	It("removes every object of an interrupted fiomig run --backend kube (SIGINT) and exits 130", func(ctx SpecContext) {
		interruptRun(ctx, env)
	})
})

// interruptRun runs fiomig run --backend kube on env, sends it SIGINT once
// its first migration is under way, and expects exit 130, the run
// directory kept and nothing labelled with the run id left.
func interruptRun(ctx context.Context, env *framework.KubeEnv) {
	GinkgoHelper()
	bin := fiomigBinary(ctx)
	outDir := GinkgoT().TempDir()
	args := []string{"run", "--backend", "kube", "--kubeconfig", env.Kubeconfig,
		"--storage-class", env.StandIn.StorageClass(), "--storage-namespace", env.StandIn.StorageNamespace(),
		"--cluster-secret-file", env.SecretFile, "--volumes", "3", "--migrations", "6", "--out", outDir}
	if env.HelperImage != "" {
		args = append(args, "--helper-image", env.HelperImage, "--fio-image", env.FioImage)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stderr = GinkgoWriter
	stdout, err := cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	Expect(cmd.Start()).To(Succeed())
	runRE := regexp.MustCompile(`kube: run (fiomig-[0-9]+-[0-9a-f]+) in namespace`)
	var id string
	sc := bufio.NewScanner(stdout)
	deadline := time.Now().Add(5 * time.Minute)
	for sc.Scan() && time.Now().Before(deadline) {
		line := sc.Text()
		GinkgoWriter.Println(line)
		if m := runRE.FindStringSubmatch(line); m != nil {
			id = m[1]
		}
		if id != "" && strings.Contains(line, "VolumeMigration "+id+"-mig-1") {
			time.Sleep(2 * time.Second)
			break
		}
	}
	Expect(id).NotTo(BeEmpty(), "the run never said its id")
	Expect(env.Labelled(ctx, id)).NotTo(BeEmpty(), "mid-run, the run's objects should exist")
	if env.Node != nil {
		Expect(fioLeftovers()).NotTo(BeEmpty(), "mid-run, the run's fio pods should hold CSI mounts and fio processes")
	}
	Expect(cmd.Process.Signal(syscall.SIGINT)).To(Succeed())
	go func() {
		for sc.Scan() {
			GinkgoWriter.Println(sc.Text())
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	Expect(err).To(BeAssignableToTypeOf(ee))
	Expect(err.(*exec.ExitError).ExitCode()).To(Equal(130))
	Expect(env.Labelled(ctx, id)).To(BeEmpty())
	if env.Node != nil {
		// Its pods are gone from the API server; on the nodes too.
		Expect(fioLeftovers()).To(BeEmpty(), "left on the nodes by the interrupted run")
	}
	dirs, _ := filepath.Glob(filepath.Join(outDir, "fio-mig-*"))
	Expect(dirs).To(HaveLen(1))
	fi, err := os.Stat(filepath.Join(dirs[0], record.TimelineFile))
	Expect(err).NotTo(HaveOccurred())
	Expect(fi.Size()).To(BeNumerically(">", 0))
}

// fioLeftovers lists what fio pods hold on the real nodes: CSI volume
// mounts under the kubelets' roots (the played CSI node plugin's
// publishes) and fio processes in the kubelets' cgroups. Nothing else on
// the nodes has either (agents, SPDK and control-plane pods use none).
func fioLeftovers() []string {
	var out []string
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) > 4 && strings.HasPrefix(f[4], kubenode.BaseDir+"/") && strings.Contains(f[4], "/volumes/kubernetes.io~csi/") {
				out = append(out, "mount "+f[4])
			}
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		comm, err1 := os.ReadFile(filepath.Join(p, "comm"))
		cg, err2 := os.ReadFile(filepath.Join(p, "cgroup"))
		if err1 == nil && err2 == nil && strings.TrimSpace(string(comm)) == "fio" && strings.Contains(string(cg), "/fiomig-kubenode-") {
			out = append(out, "fio process "+filepath.Base(p))
		}
	}
	return out
}
