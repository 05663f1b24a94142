package standin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
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
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/google/go-cmp/cmp"

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
	// cp is 127.0.0.1:<port> of a port-forward to the control-plane pod
	// (controlPlane opens it).
	cp string
}

func start(t *testing.T) *fixture {
	t.Helper()
	tooltest.Require(t, standin.NetnsAvailable())
	env := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	// Volumes with allowed hosts (their consumers' CSI host NQNs), as a
	// DHCHAP pool's.
	si, err := standin.Start(ctx, standin.Config{Rest: env.Config, Seed: 1, AllowedHosts: true, Logf: t.Logf})
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
	LvolPort, NvmfPort     int64
	// DataIP is the simulator's address of the node, where hosts connect.
	DataIP string
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
		sn := storageNode{UUID: m["uuid"].(string), Hostname: m["hostname"].(string), MgmtIP: m["mgmtIp"].(string),
			LvolPort: m["lvolPort"].(int64), NvmfPort: m["nvmfPort"].(int64)}
		f.si.World(func(w *sim.World) {
			for _, n := range w.Nodes() {
				if n.Name == sn.Hostname {
					sn.DataIP = n.IP
				}
			}
		})
		out = append(out, sn)
	}
	return out
}

// controlPlane GETs path from the control plane's REST port through a
// port-forward to its pod (client-go tools/portforward, as the harness
// reaches it), with header Authorization: Bearer bearer unless bearer is
// empty. It returns the status and body.
func (f *fixture) controlPlane(path, bearer string) (int, string) {
	f.t.Helper()
	if f.cp == "" {
		// The played kubelet runs the pod shortly after Start: a
		// port-forward before that reaches no listener.
		deadline := time.Now().Add(30 * time.Second)
		for {
			p, err := f.cs.CoreV1().Pods(f.si.StorageNamespace()).Get(f.ctx, "simplyblock-webappapi-0", metav1.GetOptions{})
			if err == nil && p.Status.Phase == corev1.PodRunning {
				break
			}
			if time.Now().After(deadline) {
				f.t.Fatalf("control-plane pod not Running 30 s after the stand-in started: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		u := f.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(f.si.StorageNamespace()).Name("simplyblock-webappapi-0").SubResource("portforward").URL()
		rt, upgrader, err := spdy.RoundTripperFor(f.cfg)
		if err != nil {
			f.t.Fatal(err)
		}
		stop, ready := make(chan struct{}), make(chan struct{})
		pf, err := portforward.NewOnAddresses(spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u),
			[]string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", standin.WebAPIPort)}, stop, ready, io.Discard, io.Discard)
		if err != nil {
			f.t.Fatal(err)
		}
		failed := make(chan error, 1)
		go func() { failed <- pf.ForwardPorts() }()
		select {
		case <-ready:
		case err := <-failed:
			f.t.Fatalf("port-forward to the control-plane pod: %v", err)
		case <-time.After(30 * time.Second):
			f.t.Fatal("port-forward to the control-plane pod: not ready after 30 s")
		}
		f.t.Cleanup(func() { close(stop) })
		ports, err := pf.GetPorts()
		if err != nil {
			f.t.Fatal(err)
		}
		f.cp = fmt.Sprintf("127.0.0.1:%d", ports[0].Local)
	}
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, "http://"+f.cp+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatalf("GET %s through the port-forward: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// migrate creates VolumeMigration name for pv to target and returns the
// phases it went through (from a watch) up to a terminal one.
func (f *fixture) migrate(vmNS, name, pv, target string, during func(phase string, u *unstructured.Unstructured)) ([]string, *unstructured.Unstructured) {
	f.t.Helper()
	rc := f.dyn.Resource(standin.VolumeMigrationGVR).Namespace(vmNS)
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

// sourceOf is the storage node serving the PV's volume now (the
// primary of its lvstore in the simulated world).
func (f *fixture) sourceOf(pv *corev1.PersistentVolume) storageNode {
	f.t.Helper()
	parts := strings.Split(pv.Spec.CSI.VolumeHandle, ":")
	lvs := -1
	f.si.World(func(w *sim.World) {
		for _, v := range w.Volumes() {
			if standin.VolumeUUID(v.NQN) == parts[2] {
				lvs = v.LVS
			}
		}
	})
	for _, n := range f.storageNodes() {
		if lvs >= 0 && n.UUID == standin.NodeUUID(lvs) {
			return n
		}
	}
	f.t.Fatalf("volume %s: no storage node serves it (lvstore %d)", parts[2], lvs)
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

	sns := f.si.StorageNamespace()

	// lvolPort (the hosts' port) is not nvmfPort (the inter-node device
	// port), and the management address is not the data address hosts
	// connect to; the control plane names the data address.
	t.Run("storage-nodes-ports-and-addresses", func(t *testing.T) {
		f := f.on(t)
		for _, n := range nodes {
			if n.LvolPort == n.NvmfPort {
				t.Errorf("node %s: lvolPort = nvmfPort = %d", n.Hostname, n.LvolPort)
			}
			if n.MgmtIP == n.DataIP || n.MgmtIP == "" {
				t.Errorf("node %s: mgmtIp %q, data address %q", n.Hostname, n.MgmtIP, n.DataIP)
			}
			code, body := f.controlPlane("/api/v2/clusters/"+sim.ClusterUUID+"/storage-nodes/"+n.UUID+"/nics", f.si.ClusterSecret())
			var nics []struct {
				Address string `json:"Address"`
			}
			if code != http.StatusOK || json.Unmarshal([]byte(body), &nics) != nil || len(nics) != 1 || nics[0].Address != n.DataIP {
				t.Errorf("node %s data NICs: %d %s; want the data address %s", n.Hostname, code, body, n.DataIP)
			}
		}
	})

	t.Run("control-plane-route-needs-bearer-and-port-forward", func(t *testing.T) {
		f := f.on(t)
		_, pv := f.volumePod("fio-0", nodes[0].Hostname)
		nqn := pv.Spec.CSI.VolumeAttributes["nqn"]
		parts := strings.Split(pv.Spec.CSI.VolumeHandle, ":")
		if len(parts) != 3 || standin.VolumeUUID(nqn) != parts[2] {
			t.Fatalf("PV handle %q does not name the volume of nqn %s", pv.Spec.CSI.VolumeHandle, nqn)
		}
		route := "/api/v2/clusters/" + parts[0] + "/storage-pools/" + parts[1] + "/volumes/" + parts[2] + "/connect"
		consumer := "?host_nqn=nqn.2014-08.io.simplyblock:uuid:" + f.si.NodeUID(nodes[0].Hostname)
		code, body := f.controlPlane(route+consumer, f.si.ClusterSecret())
		if code != http.StatusOK {
			t.Fatalf("GET %s with the bearer: %d %s", route, code, body)
		}
		var got []struct {
			IP   string `json:"ip"`
			Port int    `json:"port"`
			NQN  string `json:"nqn"`
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		var want []string
		f.si.World(func(w *sim.World) { want = w.Endpoints(nqn) })
		if len(got) != len(want) || len(want) == 0 {
			t.Fatalf("connect strings %v, simulator publishes %v", got, want)
		}
		src := f.sourceOf(pv)
		for i, e := range got {
			if fmt.Sprintf("%s:%d", e.IP, e.Port) != want[i] || e.NQN != nqn {
				t.Errorf("connect string %d: %+v, want %s of %s", i, e, want[i], nqn)
			}
			if int64(e.Port) != src.LvolPort {
				t.Errorf("connect string %d: port %d, want the lvstore's lvolPort %d", i, e.Port, src.LvolPort)
			}
		}
		for what, bearer := range map[string]string{"no bearer": "", "another bearer": "not-the-cluster-secret"} {
			if code, body := f.controlPlane(route+consumer, bearer); code != http.StatusUnauthorized {
				t.Errorf("%s: %d %s, want 401", what, code, body)
			}
		}
		for _, wrong := range []string{
			"/api/v2/clusters/" + parts[0] + "/volumes/" + parts[2] + "/connect", // no storage pool: not a route
			"/api/v2/clusters/" + parts[0] + "/storage-pools/" + parts[0] + "/volumes/" + parts[2] + "/connect",
		} {
			if code, _ := f.controlPlane(wrong+consumer, f.si.ClusterSecret()); code != http.StatusNotFound {
				t.Errorf("GET %s with the bearer: %d, want 404", wrong, code)
			}
		}
		// Through the API server's pod proxy the bearer never arrives:
		// the API server deletes Authorization after authenticating.
		u := strings.TrimSuffix(f.cfg.Host, "/") + "/api/v1/namespaces/" + sns + "/pods/simplyblock-webappapi-0:" + fmt.Sprint(standin.WebAPIPort) + "/proxy" + route + consumer
		req, _ := http.NewRequestWithContext(f.ctx, http.MethodGet, u, nil)
		req.Header.Set("Authorization", "Bearer "+f.si.ClusterSecret())
		resp, err := f.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("through the pod proxy with the bearer: %s %s, want 401", resp.Status, b)
		}
		// The fio pod's logs sidecar answers, with no files: no fio ran.
		files, err := f.proxyGet(ns, "fio-0", agent.FilesPort, "/v1/files")
		if err != nil || strings.TrimSpace(string(files)) != "[]" {
			t.Errorf("fio pod's /v1/files through the proxy: %q, %v; want []", files, err)
		}
	})

	// A volume with allowed hosts hands out its connect strings only to
	// an allowed host_nqn (sbcli utils/nvme.py HostConnectAuth.resolve).
	t.Run("connect-strings-need-an-allowed-host-nqn", func(t *testing.T) {
		f := f.on(t)
		var vol *sim.Volume
		f.si.World(func(w *sim.World) { vol = w.Volumes()[1] })
		route := "/api/v2/clusters/" + sim.ClusterUUID + "/storage-pools/" + standin.PoolUUID + "/volumes/" + standin.VolumeUUID(vol.NQN) + "/connect"
		consumer := nodes[vol.Consumers[0]].Hostname
		other := nodes[(vol.Consumers[0]+1)%len(nodes)].Hostname
		for _, tc := range []struct {
			query string
			want  int
		}{
			{"", http.StatusNotFound},
			{"?host_nqn=nqn.2014-08.io.simplyblock:uuid:" + f.si.NodeUID(other), http.StatusNotFound},
			{"?host_nqn=nqn.2014-08.io.simplyblock:uuid:" + f.si.NodeUID(consumer), http.StatusOK},
		} {
			if code, body := f.controlPlane(route+tc.query, f.si.ClusterSecret()); code != tc.want {
				t.Errorf("connect%s: %d %s, want %d", tc.query, code, body, tc.want)
			}
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
		// simplyblock's CSI connects with nqn.2014-08.io.simplyblock:uuid:<Node UID>.
		hosts := map[string]string{}
		for _, n := range nodes {
			node, err := f.cs.CoreV1().Nodes().Get(f.ctx, n.Hostname, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			hosts[n.Hostname] = "nqn.2014-08.io.simplyblock:uuid:" + string(node.UID)
		}
		for _, p := range pods {
			// Through the API server's pod proxy, with the response
			// headers; the agent is given no identity but the host's.
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
			if got := resp.Header.Get(agent.HeaderHostNQN); got != hosts[p.Spec.NodeName] || resp.Header.Get(agent.HeaderIdentity) != agent.SourceSysfs {
				t.Errorf("agent on %s: %s %q (from %s), want %q from sysfs", p.Spec.NodeName, agent.HeaderHostNQN, got, resp.Header.Get(agent.HeaderIdentity), hosts[p.Spec.NodeName])
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
						t.Errorf("agent on %s served controller %s of hostnqn %s, want the CSI's %s", p.Spec.NodeName, c.Name, c.HostNQN, hosts[p.Spec.NodeName])
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

	// The operator starts a VolumeMigration only in the namespace of the
	// StorageCluster of its PV's cluster; anywhere else it fails it at
	// once with its message and creates no Job (simplyblock-operator
	// volumemigration_controller.go reconcileStart, resolveRebalancerImage).
	t.Run("volumemigration-outside-storagecluster-namespace-fails", func(t *testing.T) {
		f := f.on(t)
		pv := pvs[0]
		target := nodes[0]
		if src := f.sourceOf(pv); target.UUID == src.UUID {
			target = nodes[1]
		}
		phases, final := f.migrate(ns, "mig-elsewhere", pv.Name, target.UUID, nil)
		if strings.Join(phases, " ") != sim.PhaseFailed {
			t.Errorf("phases %v in namespace %s (no StorageCluster there), want [Failed]", phases, ns)
		}
		want := fmt.Sprintf("volume migration not enabled/configured for cluster %q: no StorageCluster found for cluster UUID %q", sim.ClusterUUID, sim.ClusterUUID)
		if msg, _, _ := unstructured.NestedString(final.Object, "status", "errorMessage"); msg != want {
			t.Errorf("errorMessage %q, want %q", msg, want)
		}
		jobs, err := f.cs.BatchV1().Jobs(ns).List(f.ctx, metav1.ListOptions{})
		if err != nil || len(jobs.Items) != 0 {
			t.Errorf("Jobs in %s: %v %v, want none", ns, err, jobs)
		}
		var migs int
		f.si.World(func(w *sim.World) { migs = len(w.Migrations()) })
		if migs != 0 {
			t.Errorf("the simulator runs %d migrations, want none", migs)
		}
	})

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
		var job *batchv1.Job
		var vmUID types.UID
		sourceIn := map[string]any{}
		phases, final := f.migrate(sns, "mig-1", pv.Name, target.UUID, func(ph string, u *unstructured.Unstructured) {
			sourceIn[ph], _, _ = unstructured.NestedString(u.Object, "status", "sourceNodeUUID")
			if ph == sim.PhaseValidating {
				vmUID = u.GetUID()
				jobs, _, _ = unstructured.NestedSlice(u.Object, "status", "validationJobs")
				if len(jobs) == 1 {
					j, err := f.cs.BatchV1().Jobs(sns).Get(f.ctx, jobs[0].(map[string]any)["jobName"].(string), metav1.GetOptions{})
					if err == nil {
						job = j
					}
				}
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
		// sourceNodeUUID comes from GetMigration once Running, not before.
		if sourceIn[sim.PhaseValidating] != "" || sourceIn[sim.PhaseRunning] != src.UUID {
			t.Errorf("sourceNodeUUID by phase %v: want none while Validating, %s from Running", sourceIn, src.UUID)
		}
		if len(jobs) != 1 {
			t.Errorf("validationJobs while Validating: %v, want one (the volume's consumer host)", jobs)
		}
		// The validation Job looks like the operator's migrationPathJob.
		if job == nil {
			t.Fatalf("validation Job %v not found while Validating", jobs)
		}
		host := jobs[0].(map[string]any)["node"].(string)
		// The operator sets no label; the API server's Job defaulting
		// copies the pod template's generated ones onto the Job.
		for k := range job.Labels {
			if !slices.Contains([]string{"batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name", "controller-uid", "job-name"}, k) {
				t.Errorf("Job label %s=%s: the operator sets none", k, job.Labels[k])
			}
		}
		yes := true
		wantRef := []metav1.OwnerReference{{APIVersion: "storage.simplyblock.io/v1alpha1", Kind: "VolumeMigration", Name: "mig-1", UID: vmUID, Controller: &yes, BlockOwnerDeletion: &yes}}
		if d := cmp.Diff(wantRef, job.OwnerReferences); d != "" {
			t.Errorf("Job owner references (-want +got):\n%s", d)
		}
		ps := job.Spec.Template.Spec
		if d := cmp.Diff(map[string]string{"kubernetes.io/hostname": host}, ps.NodeSelector); d != "" || !ps.HostNetwork || ps.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("Job pod: nodeSelector diff %s, hostNetwork %v, restartPolicy %s", d, ps.HostNetwork, ps.RestartPolicy)
		}
		if len(ps.Containers) != 1 || ps.Containers[0].Name != "nvme-validate" || ps.Containers[0].Image != "docker.io/simplyblock/simplyblock-rebalancer:main" ||
			strings.Join(ps.Containers[0].Command, " ") != "simplyblock-rebalancer --mode=validate-migration" || len(ps.Volumes) != 2 ||
			*job.Spec.BackoffLimit != 0 || *job.Spec.TTLSecondsAfterFinished != 3600 || *job.Spec.ActiveDeadlineSeconds != 180 {
			t.Errorf("Job spec %+v", job.Spec)
		}
		if !strings.HasPrefix(job.Name, "vmig-validate-") {
			t.Errorf("Job name %s", job.Name)
		}
		if got := f.sourceOf(pv); got.UUID != target.UUID {
			t.Errorf("after Completed the control plane serves the volume from %s, want the target %s", got.Hostname, target.Hostname)
		}
		var eps []string
		f.si.World(func(w *sim.World) { eps = w.Endpoints(nqn) })
		for _, ep := range eps {
			if !strings.HasSuffix(ep, fmt.Sprintf(":%d", target.LvolPort)) {
				t.Errorf("published endpoint %s after Completed: not at the target's lvolPort %d", ep, target.LvolPort)
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
		phases, final := f.migrate(sns, "mig-2", pv.Name, target.UUID, func(ph string, u *unstructured.Unstructured) {
			if ph != sim.PhaseValidating {
				return
			}
			jobs, _, _ := unstructured.NestedSlice(u.Object, "status", "validationJobs")
			if len(jobs) == 0 {
				t.Fatalf("Validating with no validationJobs")
			}
			deleted = jobs[0].(map[string]any)["jobName"].(string)
			bg := metav1.DeletePropagationBackground
			if err := f.cs.BatchV1().Jobs(sns).Delete(f.ctx, deleted, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
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
		rc := f.dyn.Resource(standin.VolumeMigrationGVR).Namespace(sns)
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "storage.simplyblock.io/v1alpha1", "kind": "VolumeMigration",
			"metadata": map[string]any{"name": "mig-4"}, "spec": map[string]any{"pvName": pv.Name, "targetNodeUUID": target.UUID}}}
		created, err := rc.Create(f.ctx, obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The operator's Jobs carry no label: they are found by owner.
		owned := func() (int, error) {
			l, err := f.cs.BatchV1().Jobs(sns).List(f.ctx, metav1.ListOptions{})
			if err != nil {
				return 0, err
			}
			n := 0
			for _, j := range l.Items {
				for _, r := range j.OwnerReferences {
					if r.UID == created.GetUID() {
						n++
					}
				}
			}
			return n, nil
		}
		f.eventually("mig-4's validation Job", func() (bool, error) {
			n, err := owned()
			return n > 0, err
		})
		if err := rc.Delete(f.ctx, "mig-4", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		f.eventually("mig-4's Jobs gone with it", func() (bool, error) {
			n, err := owned()
			return n == 0, err
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
		rc := f.dyn.Resource(standin.VolumeMigrationGVR).Namespace(sns)
		phases, final := f.migrate(sns, "mig-3", pv.Name, nodes[2].UUID, func(ph string, u *unstructured.Unstructured) {
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
		// reconcileAbort sets phase and completedAt, no errorMessage.
		if msg, found, _ := unstructured.NestedString(final.Object, "status", "errorMessage"); found {
			t.Errorf("Aborted with errorMessage %q: the operator writes none", msg)
		}
		if at, _, _ := unstructured.NestedString(final.Object, "status", "completedAt"); at == "" {
			t.Error("Aborted without completedAt")
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
			Annotations: map[string]string{"fiomig.io/nft-ip": nodes[1].DataIP, "fiomig.io/nft-table": "fiomig_t"}},
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
			f.si.World(func(w *sim.World) { _, active = w.DroppedConnects(nodes[1].DataIP) })
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
		for _, n := range []string{ns, sns} {
			if err := f.dyn.Resource(standin.VolumeMigrationGVR).Namespace(n).DeleteCollection(f.ctx, metav1.DeleteOptions{}, sel); err != nil {
				t.Fatal(err)
			}
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
