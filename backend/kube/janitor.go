package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"

	"github.com/fiomig/fiomig/backend/kube/agent"
)

// JanitorConfig is what kube.Janitor cleans.
type JanitorConfig struct {
	// Kubeconfig or REST reach the cluster (as Config).
	Kubeconfig string
	REST       *rest.Config
	// Namespace holds the runs' objects (default "fiomig");
	// StorageNamespace the runs' VolumeMigrations, their Jobs and the
	// StorageNodeSets (default "simplyblock", as Config).
	Namespace, StorageNamespace string
	// Stale: a run whose Lease was not renewed for this long is dead
	// (default 120 s; a live run renews every 10 s).
	Stale time.Duration
	// SweepNFT runs a sweep helper pod on every storage node that deletes
	// the nftables tables (inet fiomig_*) of dead runs.
	SweepNFT bool
	// HelperImage is the image of the sweep pod (default as Config).
	HelperImage string
	// Now is the clock Lease renewals are judged by (default time.Now).
	Now func() time.Time
}

// Removed is one object (or nftables table) Janitor removed.
type Removed struct {
	Kind, Namespace, Name, Run string
}

func (r Removed) String() string {
	if r.Namespace == "" {
		return fmt.Sprintf("%s %s (run %s)", r.Kind, r.Name, r.Run)
	}
	return fmt.Sprintf("%s %s/%s (run %s)", r.Kind, r.Namespace, r.Name, r.Run)
}

// Janitor finds what dead runs left — VolumeMigrations (and the Jobs they
// own) in the storage namespace, Jobs (a farm's), Pods, PVCs, ConfigMaps and
// Leases in the run namespace, labelled
// fiomig.io/run=<id> whose run has no Lease renewed within Stale — removes
// it, waits until it is gone, and with SweepNFT deletes the dead runs'
// nftables tables on every storage node. It prints one line per removed
// thing to w and returns them. Live runs are left alone.
func Janitor(ctx context.Context, jc JanitorConfig, w io.Writer) ([]Removed, error) {
	if jc.Namespace == "" {
		jc.Namespace = defaultNamespace
	}
	if jc.StorageNamespace == "" {
		jc.StorageNamespace = defaultStorageNS
	}
	if jc.Stale <= 0 {
		jc.Stale = 2 * time.Minute
	}
	if jc.HelperImage == "" {
		jc.HelperImage = defaultHelperImage
	}
	if jc.Now == nil {
		jc.Now = time.Now
	}
	rc, kc, err := Connect(ctx, Config{Kubeconfig: jc.Kubeconfig, REST: jc.REST})
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	ns := jc.Namespace
	c := &Cluster{cfg: Config{Namespace: ns, StorageNamespace: jc.StorageNamespace}, rest: rc, kc: kc, dyn: dyn, ctx: ctx}
	r := c.res(ns)
	var leases coordv1.LeaseList
	if err := r.List(ctx, &leases, resources.WithLabelSelector(LabelRun)); err != nil {
		return nil, fmt.Errorf("janitor: list Leases in namespace %s: %w", ns, err)
	}
	live := map[string]bool{}
	for _, l := range leases.Items {
		if l.Spec.RenewTime != nil && jc.Now().Sub(l.Spec.RenewTime.Time) < jc.Stale {
			live[l.Labels[LabelRun]] = true
		}
	}
	dead := func(labels map[string]string) (string, bool) {
		run, ok := labels[LabelRun]
		return run, ok && !live[run]
	}
	var removed []Removed
	var errs []error
	note := func(rm Removed) {
		removed = append(removed, rm)
		fmt.Fprintf(w, "removed %s\n", rm)
	}

	// VolumeMigrations first (and the Jobs they own: no garbage collector
	// is assumed), so that no operator work starts on what goes next.
	sns := jc.StorageNamespace
	vms, err := dyn.Resource(GVRVolumeMigration).Namespace(sns).List(ctx, metav1.ListOptions{LabelSelector: LabelRun})
	if err != nil {
		errs = append(errs, fmt.Errorf("janitor: list VolumeMigrations in namespace %s: %w", sns, err))
	} else {
		for _, u := range vms.Items {
			run, isDead := dead(u.GetLabels())
			if !isDead {
				continue
			}
			jobs, _ := c.ownedJobs(ctx, u.GetUID())
			if err := c.deleteMigration(ctx, u.GetName(), u.GetUID()); err != nil {
				errs = append(errs, fmt.Errorf("janitor: VolumeMigration %s/%s: %w", sns, u.GetName(), err))
				continue
			}
			for _, j := range jobs {
				note(Removed{"Job", sns, j.Name, run})
			}
			note(Removed{"VolumeMigration", sns, u.GetName(), run})
		}
	}
	type kind struct {
		name string
		list k8s.ObjectList
		each func(func(k8s.Object))
	}
	var jobs batchv1.JobList
	var pods corev1.PodList
	var pvcs corev1.PersistentVolumeClaimList
	var cms corev1.ConfigMapList
	var dl coordv1.LeaseList
	kinds := []kind{
		// A farm's Job first (fiomig sweep --on kube), so that it starts
		// no pod after its pods are gone.
		{"Job", &jobs, func(f func(k8s.Object)) {
			for i := range jobs.Items {
				f(&jobs.Items[i])
			}
		}},
		{"Pod", &pods, func(f func(k8s.Object)) {
			for i := range pods.Items {
				f(&pods.Items[i])
			}
		}},
		{"PersistentVolumeClaim", &pvcs, func(f func(k8s.Object)) {
			for i := range pvcs.Items {
				f(&pvcs.Items[i])
			}
		}},
		{"ConfigMap", &cms, func(f func(k8s.Object)) {
			for i := range cms.Items {
				f(&cms.Items[i])
			}
		}},
		{"Lease", &dl, func(f func(k8s.Object)) {
			for i := range dl.Items {
				f(&dl.Items[i])
			}
		}},
	}
	deadTables := map[string]bool{}
	for _, k := range kinds {
		if err := r.List(ctx, k.list, resources.WithLabelSelector(LabelRun)); err != nil {
			errs = append(errs, fmt.Errorf("janitor: list %ss in namespace %s: %w", k.name, ns, err))
			continue
		}
		k.each(func(o k8s.Object) {
			run, isDead := dead(o.GetLabels())
			if !isDead {
				return
			}
			if t := o.GetAnnotations()[AnnotationNFTTable]; t != "" {
				deadTables[t] = true
			}
			if err := deleteAndWait(ctx, r, o); err != nil {
				errs = append(errs, fmt.Errorf("janitor: %s %s/%s: %w", k.name, ns, o.GetName(), err))
				return
			}
			note(Removed{k.name, ns, o.GetName(), run})
		})
	}
	if jc.SweepNFT {
		tables, err := sweepNFT(ctx, rc, r, dyn, jc, live)
		errs = append(errs, err)
		for _, t := range tables {
			note(Removed{"nftables table", "", t.node + ": inet " + t.table, t.run})
		}
	}
	return removed, errors.Join(errs...)
}

type sweptTable struct{ node, table, run string }

// sweepNFT runs one sweep pod per storage node (hostNetwork, privileged,
// label fiomig.io/role=nft-sweep) keeping the tables of live runs, reads
// the tables it removed (GET /v1/removed through the pod proxy) and
// deletes the pod again.
func sweepNFT(ctx context.Context, rc *rest.Config, r *resources.Resources, dyn dynamic.Interface, jc JanitorConfig, live map[string]bool) ([]sweptTable, error) {
	sets, err := dyn.Resource(GVRStorageNodeSet).Namespace(jc.StorageNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("janitor: list StorageNodeSets in namespace %s: %w", jc.StorageNamespace, err)
	}
	var nodes []string
	for _, s := range sets.Items {
		ns, _, _ := unstructured.NestedSlice(s.Object, "status", "nodes")
		for _, n := range ns {
			if m, ok := n.(map[string]any); ok && str(m["hostname"]) != "" && !slices.Contains(nodes, str(m["hostname"])) {
				nodes = append(nodes, str(m["hostname"]))
			}
		}
	}
	sort.Strings(nodes)
	var keep []string
	for run := range live {
		keep = append(keep, nftTable(run))
	}
	sort.Strings(keep)
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cs: cs, http: hc, ctx: ctx}
	var out []sweptTable
	var errs []error
	for _, node := range nodes {
		name := "fiomig-janitor-nft-" + node
		pod := nftSweepPod(jc.Namespace, name, node, keep, jc.HelperImage)
		if err := r.Create(ctx, pod); err != nil {
			errs = append(errs, fmt.Errorf("janitor: create nft sweep pod %s/%s: %w", jc.Namespace, name, err))
			continue
		}
		err := wait.For(conditions.New(r).PodRunning(pod), wait.WithContext(ctx), wait.WithTimeout(60*time.Second), wait.WithInterval(250*time.Millisecond))
		var tables []string
		if err == nil {
			err = c.proxyJSON(ctx, jc.Namespace, name, agent.HelperPort, "/v1/removed", &tables)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("janitor: nft sweep on %s: %w", node, err))
		}
		for _, t := range tables {
			out = append(out, sweptTable{node: node, table: t, run: runOfTable(t)})
		}
		if derr := deleteAndWait(context.WithoutCancel(ctx), r, pod); derr != nil {
			errs = append(errs, fmt.Errorf("janitor: remove nft sweep pod %s/%s: %w", jc.Namespace, name, derr))
		}
	}
	return out, errors.Join(errs...)
}

// runOfTable is the run id of a table name made by nftTable.
func runOfTable(t string) string {
	rest, ok := strings.CutPrefix(t, "fiomig_")
	if !ok {
		return "?"
	}
	b := []byte(rest)
	for i := range b {
		if b[i] == '_' {
			b[i] = '-'
		}
	}
	return "fiomig-" + string(b)
}
