package kube

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// MigrationTimeout bounds one migration: a VolumeMigration not terminal
// this long after it was created makes AdvanceTo fail with an error naming
// the object and its last phase.
var MigrationTimeout = 15 * time.Minute

// startWatch watches the run's VolumeMigrations (label fiomig.io/run) and
// turns every status.phase change into a phase line stamped when it
// arrived. A watch delivers every write of the object in order, so no
// transition is missed between two samples; a closed watch is resumed
// from the last resourceVersion seen.
func (c *Cluster) startWatch() error {
	ctx, cancel := context.WithCancel(c.ctx)
	c.watchFn = cancel
	ri := c.dyn.Resource(GVRVolumeMigration).Namespace(c.cfg.StorageNamespace)
	sel := LabelRun + "=" + c.cfg.RunID
	list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		cancel()
		return fmt.Errorf("kube: list VolumeMigrations in namespace %s (is the CRD installed?): %w", c.cfg.StorageNamespace, err)
	}
	rv := list.GetResourceVersion()
	go func() {
		for ctx.Err() == nil {
			w, err := ri.Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				time.Sleep(500 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rv = u.GetResourceVersion()
				if ev.Type == watch.Added || ev.Type == watch.Modified {
					c.observe(u)
				}
			}
			w.Stop()
		}
	}()
	return nil
}

// observe records a phase change of a VolumeMigration.
func (c *Cluster) observe(u *unstructured.Unstructured) {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	if phase == "" {
		return
	}
	c.migMu.Lock()
	defer c.migMu.Unlock()
	m, ok := c.migs[u.GetName()]
	if !ok || m.Phase == phase {
		return
	}
	m.Phase = phase
	m.Terminal = record.IsTerminal(phase)
	if phase == record.PhaseCompleted && m.targetIP != "" {
		c.lastTarget[m.NQN] = m.targetIP
	}
	if nqn, _, _ := unstructured.NestedString(u.Object, "status", "subsystemNQN"); nqn != "" {
		m.NQN = nqn
	}
	l := record.Line{T: c.Now(), Kind: record.KindPhase, Migration: m.Name, NQN: m.NQN, Phase: phase}
	l.Reason, _, _ = unstructured.NestedString(u.Object, "status", "errorMessage")
	var conns []string
	cs, _, _ := unstructured.NestedSlice(u.Object, "status", "connections")
	for _, cn := range cs {
		cm, _ := cn.(map[string]any)
		port, _ := cm["port"].(int64)
		if p, ok := cm["port"].(float64); ok {
			port = int64(p)
		}
		if ep, err := canonical(strings.Trim(str(cm["ip"]), "[]"), int(port)); err == nil {
			conns = append(conns, ep)
		}
	}
	if !m.endpointsSaid {
		// The first phase line names the migration's source and target
		// endpoints (checks: split brain, served after cutover): the
		// source = what the control plane published when it was created;
		// the target = status.connections once the operator wrote them,
		// else the target node's lvolPort on every storage node's data
		// address (a store's port is served by every node of its HA set).
		m.endpointsSaid = true
		l.SourceEndpoints = m.source
		l.TargetEndpoints = conns
		if len(conns) == 0 {
			l.TargetEndpoints = m.target
		}
	} else if len(conns) > 0 && !slices.Equal(conns, m.target) {
		l.TargetEndpoints = conns
	}
	if len(conns) > 0 {
		m.target = conns
	}
	c.pending = append(c.pending, l)
	if l.Reason != "" {
		c.progressf("kube: VolumeMigration %s: %s: %s", m.Name, phase, l.Reason)
	}
}

// StartMigration implements backend.Cluster: it creates VolumeMigration
// <run>-mig-<n> in the StorageCluster's namespace for the volume with
// subsystem nqn (spec.pvName its PV,
// spec.targetNodeUUID a seeded choice among the healthy storage nodes
// other than the source). The source is the node whose IP carries the
// optimized path on the volume's consumer host (as the seed harness tags
// ANA paths by IP); when no host shows one, every node is a candidate but
// the one the published endpoints list first. Its removal is registered
// at once.
func (c *Cluster) StartMigration(nqn string) (string, error) {
	var v *volume
	for _, x := range c.vols {
		if x.NQN == nqn {
			v = x
		}
	}
	if v == nil {
		return "", fmt.Errorf("kube: no volume of this run has subsystem %s", nqn)
	}
	src := c.sourceIP(v)
	var cands []storageNode
	for _, n := range c.nodes {
		if n.IP != src {
			cands = append(cands, n)
		}
	}
	if len(cands) == 0 {
		return "", fmt.Errorf("kube: no storage node other than the source %s to migrate %s to", src, v.Name)
	}
	target := cands[c.rng.IntN(len(cands))]
	c.migN++
	name := fmt.Sprintf("%s-mig-%d", c.cfg.RunID, c.migN)
	sns := c.cfg.StorageNamespace
	obj := volumeMigration(sns, name, c.cfg.RunID, v.PV, target.UUID)
	ri := c.dyn.Resource(GVRVolumeMigration).Namespace(sns)
	m := &migration{Name: name, NQN: v.NQN, source: slices.Clone(c.endpoints[v.NQN]), targetIP: target.IP}
	for _, n := range c.nodes {
		if ep, err := canonical(n.IP, target.LvolPort); err == nil {
			m.target = append(m.target, ep)
		}
	}
	sort.Strings(m.target)
	c.migMu.Lock()
	c.migs[name] = m
	c.migMu.Unlock()
	created, err := ri.Create(c.ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("kube: create VolumeMigration %s/%s: %w", sns, name, err)
	}
	uid := created.GetUID()
	c.migMu.Lock()
	c.migs[name].UID = string(uid)
	c.migs[name].created = time.Now()
	c.migMu.Unlock()
	c.register("VolumeMigration "+sns+"/"+name, func(ctx context.Context) error {
		return c.deleteMigration(ctx, name, uid)
	})
	c.progressf("kube: VolumeMigration %s: %s (PV %s) to node %s", name, v.Name, v.PV, target.Name)
	return name, nil
}

// sourceIP is where v lives now: the target of its last Completed
// migration, else the IP of the optimized path on its consumer host (a
// live controller's first, else any controller's: one reconnecting after
// a target restart still shows its legs), else the first published
// endpoint's IP.
func (c *Cluster) sourceIP(v *volume) string {
	c.migMu.Lock()
	last := c.lastTarget[v.NQN]
	c.migMu.Unlock()
	if last != "" {
		return last
	}
	for _, liveOnly := range []bool{true, false} {
		if ip := c.optimizedIP(v, liveOnly); ip != "" {
			return ip
		}
	}
	if eps := c.endpoints[v.NQN]; len(eps) > 0 {
		if ap, err := netip.ParseAddrPort(eps[0]); err == nil {
			return ap.Addr().String()
		}
	}
	return ""
}

func (c *Cluster) optimizedIP(v *volume, liveOnly bool) string {
	for _, h := range c.hosts {
		if h.name != v.Host {
			continue
		}
		hs, err := nvmeof.ReadHost(h.Sysfs(), "")
		if err != nil {
			break
		}
		for _, ctrl := range hs.Controllers() {
			if ctrl.NQN != v.NQN || (liveOnly && ctrl.State != nvmeof.StateLive) {
				continue
			}
			for _, l := range ctrl.Legs {
				if l.ANA == nvmeof.ANAOptimized {
					return strings.Trim(ctrl.Address.Traddr, "[]")
				}
			}
		}
	}
	return ""
}

// deleteMigration deletes the VolumeMigration and the Jobs it owns (no
// garbage collector is assumed), waiting until they are gone.
func (c *Cluster) deleteMigration(ctx context.Context, name string, uid types.UID) error {
	var errs []error
	jobs, err := c.ownedJobs(ctx, uid)
	errs = append(errs, err)
	for i := range jobs {
		errs = append(errs, deleteAndWait(ctx, c.res(c.cfg.StorageNamespace), &jobs[i]))
	}
	ri := c.dyn.Resource(GVRVolumeMigration).Namespace(c.cfg.StorageNamespace)
	bg := metav1.DeletePropagationBackground
	if err := ri.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !isNotFound(err) {
		errs = append(errs, err)
	}
	for ctx.Err() == nil {
		if _, err := ri.Get(ctx, name, metav1.GetOptions{}); isNotFound(err) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	return errors.Join(errs...)
}

// ownedJobs are the Jobs in the StorageCluster's namespace owned by the
// object uid (the operator's Jobs carry no label, only the owner
// reference: simplyblock-operator volumemigration_controller.go
// migrationPathJob).
func (c *Cluster) ownedJobs(ctx context.Context, uid types.UID) ([]batchv1.Job, error) {
	var list batchv1.JobList
	if err := c.res(c.cfg.StorageNamespace).List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list Jobs in namespace %s: %w", c.cfg.StorageNamespace, err)
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		for _, o := range j.OwnerReferences {
			if o.UID == uid {
				out = append(out, j)
			}
		}
	}
	return out, nil
}

// MigrationPhase implements backend.Cluster: the last phase the watch saw.
func (c *Cluster) MigrationPhase(id string) (string, bool) {
	c.migMu.Lock()
	defer c.migMu.Unlock()
	m, ok := c.migs[id]
	if !ok {
		return "", false
	}
	return m.Phase, m.Terminal
}

// checkTimeouts fails for a migration not terminal MigrationTimeout after
// it was created, naming the object and its last phase.
func (c *Cluster) checkTimeouts() error {
	c.migMu.Lock()
	defer c.migMu.Unlock()
	for _, m := range c.migs {
		if !m.Terminal && !m.created.IsZero() && time.Since(m.created) > MigrationTimeout {
			last := m.Phase
			if last == "" {
				last = "no phase yet"
			}
			return fmt.Errorf("kube: VolumeMigration %s/%s not terminal after %s; last phase: %s", c.cfg.StorageNamespace, m.Name, MigrationTimeout, last)
		}
	}
	return nil
}

// AbortMigration implements faults.MigrationAborter: it sets spec.abort on
// the VolumeMigration (the operator's own abort path, docs/sources.md §5.2)
// and waits up to 60 s for the watch to see it leave the phase it was in.
// A terminal or unknown migration is an error.
func (c *Cluster) AbortMigration(id, reason string) (string, error) {
	from, terminal := c.MigrationPhase(id)
	c.migMu.Lock()
	_, known := c.migs[id]
	c.migMu.Unlock()
	if !known {
		return "", fmt.Errorf("kube: no VolumeMigration %s in this run", id)
	}
	if terminal {
		return from, fmt.Errorf("kube: VolumeMigration %s/%s is already %s", c.cfg.StorageNamespace, id, from)
	}
	patch := []byte(`{"spec":{"abort":true}}`)
	ri := c.dyn.Resource(GVRVolumeMigration).Namespace(c.cfg.StorageNamespace)
	if _, err := ri.Patch(c.ctx, id, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return from, fmt.Errorf("kube: set spec.abort on VolumeMigration %s/%s (%s): %w", c.cfg.StorageNamespace, id, reason, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && c.ctx.Err() == nil {
		if p, _ := c.MigrationPhase(id); p != from {
			return from, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return from, fmt.Errorf("kube: VolumeMigration %s/%s still %s 60 s after spec.abort was set", c.cfg.StorageNamespace, id, from)
}

// KillValidationJob implements faults.MigrationAborter: it deletes the
// validation Job that the migration owns on host (Job name prefix
// vmig-validate-, nodeSelector kubernetes.io/hostname: simplyblock-operator
// volumemigration_controller.go migrationPathJob),
// as a pod killed mid-round. Evidence: the Job's name and uid, its active
// and failed pod counts when it was deleted.
func (c *Cluster) KillValidationJob(id, host string) (map[string]string, error) {
	c.migMu.Lock()
	m, ok := c.migs[id]
	var uid types.UID
	if ok {
		uid = types.UID(m.UID)
	}
	c.migMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("kube: no VolumeMigration %s in this run", id)
	}
	jobs, err := c.ownedJobs(c.ctx, uid)
	if err != nil {
		return nil, err
	}
	for i := range jobs {
		j := &jobs[i]
		if !strings.HasPrefix(j.Name, validateJobPrefix) || j.Spec.Template.Spec.NodeSelector[labelHostname] != host {
			continue
		}
		bg := metav1.DeletePropagationBackground
		if err := c.cs.BatchV1().Jobs(j.Namespace).Delete(c.ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
			return nil, fmt.Errorf("kube: delete validation Job %s/%s: %w", j.Namespace, j.Name, err)
		}
		return map[string]string{"job": j.Name, "job_uid": string(j.UID),
			"job_active": fmt.Sprint(j.Status.Active), "job_failed": fmt.Sprint(j.Status.Failed)}, nil
	}
	return nil, fmt.Errorf("kube: VolumeMigration %s/%s has no validation Job on host %s", c.cfg.StorageNamespace, id, host)
}
