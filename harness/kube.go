package harness

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fiomig/fiomig/backend/kube"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/scenario"
)

// KubeSampleIntervalS is the sample interval fiomig run uses on the kube
// backend unless told otherwise: every sample is one pod-proxy GET per
// host.
const KubeSampleIntervalS = 0.5

// runKube runs s on a Kubernetes cluster: the same run directory and
// report as the simulator, plus fio's results when Kube.FioResults. Only
// the fault kinds the kube backend can inject are taken (the default
// selection is all of them; any other is a UsageError before the cluster
// is touched). No reachable cluster is a UsageError; an interrupt removes
// every object of the run and keeps the run directory.
func runKube(ctx context.Context, s Spec, o Options) (Result, error) {
	kinds, err := s.faultKinds()
	if err != nil {
		return Result{}, Usagef("--faults: %v", err)
	}
	if kinds == nil && s.faultFile() == "" {
		kinds = slices.Sorted(maps.Keys(kube.Kinds))
	}
	for _, k := range kinds {
		if err := kube.SupportsFault(k); err != nil {
			return Result{}, Usagef("--faults: %v", err)
		}
	}
	secret, err := kubeSecret(s.ClusterSecretFile)
	if err != nil {
		return Result{}, UsageError{err}
	}
	k := s.Kube
	start := time.Now()
	cluster, err := kube.New(ctx, kube.Config{
		Kubeconfig: s.Kubeconfig, Namespace: k.Namespace, StorageNamespace: k.StorageNamespace,
		ControlPlaneNamespace: k.ControlPlaneNamespace, SPDKNamespace: k.SPDKNamespace, ClusterSecret: secret,
		StorageClass: k.StorageClass, Seed: s.Seed, Volumes: s.Params.Model.Volumes, VolumeSize: k.VolumeSize,
		FioImage: k.FioImage, HelperImage: k.HelperImage, SetupTimeout: time.Duration(k.SetupTimeoutS * float64(time.Second)),
		Progress: o.Progress,
	})
	if err != nil {
		if ctx.Err() != nil {
			return Result{Interrupted: true}, nil
		}
		return Result{}, UsageError{fmt.Errorf("%s", oneLine(err))}
	}
	p := s.planParams()
	p.Model = record.Model{Hosts: len(cluster.Hosts()), Volumes: s.Params.Model.Volumes}
	k.RunID = cluster.RunID()
	p.Kube = &k
	if k.FioResults {
		p.Workload = record.WorkloadFio
	}
	if o.StartUnix == 0 {
		o.StartUnix = start.Unix()
	}
	res, err := runOn(ctx, cluster, s, p, kinds, kube.SupportsFault, o)
	if err == nil && !res.Interrupted && k.FioResults {
		res, err = KubeFio(ctx, cluster, res, o)
	}
	if cerr := cluster.Close(); cerr != nil {
		w := o.Warn
		if w == nil {
			w = progress(o)
		}
		fmt.Fprintf(w, "fiomig run: cleanup: %v (run fiomig janitor --kubeconfig %s --namespace %s)\n", cerr, s.Kubeconfig, k.Namespace)
	} else {
		fmt.Fprintf(progress(o), "removed every object labelled fiomig.io/run=%s\n", cluster.RunID())
	}
	return res, err
}

// KubeFio stops the fio pods, brings their files into the run directory
// (through the pod proxy: kube.Cluster.CollectFio) and adds the fio checks
// to the summary and the reports: what fiomig run --backend kube does
// after the migrations, and the kube suites after RunOn.
func KubeFio(ctx context.Context, c *kube.Cluster, res Result, o Options) (Result, error) {
	fmt.Fprintln(progress(o), "stopping the fio pods and collecting their results")
	if err := c.StopFio(ctx); err != nil {
		return res, err
	}
	if _, err := c.CollectFio(ctx, res.Dir, 85*time.Second); err != nil {
		fmt.Fprintf(progress(o), "fio results incomplete: %s\n", oneLine(err))
	}
	return scenario.FinishFio(res)
}

// oneLine joins a (possibly joined) error's lines with "; ".
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

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
