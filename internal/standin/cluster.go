package standin

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fiomig/fiomig/sim"
)

// createCluster creates what a simplyblock cluster shows before any test
// object exists: the storage namespace, one Node per simulated storage
// node (which is also a consumer host), the StorageNodeSet with its
// status, the StorageClass, the SPDK pods and the control-plane pod.
func (s *StandIn) createCluster(ctx context.Context) error {
	sns := s.cfg.StorageNamespace
	if _, err := s.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("standin: namespace %s: %w", sns, err)
	}
	for _, n := range s.nodes {
		if err := s.createNode(ctx, n); err != nil {
			return err
		}
	}
	if err := s.createNodeSet(ctx); err != nil {
		return err
	}
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	del := corev1.PersistentVolumeReclaimDelete
	yes := true
	scObj := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: s.cfg.StorageClass, Labels: map[string]string{"storage.simplyblock.io/cluster": ClusterName, "storage.simplyblock.io/pool": "pool1"}},
		Provisioner:          Provisioner,
		Parameters:           map[string]string{"cluster_id": sim.ClusterUUID, "pool_name": "pool1", "csi.storage.k8s.io/fstype": "xfs", "max_namespace_per_subsys": "1"},
		ReclaimPolicy:        &del,
		VolumeBindingMode:    &wffc,
		AllowVolumeExpansion: &yes,
	}
	if _, err := s.cs.StorageV1().StorageClasses().Create(ctx, scObj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("standin: storage class %s: %w", s.cfg.StorageClass, err)
	}
	for _, n := range s.nodes {
		if _, err := s.cs.CoreV1().Pods(sns).Create(ctx, s.spdkPod(n), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("standin: SPDK pod of %s: %w", n.name, err)
		}
	}
	web := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "simplyblock-webappapi-0", Namespace: sns, Labels: map[string]string{LabelApp: AppWebAPI}},
		Spec: corev1.PodSpec{NodeName: s.nodes[0].name, Containers: []corev1.Container{{Name: "webappapi", Image: "simplyblock/simplyblock:standin",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: WebAPIPort}}}}},
	}
	if _, err := s.cs.CoreV1().Pods(sns).Create(ctx, web, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("standin: control-plane pod: %w", err)
	}
	return nil
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
		NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.37.2-fiomig-standin", OperatingSystem: "linux", Architecture: "amd64"},
	}
	if _, err := s.cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("standin: node %s status: %w", n.name, err)
	}
	return nil
}

func (s *StandIn) createNodeSet(ctx context.Context) error {
	var workers, nodes []any
	for _, n := range s.nodes {
		workers = append(workers, n.name)
		nodes = append(nodes, map[string]any{
			"uuid": n.uuid, "health": true, "status": "online", "hostname": n.name, "mgmtIp": n.mgmtIP,
			"rpcPort": int64(RPCPortBase + n.idx), "lvolPort": int64(n.port), "nvmfPort": int64(n.port),
		})
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "storage.simplyblock.io/v1alpha1", "kind": "StorageNodeSet",
		"metadata": map[string]any{"name": StorageNodeSetName, "namespace": s.cfg.StorageNamespace},
		"spec":     map[string]any{"clusterName": ClusterName, "workerNodes": workers},
	}}
	rc := s.dyn.Resource(StorageNodeSetGVR).Namespace(s.cfg.StorageNamespace)
	created, err := rc.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("standin: StorageNodeSet %s: %w", StorageNodeSetName, err)
	}
	created.Object["status"] = map[string]any{"nodes": nodes}
	if _, err := rc.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("standin: StorageNodeSet %s status: %w", StorageNodeSetName, err)
	}
	return nil
}

// spdkPod is node n's SPDK pod as simplyblock's node API creates it
// (research/kube.md §1: snode-spdk-pod-<rpcPort>-<first 6 of the cluster
// id>, labels app=spdk-app-<rpcPort> and role=simplyblock-storage-node,
// hostNetwork, restartPolicy Never).
func (s *StandIn) spdkPod(n *node) *corev1.Pod {
	rpc := strconv.Itoa(RPCPortBase + n.idx)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "snode-spdk-pod-" + rpc + "-" + sim.ClusterUUID[:6], Namespace: s.cfg.StorageNamespace,
			Labels: map[string]string{LabelApp: "spdk-app-" + rpc, LabelRole: RoleStorageNode}},
		Spec: corev1.PodSpec{
			NodeName: n.name, HostNetwork: true, RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector: map[string]string{LabelHostname: n.name},
			Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{
				{Name: "spdk-container", Image: "simplyblock/spdk:standin"},
				{Name: "spdk-proxy-container", Image: "simplyblock/simplyblock:standin"},
			},
		},
	}
}
