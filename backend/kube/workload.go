package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"

	"github.com/fiomig/fiomig/fio"
	"github.com/fiomig/fiomig/workload"
)

// jobKey is volume i's job file name in the run's ConfigMap.
func jobKey(i int) string { return fmt.Sprintf("vol-%d.fio", i+1) }

// createWorkload creates the ConfigMap of fio job files (rendered by
// package fio: fio.MigrationWorkload on /data/fio.dat, per-I/O latency log
// /logs/lat_lat.1.log, run in /logs), then per volume a PVC of the StorageClass and a
// fio pod pinned to consumer host i mod hosts (docs/sources.md §8: the
// seed harness pins its fio pods by a required hostname node affinity),
// and waits until every PVC is Bound and every pod Running.
func (c *Cluster) createWorkload(ctx context.Context) error {
	ns, id := c.cfg.Namespace, c.cfg.RunID
	jobs := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: id + "-fio-jobs", Namespace: ns, Labels: runLabels(id, "jobs")},
		Data:       map[string]string{},
	}
	for i := 0; i < c.cfg.Volumes; i++ {
		jf := fio.JobFile{
			Comment:    []string{fmt.Sprintf("fiomig run %s, volume %d (PVC %s-pvc-%d)", id, i+1, id, i+1)},
			Jobs:       []fio.Job{fio.MigrationWorkload(fmt.Sprintf("vol-%d", i+1), "/data/fio.dat", workload.LogPrefix, c.cfg.FioRuntime)},
			Documented: true,
		}
		var b strings.Builder
		if err := jf.Render(&b); err != nil {
			return fmt.Errorf("kube: fio job of volume %d: %w", i+1, err)
		}
		jobs.Data[jobKey(i)] = b.String()
	}
	if err := c.create(ctx, jobs, "ConfigMap"); err != nil {
		return err
	}
	var pvcs []*corev1.PersistentVolumeClaim
	var pods []*corev1.Pod
	for i := 0; i < c.cfg.Volumes; i++ {
		h := c.hosts[i%len(c.hosts)]
		v := &volume{Name: fmt.Sprintf("vol-%d", i+1), PVC: fmt.Sprintf("%s-pvc-%d", id, i+1), Pod: fmt.Sprintf("%s-fio-%d", id, i+1), Host: h.name}
		pvc, err := pvcObject(ns, v.PVC, id, c.cfg.StorageClass, c.cfg.VolumeSize)
		if err != nil {
			return err
		}
		if err := c.create(ctx, pvc, "PersistentVolumeClaim"); err != nil {
			return err
		}
		pod := fioPod(ns, v.Pod, id, v.PVC, v.Host, jobs.Name, jobKey(i), c.cfg.FioImage, c.cfg.HelperImage)
		if err := c.create(ctx, pod, "Pod"); err != nil {
			return err
		}
		c.vols = append(c.vols, v)
		pvcs = append(pvcs, pvc)
		pods = append(pods, pod)
	}
	c.progressf("kube: waiting for %d PVCs of StorageClass %s to bind and %d fio pods to run", len(pvcs), c.cfg.StorageClass, len(pods))
	cond := conditions.New(c.res(ns))
	for _, p := range pods {
		err := wait.For(func(ctx context.Context) (bool, error) {
			ok, err := cond.PodRunning(p)(ctx)
			if err == nil && !ok && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
				return false, fmt.Errorf("pod %s/%s ended %s before the run started", ns, p.Name, p.Status.Phase)
			}
			return ok, err
		}, wait.WithContext(ctx), wait.WithTimeout(c.cfg.SetupTimeout), wait.WithInterval(500*time.Millisecond))
		if err != nil {
			return fmt.Errorf("kube: fio pod %s/%s not Running after %s (phase %q, node %q): %w", ns, p.Name, c.cfg.SetupTimeout, p.Status.Phase, p.Spec.NodeName, err)
		}
	}
	for _, pvc := range pvcs {
		err := wait.For(cond.ResourceMatch(pvc, func(o k8s.Object) bool {
			return o.(*corev1.PersistentVolumeClaim).Status.Phase == corev1.ClaimBound
		}), wait.WithContext(ctx), wait.WithTimeout(c.cfg.SetupTimeout), wait.WithInterval(500*time.Millisecond))
		if err != nil {
			return fmt.Errorf("kube: PVC %s/%s of StorageClass %s not Bound after %s (phase %q): %w", ns, pvc.Name, c.cfg.StorageClass, c.cfg.SetupTimeout, pvc.Status.Phase, err)
		}
	}
	return nil
}

// create creates obj and registers its removal right away: delete
// (background propagation: no garbage collector is assumed) and wait until
// it is gone.
func (c *Cluster) create(ctx context.Context, obj k8s.Object, kind string) error {
	r := c.res(obj.GetNamespace())
	if err := r.Create(ctx, obj); err != nil {
		return fmt.Errorf("kube: create %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	what := fmt.Sprintf("%s %s/%s", kind, obj.GetNamespace(), obj.GetName())
	c.register(what, func(ctx context.Context) error { return deleteAndWait(ctx, r, obj) })
	return nil
}

// deleteAndWait deletes obj (background propagation) and waits up to 90 s
// for it to be gone; an object already gone is no error.
func deleteAndWait(ctx context.Context, r *resources.Resources, obj k8s.Object) error {
	err := r.Delete(ctx, obj, resources.WithDeletePropagation(string(metav1.DeletePropagationBackground)))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return wait.For(conditions.New(r).ResourceDeleted(obj), wait.WithContext(ctx),
		wait.WithTimeout(90*time.Second), wait.WithInterval(250*time.Millisecond))
}

// resolveVolumes reads each PVC's PV: the CSI volume handle
// <clusterUUID>:<poolUUID>:<volumeUUID> (docs/sources.md §5.1) and the
// subsystem NQN (volumeAttributes "nqn", else the form
// nqn.2023-02.io.simplyblock:<clusterUUID>:lvol:<volumeUUID> that the
// sysfs fixtures show, docs/sources.md §4.2; an inference on kube).
func (c *Cluster) resolveVolumes(ctx context.Context) error {
	for _, v := range c.vols {
		var pvc corev1.PersistentVolumeClaim
		if err := c.res(c.cfg.Namespace).Get(ctx, v.PVC, c.cfg.Namespace, &pvc); err != nil {
			return fmt.Errorf("kube: get PVC %s/%s: %w", c.cfg.Namespace, v.PVC, err)
		}
		v.PV = pvc.Spec.VolumeName
		var pv corev1.PersistentVolume
		if err := c.res("").Get(ctx, v.PV, "", &pv); err != nil {
			return fmt.Errorf("kube: get PV %s of PVC %s/%s: %w", v.PV, c.cfg.Namespace, v.PVC, err)
		}
		if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != csiDriver {
			return fmt.Errorf("kube: PV %s of PVC %s is not a %s volume: is StorageClass %s simplyblock's?", v.PV, v.PVC, csiDriver, c.cfg.StorageClass)
		}
		parts := strings.Split(pv.Spec.CSI.VolumeHandle, ":")
		if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
			return fmt.Errorf("kube: PV %s: CSI volume handle %q is not <cluster>:<pool>:<volume>", v.PV, pv.Spec.CSI.VolumeHandle)
		}
		v.Cluster, v.Pool, v.UUID = parts[0], parts[1], parts[2]
		v.NQN = pv.Spec.CSI.VolumeAttributes["nqn"]
		if v.NQN == "" {
			v.NQN = nqnPrefix + v.Cluster + ":lvol:" + v.UUID
		}
		for _, o := range c.vols {
			if o != v && o.NQN == v.NQN {
				return fmt.Errorf("kube: PVs %s and %s have the same subsystem %s", o.PV, v.PV, v.NQN)
			}
		}
	}
	return nil
}
