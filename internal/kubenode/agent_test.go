package kubenode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/fiomig/fiomig/backend/kube"
	"github.com/fiomig/fiomig/backend/kube/agent"
	"github.com/fiomig/fiomig/internal/kubetest"
)

// TestAgentDaemonSetOnRealPods applies deploy/rbac/ and deploy/agent/ as
// shipped (only the image is this build's fiomig image) to a cluster of
// two real kubelets of which one is a consumer host: the real DaemonSet
// controller and scheduler place one agent pod, on the consumer Node
// only; it runs as shipped (uid 65534, read-only root, no capabilities),
// passes its readiness probe, and answers /v1/host and /v1/sample
// through the API server's pod proxy, naming its Node.
func TestAgentDaemonSetOnRealPods(t *testing.T) {
	opts := testOptions(t)
	opts.Nodes = []NodeSpec{{Name: "consumer-1", Labels: map[string]string{"fiomig.io/consumer": "true"}}, {Name: "other-1"}}
	ctx := context.Background()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if left := c.Remaining(); len(left) > 0 {
			t.Errorf("left after Close:\n%s", strings.Join(left, "\n"))
		}
	}()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	// The storage namespace exists on a simplyblock cluster; the harness's
	// Roles there need it.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "simplyblock"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	root, _ := kubetest.RepoRoot()
	rbac, _ := filepath.Glob(filepath.Join(root, "deploy", "rbac", "*.yaml"))
	if err := kube.ApplyManifests(ctx, c.Config, rbac...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "deploy", "agent", "daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(b, &ds); err != nil {
		t.Fatalf("deploy/agent/daemonset.yaml: %v", err)
	}
	for i := range ds.Spec.Template.Spec.Containers {
		ds.Spec.Template.Spec.Containers[i].Image = c.Images["fiomig"]
	}
	if _, err := cs.AppsV1().DaemonSets(ds.Namespace).Create(ctx, &ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sel := "app.kubernetes.io/name=fiomig-agent"
	var pods []corev1.Pod
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		l, err := cs.CoreV1().Pods(ds.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		pods = l.Items
		if len(pods) == 1 && podReady(&pods[0]) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	logPods(t, c, cs)
	if len(pods) != 1 || !podReady(&pods[0]) {
		t.Fatalf("agent pods: %d, want 1 Ready:\n%s", len(pods), podStates(pods))
	}
	p := pods[0]
	if p.Spec.NodeName != "consumer-1" {
		t.Errorf("agent pod on %s, want consumer-1 (the only Node labelled fiomig.io/consumer=true)", p.Spec.NodeName)
	}
	hostB, err := cs.CoreV1().Pods(p.Namespace).ProxyGet("http", p.Name, "9560", "/v1/host", nil).DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET /v1/host through the pod proxy: %v", err)
	}
	var host agent.HostInfo
	if err := json.Unmarshal(hostB, &host); err != nil || host.Node != "consumer-1" {
		t.Errorf("/v1/host = %s (%v), want node consumer-1", hostB, err)
	}
	if _, err := cs.CoreV1().Pods(p.Namespace).ProxyGet("http", p.Name, "9560", "/v1/sample", nil).DoRaw(ctx); err != nil {
		t.Errorf("GET /v1/sample through the pod proxy: %v", err)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podStates(pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "%s on %s: %s", p.Name, p.Spec.NodeName, p.Status.Phase)
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Waiting != nil {
				fmt.Fprintf(&b, " %s: %s %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// logPods logs `kubectl get pods -A -o wide` when kubectl is installed,
// else the pods' states.
func logPods(t *testing.T, c *Cluster, cs kubernetes.Interface) {
	t.Helper()
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		out, err := exec.Command(kubectl, "--kubeconfig", c.Kubeconfig, "get", "pods", "-A", "-o", "wide").CombinedOutput()
		t.Logf("kubectl get pods -A -o wide (%v):\n%s", err, out)
		return
	}
	l, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err == nil {
		t.Logf("pods:\n%s", podStates(l.Items))
	}
}
