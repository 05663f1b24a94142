package standin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fiomig/fiomig/backend/kube/agent"
	"github.com/fiomig/fiomig/internal/kubetest"
	"github.com/fiomig/fiomig/internal/standin"
	"github.com/fiomig/fiomig/internal/tooltest"
	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/sim"
)

const ns = "fiomig"

type fixture struct {
	t   *testing.T
	ctx context.Context
	cs  *kubernetes.Clientset
	dyn dynamic.Interface
	si  *standin.StandIn
	cfg *rest.Config
	hc  *http.Client
}

func start(t *testing.T) *fixture {
	t.Helper()
	tooltest.Require(t, standin.NetnsAvailable())
	env := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	si, err := standin.Start(ctx, standin.Config{Rest: env.Config, Seed: 1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := si.Close(); err != nil {
			t.Errorf("stand-in close: %v", err)
		}
	})
	f := &fixture{t: t, ctx: ctx, si: si, cfg: env.Config}
	if f.hc, err = rest.HTTPClientFor(env.Config); err != nil {
		t.Fatal(err)
	}
	if f.cs, err = kubernetes.NewForConfig(env.Config); err != nil {
		t.Fatal(err)
	}
	if f.dyn, err = dynamic.NewForConfig(env.Config); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return f
}

// on is f for subtest t: its helpers report to and stop t, not the parent
// (FailNow from a subtest on its parent's T is a Go test error).
func (f *fixture) on(t *testing.T) *fixture {
	c := *f
	c.t = t
	return &c
}

// eventually polls cond every 100 ms for up to 60 s (a wait for the
// stand-in's loops, not a timing assertion).
func (f *fixture) eventually(what string, cond func() (bool, error)) {
	f.t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(f.ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	})
	if err != nil {
		f.t.Fatalf("waiting for %s: %v (last error: %v; stand-in errors: %v)", what, err, last, f.si.Errors())
	}
}

func (f *fixture) runningPod(name string) *corev1.Pod {
	f.t.Helper()
	var p *corev1.Pod
	f.eventually("pod "+name+" Running", func() (bool, error) {
		var err error
		p, err = f.cs.CoreV1().Pods(ns).Get(f.ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "", err
	})
	return p
}

func (f *fixture) proxyGet(ns, pod string, port int, path string) ([]byte, error) {
	return f.cs.CoreV1().Pods(ns).ProxyGet("http", pod, fmt.Sprint(port), path, nil).DoRaw(f.ctx)
}

// volumePod creates PVC <name>-pvc and a pod using it pinned to host by
// required node affinity, and waits until it runs.
func (f *fixture) volumePod(name, host string) (*corev1.Pod, *corev1.PersistentVolume) {
	f.t.Helper()
	sc := f.si.StorageClass()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name + "-pvc", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &sc, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := f.cs.CoreV1().PersistentVolumeClaims(ns).Create(f.ctx, pvc, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"fiomig.io/run": "t"}},
		Spec: corev1.PodSpec{
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{host}}}}}}}},
			Containers: []corev1.Container{{Name: "fio", Image: "alpine:3", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}},
				{Name: "logs", Image: "fiomig:dev", Ports: []corev1.ContainerPort{{Name: "logs", ContainerPort: agent.FilesPort}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}},
		}}
	if _, err := f.cs.CoreV1().Pods(ns).Create(f.ctx, pod, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	p := f.runningPod(name)
	if p.Spec.NodeName != host {
		f.t.Fatalf("pod %s scheduled to %s, want %s (its affinity)", name, p.Spec.NodeName, host)
	}
	got, err := f.cs.CoreV1().PersistentVolumeClaims(ns).Get(f.ctx, pvc.Name, metav1.GetOptions{})
	if err != nil || got.Status.Phase != corev1.ClaimBound || got.Spec.VolumeName == "" {
		f.t.Fatalf("PVC %s after its pod runs: %v %+v", pvc.Name, err, got.Status)
	}
	pv, err := f.cs.CoreV1().PersistentVolumes().Get(f.ctx, got.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return p, pv
}

type storageNode struct {
	UUID, Hostname, MgmtIP string
	NvmfPort               int64
}

func (f *fixture) storageNodes() []storageNode {
	f.t.Helper()
	u, err := f.dyn.Resource(standin.StorageNodeSetGVR).Namespace(f.si.StorageNamespace()).Get(f.ctx, standin.StorageNodeSetName, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	nodes, _, _ := unstructured.NestedSlice(u.Object, "status", "nodes")
	var out []storageNode
	for _, o := range nodes {
		m := o.(map[string]any)
		if m["health"] != true || m["status"] != "online" {
			f.t.Errorf("storage node %v not healthy/online", m)
		}
		out = append(out, storageNode{UUID: m["uuid"].(string), Hostname: m["hostname"].(string), MgmtIP: m["mgmtIp"].(string), NvmfPort: m["nvmfPort"].(int64)})
	}
	return out
}

// migrate creates VolumeMigration name for pv to target and returns the
// phases it went through (from a watch) up to a terminal one.
func (f *fixture) migrate(name, pv, target string, during func(phase string, u *unstructured.Unstructured)) ([]string, *unstructured.Unstructured) {
	f.t.Helper()
	rc := f.dyn.Resource(standin.VolumeMigrationGVR).Namespace(ns)
	w, err := rc.Watch(f.ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		f.t.Fatal(err)
	}
	defer w.Stop()
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "storage.simplyblock.io/v1alpha1", "kind": "VolumeMigration",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"fiomig.io/run": "t"}},
		"spec":     map[string]any{"pvName": pv, "targetNodeUUID": target}}}
	if _, err := rc.Create(f.ctx, obj, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	var phases []string
	timeout := time.After(3 * time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				f.t.Fatalf("watch of %s closed after phases %v", name, phases)
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			ph, _, _ := unstructured.NestedString(u.Object, "status", "phase")
			if ph == "" || (len(phases) > 0 && phases[len(phases)-1] == ph) {
				continue
			}
			phases = append(phases, ph)
			if during != nil {
				during(ph, u)
			}
			if ph == sim.PhaseCompleted || ph == sim.PhaseFailed || ph == sim.PhaseAborted {
				return phases, u
			}
		case <-timeout:
			f.t.Fatalf("VolumeMigration %s not terminal after 3 min; phases %v; stand-in errors %v", name, phases, f.si.Errors())
		}
	}
}

// sourceOf asks the control plane (through the pod proxy) which storage
// node serves the PV's volume now.
func (f *fixture) sourceOf(pv *corev1.PersistentVolume) storageNode {
	f.t.Helper()
	parts := strings.Split(pv.Spec.CSI.VolumeHandle, ":")
	body, err := f.proxyGet(f.si.StorageNamespace(), "simplyblock-webappapi-0", standin.WebAPIPort, "/api/v2/clusters/"+parts[0]+"/volumes/"+parts[2])
	if err != nil {
		f.t.Fatalf("control plane volume %s: %v", parts[2], err)
	}
	var v struct {
		NodeUUID string `json:"node_uuid"`
		Hostname string `json:"hostname"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		f.t.Fatalf("%v: %s", err, body)
	}
	for _, n := range f.storageNodes() {
		if n.UUID == v.NodeUUID && n.Hostname == v.Hostname {
			return n
		}
	}
	f.t.Fatalf("control plane names node %+v, not in the StorageNodeSet", v)
	return storageNode{}
}

func TestStandIn(t *testing.T) {
	f := start(t)
	nodes := f.storageNodes()
	if len(nodes) != 3 {
		t.Fatalf("StorageNodeSet lists %d nodes, want 3", len(nodes))
	}
	for _, n := range nodes {
		node, err := f.cs.CoreV1().Nodes().Get(f.ctx, n.Hostname, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Node of storage node %s: %v", n.Hostname, err)
		}
		if node.Labels["fiomig.io/consumer"] != "true" {
			t.Errorf("node %s labels %v: no fiomig.io/consumer=true", n.Hostname, node.Labels)
		}
	}

	t.Run("pod-proxy-reaches-control-plane", func(t *testing.T) {
		f := f.on(t)
		_, pv := f.volumePod("fio-0", nodes[0].Hostname)
		nqn := pv.Spec.CSI.VolumeAttributes["nqn"]
		parts := strings.Split(pv.Spec.CSI.VolumeHandle, ":")
		if len(parts) != 3 || standin.VolumeUUID(nqn) != parts[2] {
			t.Fatalf("PV handle %q does not name the volume of nqn %s", pv.Spec.CSI.VolumeHandle, nqn)
		}
		body, err := f.proxyGet(f.si.StorageNamespace(), "simplyblock-webappapi-0", standin.WebAPIPort, "/api/v2/clusters/"+parts[0]+"/volumes/"+parts[2]+"/connect")
		if err != nil {
			t.Fatalf("pod proxy GET of the control plane: %v", err)
		}
		var got []struct {
			IP   string `json:"ip"`
			Port int    `json:"port"`
			NQN  string `json:"nqn"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		var want []string
		f.si.World(func(w *sim.World) { want = w.Endpoints(nqn) })
		if len(got) != len(want) || len(want) == 0 {
			t.Fatalf("endpoints through the proxy %v, simulator publishes %v", got, want)
		}
		for i, e := range got {
			if fmt.Sprintf("%s:%d", e.IP, e.Port) != want[i] || e.NQN != nqn {
				t.Errorf("endpoint %d: %+v, want %s of %s", i, e, want[i], nqn)
			}
		}
		// The fio pod's logs sidecar answers, with no files: no fio ran.
		files, err := f.proxyGet(ns, "fio-0", agent.FilesPort, "/v1/files")
		if err != nil || strings.TrimSpace(string(files)) != "[]" {
			t.Errorf("fio pod's /v1/files through the proxy: %q, %v; want []", files, err)
		}
	})

	t.Run("agent-daemonset-through-pod-proxy", func(t *testing.T) {
		f := f.on(t)
		labels := map[string]string{"app.kubernetes.io/name": "fiomig-agent"}
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "fiomig-agent", Namespace: ns},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"fiomig.io/consumer": "true"},
					Containers:   []corev1.Container{{Name: "agent", Image: "fiomig:dev", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: agent.Port}}}}}}}}
		if _, err := f.cs.AppsV1().DaemonSets(ns).Create(f.ctx, ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var pods []corev1.Pod
		f.eventually("3 agent pods Running", func() (bool, error) {
			l, err := f.cs.CoreV1().Pods(ns).List(f.ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=fiomig-agent"})
			if err != nil {
				return false, err
			}
			pods = l.Items
			running := 0
			for _, p := range pods {
				if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
					running++
				}
			}
			return running == 3 && len(pods) == 3, nil
		})
		hosts := map[string]string{}
		f.si.World(func(w *sim.World) {
			for _, h := range w.Hosts() {
				hosts[h.Name] = h.NQN
			}
		})
		for _, p := range pods {
			// Through the API server's pod proxy, with the response headers.
			u := strings.TrimSuffix(f.cfg.Host, "/") + "/api/v1/namespaces/" + ns + "/pods/" + p.Name + ":" + fmt.Sprint(agent.Port) + "/proxy/v1/sample"
			resp, err := f.hc.Get(u)
			if err != nil {
				t.Fatalf("pod proxy GET %s: %v", u, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("pod proxy GET %s: %s: %s", u, resp.Status, body)
			}
			if got := resp.Header.Get(agent.HeaderHostNQN); got != hosts[p.Spec.NodeName] {
				t.Errorf("agent on %s: %s %q, want %q", p.Spec.NodeName, agent.HeaderHostNQN, got, hosts[p.Spec.NodeName])
			}
			s, err := agent.Decode(resp.Header, bytes.NewReader(body), p.Name)
			if err != nil {
				t.Fatalf("decode sample of %s: %v", p.Name, err)
			}
			// Read unfiltered: every controller served must be the host's.
			st, err := nvmeof.ReadHost(s.Sys, "")
			if err != nil {
				t.Fatalf("read sample of %s: %v", p.Name, err)
			}
			n := 0
			for _, sub := range st.Subsystems {
				for _, c := range sub.Controllers {
					n++
					if c.HostNQN != hosts[p.Spec.NodeName] {
						t.Errorf("agent on %s served controller %s of hostnqn %s", p.Spec.NodeName, c.Name, c.HostNQN)
					}
				}
			}
			if n == 0 {
				t.Errorf("agent on %s: no controllers in its sample", p.Spec.NodeName)
			}
		}
		if err := f.cs.AppsV1().DaemonSets(ns).Delete(f.ctx, "fiomig-agent", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		f.eventually("agent pods gone with their DaemonSet", func() (bool, error) {
			l, err := f.cs.CoreV1().Pods(ns).List(f.ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=fiomig-agent"})
			return err == nil && len(l.Items) == 0, err
		})
	})

	// Each volume migrates on its own host's pod.
	var pvs []*corev1.PersistentVolume
	for i := 1; i < 3; i++ {
		_, pv := f.volumePod(fmt.Sprintf("fio-%d", i), nodes[i].Hostname)
		pvs = append(pvs, pv)
	}

	t.Run("volumemigration-completes", func(t *testing.T) {
		f := f.on(t)
		pv := pvs[0]
		nqn := pv.Spec.CSI.VolumeAttributes["nqn"]
		src := f.sourceOf(pv)
		var target storageNode
		for _, n := range nodes {
			if n.UUID != src.UUID {
				target = n
				break
			}
		}
		var jobs []any
		phases, final := f.migrate("mig-1", pv.Name, target.UUID, func(ph string, u *unstructured.Unstructured) {
			if ph == sim.PhaseValidating {
				jobs, _, _ = unstructured.NestedSlice(u.Object, "status", "validationJobs")
			}
		})
		want := []string{sim.PhasePending, sim.PhaseValidating, sim.PhaseRunning, sim.PhaseCompleted}
		if strings.Join(phases, " ") != strings.Join(want, " ") {
			t.Fatalf("phases %v, want %v", phases, want)
		}
		st := final.Object["status"].(map[string]any)
		if st["subsystemNQN"] != nqn || st["sourceNodeUUID"] != src.UUID || st["memberCount"] != int64(1) {
			t.Errorf("status %v: want subsystemNQN %s, sourceNodeUUID %s, memberCount 1", st, nqn, src.UUID)
		}
		if len(jobs) != 1 {
			t.Errorf("validationJobs while Validating: %v, want one (the volume's consumer host)", jobs)
		}
		if got := f.sourceOf(pv); got.UUID != target.UUID {
			t.Errorf("after Completed the control plane serves the volume from %s, want the target %s", got.Hostname, target.Hostname)
		}
		var eps []string
		f.si.World(func(w *sim.World) { eps = w.Endpoints(nqn) })
		for _, ep := range eps {
			if !strings.HasSuffix(ep, fmt.Sprintf(":%d", target.NvmfPort)) {
				t.Errorf("published endpoint %s after Completed: not at the target's port %d", ep, target.NvmfPort)
			}
		}
	})

	t.Run("validation-job-deleted-fails-migration", func(t *testing.T) {
		f := f.on(t)
		pv := pvs[1]
		src := f.sourceOf(pv)
		target := nodes[0]
		if target.UUID == src.UUID {
			target = nodes[1]
		}
		deleted := ""
		phases, final := f.migrate("mig-2", pv.Name, target.UUID, func(ph string, u *unstructured.Unstructured) {
			if ph != sim.PhaseValidating {
				return
			}
			jobs, _, _ := unstructured.NestedSlice(u.Object, "status", "validationJobs")
			if len(jobs) == 0 {
				t.Fatalf("Validating with no validationJobs")
			}
			deleted = jobs[0].(map[string]any)["jobName"].(string)
			bg := metav1.DeletePropagationBackground
			if err := f.cs.BatchV1().Jobs(ns).Delete(f.ctx, deleted, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
				t.Fatalf("delete validation Job %s: %v", deleted, err)
			}
		})
		if phases[len(phases)-1] != sim.PhaseFailed {
			t.Fatalf("after deleting validation Job %q: phases %v, want Failed", deleted, phases)
		}
		msg, _, _ := unstructured.NestedString(final.Object, "status", "errorMessage")
		if !strings.Contains(msg, "validation Job killed") {
			t.Errorf("errorMessage %q does not say the validation Job was killed", msg)
		}
	})

	t.Run("deleted-migration-takes-its-jobs", func(t *testing.T) {
		f := f.on(t)
		pv := pvs[1]
		target := nodes[0]
		if src := f.sourceOf(pv); target.UUID == src.UUID {
			target = nodes[1]
		}
		rc := f.dyn.Resource(standin.VolumeMigrationGVR).Namespace(ns)
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "storage.simplyblock.io/v1alpha1", "kind": "VolumeMigration",
			"metadata": map[string]any{"name": "mig-4"}, "spec": map[string]any{"pvName": pv.Name, "targetNodeUUID": target.UUID}}}
		if _, err := rc.Create(f.ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		sel := metav1.ListOptions{LabelSelector: "storage.simplyblock.io/volumemigration=mig-4"}
		f.eventually("mig-4's validation Job", func() (bool, error) {
			l, err := f.cs.BatchV1().Jobs(ns).List(f.ctx, sel)
			return err == nil && len(l.Items) > 0, err
		})
		if err := rc.Delete(f.ctx, "mig-4", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		f.eventually("mig-4's Jobs gone with it", func() (bool, error) {
			l, err := f.cs.BatchV1().Jobs(ns).List(f.ctx, sel)
			return err == nil && len(l.Items) == 0, err
		})
		// Let the simulated migration end before the next subtest uses the volume.
		f.eventually("the simulated migration of mig-4 terminal", func() (bool, error) {
			done := true
			f.si.World(func(w *sim.World) {
				for _, m := range w.Migrations() {
					done = done && m.Terminal()
				}
			})
			return done, nil
		})
	})

	t.Run("spec-abort", func(t *testing.T) {
		f := f.on(t)
		pv := pvs[0]
		rc := f.dyn.Resource(standin.VolumeMigrationGVR).Namespace(ns)
		phases, _ := f.migrate("mig-3", pv.Name, nodes[2].UUID, func(ph string, u *unstructured.Unstructured) {
			if ph == sim.PhasePending || ph == sim.PhaseValidating {
				_, err := rc.Patch(f.ctx, "mig-3", types.MergePatchType, []byte(`{"spec":{"abort":true}}`), metav1.PatchOptions{})
				if err != nil {
					t.Fatalf("patch spec.abort: %v", err)
				}
			}
		})
		if phases[len(phases)-1] != sim.PhaseAborted {
			t.Errorf("after spec.abort: phases %v, want Aborted last", phases)
		}
	})

	t.Run("spdk-pod-delete-restarts-target", func(t *testing.T) {
		f := f.on(t)
		sns := f.si.StorageNamespace()
		l, err := f.cs.CoreV1().Pods(sns).List(f.ctx, metav1.ListOptions{LabelSelector: "role=simplyblock-storage-node", FieldSelector: "spec.nodeName=" + nodes[1].Hostname})
		if err != nil || len(l.Items) != 1 {
			t.Fatalf("SPDK pod of %s: %v, %d pods", nodes[1].Hostname, err, len(l.Items))
		}
		old := l.Items[0]
		// Drop CONNECTs to that node meanwhile: the hosts' reconnects after
		// the restart hit the helper's rule and its counter shows them.
		helper := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nft-" + nodes[1].Hostname, Namespace: ns,
			Labels:      map[string]string{"fiomig.io/role": "nft-helper", "fiomig.io/run": "t"},
			Annotations: map[string]string{"fiomig.io/nft-ip": nodes[1].MgmtIP, "fiomig.io/nft-table": "fiomig_t"}},
			Spec: corev1.PodSpec{NodeName: nodes[1].Hostname, HostNetwork: true, Containers: []corev1.Container{{Name: "nft", Image: "fiomig:dev"}}}}
		if _, err := f.cs.CoreV1().Pods(ns).Create(f.ctx, helper, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.runningPod(helper.Name)
		zero := int64(0)
		if err := f.cs.CoreV1().Pods(sns).Delete(f.ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		f.eventually("a new SPDK pod Running", func() (bool, error) {
			p, err := f.cs.CoreV1().Pods(sns).Get(f.ctx, old.Name, metav1.GetOptions{})
			switch {
			case err != nil:
				return false, err
			case p.UID == old.UID:
				return false, fmt.Errorf("pod %s is still the deleted one (uid %s, deletionTimestamp %v)", p.Name, p.UID, p.DeletionTimestamp)
			case p.Status.Phase != corev1.PodRunning:
				return false, fmt.Errorf("replacement pod %s (uid %s) is %q", p.Name, p.UID, p.Status.Phase)
			}
			return true, nil
		})
		var c agent.Counter
		f.eventually("the helper's counter > 0", func() (bool, error) {
			body, err := f.proxyGet(ns, helper.Name, agent.HelperPort, "/v1/counter")
			if err != nil {
				return false, err
			}
			if err := json.Unmarshal(body, &c); err != nil {
				return false, err
			}
			return c.Packets > 0, nil
		})
		if c.Table != "fiomig_t" {
			t.Errorf("counter table %q", c.Table)
		}
		if err := f.cs.CoreV1().Pods(ns).Delete(f.ctx, helper.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		f.eventually("helper pod gone and its rule with it", func() (bool, error) {
			_, err := f.cs.CoreV1().Pods(ns).Get(f.ctx, helper.Name, metav1.GetOptions{})
			var active bool
			f.si.World(func(w *sim.World) { _, active = w.DroppedConnects(nodes[1].MgmtIP) })
			return err != nil && !active, nil
		})
	})

	// The API server refuses the replacement SPDK pod for a while (a
	// ValidatingAdmissionPolicy, the real admission path): the stand-in
	// must show the refusal in Errors and create the pod once the refusal
	// ends. It used to create the replacement once, log a failure and
	// never try again, so the pod never ran and Errors stayed empty.
	t.Run("spdk-pod-recreate-retried-after-refusal", func(t *testing.T) {
		f := f.on(t)
		sns := f.si.StorageNamespace()
		l, err := f.cs.CoreV1().Pods(sns).List(f.ctx, metav1.ListOptions{LabelSelector: "role=simplyblock-storage-node", FieldSelector: "spec.nodeName=" + nodes[2].Hostname})
		if err != nil || len(l.Items) != 1 {
			t.Fatalf("SPDK pod of %s: %v, %d pods", nodes[2].Hostname, err, len(l.Items))
		}
		old := l.Items[0]
		deny := "fiomig-test-deny-spdk-" + nodes[2].Hostname
		ar := f.cs.AdmissionregistrationV1()
		fail := admissionregistrationv1.Fail
		if _, err := ar.ValidatingAdmissionPolicies().Create(f.ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: deny},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: &fail,
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
					}}}},
				Validations: []admissionregistrationv1.Validation{{Expression: fmt.Sprintf("object.metadata.name != %q", old.Name), Message: "test refuses the SPDK pod"}},
			}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = ar.ValidatingAdmissionPolicies().Delete(context.Background(), deny, metav1.DeleteOptions{})
		})
		if _, err := ar.ValidatingAdmissionPolicyBindings().Create(f.ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: deny},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: deny,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = ar.ValidatingAdmissionPolicyBindings().Delete(context.Background(), deny, metav1.DeleteOptions{})
		})
		// The policy is in force once a dry-run create of that name is
		// refused by admission (before, storage answers AlreadyExists).
		f.eventually("the policy refusing "+old.Name, func() (bool, error) {
			probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: old.Name, Namespace: sns},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
			_, err := f.cs.CoreV1().Pods(sns).Create(f.ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), err
		})
		zero := int64(0)
		if err := f.cs.CoreV1().Pods(sns).Delete(f.ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		key := "pod " + sns + "/" + old.Name
		f.eventually("the refused re-create in the stand-in's errors", func() (bool, error) {
			msg, ok := f.si.Errors()[key]
			return ok && strings.Contains(msg, "test refuses the SPDK pod"), fmt.Errorf("errors[%q] = %q", key, msg)
		})
		if err := ar.ValidatingAdmissionPolicyBindings().Delete(f.ctx, deny, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		f.eventually("the SPDK pod of "+nodes[2].Hostname+" re-created and Running", func() (bool, error) {
			p, err := f.cs.CoreV1().Pods(sns).Get(f.ctx, old.Name, metav1.GetOptions{})
			switch {
			case err != nil:
				return false, err
			case p.UID == old.UID:
				return false, fmt.Errorf("pod %s is still the deleted one", p.Name)
			case p.Status.Phase != corev1.PodRunning:
				return false, fmt.Errorf("replacement pod %s is %q", p.Name, p.Status.Phase)
			}
			return true, nil
		})
		if msg, ok := f.si.Errors()[key]; ok {
			t.Errorf("after the re-created pod runs, the stand-in still reports %s: %s", key, msg)
		}
	})

	t.Run("cleanup-by-label-leaves-nothing", func(t *testing.T) {
		f := f.on(t)
		sel := metav1.ListOptions{LabelSelector: "fiomig.io/run=t"}
		if err := f.cs.CoreV1().Pods(ns).DeleteCollection(f.ctx, metav1.DeleteOptions{}, sel); err != nil {
			t.Fatal(err)
		}
		if err := f.dyn.Resource(standin.VolumeMigrationGVR).Namespace(ns).DeleteCollection(f.ctx, metav1.DeleteOptions{}, sel); err != nil {
			t.Fatal(err)
		}
		if err := f.cs.CoreV1().PersistentVolumeClaims(ns).DeleteCollection(f.ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		f.eventually("no pods, PVCs or PVs left", func() (bool, error) {
			p, err1 := f.cs.CoreV1().Pods(ns).List(f.ctx, sel)
			c, err2 := f.cs.CoreV1().PersistentVolumeClaims(ns).List(f.ctx, metav1.ListOptions{})
			v, err3 := f.cs.CoreV1().PersistentVolumes().List(f.ctx, metav1.ListOptions{})
			if err1 != nil || err2 != nil || err3 != nil {
				return false, fmt.Errorf("%v %v %v", err1, err2, err3)
			}
			return len(p.Items)+len(c.Items)+len(v.Items) == 0, nil
		})
	})
}
