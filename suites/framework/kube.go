package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/types"

	"github.com/fiomig/fiomig/backend"
	"github.com/fiomig/fiomig/backend/kube"
	"github.com/fiomig/fiomig/internal/kubenode"
	"github.com/fiomig/fiomig/internal/kubetest"
	"github.com/fiomig/fiomig/internal/standin"
)

// KubeEnv is the kube suites' world: a real etcd + kube-apiserver with
// RBAC (internal/kubetest), deploy/rbac and deploy/agent applied, and the
// stand-in of internal/standin playing simplyblock, kubelet, scheduler
// and provisioner. The harness speaks only to the API server, as the
// fiomig-harness ServiceAccount (impersonated), so the suites prove the
// RBAC of deploy/rbac is enough.
//
// On real kubelets (StartKubeNode) API is nil and Node is the real
// cluster; Admin is either's admin config.
type KubeEnv struct {
	API     *kubetest.Env
	Node    *kubenode.Cluster
	Admin   *rest.Config
	StandIn *standin.StandIn
	// Harness is the harness ServiceAccount's client config; Kubeconfig
	// the same as a kubeconfig file (for fiomig run subprocesses).
	Harness    *rest.Config
	Kubeconfig string
	// SecretFile holds the control plane's secret.json (for
	// --cluster-secret-file).
	SecretFile string
	// HelperImage and FioImage are the runs' images ("": the backend's
	// defaults; on real kubelets the ones imported into the nodes).
	HelperImage, FioImage string
	cfg                   *envconf.Config
	work                  string
}

type kubeEnvKey struct{}

// Env funcs (sigs.k8s.io/e2e-framework types.EnvFunc), called from Ginkgo
// setup nodes: StartKube before the kube specs, StopKube after them. They
// pass the KubeEnv in the context.
var (
	_ types.EnvFunc = StartKube
	_ types.EnvFunc = StopKube
)

// StartKube starts the control plane from the cached binaries (make
// kube-bins), applies deploy/rbac and deploy/agent, starts the stand-in
// with seed 1, and waits until an agent runs on every consumer host.
func StartKube(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	dir, err := kubetest.BinDir()
	if err != nil {
		return ctx, err
	}
	work, err := os.MkdirTemp("", "fiomig-kube-")
	if err != nil {
		return ctx, err
	}
	api, err := kubetest.StartIn(dir, work)
	if err != nil {
		return ctx, err
	}
	e := &KubeEnv{API: api, Admin: api.Config, cfg: envconf.NewWithKubeConfig(api.Kubeconfig)}
	ctx = context.WithValue(ctx, kubeEnvKey{}, e)
	root, err := kubetest.RepoRoot()
	if err != nil {
		return ctx, err
	}
	cs := kubernetes.NewForConfigOrDie(api.Config)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "simplyblock"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctx, err
	}
	files, _ := filepath.Glob(filepath.Join(root, "deploy", "rbac", "*.yaml"))
	agent, _ := filepath.Glob(filepath.Join(root, "deploy", "agent", "*.yaml"))
	if err := kube.ApplyManifests(ctx, api.Config, append(files, agent...)...); err != nil {
		return ctx, err
	}
	// 3 volumes, one per host: the shape of the specs' runs (and of the
	// simulator backend they are compared with). Their volumes admit only
	// their consumers' CSI host NQNs, as a DHCHAP pool's do: the harness
	// must pass host_nqn for their connect strings.
	e.StandIn, err = standin.Start(ctx, standin.Config{Rest: api.Config, Seed: 1, Volumes: 3, AllowedHosts: true,
		Logf: func(f string, a ...any) { fmt.Fprintf(ginkgo.GinkgoWriter, f+"\n", a...) }})
	if err != nil {
		return ctx, err
	}
	e.Harness = api.ServiceAccount("fiomig", "fiomig-harness")
	// The secret as a user hands it over: simplyblock's secret.json, read
	// by the user from Secret simplyblock-csi-secret-v2 (the harness may
	// not read Secrets).
	e.SecretFile = filepath.Join(work, "secret.json")
	if err := os.WriteFile(e.SecretFile, e.StandIn.SecretJSON(), 0o600); err != nil {
		return ctx, err
	}
	if e.Kubeconfig, err = impersonatingKubeconfig(api.Kubeconfig, filepath.Join(work, "harness.kubeconfig"),
		"system:serviceaccount:fiomig:fiomig-harness", "system:serviceaccounts", "system:serviceaccounts:fiomig"); err != nil {
		return ctx, err
	}
	// The agent DaemonSet's pods, one per consumer host.
	deadline := time.Now().Add(60 * time.Second)
	for {
		pods, err := cs.CoreV1().Pods("fiomig").List(ctx, metav1.ListOptions{LabelSelector: kube.LabelAgent + "=" + kube.AgentName})
		running := 0
		if err == nil {
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
		}
		if running >= len(e.StandIn.NodeNames()) {
			break
		}
		if time.Now().After(deadline) {
			return ctx, fmt.Errorf("kube env: %d of %d agent pods Running after 60 s (stand-in errors: %v)", running, len(e.StandIn.NodeNames()), e.StandIn.Errors())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return ctx, nil
}

// StopKube stops the stand-in and the control plane of ctx's KubeEnv.
func StopKube(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	e := Kube(ctx)
	if e == nil {
		return ctx, nil
	}
	return ctx, e.stop()
}

// Kube is the KubeEnv StartKube put in ctx (nil when none).
func Kube(ctx context.Context) *KubeEnv {
	e, _ := ctx.Value(kubeEnvKey{}).(*KubeEnv)
	return e
}

// impersonatingKubeconfig writes a copy of the admin kubeconfig whose user
// acts as user with groups (kubeconfig "as" and "as-groups").
func impersonatingKubeconfig(admin, out, user string, groups ...string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		return "", err
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate, a.ImpersonateGroups = user, groups
	}
	return out, clientcmd.WriteToFile(*cfg, out)
}

// NewKubeCluster sets up a kube backend run on e as the harness account:
// volumes PVCs of the stand-in's StorageClass, run id id.
func (e *KubeEnv) NewKubeCluster(ctx context.Context, id string, seed int64, volumes int) (backend.Cluster, error) {
	return kube.New(ctx, kube.Config{REST: e.Harness, Namespace: "fiomig", StorageNamespace: e.StandIn.StorageNamespace(),
		ClusterSecret: e.StandIn.SecretJSON(), FioImage: e.FioImage, HelperImage: e.HelperImage,
		StorageClass: e.StandIn.StorageClass(), RunID: id, Seed: seed, Volumes: volumes,
		SetupTimeout: 90 * time.Second, Progress: ginkgo.GinkgoWriter})
}

// Labelled lists every object on the API server, of every resource type
// that can be listed, labelled fiomig.io/run=id, as "kind ns/name" — what a
// run must not leave behind.
func (e *KubeEnv) Labelled(ctx context.Context, id string) ([]string, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(e.Admin)
	if err != nil {
		return nil, err
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	quiet := rest.CopyConfig(e.Admin)
	quiet.WarningHandler = rest.NoWarnings{} // deprecated kinds (Endpoints, ComponentStatus) are listed too
	dyn, err := dynamic.NewForConfig(quiet)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !contains(r.Verbs, "list") {
				continue
			}
			items, err := dyn.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelRun + "=" + id})
			if err != nil {
				return nil, fmt.Errorf("list %s: %w", r.Name, err)
			}
			for _, it := range items.Items {
				out = append(out, fmt.Sprintf("%s %s/%s", r.Kind, it.GetNamespace(), it.GetName()))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
