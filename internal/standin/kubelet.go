package standin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cri-streaming/pkg/streaming/portforward"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/fiomig/fiomig/sim"
)

const pvcProtection = "kubernetes.io/pvc-protection"

func (s *StandIn) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.ctx, 15*time.Second)
}

func (s *StandIn) nodeByName(name string) *node {
	for _, n := range s.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

func podKey(p *corev1.Pod) string { return "pod " + p.Namespace + "/" + p.Name }

// resync is the level-triggered pass over everything the stand-in plays:
// kubelet, scheduler, DaemonSet controller, provisioner, PVC protection and
// the operator (beside real kubelets: the SPDK pods, the provisioner and
// the operator).
func (s *StandIn) resync() {
	if s.ctx.Err() != nil {
		return
	}
	var pods []*corev1.Pod
	for _, o := range s.podInf.GetStore().List() {
		pods = append(pods, o.(*corev1.Pod))
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp) })
	if s.real != nil {
		// Real kubelets, scheduler and controllers do the rest.
		s.reconcileSPDKPods(pods)
		s.reconcileProvisioning()
		s.reconcileMigrations()
		return
	}
	for _, p := range pods {
		s.reconcilePod(p)
	}
	s.reconcileSPDKPods(pods)
	s.reconcileDaemonSets(pods)
	s.reconcileClaims(pods)
	s.reconcileMigrations()
}

func (s *StandIn) reconcilePod(p *corev1.Pod) {
	n := s.nodeByName(p.Spec.NodeName)
	switch {
	case p.DeletionTimestamp != nil:
		if n == nil && p.Spec.NodeName != "" {
			return // not our node: no kubelet confirms the deletion
		}
		// The kubelet's part of a graceful deletion: stop the pod, then
		// delete it for good.
		if rp, ok := s.running[p.UID]; ok {
			rp.stop()
			delete(s.running, p.UID)
		}
		zero := int64(0)
		uid := p.UID
		ctx, cancel := s.call()
		defer cancel()
		err := s.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			err = nil
		}
		s.setErr(podKey(p), err)
	case p.Spec.NodeName == "":
		s.schedule(p)
	case n == nil:
		// Bound to a node the stand-in does not play: stays Pending, as
		// with a node whose kubelet is gone.
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
	case s.running[p.UID] != nil:
	case p.Labels[LabelRole] == RoleStorageNode && s.restarts[p.Spec.NodeName]:
		// The replacement SPDK pod waits for its target to come back.
	default:
		s.setErr(podKey(p), s.runPod(p, n))
	}
}

// schedule binds an unscheduled pod to a node: the node its nodeSelector
// and required node affinity on kubernetes.io/hostname allow, and for a PVC
// of the stand-in's StorageClass (WaitForFirstConsumer) a node one of whose
// simulated volumes is unclaimed; the PVC is provisioned and bound first.
func (s *StandIn) schedule(p *corev1.Pod) {
	if _, ok := s.bound[p.UID]; ok {
		return
	}
	cands := s.allowedNodes(p)
	type claim struct {
		pvc  *corev1.PersistentVolumeClaim
		need bool // unbound: provision on the chosen node
	}
	var claims []claim
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		o, ok, _ := s.pvcInf.GetStore().GetByKey(p.Namespace + "/" + v.PersistentVolumeClaim.ClaimName)
		if !ok {
			s.setErr(podKey(p), fmt.Errorf("unschedulable: persistentvolumeclaim %q not found", v.PersistentVolumeClaim.ClaimName))
			return
		}
		pvc := o.(*corev1.PersistentVolumeClaim)
		if pvc.Spec.VolumeName != "" {
			idx, ok := s.pvVolume[pvc.Spec.VolumeName]
			if !ok {
				s.setErr(podKey(p), fmt.Errorf("unschedulable: PVC %s is bound to PV %s, which is no simulated volume", pvc.Name, pvc.Spec.VolumeName))
				return
			}
			host := s.consumerOf(idx)
			cands = slices.DeleteFunc(cands, func(n *node) bool { return n.idx != host })
			continue
		}
		if sc := pvc.Spec.StorageClassName; sc == nil || *sc != s.cfg.StorageClass {
			s.setErr(podKey(p), fmt.Errorf("unschedulable: PVC %s has StorageClass %v; the stand-in provisions only %q", pvc.Name, pvc.Spec.StorageClassName, s.cfg.StorageClass))
			return
		}
		claims = append(claims, claim{pvc, true})
	}
	// Pick the first allowed node with a free simulated volume per unbound claim.
	var chosen *node
	var vols []int
	for _, n := range cands {
		free := s.freeVolumes(n.idx)
		if len(free) >= len(claims) {
			chosen, vols = n, free[:len(claims)]
			break
		}
	}
	if chosen == nil {
		s.setErr(podKey(p), fmt.Errorf("unschedulable: no node among %v with %d unclaimed simulated volume(s) attached (Config.Volumes = %d, volume i is attached to host i mod 3)",
			nodeNames(cands), len(claims), s.cfg.Volumes))
		return
	}
	for i, c := range claims {
		if err := s.provision(c.pvc, chosen, vols[i]); err != nil {
			s.setErr(podKey(p), err)
			return
		}
	}
	ctx, cancel := s.call()
	defer cancel()
	err := s.cs.CoreV1().Pods(p.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: chosen.name},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsConflict(err) {
		s.setErr(podKey(p), fmt.Errorf("bind to %s: %w", chosen.name, err))
		return
	}
	s.bound[p.UID] = chosen.name
	s.setErr(podKey(p), nil)
	s.logf("scheduled pod %s/%s to %s", p.Namespace, p.Name, chosen.name)
}

func nodeNames(ns []*node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.name)
	}
	return out
}

// allowedNodes are the nodes p's nodeSelector and required node affinity
// allow (only kubernetes.io/hostname In/NotIn and label equality are
// understood; other expressions are ignored), by name.
func (s *StandIn) allowedNodes(p *corev1.Pod) []*node {
	var out []*node
	labels := func(n *node) map[string]string {
		return map[string]string{LabelHostname: n.name, "kubernetes.io/os": "linux", LabelConsumer: "true", LabelNodeSet: StorageNodeSetName}
	}
	for _, n := range s.nodes {
		l := labels(n)
		ok := true
		for k, v := range p.Spec.NodeSelector {
			if l[k] != v {
				ok = false
			}
		}
		if a := p.Spec.Affinity; ok && a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			any := len(terms) == 0
			for _, t := range terms {
				match := true
				for _, e := range t.MatchExpressions {
					v, has := l[e.Key]
					switch e.Operator {
					case corev1.NodeSelectorOpIn:
						match = match && has && slices.Contains(e.Values, v)
					case corev1.NodeSelectorOpNotIn:
						match = match && !slices.Contains(e.Values, v)
					case corev1.NodeSelectorOpExists:
						match = match && has
					case corev1.NodeSelectorOpDoesNotExist:
						match = match && !has
					}
				}
				any = any || match
			}
			ok = any
		}
		if ok {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// runPod is the kubelet starting p on n: an IP (the node's for hostNetwork
// pods, else a new netns address), what the pod serves, then status Running.
func (s *StandIn) runPod(p *corev1.Pod, n *node) error {
	rp := &runningPod{ns: p.Namespace, name: p.Name, ip: n.ip, netns: s.netns}
	if !p.Spec.HostNetwork {
		ip, err := s.netns.AddAddr()
		if err != nil {
			return err
		}
		rp.ip, rp.ownIP = ip, true
	}
	if err := s.startServing(p, n, rp); err != nil {
		rp.stop()
		return err
	}
	st := runningStatus(p, n.ip.String(), rp.ip.String())
	cur := p.DeepCopy()
	cur.Status = st
	ctx, cancel := s.call()
	defer cancel()
	if _, err := s.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		rp.stop()
		return fmt.Errorf("status Running: %w", err)
	}
	s.running[p.UID] = rp
	s.logf("pod %s/%s Running on %s, IP %s", p.Namespace, p.Name, n.name, rp.ip)
	return nil
}

func runningStatus(p *corev1.Pod, hostIP, podIP string) corev1.PodStatus {
	now := metav1.Now()
	st := corev1.PodStatus{
		Phase: corev1.PodRunning, HostIP: hostIP, HostIPs: []corev1.HostIP{{IP: hostIP}},
		PodIP: podIP, PodIPs: []corev1.PodIP{{IP: podIP}}, StartTime: &now, QOSClass: p.Status.QOSClass,
	}
	for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	for _, c := range p.Spec.Containers {
		yes := true
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: &yes,
			ContainerID: "standin://" + string(p.UID) + "/" + c.Name,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	return st
}

// podGone handles a pod removed from the API server: the kubelet's
// listeners stop, and a deleted SPDK pod restarts its node's target.
func (s *StandIn) podGone(p *corev1.Pod) {
	if rp, ok := s.running[p.UID]; ok {
		rp.stop()
		delete(s.running, p.UID)
	}
	delete(s.bound, p.UID)
	delete(s.errs, podKey(p))
	// What simplyblock's node API does when its SPDK pod vanishes.
	s.spdkPodGone(p)
}

// reconcileDaemonSets is the DaemonSet controller: one pod per node that
// the template's nodeSelector allows (spec.nodeName set directly, where a
// real controller sets node affinity for the scheduler), pods of vanished
// DaemonSets deleted (the garbage collector's part), status counts kept.
func (s *StandIn) reconcileDaemonSets(pods []*corev1.Pod) {
	live := map[types.UID]bool{}
	for _, o := range s.dsInf.GetStore().List() {
		ds := o.(*appsv1.DaemonSet)
		live[ds.UID] = true
		if ds.DeletionTimestamp != nil {
			continue
		}
		var desired, current, ready int32
		for _, n := range s.nodes {
			if !matchesSelector(ds.Spec.Template.Spec.NodeSelector, n) {
				continue
			}
			desired++
			var have *corev1.Pod
			for _, p := range pods {
				if p.Spec.NodeName == n.name && p.DeletionTimestamp == nil && ownedBy(p, ds.UID) {
					have = p
				}
			}
			key := string(ds.UID) + "/" + n.name
			if have != nil {
				current++
				if s.running[have.UID] != nil {
					ready++
				}
				delete(s.dsCreated, key)
				continue
			}
			if t, ok := s.dsCreated[key]; ok && time.Since(t) < 10*time.Second {
				current++
				continue
			}
			yes := true
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{GenerateName: ds.Name + "-", Namespace: ds.Namespace,
					Labels: ds.Spec.Template.Labels, Annotations: ds.Spec.Template.Annotations,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &yes, BlockOwnerDeletion: &yes}}},
				Spec: *ds.Spec.Template.Spec.DeepCopy(),
			}
			pod.Spec.NodeName = n.name
			ctx, cancel := s.call()
			_, err := s.cs.CoreV1().Pods(ds.Namespace).Create(ctx, pod, metav1.CreateOptions{})
			cancel()
			s.setErr("daemonset "+ds.Namespace+"/"+ds.Name+" on "+n.name, err)
			if err == nil {
				s.dsCreated[key] = time.Now()
				current++
			}
		}
		st := ds.Status
		st.DesiredNumberScheduled, st.CurrentNumberScheduled, st.NumberReady = desired, current, ready
		st.NumberAvailable, st.UpdatedNumberScheduled, st.ObservedGeneration = ready, current, ds.Generation
		st.NumberUnavailable = desired - ready
		if !equality.Semantic.DeepEqual(st, ds.Status) {
			cur := ds.DeepCopy()
			cur.Status = st
			ctx, cancel := s.call()
			_, err := s.cs.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			cancel()
			if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				s.setErr("daemonset "+ds.Namespace+"/"+ds.Name, err)
			}
		}
	}
	for _, p := range pods {
		for _, ref := range p.OwnerReferences {
			if ref.Kind == "DaemonSet" && !live[ref.UID] && p.DeletionTimestamp == nil {
				s.deletePod(p)
			}
		}
	}
}

func (s *StandIn) deletePod(p *corev1.Pod) {
	ctx, cancel := s.call()
	defer cancel()
	err := s.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	s.setErr(podKey(p), err)
}

func matchesSelector(sel map[string]string, n *node) bool {
	l := map[string]string{LabelHostname: n.name, "kubernetes.io/os": "linux", LabelConsumer: "true", LabelNodeSet: StorageNodeSetName}
	for k, v := range sel {
		if l[k] != v {
			return false
		}
	}
	return true
}

func ownedBy(p *corev1.Pod, uid types.UID) bool {
	for _, r := range p.OwnerReferences {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// reconcileClaims plays the PVC-protection controller (a deleted PVC no pod
// uses loses its finalizer) and the PV controller with reclaim policy
// Delete (the PV of a vanished PVC is deleted; its simulated volume can be
// claimed again).
func (s *StandIn) reconcileClaims(pods []*corev1.Pod) {
	inUse := map[string]bool{}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				inUse[p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName] = true
			}
		}
	}
	pvcs := map[types.UID]bool{}
	for _, o := range s.pvcInf.GetStore().List() {
		pvc := o.(*corev1.PersistentVolumeClaim)
		pvcs[pvc.UID] = true
		if pvc.DeletionTimestamp == nil || inUse[pvc.Namespace+"/"+pvc.Name] || !slices.Contains(pvc.Finalizers, pvcProtection) {
			continue
		}
		fin := slices.DeleteFunc(slices.Clone(pvc.Finalizers), func(f string) bool { return f == pvcProtection })
		s.setErr("pvc "+pvc.Namespace+"/"+pvc.Name, s.patchFinalizers(func(ctx context.Context, data []byte) error {
			_, err := s.cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).Patch(ctx, pvc.Name, types.MergePatchType, data, metav1.PatchOptions{})
			return err
		}, fin))
	}
	for _, o := range s.pvInf.GetStore().List() {
		pv := o.(*corev1.PersistentVolume)
		idx, ours := s.pvVolume[pv.Name]
		if !ours || pv.Spec.ClaimRef == nil || pvcs[pv.Spec.ClaimRef.UID] {
			continue
		}
		ctx, cancel := s.call()
		err := s.patchFinalizers(func(ctx context.Context, data []byte) error {
			_, err := s.cs.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.MergePatchType, data, metav1.PatchOptions{})
			return err
		}, nil)
		if err == nil {
			err = s.cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
		}
		cancel()
		if err == nil || apierrors.IsNotFound(err) {
			delete(s.claims, idx)
			delete(s.pvVolume, pv.Name)
			s.logf("PV %s deleted (its PVC is gone); simulated volume %d free", pv.Name, idx)
			err = nil
		}
		s.setErr("pv "+pv.Name, err)
	}
}

func (s *StandIn) patchFinalizers(patch func(context.Context, []byte) error, fin []string) error {
	if fin == nil {
		fin = []string{}
	}
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": fin}})
	if err != nil {
		return err
	}
	ctx, cancel := s.call()
	defer cancel()
	err = patch(ctx, data)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (s *StandIn) createNode(ctx context.Context, n *node) error {
	labels := map[string]string{
		LabelHostname: n.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		LabelConsumer: "true", LabelNodeSet: StorageNodeSetName,
		"io.simplyblock.node-type":                                   "simplyblock-storage-plane-" + ClusterName,
		"simplyblock.io/storage-node-uuid." + sim.ClusterUUID + ".0": n.uuid,
	}
	obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: labels}}
	created, err := s.cs.CoreV1().Nodes().Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = s.cs.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("standin: node %s: %w", n.name, err)
	}
	n.uid = string(created.UID)
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods: resource.MustParse("110"), "hugepages-2Mi": resource.MustParse("4Gi"),
	}
	created.Status = corev1.NodeStatus{
		Capacity: capacity, Allocatable: capacity,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "StandInReady",
			Message: "fiomig stand-in kubelet (no real kubelet runs)", LastHeartbeatTime: now, LastTransitionTime: now}},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.ip.String()}, {Type: corev1.NodeHostName, Address: n.name}},
		// The API server reaches the kubelet here (port-forward).
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: KubeletPort}},
		NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.37.2-fiomig-standin", OperatingSystem: "linux", Architecture: "amd64"},
	}
	if _, err := s.cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("standin: node %s status: %w", n.name, err)
	}
	return nil
}

// startKubelets starts the kubelet's streaming server on each Node's
// InternalIP:KubeletPort (TLS with a certificate made here; the API server
// checks none unless given --kubelet-certificate-authority): it serves
// port-forward, /portForward/{namespace}/{pod}[/{uid}] as the kubelet
// does, with the kubelet's own implementation of the protocol
// (k8s.io/cri-streaming portforward.ServePortForward), forwarding each
// stream to the pod's IP. pods/exec, attach and logs are not served.
func (s *StandIn) startKubelets() error {
	var ips []net.IP
	for _, n := range s.nodes {
		ips = append(ips, n.ip.AsSlice())
	}
	cert, err := selfSignedCert("fiomig-standin-kubelet", ips)
	if err != nil {
		return err
	}
	for _, n := range s.nodes {
		l, err := s.netns.Listen(netip.AddrPortFrom(n.ip, KubeletPort))
		if err != nil {
			return err
		}
		mux := http.NewServeMux()
		pf := podForwarder{s: s, node: n.name}
		serve := func(w http.ResponseWriter, r *http.Request) {
			opts, err := portforward.NewV4Options(r)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			portforward.ServePortForward(w, r, pf, r.PathValue("ns")+"/"+r.PathValue("pod"), r.PathValue("uid"), opts,
				4*time.Hour, 30*time.Second, portforward.SupportedProtocols)
		}
		mux.HandleFunc("/portForward/{ns}/{pod}", serve)
		mux.HandleFunc("/portForward/{ns}/{pod}/{uid}", serve)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
			TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
		s.kubelets = append(s.kubelets, srv)
		go srv.ServeTLS(l, "", "")
	}
	return nil
}

// podForwarder is the kubelet's port-forward into the pods of one node: a
// stream for port P of pod ns/name is joined to a TCP connection to the
// pod's IP:P (a real kubelet dials localhost:P inside the pod's network
// namespace; the stand-in's pods listen on their pod IP).
type podForwarder struct {
	s    *StandIn
	node string
}

// PortForward implements portforward.PortForwarder; name is "ns/pod".
func (f podForwarder) PortForward(ctx context.Context, name, uid string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	// From the API server, not the informer: a pod the kubelet just
	// started may not be in the cache with its IP yet.
	ns, pod, _ := strings.Cut(name, "/")
	p, err := f.s.cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("pod %s: %w", name, err)
	}
	if p.Spec.NodeName != f.node || p.Status.PodIP == "" || (uid != "" && string(p.UID) != uid) {
		return fmt.Errorf("pod %s is not running on node %s", name, f.node)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(p.Status.PodIP, fmt.Sprint(port)))
	if err != nil {
		return fmt.Errorf("port-forward to pod %s port %d: %w", name, port, err)
	}
	defer conn.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(conn, stream); done <- struct{}{} }()
	go func() { io.Copy(stream, conn); done <- struct{}{} }()
	<-done
	return nil
}

// selfSignedCert is a self-signed ECDSA certificate for ips, valid a day.
func selfSignedCert(cn string, ips []net.IP) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IPAddresses: ips,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
