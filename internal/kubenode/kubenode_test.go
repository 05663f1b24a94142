package kubenode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fiomig/fiomig/internal/kubetest"
	"github.com/fiomig/fiomig/internal/tooltest"
)

// repoOptions are the repo's binaries (.cache/kube/bin, or
// $FIOMIG_KUBE_BINS) and images (bin/images).
func repoOptions() (Options, error) {
	root, err := kubetest.RepoRoot()
	if err != nil {
		return Options{}, err
	}
	bin := os.Getenv(kubetest.BinsEnv)
	if bin == "" {
		bin = filepath.Join(root, ".cache", "kube", "bin")
	}
	return Options{BinDir: bin, ImagesDir: filepath.Join(root, "bin", "images")}, nil
}

// testOptions are repoOptions logging to tb, or tb skipped (failed under
// FIOMIG_REQUIRE_TOOLS=1) naming what is missing.
func testOptions(tb testing.TB) Options {
	tb.Helper()
	opts, err := repoOptions()
	if err != nil {
		tb.Fatal(err)
	}
	opts.Logf = tb.Logf
	tooltest.Require(tb, Available(opts))
	return opts
}

// runPod creates pod and waits for it to end; it returns its phase and
// its container's log.
func runPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod *corev1.Pod) (corev1.PodPhase, string) {
	t.Helper()
	if _, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	var p *corev1.Pod
	for time.Now().Before(deadline) {
		var err error
		if p, err = cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	b, err := cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Errorf("logs of %s: %v", pod.Name, err)
	}
	return p.Status.Phase, string(b)
}

// TestNodeRunsTheImages starts a real cluster with two kubelets, runs the
// fiomig image (as uid 65534, read-only root) and the fio image in real
// containers on each node, reads their output through the API server's
// pod logs, and after Close finds nothing of the cluster left.
func TestNodeRunsTheImages(t *testing.T) {
	opts := testOptions(t)
	opts.Nodes = []NodeSpec{{Name: "node-1", Labels: map[string]string{"fiomig.io/consumer": "true"}}, {Name: "node-2"}}
	ctx := context.Background()
	t0 := time.Now()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster of %d nodes ready in %.1f s", len(c.Nodes), time.Since(t0).Seconds())
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	yes, uid := true, int64(65534)
	for _, n := range c.Nodes {
		phase, log := runPod(ctx, t, cs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "fiomig-version-" + n.Name, Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: n.Name, RestartPolicy: corev1.RestartPolicyNever,
				SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes},
				Containers: []corev1.Container{{Name: "fiomig", Image: c.Images["fiomig"], ImagePullPolicy: corev1.PullNever,
					Args:            []string{"--version"},
					SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: &yes, RunAsUser: &uid}}}},
		})
		if phase != corev1.PodSucceeded || !strings.HasPrefix(log, "fiomig ") {
			t.Errorf("fiomig --version on %s: phase %s, log %q", n.Name, phase, log)
		}
		t.Logf("%s: fiomig --version as uid %d, read-only root: %s, %q", n.Name, uid, phase, strings.TrimSpace(log))
		phase, log = runPod(ctx, t, cs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "fio-version-" + n.Name, Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: n.Name, RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "fio", Image: c.Images["fio"], ImagePullPolicy: corev1.PullNever,
					Command: []string{"sh", "-c", "fio --version && cp /usr/bin/fio /dev/null && sleep 0.1 && echo sh-ok"}}}},
		})
		if phase != corev1.PodSucceeded || !strings.Contains(log, "fio-3") || !strings.Contains(log, "sh-ok") {
			t.Errorf("fio --version on %s: phase %s, log %q", n.Name, phase, log)
		}
		t.Logf("%s: fio --version: %s, %q", n.Name, phase, strings.TrimSpace(log))
	}
	logRSS(t, c)
	if t.Failed() {
		for i := range c.Nodes {
			t.Logf("kubelet-%d log:\n%s", i+1, c.Log(fmt.Sprintf("kubelet-%d", i+1), 30))
		}
	}
	did, err := c.Close()
	closed = true
	if err != nil {
		t.Errorf("Close: %v", err)
	}
	t.Logf("Close removed: %s", strings.Join(did, ", "))
	if left := c.Remaining(); len(left) > 0 {
		t.Errorf("left after Close:\n%s", strings.Join(left, "\n"))
	}
}

// logRSS logs the resident memory of the cluster's daemons and of every
// other process naming BaseDir (the shims), MiB.
func logRSS(t *testing.T, c *Cluster) {
	t.Helper()
	rss := func(pid int) float64 {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		for l := range strings.Lines(string(b)) {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return kb / 1024
			}
		}
		return 0
	}
	var parts []string
	total := 0.0
	c.mu.Lock()
	procs := append([]proc(nil), c.ledger.Procs...)
	c.mu.Unlock()
	for _, p := range procs {
		m := rss(p.Pid)
		total += m
		parts = append(parts, fmt.Sprintf("%s %.0f", p.Name, m))
	}
	shims := 0.0
	for _, p := range referring() {
		if !slices.ContainsFunc(procs, func(q proc) bool { return q.Pid == p.Pid }) {
			shims += rss(p.Pid)
		}
	}
	t.Logf("RSS MiB: %s, shims %.0f; total %.0f", strings.Join(parts, ", "), shims, total+shims)
}
