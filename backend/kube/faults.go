package kube

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"

	"github.com/fiomig/fiomig/backend/kube/agent"
)

// The fault knobs of faults/hooks.go on Kubernetes. backend/kube does not
// import faults; the method sets match its interfaces.

// Kinds lists the fault kinds the kube backend can inject, with how
// (fiomig run --help prints it).
var Kinds = map[string]string{
	"target-restart":     "deletes the storage node's SPDK pod (role=simplyblock-storage-node); evidence: the replacement pod's new uid, then that it runs",
	"dropped-connects":   "a privileged hostNetwork helper pod on the storage node adds an nftables rule dropping new TCP connections to the ports hosts use at its data address (a node name: every port its published endpoints carry); evidence: the rule's counter > 0; recovery deletes the pod, which deletes the table",
	"aborted-validation": "mode=abort sets the VolumeMigration's spec.abort; mode=kill-job deletes the migration's validation Job on the host",
}

// SupportsFault says whether the kube backend can inject faults of kind:
// nil for the kinds of Kinds, else an error naming the kind and the kinds
// it can inject.
func SupportsFault(kind string) error {
	if _, ok := Kinds[kind]; ok {
		return nil
	}
	names := make([]string, 0, len(Kinds))
	for k := range Kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	return fmt.Errorf("fault kind %q cannot be injected on the kube backend yet (it can: %s)", kind, strings.Join(names, ", "))
}

// spdkPods are the running, not deleted SPDK pods on node.
func (c *Cluster) spdkPods(ctx context.Context, node string) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := c.res(c.cfg.SPDKNamespace).List(ctx, &list, resources.WithLabelSelector(labelSPDKRole)); err != nil {
		return nil, fmt.Errorf("kube: list SPDK pods (%s) in namespace %s: %w", labelSPDKRole, c.cfg.SPDKNamespace, err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

func (c *Cluster) node(name string) (storageNode, bool) {
	for _, n := range c.nodes {
		if n.Name == name {
			return n, true
		}
	}
	return storageNode{}, false
}

// StopTarget implements faults.TargetRestarter: it deletes the SPDK pod of
// storage node node (grace 0, as a crashed target) and waits up to 60 s for
// its replacement (the storage node's API recreates it, docs/sources.md
// §10.1). Evidence: the old and new pod's uid. An unknown node, or a node with
// no SPDK pod, is an error; on Kubernetes the target comes back by itself,
// so the down time is the system's, not for_s.
func (c *Cluster) StopTarget(node string) (map[string]string, error) {
	if _, ok := c.node(node); !ok {
		return nil, fmt.Errorf("kube: no healthy storage node %s", node)
	}
	pods, err := c.spdkPods(c.ctx, node)
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("kube: storage node %s has no SPDK pod (%s) in namespace %s (--spdk-namespace)", node, labelSPDKRole, c.cfg.SPDKNamespace)
	}
	old := pods[0]
	zero := int64(0)
	if err := c.cs.CoreV1().Pods(old.Namespace).Delete(c.ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("kube: delete SPDK pod %s/%s: %w", old.Namespace, old.Name, err)
	}
	ev := map[string]string{"pod": old.Name, "old_pod_uid": string(old.UID)}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && c.ctx.Err() == nil {
		pods, err := c.spdkPods(c.ctx, node)
		if err == nil {
			for _, p := range pods {
				if p.UID != old.UID {
					ev["new_pod"], ev["new_pod_uid"] = p.Name, string(p.UID)
					return ev, nil
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return ev, fmt.Errorf("kube: SPDK pod %s/%s deleted, but no replacement on %s within 60 s", old.Namespace, old.Name, node)
}

// StartTarget implements faults.TargetRestarter: it waits up to 120 s for
// the node's SPDK pod to be Running (the target restarted). Evidence:
// the running pod's uid. A node that is gone counts as recovered.
func (c *Cluster) StartTarget(node string) (map[string]string, error) {
	if _, ok := c.node(node); !ok {
		return nil, nil
	}
	ctx := context.WithoutCancel(c.ctx)
	deadline := time.Now().Add(120 * time.Second)
	for time.Now().Before(deadline) {
		pods, err := c.spdkPods(ctx, node)
		if err != nil {
			return nil, err
		}
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				return map[string]string{"running_pod": p.Name, "running_pod_uid": string(p.UID)}, nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil, fmt.Errorf("kube: no Running SPDK pod on storage node %s 120 s after the restart", node)
}

// drop is one dropped-CONNECTs window: its helper pod.
type drop struct {
	pod, node, ip string
	ports         []int
	last          int64 // last counter read
}

// resolveDrop turns a fault target into node, data address and ports: a
// storage node's name means every port its data address carries in the
// published endpoints of the run's volumes, and its own lvolPort (the
// ports hosts connect to it on; never nvmfPort, the inter-node device
// port); ip:port means that port of the node with that data address.
func (c *Cluster) resolveDrop(target string) (storageNode, string, []int, error) {
	if n, ok := c.node(target); ok {
		ports := []int{n.LvolPort}
		for _, eps := range c.endpoints {
			for _, ep := range eps {
				ap, err := netip.ParseAddrPort(ep)
				if err == nil && slices.Contains(n.IPs, ap.Addr().String()) && !slices.Contains(ports, int(ap.Port())) {
					ports = append(ports, int(ap.Port()))
				}
			}
		}
		slices.Sort(ports)
		return n, n.IP, ports, nil
	}
	ap, err := netip.ParseAddrPort(target)
	if err != nil {
		return storageNode{}, "", nil, fmt.Errorf("kube: dropped-connects target %q is neither a storage node nor an ip:port", target)
	}
	for _, n := range c.nodes {
		if slices.Contains(n.IPs, ap.Addr().String()) {
			return n, ap.Addr().String(), []int{int(ap.Port())}, nil
		}
	}
	return storageNode{}, "", nil, fmt.Errorf("kube: no storage node has the data address %s (target %s)", ap.Addr(), target)
}

// DropConnects implements faults.ConnectDropper: it creates the helper pod
// <run>-nft-<node> on the storage node (its removal registered at once)
// and returns: the fault is a lagging one, and its evidence — the rule's
// counter above 0, read through the pod proxy (DroppedConnects) — comes
// once the pod runs and the rule dropped a SYN. Waiting here for the pod
// to start (seconds on a real node) would stop the run's sampling for as
// long. Evidence: the pod, table and rule. A target already dropped is an
// error.
func (c *Cluster) DropConnects(target string) (map[string]string, error) {
	if _, ok := c.drops[target]; ok {
		return nil, fmt.Errorf("kube: CONNECTs to %s are already being dropped", target)
	}
	n, ip, ports, err := c.resolveDrop(target)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s-nft-%s", c.cfg.RunID, n.Name)
	pod := nftHelperPod(c.cfg.Namespace, name, c.cfg.RunID, n.Name, ip, ports, c.cfg.HelperImage)
	if err := c.create(c.ctx, pod, "Pod"); err != nil {
		return nil, err
	}
	c.drops[target] = &drop{pod: name, node: n.Name, ip: ip, ports: ports}
	table := nftTable(c.cfg.RunID)
	return map[string]string{"helper_pod": name, "table": table, "rule": agent.NFT{Table: table, IP: ip, Ports: ports}.Rule()}, nil
}

// DroppedConnects reads how many new connections the helper's rule has
// dropped since DropConnects, without stopping the drop (faults'
// ConnectDropCounter). A target not being dropped reads 0.
func (c *Cluster) DroppedConnects(target string) (int64, error) {
	d, ok := c.drops[target]
	if !ok {
		return 0, nil
	}
	var cnt agent.Counter
	if err := c.proxyJSON(c.ctx, c.cfg.Namespace, d.pod, agent.HelperPort, "/v1/counter", &cnt); err != nil {
		return d.last, err
	}
	d.last = cnt.Packets
	return cnt.Packets, nil
}

// StopDroppingConnects implements faults.ConnectDropper: it reads the
// counter a last time, then deletes the helper pod (its SIGTERM handler
// deletes the table) and waits until it is gone. It returns the count
// since DropConnects. Idempotent: a target not being dropped returns 0; a
// helper pod or node that vanished counts as recovered (the last count
// read is returned).
func (c *Cluster) StopDroppingConnects(target string) (int64, error) {
	d, ok := c.drops[target]
	if !ok {
		return 0, nil
	}
	n, _ := c.DroppedConnects(target)
	if n < d.last {
		n = d.last
	}
	delete(c.drops, target)
	ctx := context.WithoutCancel(c.ctx)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: d.pod, Namespace: c.cfg.Namespace}}
	if err := deleteAndWait(ctx, c.res(c.cfg.Namespace), pod); err != nil && !apierrors.IsNotFound(err) {
		return n, fmt.Errorf("kube: delete nft helper pod %s/%s: %w", c.cfg.Namespace, d.pod, err)
	}
	return n, nil
}
