package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fiomig/fiomig/backend/kube"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
	"github.com/fiomig/fiomig/scenario"
)

// kubeFlags are fiomig run's flags for --backend kube.
type kubeFlags struct {
	backend          string
	kubeconfig       string
	namespace        string
	storageNamespace string
	cpNamespace      string
	spdkNamespace    string
	secretFile       string
	storageClass     string
	volumeSize       string
	fioImage         string
	helperImage      string
	setupTimeout     time.Duration
	fioResults       bool
}

func (k *kubeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&k.backend, "backend", "sim", "`sim`: the embedded simulator; kube: a real Kubernetes cluster running simplyblock (needs --kubeconfig and --storage-class; see README \"Running against a real cluster\")")
	fs.StringVar(&k.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "with --backend kube: kubeconfig `file` (default $KUBECONFIG)")
	fs.StringVar(&k.namespace, "namespace", "fiomig", "with --backend kube: `namespace` of the run's PVCs and pods and of the agent DaemonSet")
	fs.StringVar(&k.storageNamespace, "storage-namespace", "simplyblock", "with --backend kube: the StorageCluster's `namespace` (its StorageNodeSets; the run's VolumeMigrations and the operator's Jobs)")
	fs.StringVar(&k.cpNamespace, "control-plane-namespace", "", "with --backend kube: `namespace` of the control-plane (webappapi) pods (default: --storage-namespace)")
	fs.StringVar(&k.spdkNamespace, "spdk-namespace", "", "with --backend kube: `namespace` of the storage nodes' SPDK pods (default: --storage-namespace)")
	fs.StringVar(&k.secretFile, "cluster-secret-file", "", "with --backend kube: `file` holding the control plane's cluster secret, bare or as simplyblock's secret.json (default: $"+kube.SecretEnv+"); it is never printed or recorded")
	fs.StringVar(&k.storageClass, "storage-class", "", "with --backend kube: StorageClass `name` of the volumes' PVCs")
	fs.StringVar(&k.volumeSize, "volume-size", "1Gi", "with --backend kube: each PVC's `size`")
	fs.StringVar(&k.fioImage, "fio-image", "ghcr.io/fiomig/fio:3.33-3", "with --backend kube: `image` of the fio container (make images builds it; an image without fio installs it with apk)")
	fs.StringVar(&k.helperImage, "helper-image", "ghcr.io/fiomig/fiomig:latest", "with --backend kube: `image` whose entry point is fiomig (fio log sidecar, nft helper; make images builds it)")
	fs.BoolVar(&k.fioResults, "fio-results", true, "with --backend kube: stop the fio pods after the run, bring their results and per-I/O logs into <run dir>/fio/ and judge them (the fio-* checks)")
	fs.DurationVar(&k.setupTimeout, "setup-timeout", 5*time.Minute, "with --backend kube: how long to wait for PVCs to bind and pods to run")
}

// kubeFaultHelp is the fault kinds the kube backend can inject, for --help.
func kubeFaultHelp() string {
	s := "\nFaults on --backend kube: only these kinds (the default selection is all of them; any\nother kind, in --faults or --fault-file, is refused before the run starts):\n"
	for _, k := range slices.Sorted(maps.Keys(kube.Kinds)) {
		s += fmt.Sprintf("  %-19s %s\n", k, kube.Kinds[k])
	}
	return s
}

// kubeSampleIntervalS is --sample-interval's default on --backend kube.
const kubeSampleIntervalS = 0.5

// runKube runs the migrations scenario on a Kubernetes cluster: the same
// run directory and report as the simulator. No reachable cluster is a
// one-line error and exit 2; SIGINT/SIGTERM removes every object of the
// run, keeps the run directory and exits 130.
func runKube(f *runFlags, fs *flag.FlagSet, stdout, stderr io.Writer) int {
	k := f.kube
	switch {
	case k.kubeconfig == "":
		fmt.Fprintln(stderr, "fiomig run: --backend kube needs --kubeconfig (or $KUBECONFIG)")
		return exitUsage
	case k.storageClass == "":
		fmt.Fprintln(stderr, "fiomig run: --backend kube needs --storage-class")
		return exitUsage
	case f.p.Workload != scenario.WorkloadSim:
		fmt.Fprintln(stderr, "fiomig run: --workload applies to the simulator; --backend kube always runs real fio pods")
		return exitUsage
	}
	secret, err := kubeSecret(k.secretFile)
	if err != nil {
		fmt.Fprintf(stderr, "fiomig run: %v\n", err)
		return exitUsage
	}
	// Fault kinds: those the kube backend can inject (kube.Kinds); the
	// default selection is all of them, any other kind is refused here,
	// before the cluster is touched.
	kinds := f.faultKinds
	if kinds == nil {
		kinds = slices.Sorted(maps.Keys(kube.Kinds))
	}
	for _, k := range kinds {
		if err := kube.SupportsFault(k); err != nil {
			fmt.Fprintf(stderr, "fiomig run: --faults: %v\n", err)
			return exitUsage
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmdline := reproduceCommand(fs)
	fmt.Fprintln(stdout, "fiomig run — parameters:")
	fs.VisitAll(func(fl *flag.Flag) { fmt.Fprintf(stdout, "  --%-24s %s\n", fl.Name, fl.Value.String()) })
	fmt.Fprintf(stdout, "  reproduce with: %s\n", cmdline)
	start := time.Now()
	cluster, err := kube.New(ctx, kube.Config{
		Kubeconfig: k.kubeconfig, Namespace: k.namespace, StorageNamespace: k.storageNamespace,
		ControlPlaneNamespace: k.cpNamespace, SPDKNamespace: k.spdkNamespace, ClusterSecret: secret,
		StorageClass: k.storageClass, Seed: f.seed, Volumes: f.p.Model.Volumes, VolumeSize: k.volumeSize,
		FioImage: k.fioImage, HelperImage: k.helperImage, SetupTimeout: k.setupTimeout, Progress: stdout,
	})
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "fiomig run: interrupted during setup; the run's objects were removed")
			return exitInterrupted
		}
		fmt.Fprintf(stderr, "fiomig run: %s\n", oneLine(err))
		return exitUsage
	}
	params := f.params()
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if !given["sample-interval"] {
		// Every sample is one pod-proxy GET per host: 0.5 s unless asked.
		params.SampleIntervalS = kubeSampleIntervalS
	}
	if !given["settle-sample-interval"] {
		params.SettleSampleIntervalS = params.SampleIntervalS
	}
	params.Model = record.Model{Hosts: len(cluster.Hosts()), Volumes: params.Model.Volumes}
	params.Kube = &record.KubeParams{Namespace: k.namespace, StorageNamespace: k.storageNamespace, StorageClass: k.storageClass,
		VolumeSize: k.volumeSize, FioImage: k.fioImage, HelperImage: k.helperImage, SetupTimeoutS: k.setupTimeout.Seconds(),
		FioResults: k.fioResults, RunID: cluster.RunID()}
	if k.fioResults {
		params.Workload = scenario.WorkloadFio
	}
	sched, serr := scenario.FaultSchedule(f.seed, params, cluster.Topology(), kinds, f.faultFile)
	if serr == nil {
		for _, s := range sched {
			if err := kube.SupportsFault(s.Fault); err != nil {
				serr = fmt.Errorf("--fault-file %s: %w", f.faultFile, err)
				break
			}
		}
	}
	if serr != nil {
		cluster.Close()
		fmt.Fprintf(stderr, "fiomig run: %v\n", serr)
		return exitUsage
	}
	fmt.Fprintf(stdout, "  faults: %d scheduled (%s)\n", len(sched), f.faultSelection())
	res, err := scenario.Run(ctx, cluster, scenario.Config{
		Plan:   record.Plan{Tool: "fiomig", Scenario: "migrations", Seed: f.seed, Command: cmdline, Params: params, Faults: sched},
		OutDir: f.out, StartUnix: start.Unix(), Progress: stdout,
	})
	if err == nil && !res.Interrupted && k.fioResults {
		res, err = kubeFio(ctx, cluster, res, stdout)
	}
	cerr := cluster.Close()
	if cerr != nil {
		fmt.Fprintf(stderr, "fiomig run: cleanup: %v (run fiomig janitor --kubeconfig %s --namespace %s)\n", cerr, k.kubeconfig, k.namespace)
	} else {
		fmt.Fprintf(stdout, "removed every object labelled fiomig.io/run=%s\n", cluster.RunID())
	}
	if err != nil {
		fmt.Fprintf(stderr, "fiomig run: %v\n", err)
		if res.Dir != "" {
			fmt.Fprintf(stderr, "fiomig run: what was recorded is in %s\n", res.Dir)
		}
		return exitUsage
	}
	if res.Interrupted {
		fmt.Fprintf(stderr, "fiomig run: interrupted; the timeline recorded so far is in %s\n", filepath.Join(res.Dir, record.TimelineFile))
		return exitInterrupted
	}
	return printVerdicts(stdout, res.Dir, res.Summary)
}

// kubeSecret reads the control plane's cluster secret from file, else from
// $FIOMIG_CLUSTER_SECRET. Neither is an error naming both (kube.ErrNoSecret);
// the secret itself is never printed.
func kubeSecret(file string) ([]byte, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--cluster-secret-file: %w", err)
		}
		if len(strings.TrimSpace(string(b))) == 0 {
			return nil, fmt.Errorf("--cluster-secret-file %s is empty: %w", file, kube.ErrNoSecret)
		}
		return b, nil
	}
	if v := os.Getenv(kube.SecretEnv); strings.TrimSpace(v) != "" {
		return []byte(v), nil
	}
	return nil, fmt.Errorf("--backend kube: %w", kube.ErrNoSecret)
}

// oneLine joins a (possibly joined) error's lines with "; ".
func oneLine(err error) string {
	var b []byte
	for _, r := range err.Error() {
		if r == '\n' {
			b = append(b, "; "...)
			continue
		}
		b = append(b, string(r)...)
	}
	return string(b)
}

// kubeFio stops the fio pods, brings their files into the run directory
// and adds the fio checks to the summary and the reports.
func kubeFio(ctx context.Context, c *kube.Cluster, res scenario.Result, stdout io.Writer) (scenario.Result, error) {
	fmt.Fprintln(stdout, "stopping the fio pods and collecting their results")
	if err := c.StopFio(ctx); err != nil {
		return res, err
	}
	if _, err := c.CollectFio(ctx, res.Dir, 85*time.Second); err != nil {
		fmt.Fprintf(stdout, "fio results incomplete: %s\n", oneLine(err))
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
