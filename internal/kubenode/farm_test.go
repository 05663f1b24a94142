package kubenode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fiomig/fiomig/analysis"
	"github.com/fiomig/fiomig/backend/kube"
	"github.com/fiomig/fiomig/harness"
	"github.com/fiomig/fiomig/internal/kubetest"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

// farmCluster starts two real kubelets with deploy/rbac/ applied and
// returns the cluster, an admin clientset and the fiomig-harness
// ServiceAccount's config (the farm runs as it: its RBAC suffices).
func farmCluster(t testing.TB) (*Cluster, kubernetes.Interface, *rest.Config) {
	opts := testOptions(t)
	opts.Nodes = []NodeSpec{{Name: "farm-1"}, {Name: "farm-2"}}
	ctx := context.Background()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if left := c.Remaining(); len(left) > 0 {
			t.Errorf("left after Close:\n%s", strings.Join(left, "\n"))
		}
	})
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "simplyblock"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	root, _ := kubetest.RepoRoot()
	rbac, _ := filepath.Glob(filepath.Join(root, "deploy", "rbac", "*.yaml"))
	if err := kube.ApplyManifests(ctx, c.Config, rbac...); err != nil {
		t.Fatal(err)
	}
	as := rest.CopyConfig(c.Config)
	as.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:fiomig:fiomig-harness",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:fiomig", "system:authenticated"}}
	return c, cs, as
}

// farmFlags are the farm test's run: 5 migrations with the default fault
// schedule (3 faults), a 35 s settle — about 0.3 CPU-s a seed, reports
// included, against the main job's 0.57 (the CI budget).
var farmFlags = []string{"--migrations", "5", "--settle", "35"}

func farmSpec(t testing.TB) harness.Spec {
	s := harness.DefaultSpec()
	s.Params.Migrations, s.Params.SettleS, s.Out = 5, 35, t.TempDir()
	return s
}

func seedList(n int) []int64 {
	var out []int64
	for i := range n {
		out = append(out, int64(i+1))
	}
	return out
}

// sameSweep fails t unless the two sweep directories hold the same
// sweep.json, sweep.md and ECDF bytes.
func sameSweep(t *testing.T, local, farm string) {
	t.Helper()
	for _, f := range []string{record.SweepFile, record.SweepReportFile, reports.ECDFPlotFile, reports.ECDFSVGFile} {
		a, err := os.ReadFile(filepath.Join(local, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(farm, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the farm's (%s) differs from the local sweep's (%s)", f, farm, local)
		}
	}
}

// leftOf lists the Jobs, pods and Leases labelled with run id.
func leftOf(ctx context.Context, t testing.TB, cs kubernetes.Interface, id string) []string {
	sel := metav1.ListOptions{LabelSelector: kube.LabelRun + "=" + id}
	var left []string
	jobs, err := cs.BatchV1().Jobs("fiomig").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Items {
		left = append(left, "Job "+j.Name)
	}
	pods, _ := cs.CoreV1().Pods("fiomig").List(ctx, sel)
	for _, p := range pods.Items {
		left = append(left, "Pod "+p.Name)
	}
	leases, _ := cs.CoordinationV1().Leases("fiomig").List(ctx, sel)
	for _, l := range leases.Items {
		left = append(left, "Lease "+l.Name)
	}
	return left
}

type farmJSON struct {
	RunID       string `json:"run_id"`
	Shards      int    `json:"shards"`
	Parallelism int    `json:"parallelism"`
	Indexes     []struct {
		Index int     `json:"index"`
		CPUS  float64 `json:"cpu_s"`
		WallS float64 `json:"wall_s"`
	} `json:"indexes"`
	Pods []struct {
		Name, Node, Phase string
		Index             int
		Disrupted         bool
	} `json:"pods"`
	Rechecks []struct {
		Seed int64  `json:"seed"`
		On   string `json:"on"`
	} `json:"rechecks"`
	CPUS  float64 `json:"cpu_s"`
	WallS float64 `json:"wall_s"`
}

func readFarm(t testing.TB, dir string) farmJSON {
	t.Helper()
	var f farmJSON
	b, err := os.ReadFile(filepath.Join(dir, harness.FarmFile))
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// evictOnce evicts the first farm pod of index 0 that has printed two
// seeds' results (the eviction API: the pod gets the DisruptionTarget
// condition, which the Job's pod failure policy ignores) and returns its
// name; "" if ctx ended first.
func evictOnce(ctx context.Context, cs kubernetes.Interface) string {
	for ctx.Err() == nil {
		pods, _ := cs.CoreV1().Pods("fiomig").List(ctx, metav1.ListOptions{LabelSelector: kube.LabelRole + "=farm"})
		for _, p := range pods.Items {
			if kube.PodIndex(p) != 0 || p.Status.Phase != corev1.PodRunning {
				continue
			}
			b, _ := cs.CoreV1().Pods("fiomig").GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if bytes.Count(b, []byte(`"seed":{`)) >= 2 {
				err := cs.CoreV1().Pods("fiomig").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: "fiomig"}})
				if err == nil {
					return p.Name
				}
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	return ""
}

// TestFarmOnRealPods runs sweeps as farms on two real kubelets, as the
// fiomig-harness ServiceAccount: 200 seeds at parallelism 2 give the same
// sweep.json, sweep.md and ECDF bytes as the local sweep of those seeds,
// though index 0's pod is evicted mid-run (retried, its failure ignored by
// the pod failure policy); a farm fed a non-deterministic seed (the test
// hook) fails naming it; fiomig sweep --on kube interrupted by SIGINT
// exits 130 and leaves no object of its run;
// a farm whose harness process was killed is finished by --attach.
func TestFarmOnRealPods(t *testing.T) {
	c, cs, as := farmCluster(t)
	ctx := context.Background()
	f := harness.FarmOptions{REST: as, Namespace: "fiomig", Image: c.Images["fiomig"], Parallelism: 2}

	seeds := seedList(200)
	o := harness.SweepOptions{Seeds: seeds, SeedsArg: "1-200", Jobs: 2, Timelines: harness.KeepFailing, MaxTimelines: 10,
		SelfCheck: harness.DefaultSelfCheck, Command: "fiomig sweep --seeds=1-200 --migrations=5 --settle=35"}
	t0, cpu0 := time.Now(), cpuNow()
	local, err := harness.Sweep(ctx, farmSpec(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("local sweep of 200 seeds: %.1f s wall, %.1f CPU-s (2 jobs)", time.Since(t0).Seconds(), cpuNow()-cpu0)

	ectx, stopEvict := context.WithCancel(ctx)
	evicted := make(chan string, 1)
	go func() { evicted <- evictOnce(ectx, cs) }()
	t0, cpu0 = time.Now(), cpuNow()
	var progress bytes.Buffer
	o.Progress = &progress
	farm, err := harness.Farm(ctx, farmSpec(t), o, f)
	stopEvict()
	if err != nil {
		t.Fatal(err)
	}
	fj := readFarm(t, farm.Dir)
	t.Logf("farm of 200 seeds: %.1f s wall, pods %.1f CPU-s, this process %.1f CPU-s; %d shards", time.Since(t0).Seconds(), fj.CPUS, cpuNow()-cpu0, fj.Shards)
	sameSweep(t, local.Dir, farm.Dir)
	if a, b := local.ExitCode(false), farm.ExitCode(false); a != b {
		t.Errorf("exit %d, the local sweep's %d", b, a)
	}
	name := <-evicted
	if name == "" {
		t.Fatal("no pod of index 0 was evicted")
	}
	var disrupted, retried bool
	for _, p := range fj.Pods {
		disrupted = disrupted || (p.Name == name && p.Disrupted)
		retried = retried || (p.Index == 0 && p.Name != name && p.Phase == string(corev1.PodSucceeded))
	}
	if !disrupted || !retried || len(fj.Indexes) != fj.Shards {
		t.Errorf("evicted %s: farm.json pods %+v, %d of %d indexes ended; want it disrupted, index 0 retried to success, every index ended", name, fj.Pods, len(fj.Indexes), fj.Shards)
	}
	if !strings.Contains(progress.String(), "200/200 done") {
		t.Errorf("progress does not reach 200/200:\n%s", tail(progress.String(), 5))
	}
	if left := leftOf(ctx, t, cs, fj.RunID); len(left) > 0 {
		t.Errorf("left of farm %s: %v", fj.RunID, left)
	}

	// A non-deterministic seed: seed 3 (position 2) of 1-6 is rerun on
	// another pod and differs.
	t.Setenv(harness.NondeterministicSeedEnv, "3")
	o6 := harness.SweepOptions{Seeds: seedList(6), SeedsArg: "1-6", Jobs: 2, Timelines: harness.KeepNone, SelfCheck: 0.34}
	bad, err := harness.Farm(ctx, farmSpec(t), o6, f)
	if err != nil {
		t.Fatal(err)
	}
	d := bad.Sweep.Determinism
	if d == nil || len(d.Mismatches) != 1 || d.Mismatches[0].Seed != 3 || bad.ExitCode(false) != harness.ExitFail {
		t.Errorf("non-deterministic seed 3: determinism %+v, exit %d; want seed 3 named, exit 1", d, bad.ExitCode(false))
	}
	os.Unsetenv(harness.NondeterministicSeedEnv)

	// `fiomig sweep --on kube` (the image's binary, make images builds it
	// static beside the image) gets SIGINT at its first seed's progress
	// line: exit 130, sweep.json over the seeds that arrived, nothing of
	// the run left.
	bin := filepath.Join(c.opts.ImagesDir, "fiomig-linux-amd64")
	iout := t.TempDir()
	icmd := exec.Command(bin, append([]string{"sweep", "--on", "kube", "--kubeconfig", c.Kubeconfig, "--helper-image", c.Images["fiomig"],
		"--seeds", "1-40", "--timelines", "none", "--out", iout}, farmFlags...)...)
	istdout, _ := icmd.StdoutPipe()
	istderr, _ := icmd.StderrPipe()
	if err := icmd.Start(); err != nil {
		t.Fatal(err)
	}
	ids := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(istdout)
		sent := false
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "fiomig sweep: farm "); ok && !sent {
				id, _, _ := strings.Cut(rest, ":")
				ids <- id
				sent = true
			}
		}
		if !sent {
			ids <- ""
		}
	}()
	var ierr strings.Builder
	sc := bufio.NewScanner(istderr)
	for sc.Scan() {
		ierr.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "sweep: seed ") {
			icmd.Process.Signal(syscall.SIGINT)
			break
		}
	}
	rest, _ := io.ReadAll(istderr)
	ierr.Write(rest)
	icmd.Wait()
	iid := <-ids
	if code := icmd.ProcessState.ExitCode(); code != harness.ExitInterrupted || iid == "" {
		t.Errorf("fiomig sweep --on kube after SIGINT: exit %d, farm %q; want 130\n%s", code, iid, tail(ierr.String(), 8))
	}
	dirs, _ := filepath.Glob(filepath.Join(iout, "sweep-*"))
	if len(dirs) != 1 {
		t.Fatalf("interrupted farm: sweep directories %v", dirs)
	}
	if sw, err := record.ReadSweep(filepath.Join(dirs[0], record.SweepFile)); err != nil || !sw.Interrupted || len(sw.Seeds) == 0 || len(sw.Seeds) == 40 {
		t.Errorf("interrupted farm's sweep.json: %v, interrupted %v, %d seeds; want some of 40", err, sw.Interrupted, len(sw.Seeds))
	}
	if left := leftOf(ctx, t, cs, iid); len(left) > 0 {
		t.Errorf("left of the interrupted farm %s: %v", iid, left)
	}

	// `fiomig sweep --on kube` (the image's binary) killed with SIGKILL
	// while its farm runs; --attach with its run id finishes the sweep, the
	// same bytes as the local sweep of its seeds, and nothing is left.
	out := t.TempDir()
	cmd := exec.Command(bin, "sweep", "--on", "kube", "--kubeconfig", c.Kubeconfig, "--helper-image", c.Images["fiomig"],
		"--seeds", "1-16", "--out", out)
	cmd.Args = append(cmd.Args, farmFlags...)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var id string
	sc = bufio.NewScanner(stdout)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "fiomig sweep: farm "); ok {
			id, _, _ = strings.Cut(rest, ":")
			break
		}
	}
	time.Sleep(3 * time.Second)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	go io.Copy(io.Discard, stdout)
	if id == "" {
		t.Fatal("fiomig sweep --on kube printed no farm run id")
	}
	s := harness.DefaultSpec()
	s.Out = out
	res, err := harness.Farm(ctx, s, harness.SweepOptions{Jobs: 2}, harness.FarmOptions{REST: as, Namespace: "fiomig", Attach: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sweep.Seeds) != 16 {
		t.Fatalf("attached farm %s: %d seeds, want 16", id, len(res.Sweep.Seeds))
	}
	ls := farmSpec(t)
	local16, err := harness.Sweep(ctx, ls, harness.SweepOptions{Seeds: seedList(16), SeedsArg: "1-16", Jobs: 2, Timelines: harness.KeepFailing,
		MaxTimelines: 10, SelfCheck: harness.DefaultSelfCheck, Command: res.Sweep.Command})
	if err != nil {
		t.Fatal(err)
	}
	sameSweep(t, local16.Dir, res.Dir)
	if left := leftOf(ctx, t, cs, id); len(left) > 0 {
		t.Errorf("left of farm %s: %v", id, left)
	}
}

func cpuNow() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// BenchmarkFarm measures what a farm costs against a local sweep of the
// same 40 main-job seeds on this machine (no self-check): seeds per CPU
// second of the local sweep (this process) and of the farm — its pods
// (cpuacct of the kubelets' cgroup roots: every container), the cluster's
// daemons (etcd, API server, controller-manager, scheduler, kubelets,
// containerds, with their waited children) and the harness process —
// and, from farm.json, a pod's throughput (seeds per second of a pod's
// fiomig, on one CPU) and the time a Job slot spends on anything but
// running seeds, per pod (start, log reading, scheduling), for the
// projection of docs/farm.md. Not counted: the containerd shims that ended
// with their pods.
func BenchmarkFarm(b *testing.B) {
	c, _, as := farmCluster(b)
	ctx := context.Background()
	const n = 40
	o := harness.SweepOptions{Seeds: seedList(n), SeedsArg: "1-40", Jobs: 2, Timelines: harness.KeepNone}
	f := harness.FarmOptions{REST: as, Namespace: "fiomig", Image: c.Images["fiomig"], Parallelism: 2}
	var local, pods, daemons, self, podWall, slotIdle, podSeeds float64
	for b.Loop() {
		s := harness.DefaultSpec()
		s.Out = b.TempDir()
		p0 := cpuNow()
		if _, err := harness.Sweep(ctx, s, o); err != nil {
			b.Fatal(err)
		}
		local += cpuNow() - p0
		c0, d0, p0 := podsCPU(c), daemonsCPU(c), cpuNow()
		res, err := harness.Farm(ctx, s, o, f)
		if err != nil {
			b.Fatal(err)
		}
		pods, daemons, self = pods+podsCPU(c)-c0, daemons+daemonsCPU(c)-d0, self+cpuNow()-p0
		fj := readFarm(b, res.Dir)
		busy := 0.0
		for _, x := range fj.Indexes {
			busy += x.WallS
		}
		podWall += busy
		podSeeds += n
		slotIdle += (fj.WallS*float64(fj.Parallelism) - busy) / float64(fj.Shards)
	}
	runs := float64(b.N)
	b.ReportMetric(n*runs/local, "seeds/cpu-s-local")
	b.ReportMetric(n*runs/(pods+daemons+self), "seeds/cpu-s-farm")
	b.ReportMetric(pods/(n*runs), "pod-cpu-s/seed")
	b.ReportMetric(daemons/(n*runs), "cluster-cpu-s/seed")
	b.ReportMetric(self/(n*runs), "harness-cpu-s/seed")
	b.ReportMetric(podSeeds/podWall, "seeds/pod-s")
	b.ReportMetric(slotIdle/runs, "slot-overhead-s/pod")
}

// podsCPU is the CPU seconds of every container of the cluster's
// kubelets (cpuacct.usage of their cgroup roots, cgroup v1).
func podsCPU(c *Cluster) float64 {
	total := 0.0
	for i := range c.Nodes {
		b, _ := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpuacct", "fiomig-kubenode-"+strconv.Itoa(i+1), "cpuacct.usage"))
		ns, _ := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		total += ns / 1e9
	}
	return total
}

// daemonsCPU is the CPU seconds of the cluster's daemons and their waited
// children (/proc/<pid>/stat utime, stime, cutime, cstime at 100 Hz).
func daemonsCPU(c *Cluster) float64 {
	c.mu.Lock()
	procs := append([]proc(nil), c.ledger.Procs...)
	c.mu.Unlock()
	total := 0.0
	for _, p := range procs {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/stat")
		if err != nil {
			continue
		}
		_, rest, _ := strings.Cut(string(b), ") ")
		f := strings.Fields(rest)
		for _, i := range []int{11, 12, 13, 14} { // fields 14-17, counted from the state (field 3)
			if i < len(f) {
				v, _ := strconv.ParseFloat(f[i], 64)
				total += v / 100
			}
		}
	}
	return total
}

// TestFarmHypothesesOnRealPods: fiomig reproduce --hypotheses --on kube
// (the image's binary) of the synthetic incident over seeds 1-3 (4
// combinations × 3 seeds × 2 operators = 24 runs, 8 shards) at parallelism
// 2 on two real kubelets, killed with SIGKILL once its first (combination,
// seed) arrived, is finished by FarmHypotheses with --attach as the
// fiomig-harness ServiceAccount — every run made in the pods and read back
// from their logs — and gives the reproduce.md, exit code and every run's
// plan.json and summary.json of the local --hypotheses of those seeds,
// byte for byte; nothing of the farm is left.
func TestFarmHypothesesOnRealPods(t *testing.T) {
	c, cs, as := farmCluster(t)
	ctx := context.Background()
	root, _ := kubetest.RepoRoot()
	syn := filepath.Join(root, "cmd", "fiomig", "testdata", "incidents", "synthetic-one-combination.yaml")
	bin := filepath.Join(c.opts.ImagesDir, "fiomig-linux-amd64")
	out := t.TempDir()
	t0, c0, d0 := time.Now(), podsCPU(c), daemonsCPU(c)
	cmd := exec.Command(bin, "reproduce", syn, "--hypotheses", "--seeds", "1-3", "--on", "kube", "--kubeconfig", c.Kubeconfig,
		"--helper-image", c.Images["fiomig"], "--out", out)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var id string
	var log strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if rest, ok := strings.CutPrefix(sc.Text(), "fiomig reproduce: farm "); ok {
			id, _, _ = strings.Cut(rest, ":")
		}
		if strings.HasPrefix(sc.Text(), "hypotheses: ") {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	go io.Copy(io.Discard, stderr)
	cmd.Wait()
	if id == "" {
		t.Fatalf("fiomig reproduce --on kube printed no farm run id before its first result:\n%s", log.String())
	}
	var progress bytes.Buffer
	farm, err := harness.FarmHypotheses(ctx, harness.Reproduction{Out: out}, nil, "", harness.FarmOptions{REST: as, Namespace: "fiomig", Attach: id}, &progress)
	if err != nil {
		t.Fatal(err)
	}
	fj := readFarm(t, farm.Dir)
	t.Logf("farm %s of 24 runs: %.1f s wall, pods %.1f CPU-s (fiomig in them %.1f), cluster daemons %.1f CPU-s; %d shards",
		id, time.Since(t0).Seconds(), podsCPU(c)-c0, fj.CPUS, daemonsCPU(c)-d0, fj.Shards)
	if fj.Shards != 8 || len(fj.Indexes) != 8 || !strings.Contains(progress.String(), "12/12") {
		t.Errorf("farm.json: %d shards, %d ended; progress:\n%s\nwant 8 shards ended and 12/12 (combination, seed) done", fj.Shards, len(fj.Indexes), tail(progress.String(), 3))
	}
	if left := leftOf(ctx, t, cs, id); len(left) > 0 {
		t.Errorf("left of farm %s: %v", id, left)
	}

	inc, err := analysis.LoadIncident(syn)
	if err != nil {
		t.Fatal(err)
	}
	start, _ := strconv.ParseInt(farm.Dir[strings.LastIndexByte(farm.Dir, '-')+1:], 10, 64)
	r := harness.Reproduction{Incident: inc, Name: syn, Operators: inc.OperatorList(), Out: t.TempDir(), StartUnix: start}
	t0, cpu0 := time.Now(), cpuNow()
	local, err := harness.Hypotheses(ctx, r, []int64{1, 2, 3}, 2, r.CommandWith("--hypotheses=true", "--operator=both", "--seeds=1-3"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("local --hypotheses of the 24 runs: %.1f s wall, %.1f CPU-s (2 at a time)", time.Since(t0).Seconds(), cpuNow()-cpu0)
	if !bytes.Equal(local.Markdown, farm.Markdown) || local.ExitCode != farm.ExitCode || local.ExitCode != harness.ExitPass {
		t.Errorf("the farm's reproduce.md (exit %d) differs from the local run's (exit %d, want 0):\n%s", farm.ExitCode, local.ExitCode, farm.Markdown)
	}
	a, b := treeFiles(t, local.Dir), treeFiles(t, farm.Dir)
	if len(a) != 2*24+1 || len(b) != len(a)+1 {
		t.Errorf("local %d files, farm %d; want plan.json and summary.json of 24 runs and reproduce.md (and farm.json)", len(a), len(b))
	}
	for name, x := range a {
		if !bytes.Equal(x, b[name]) {
			t.Errorf("%s: the farm's differs from the local run's", name)
		}
	}
}

// treeFiles are the files under dir by path relative to it.
func treeFiles(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// BenchmarkFarmHypotheses measures fiomig reproduce --hypotheses of an
// incident (fio-mig-1787159565 over seeds 1-10: 32 combinations × 10
// seeds × 2 operators = 640 runs; FIOMIG_BENCH_INCIDENT and
// FIOMIG_BENCH_SEEDS change them for a quicker trial) here with 2 runs at
// once and as a farm at parallelism 2 on a two-kubelet cluster on the same
// machine: each one's wall time, the local run's CPU (this process), the
// farm's CPU where it is spent — its pods (cpuacct of the kubelets'
// cgroup roots), the cluster's daemons and the harness process — and the
// machine's load average around each (the cluster starts after the
// first local run, so that it is not held during it); it fails unless both give the same
// reproduce.md, exit code and run files (docs/farm.md, docs/incidents.md).
func BenchmarkFarmHypotheses(b *testing.B) {
	name, seedsArg := os.Getenv("FIOMIG_BENCH_INCIDENT"), os.Getenv("FIOMIG_BENCH_SEEDS")
	if name == "" {
		name = "fio-mig-1787159565"
	}
	if seedsArg == "" {
		seedsArg = "1-10"
	}
	inc, err := analysis.LoadIncident(name)
	if err != nil {
		b.Fatal(err)
	}
	seeds, err := harness.ParseSeeds(seedsArg)
	if err != nil {
		b.Fatal(err)
	}
	var c *Cluster // started after the first local run: the machine's one real-node cluster is not held during it
	var cs kubernetes.Interface
	var as *rest.Config
	ctx := context.Background()
	runs := float64(len(inc.Combinations()) * len(seeds) * len(inc.OperatorList()))
	load := func() string {
		l, _ := os.ReadFile("/proc/loadavg")
		return strings.Join(strings.Fields(string(l))[:3], " ")
	}
	var localWall, localCPU, farmWall, pods, daemons, self float64
	for b.Loop() {
		r := harness.Reproduction{Incident: inc, Name: name, Operators: inc.OperatorList(), Out: b.TempDir(), StartUnix: time.Now().Unix()}
		command := r.CommandWith("--hypotheses=true", "--operator="+inc.Operators.Value, "--seeds="+seedsArg)
		b.Logf("local: load %s", load())
		t0, p0 := time.Now(), cpuNow()
		local, err := harness.Hypotheses(ctx, r, seeds, 2, command, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		localWall, localCPU = localWall+time.Since(t0).Seconds(), localCPU+cpuNow()-p0
		b.Logf("local: %.0f s wall, %.0f CPU-s; load %s; farm: load %s", time.Since(t0).Seconds(), cpuNow()-p0, load(), load())
		if c == nil {
			c, cs, as = farmCluster(b)
		}
		r.Out = b.TempDir()
		c0, d0, p0, t0 := podsCPU(c), daemonsCPU(c), cpuNow(), time.Now()
		farm, err := harness.FarmHypotheses(ctx, r, seeds, command, harness.FarmOptions{REST: as, Namespace: "fiomig", Image: c.Images["fiomig"], Parallelism: 2}, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		farmWall, pods, daemons, self = farmWall+time.Since(t0).Seconds(), pods+podsCPU(c)-c0, daemons+daemonsCPU(c)-d0, self+cpuNow()-p0
		fj := readFarm(b, farm.Dir)
		b.Logf("farm: %.0f s wall, pods %.0f CPU-s (fiomig in them %.0f), daemons %.0f, harness %.1f; %d shards; load %s; exit %d (local %d)",
			time.Since(t0).Seconds(), podsCPU(c)-c0, fj.CPUS, daemonsCPU(c)-d0, cpuNow()-p0, fj.Shards, load(), farm.ExitCode, local.ExitCode)
		la, fa := treeFiles(b, local.Dir), treeFiles(b, farm.Dir)
		delete(fa, harness.FarmFile)
		same := bytes.Equal(local.Markdown, farm.Markdown) && local.ExitCode == farm.ExitCode && len(la) == len(fa)
		for k, v := range la {
			same = same && bytes.Equal(v, fa[k])
		}
		if !same {
			b.Errorf("the farm's reproduce.md, exit code or run files differ from the local run's (%d files, farm %d)", len(la), len(fa))
		}
		if left := leftOf(ctx, b, cs, fj.RunID); len(left) > 0 {
			b.Errorf("left of farm %s: %v", fj.RunID, left)
		}
	}
	n := float64(b.N)
	b.ReportMetric(localWall/n, "local-wall-s")
	b.ReportMetric(localCPU/n, "local-cpu-s")
	b.ReportMetric(farmWall/n, "farm-wall-s")
	b.ReportMetric(pods/n, "pod-cpu-s")
	b.ReportMetric(daemons/n, "cluster-cpu-s")
	b.ReportMetric(self/n, "harness-cpu-s")
	b.ReportMetric(runs*n/localCPU, "runs/cpu-s-local")
	b.ReportMetric(runs*n/(pods+daemons+self), "runs/cpu-s-farm")
}
