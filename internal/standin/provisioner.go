package standin

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fiomig/fiomig/sim"
)

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
