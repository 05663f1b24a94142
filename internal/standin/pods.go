package standin

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/fiomig/fiomig/backend/kube/agent"
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
// the operator.
func (s *StandIn) resync() {
	if s.ctx.Err() != nil {
		return
	}
	var pods []*corev1.Pod
	for _, o := range s.podInf.GetStore().List() {
		pods = append(pods, o.(*corev1.Pod))
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp) })
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

// consumerOf is the host (node index) simulated volume idx is attached to.
func (s *StandIn) consumerOf(idx int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Volumes()[idx].Consumers[0]
}

// freeVolumes are the unclaimed simulated volumes attached to host, in order.
func (s *StandIn) freeVolumes(host int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for i, v := range s.w.Volumes() {
		if _, taken := s.claims[i]; !taken && len(v.Consumers) > 0 && v.Consumers[0] == host {
			out = append(out, i)
		}
	}
	return out
}

// provision creates the PV of simulated volume idx for pvc and binds both
// (the CSI provisioner's and the PV controller's part).
func (s *StandIn) provision(pvc *corev1.PersistentVolumeClaim, n *node, idx int) error {
	s.mu.Lock()
	v := s.w.Volumes()[idx]
	nqn, volUUID := v.NQN, VolumeUUID(v.NQN)
	s.mu.Unlock()
	pvName := "pvc-" + string(pvc.UID)
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.IsZero() {
		size = resource.MustParse("1Gi")
	}
	modes := pvc.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": Provisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              s.cfg.StorageClass,
			VolumeMode:                    pvc.Spec.VolumeMode,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver:       Provisioner,
				VolumeHandle: sim.ClusterUUID + ":" + PoolUUID + ":" + volUUID,
				FSType:       "xfs",
				VolumeAttributes: map[string]string{"nqn": nqn, "cluster_id": sim.ClusterUUID, "pool_name": "pool1",
					"storage.kubernetes.io/csiProvisionerIdentity": "fiomig-standin"},
			}},
		},
	}
	ctx, cancel := s.call()
	defer cancel()
	created, err := s.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = s.cs.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("provision PV %s for PVC %s/%s: %w", pvName, pvc.Namespace, pvc.Name, err)
	}
	s.claims[idx], s.pvVolume[pvName] = pvName, idx
	created.Status.Phase = corev1.VolumeBound
	if _, err := s.cs.CoreV1().PersistentVolumes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("PV %s status: %w", pvName, err)
	}
	cur, err := s.cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).Get(ctx, pvc.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cur.Spec.VolumeName = pvName
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	cur.Annotations["pv.kubernetes.io/bind-completed"] = "yes"
	cur.Annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
	cur.Annotations["volume.kubernetes.io/selected-node"] = n.name
	cur.Annotations["volume.kubernetes.io/storage-provisioner"] = Provisioner
	if cur, err = s.cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("bind PVC %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	cur.Status.Phase = corev1.ClaimBound
	cur.Status.AccessModes = modes
	cur.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: size}
	if _, err := s.cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("PVC %s/%s status: %w", pvc.Namespace, pvc.Name, err)
	}
	s.logf("provisioned PV %s (%s, host %s) for PVC %s/%s", pvName, nqn, n.name, pvc.Namespace, pvc.Name)
	return nil
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

// startServing opens what the stand-in plays inside pod p: an agent, an
// nft helper, the control plane's REST API.
func (s *StandIn) startServing(p *corev1.Pod, n *node, rp *runningPod) error {
	listen := func(port int, h http.Handler) error {
		l, err := s.netns.Listen(netip.AddrPortFrom(rp.ip, uint16(port)))
		if err != nil {
			return err
		}
		rp.serve(l, h)
		return nil
	}
	switch {
	case p.Labels[LabelAgent] == AgentName:
		h := s.w.Hosts()[n.idx]
		return listen(agent.Port, agent.Handler(agent.Config{Node: n.name, HostNQN: n.hostNQN,
			SysFunc: func() fs.FS {
				s.mu.Lock()
				defer s.mu.Unlock()
				return h.Sysfs()
			}}))
	case p.Labels[LabelFiomigRole] == RoleNFTHelper:
		return s.startHelper(p, n, rp, listen)
	case p.Namespace == s.cfg.StorageNamespace && p.Labels[LabelApp] == AppWebAPI:
		return listen(WebAPIPort, s.webAPI())
	case declaresPort(p, agent.FilesPort):
		// A fio pod's read-only logs sidecar: no container runs here, so
		// no fio ran and there are no files (the harness records fio as
		// not run).
		return listen(agent.FilesPort, agent.FilesHandler(fstest.MapFS{}))
	}
	return nil
}

func declaresPort(p *corev1.Pod, port int) bool {
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if int(cp.ContainerPort) == port {
				return true
			}
		}
	}
	return false
}

// startHelper plays the nft helper container: its rule
// `ip daddr IP tcp dport P ct state new counter drop` on node n drops the
// CONNECTs the simulated hosts send to IP:P (every port of IP when P is
// empty or 0), and its counter is served on agent.HelperPort. A rule whose
// IP is not node n's own address matches nothing, as on a real node.
func (s *StandIn) startHelper(p *corev1.Pod, n *node, rp *runningPod, listen func(int, http.Handler) error) error {
	ip, port, table := p.Annotations[AnnotationNFTIP], p.Annotations[AnnotationNFTPrt], p.Annotations[AnnotationNFTTbl]
	if ip == "" || table == "" {
		return fmt.Errorf("nft helper: annotations %s and %s are required", AnnotationNFTIP, AnnotationNFTTbl)
	}
	target := "" // a rule for another node's address matches nothing here
	if ip == n.mgmtIP {
		target = ip
		if port != "" && port != "0" {
			pn, err := strconv.Atoi(port)
			if err != nil || pn < 1 || pn > 65535 {
				return fmt.Errorf("nft helper: annotation %s=%q: not a port", AnnotationNFTPrt, port)
			}
			target = netip.AddrPortFrom(netip.MustParseAddr(ip), uint16(pn)).String()
		}
	}
	if target != "" {
		s.mu.Lock()
		_, err := s.w.DropConnects(target)
		s.mu.Unlock()
		s.wakeWorld()
		if err != nil {
			return fmt.Errorf("nft helper: %w", err)
		}
		rp.onStop = append(rp.onStop, func() {
			s.mu.Lock()
			ev, _ := s.w.StopDroppingConnects(target)
			s.mu.Unlock()
			s.logf("nft helper %s/%s gone: table %s deleted, %s CONNECTs to %s dropped", p.Namespace, p.Name, table, ev["dropped_connects"], target)
		})
		s.logf("nft helper %s/%s: dropping CONNECTs to %s", p.Namespace, p.Name, target)
	}
	return listen(agent.HelperPort, agent.CounterHandler(func() (agent.Counter, error) {
		c := agent.Counter{Table: table}
		if target == "" {
			return c, nil
		}
		s.mu.Lock()
		c.Packets, _ = s.w.DroppedConnects(target)
		s.mu.Unlock()
		return c, nil
	}))
}

// connectEntry is one connect string of the control plane's REST answer.
type connectEntry struct {
	IP        string `json:"ip"`
	Port      int    `json:"port"`
	NQN       string `json:"nqn"`
	Transport string `json:"transport"`
}

// volumeEntry is the control plane's REST answer about one volume.
type volumeEntry struct {
	UUID     string `json:"uuid"`
	NQN      string `json:"nqn"`
	NodeUUID string `json:"node_uuid"`
	Hostname string `json:"hostname"`
}

// webAPI serves the control-plane routes the harness reads: the published
// endpoints, GET /api/v2/clusters/<cluster>/volumes/<volume>/connect, and
// the volume's current (primary) storage node, GET
// /api/v2/clusters/<cluster>/volumes/<volume>. Both routes and their JSON
// keys are assumptions to check on a real cluster (backend/kube's README).
func (s *StandIn) webAPI() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v2/clusters/{cluster}/volumes/{volume}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("cluster") != sim.ClusterUUID {
			http.Error(w, "cluster not found", http.StatusNotFound)
			return
		}
		s.mu.Lock()
		var out *volumeEntry
		for _, v := range s.w.Volumes() {
			if VolumeUUID(v.NQN) == r.PathValue("volume") {
				// lvstore i's primary is node i (sim.buildTopology).
				out = &volumeEntry{UUID: VolumeUUID(v.NQN), NQN: v.NQN, NodeUUID: NodeUUID(v.LVS), Hostname: s.nodes[v.LVS].name}
			}
		}
		s.mu.Unlock()
		if out == nil {
			http.Error(w, "volume not found", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("GET /api/v2/clusters/{cluster}/volumes/{volume}/connect", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("cluster") != sim.ClusterUUID {
			http.Error(w, "cluster not found", http.StatusNotFound)
			return
		}
		s.mu.Lock()
		var nqn string
		for _, v := range s.w.Volumes() {
			if VolumeUUID(v.NQN) == r.PathValue("volume") {
				nqn = v.NQN
			}
		}
		var eps []string
		if nqn != "" {
			eps = s.w.Endpoints(nqn)
		}
		s.mu.Unlock()
		if nqn == "" {
			http.Error(w, "volume not found", http.StatusNotFound)
			return
		}
		out := []connectEntry{}
		for _, ep := range eps {
			ap, err := netip.ParseAddrPort(ep)
			if err != nil {
				continue
			}
			out = append(out, connectEntry{IP: ap.Addr().String(), Port: int(ap.Port()), NQN: nqn, Transport: "tcp"})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})
	return mux
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
	if p.Namespace != s.cfg.StorageNamespace || p.Labels[LabelRole] != RoleStorageNode || s.ctx.Err() != nil {
		return
	}
	n := s.nodeByName(p.Spec.NodeName)
	if n == nil || s.restarts[n.name] {
		return
	}
	// simplyblock's node API sees its SPDK pod gone: the target process is
	// gone with it; the pod is recreated and the target comes back.
	s.mu.Lock()
	ev, err := s.w.StopTarget(n.name, false)
	s.mu.Unlock()
	s.wakeWorld()
	if err != nil {
		s.logf("SPDK pod %s deleted: stop target: %v", p.Name, err)
		return
	}
	s.restarts[n.name] = true
	s.logf("SPDK pod %s (uid %s) deleted: target of %s down (%s controllers connected)", p.Name, p.UID, n.name, ev["connected_controllers"])
	// The replacement pod is created by reconcileSPDKPods, in the resync
	// that follows this call, and again until the API server takes it.
	time.AfterFunc(time.Duration(s.cfg.TargetRestartS*float64(time.Second)), func() {
		s.post(func() {
			s.mu.Lock()
			ev, err := s.w.StartTarget(n.name)
			s.mu.Unlock()
			s.wakeWorld()
			delete(s.restarts, n.name)
			s.logf("target of %s back (%v, err %v)", n.name, ev, err)
		})
	})
}

// reconcileSPDKPods is simplyblock's node API keeping one SPDK pod per
// storage node: a node with none in the pod cache (its pod deleted, see
// podGone) gets spdkPod created, and a refused create is recorded (Errors)
// and retried on every resync until the API server takes it. The name is
// fixed, so a create the cache has not caught up with yet answers
// AlreadyExists, which counts as done.
func (s *StandIn) reconcileSPDKPods(pods []*corev1.Pod) {
	have := map[string]bool{}
	for _, p := range pods {
		if p.Namespace == s.cfg.StorageNamespace && p.Labels[LabelRole] == RoleStorageNode {
			have[p.Spec.NodeName] = true
		}
	}
	for _, n := range s.nodes {
		if have[n.name] {
			continue
		}
		want := s.spdkPod(n)
		ctx, cancel := s.call()
		created, err := s.cs.CoreV1().Pods(want.Namespace).Create(ctx, want, metav1.CreateOptions{})
		cancel()
		switch {
		case err == nil:
			s.logf("SPDK pod %s/%s of %s created (uid %s)", want.Namespace, want.Name, n.name, created.UID)
		case apierrors.IsAlreadyExists(err):
			err = nil
		default:
			err = fmt.Errorf("create the SPDK pod of %s: %w", n.name, err)
		}
		s.setErr(podKey(want), err)
	}
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
