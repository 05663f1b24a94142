package framework

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/fiomig/fiomig/backend/kube"
	"github.com/fiomig/fiomig/internal/kubenode"
	"github.com/fiomig/fiomig/internal/kubetest"
	"github.com/fiomig/fiomig/internal/standin"
)

// NodeOptions are the real cluster's: the cached binaries (make kube-bins
// kube-node-bins) and the images of make images (bin/images).
func NodeOptions() (kubenode.Options, error) {
	dir, err := kubetest.BinDir()
	if err != nil {
		return kubenode.Options{}, err
	}
	root, err := kubetest.RepoRoot()
	if err != nil {
		return kubenode.Options{}, err
	}
	return kubenode.Options{BinDir: dir, ImagesDir: filepath.Join(root, "bin", "images")}, nil
}

// NodeDataIP is simulated storage node i's data address in the real
// cluster's network namespace (kubenode.AddAddress): 198.19.255.11, .12,
// .13 — beside the Nodes' own .1 to .3.
func NodeDataIP(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 19, 255, byte(11 + i)}) }

// StartKubeNode starts the kube suites' world on real kubelets: a real
// cluster (internal/kubenode: etcd, kube-apiserver, controller-manager,
// scheduler, and three kubelets with containerd named storage-1..3, the
// simulated storage nodes, which are also the consumer hosts), the CRDs of
// deploy/crds, deploy/rbac and the agent DaemonSet of deploy/agent (its
// image this build's, its /sys the host's simulated sysfs, see
// agentDaemonSet), and the stand-in beside the real kubelets
// (standin.Real) with seed 1 and 3 volumes; it waits until an agent pod is
// Ready on each node. The harness's images are the ones imported into the
// nodes.
func StartKubeNode(ctx context.Context) (*KubeEnv, error) {
	opts, err := NodeOptions()
	if err != nil {
		return nil, err
	}
	opts.Logf = func(f string, a ...any) { fmt.Fprintf(ginkgo.GinkgoWriter, f+"\n", a...) }
	for i := 1; i <= 3; i++ {
		opts.Nodes = append(opts.Nodes, kubenode.NodeSpec{Name: fmt.Sprintf("storage-%d", i)})
	}
	c, err := kubenode.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	e := &KubeEnv{Node: c, Admin: c.Config, HelperImage: c.Images["fiomig"], FioImage: c.Images["fio"]}
	ok := false
	defer func() {
		if !ok {
			e.stop()
		}
	}()
	root, err := kubetest.RepoRoot()
	if err != nil {
		return nil, err
	}
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "deploy", "crds")}, ErrorIfPathMissing: true}); err != nil {
		return nil, fmt.Errorf("install deploy/crds: %w", err)
	}
	cs := kubernetes.NewForConfigOrDie(c.Config)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "simplyblock"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	rbac, _ := filepath.Glob(filepath.Join(root, "deploy", "rbac", "*.yaml"))
	if err := kube.ApplyManifests(ctx, c.Config, rbac...); err != nil {
		return nil, err
	}
	dataIPs := []netip.Addr{}
	roots := map[string]string{}
	for i, n := range c.Nodes {
		if err := c.AddAddress(NodeDataIP(i)); err != nil {
			return nil, err
		}
		dataIPs = append(dataIPs, NodeDataIP(i))
		roots[n.Name] = n.KubeletRoot
	}
	sysDir := filepath.Join(kubenode.BaseDir, "standin")
	e.StandIn, err = standin.Start(ctx, standin.Config{Rest: c.Config, Seed: 1, Volumes: 3, AllowedHosts: true,
		Logf: func(f string, a ...any) { fmt.Fprintf(ginkgo.GinkgoWriter, f+"\n", a...) },
		Real: &standin.Real{Listen: c.Listen, NFT: c.NFT, DataIPs: dataIPs, Dir: sysDir, KubeletRoots: roots,
			PauseImage: c.Images["pause"], ShellImage: c.Images["fio"]}})
	if err != nil {
		return nil, err
	}
	ds, err := agentDaemonSet(filepath.Join(root, "deploy", "agent", "daemonset.yaml"), c.Images["fiomig"], filepath.Join(sysDir, "sysfs"))
	if err != nil {
		return nil, err
	}
	if _, err := cs.AppsV1().DaemonSets(ds.Namespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	if err := e.harnessAccess(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		pods, err := cs.CoreV1().Pods("fiomig").List(ctx, metav1.ListOptions{LabelSelector: kube.LabelAgent + "=" + kube.AgentName})
		ready := 0
		var states []string
		readyOn := map[string]bool{}
		if err == nil {
			for _, p := range pods.Items {
				if PodReady(&p) {
					ready++
					readyOn[p.Spec.NodeName] = true
				}
				states = append(states, fmt.Sprintf("%s on %s: %s%s", p.Name, p.Spec.NodeName, p.Status.Phase, podWhy(&p)))
			}
		}
		if ready >= len(c.Nodes) {
			break
		}
		if time.Now().After(deadline) {
			// The kubelet's log of each node without a Ready agent: what a
			// CI log's tail needs to tell a slow start from a broken one.
			var logs []string
			for i, n := range c.Nodes {
				if !readyOn[n.Name] {
					logs = append(logs, fmt.Sprintf("kubelet-%d (%s) log:\n%s", i+1, n.Name, c.Log(fmt.Sprintf("kubelet-%d", i+1), 12)))
				}
			}
			return nil, fmt.Errorf("real nodes: %d of %d agent pods Ready after 3 min (%s; stand-in errors: %v)\n%s",
				ready, len(c.Nodes), strings.Join(states, ", "), e.StandIn.Errors(), strings.Join(logs, "\n"))
		}
		time.Sleep(500 * time.Millisecond)
	}
	ok = true
	return e, nil
}

// podWhy is what keeps a pod from Ready, as kubectl describe shows it:
// each container's waiting or terminated reason and message, and the
// message of a false condition; "" for a Ready pod.
func podWhy(p *corev1.Pod) string {
	if PodReady(p) {
		return ""
	}
	var why []string
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			why = append(why, fmt.Sprintf("%s: %s", c.Type, c.Message))
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			why = append(why, fmt.Sprintf("container %s waiting: %s %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message))
		case cs.State.Terminated != nil:
			why = append(why, fmt.Sprintf("container %s terminated: %s (exit %d) %s", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode, cs.State.Terminated.Message))
		case cs.RestartCount > 0:
			why = append(why, fmt.Sprintf("container %s restarted %d times", cs.Name, cs.RestartCount))
		}
	}
	if len(why) == 0 {
		return ""
	}
	return " (" + strings.Join(why, "; ") + ")"
}

// agentDaemonSet is deploy/agent's DaemonSet as shipped but for two
// things: its image is this build's fiomig image, and its /sys volume is
// the host's simulated sysfs — a hostPath of sysDir with subPathExpr
// $(NODE_NAME) (the DaemonSet's own downward-API variable), since the
// three nodes share this machine's file system.
func agentDaemonSet(path, image, sysDir string) (*appsv1.DaemonSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(b, &ds); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	spec := &ds.Spec.Template.Spec
	found := false
	for i := range spec.Volumes {
		if v := &spec.Volumes[i]; v.HostPath != nil && v.HostPath.Path == "/sys" {
			v.HostPath.Path = sysDir
			found = true
			for j := range spec.Containers {
				spec.Containers[j].Image = image
				spec.Containers[j].ImagePullPolicy = corev1.PullNever
				for k := range spec.Containers[j].VolumeMounts {
					if m := &spec.Containers[j].VolumeMounts[k]; m.Name == v.Name {
						m.SubPathExpr = "$(NODE_NAME)"
					}
				}
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("%s: no hostPath /sys volume to point at the simulated sysfs", path)
	}
	return &ds, nil
}

// PodReady reports the pod's Ready condition.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// harnessAccess sets Harness, Kubeconfig (both the fiomig-harness
// ServiceAccount, impersonated) and SecretFile.
func (e *KubeEnv) harnessAccess() error {
	work, err := os.MkdirTemp("", "fiomig-kube-")
	if err != nil {
		return err
	}
	e.work = work
	e.Harness = rest.CopyConfig(e.Admin)
	e.Harness.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:fiomig:fiomig-harness",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:fiomig", "system:authenticated"}}
	e.SecretFile = filepath.Join(work, "secret.json")
	if err := os.WriteFile(e.SecretFile, e.StandIn.SecretJSON(), 0o600); err != nil {
		return err
	}
	kc := e.Node.Kubeconfig
	if e.API != nil {
		kc = e.API.Kubeconfig
	}
	e.Kubeconfig, err = impersonatingKubeconfig(kc, filepath.Join(work, "harness.kubeconfig"),
		"system:serviceaccount:fiomig:fiomig-harness", "system:serviceaccounts", "system:serviceaccounts:fiomig")
	return err
}

// stop stops the real cluster or the stand-in and the control plane;
// after a real cluster it checks that nothing of it is left on the
// machine (kubenode.Leftovers).
func (e *KubeEnv) stop() error {
	var errs []error
	if e.Node != nil {
		// The real cluster first: its pods hold the stand-in's FUSE
		// volumes and sysfs trees (Close unmounts them, served or not).
		did, err := e.Node.Close()
		fmt.Fprintf(ginkgo.GinkgoWriter, "real cluster closed; removed: %s\n", strings.Join(did, ", "))
		errs = append(errs, err)
	}
	if e.StandIn != nil {
		errs = append(errs, e.StandIn.Close())
	}
	if e.API != nil {
		errs = append(errs, e.API.Stop())
	}
	if e.Node != nil {
		// As Close found it before releasing the machine's cluster lock.
		if left := e.Node.Remaining(); len(left) > 0 {
			errs = append(errs, fmt.Errorf("left on the machine after the real cluster:\n%s", strings.Join(left, "\n")))
		}
	}
	if e.work != "" {
		os.RemoveAll(e.work)
	}
	return errors.Join(errs...)
}

// StopKubeNode stops what StartKubeNode started and fails if anything of
// the real cluster is left on the machine.
func (e *KubeEnv) StopKubeNode() error { return e.stop() }
