package standin

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fiomig/fiomig/sim"
)

// createCluster creates what a simplyblock cluster shows before any test
// object exists: the storage namespace, one Node per simulated storage
// node (which is also a consumer host), the StorageCluster and the
// StorageNodeSet with their status, the CSI's Secret, the StorageClass,
// the SPDK pods and the control-plane pod.
func (s *StandIn) createCluster(ctx context.Context) error {
	sns := s.cfg.StorageNamespace
	if _, err := s.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("standin: namespace %s: %w", sns, err)
	}
	for _, n := range s.nodes {
		if s.real != nil {
			break // the real kubelets registered them (realNodes)
		}
		if err := s.createNode(ctx, n); err != nil {
			return err
		}
	}
	if err := s.createStorageCluster(ctx); err != nil {
		return err
	}
	if err := s.createNodeSet(ctx); err != nil {
		return err
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: CSISecretName, Namespace: sns},
		Data: map[string][]byte{"secret.json": s.SecretJSON()}}
	if _, err := s.cs.CoreV1().Secrets(sns).Create(ctx, sec, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("standin: Secret %s: %w", CSISecretName, err)
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
	if s.real != nil {
		// A real pod whose container only holds the place; the API is
		// served on 127.0.0.1:5000 of the nodes' network namespace, where
		// a port-forward to this hostNetwork pod arrives (startReal).
		web.Spec.HostNetwork = true
		s.realContainers(&web.Spec)
	}
	if _, err := s.cs.CoreV1().Pods(sns).Create(ctx, web, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("standin: control-plane pod: %w", err)
	}
	return nil
}

// createStorageCluster creates StorageCluster simplyblock-cluster in the
// storage namespace with status.uuid the simulated cluster's UUID: the
// operator starts a VolumeMigration only in a namespace holding it
// (operator.go, checkStorageCluster). Its spec holds the required fields
// with the chart's sample values (maxSubsystemCount 50, vcpuCount 8).
func (s *StandIn) createStorageCluster(ctx context.Context) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "storage.simplyblock.io/v1alpha1", "kind": "StorageCluster",
		"metadata": map[string]any{"name": StorageClusterName, "namespace": s.cfg.StorageNamespace},
		"spec":     map[string]any{"maxSubsystemCount": int64(50), "vcpuCount": int64(8), "volumeMigrationSettings": map[string]any{"enabled": true}},
	}}
	if s.real != nil {
		// The validation Jobs' image (volumeMigrationSettings.rebalancerImage,
		// which the operator's Jobs use): one the nodes have.
		obj.Object["spec"].(map[string]any)["volumeMigrationSettings"].(map[string]any)["rebalancerImage"] = s.real.cfg.ShellImage
	}
	rc := s.dyn.Resource(StorageClusterGVR).Namespace(s.cfg.StorageNamespace)
	created, err := rc.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("standin: StorageCluster %s: %w", StorageClusterName, err)
	}
	created.Object["status"] = map[string]any{"uuid": sim.ClusterUUID, "clusterName": ClusterName, "status": "active", "configured": true,
		"storageNodes": int64(len(s.nodes))}
	if _, err := rc.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("standin: StorageCluster %s status: %w", StorageClusterName, err)
	}
	return nil
}

func (s *StandIn) createNodeSet(ctx context.Context) error {
	var workers, nodes []any
	for _, n := range s.nodes {
		workers = append(workers, n.name)
		nodes = append(nodes, map[string]any{
			"uuid": n.uuid, "health": true, "status": "online", "hostname": n.name, "mgmtIp": n.ip.String(),
			"rpcPort": int64(RPCPortBase + n.idx), "lvolPort": int64(n.lvolPort), "nvmfPort": int64(n.nvmfPort),
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

// realContainers makes the containers of a played simplyblock pod (SPDK,
// control plane) run Real.PauseImage, which the nodes have: the pod is
// real, what it would run is played by the stand-in.
func (s *StandIn) realContainers(spec *corev1.PodSpec) {
	for i := range spec.Containers {
		spec.Containers[i].Image = s.real.cfg.PauseImage
		spec.Containers[i].ImagePullPolicy = corev1.PullNever
		spec.Containers[i].Ports = nil
	}
}
