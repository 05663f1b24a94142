package kube

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
)

// connectString is one entry of the control plane's connect strings for a
// volume (SB utils/nvme.py; research/upstream.md §2.6). Only the fields
// fiomig uses.
type connectString struct {
	IP        string `json:"ip"`
	Port      int    `json:"port"`
	NQN       string `json:"nqn"`
	Transport string `json:"transport"`
}

// findControlPlane picks the first Running control-plane pod
// (app=simplyblock-webappapi in the storage namespace), as the seed
// harness picks the webappapi pod for sbctl.
func (c *Cluster) findControlPlane(ctx context.Context) error {
	var pods corev1.PodList
	if err := c.res(c.cfg.StorageNamespace).List(ctx, &pods, resources.WithLabelSelector(labelControlPlane)); err != nil {
		return fmt.Errorf("kube: list control-plane pods (%s) in namespace %s: %w", labelControlPlane, c.cfg.StorageNamespace, err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("kube: no Running control-plane pod (%s) in namespace %s", labelControlPlane, c.cfg.StorageNamespace)
	}
	sort.Strings(names)
	c.cpPod = names[0]
	return nil
}

// endpointsPath is the control plane's route for a volume's connect
// strings. ASSUMPTION: the route is not in the research (sbctl volume
// connect exists); verify on a real cluster (README, kube section).
func endpointsPath(v *volume) string {
	return fmt.Sprintf("/api/v2/clusters/%s/volumes/%s/connect", v.Cluster, v.UUID)
}

// fetchEndpoints reads the endpoints the control plane publishes for v,
// as canonical ip:port, sorted and without duplicates. Entries for another
// NQN are ignored; an unparsable ip is an error naming it.
func (c *Cluster) fetchEndpoints(ctx context.Context, v *volume) ([]string, error) {
	var cs []connectString
	if err := c.proxyJSON(ctx, c.cfg.StorageNamespace, c.cpPod, controlPlanePort, endpointsPath(v), &cs); err != nil {
		return nil, fmt.Errorf("kube: endpoints of volume %s (%s): %w", v.Name, v.NQN, err)
	}
	out := []string{}
	for _, s := range cs {
		if s.NQN != "" && s.NQN != v.NQN {
			continue
		}
		ep, err := canonical(strings.Trim(s.IP, "[]"), s.Port)
		if err != nil {
			return nil, fmt.Errorf("kube: endpoints of volume %s: connect string ip %q: %w", v.Name, s.IP, err)
		}
		if !slices.Contains(out, ep) {
			out = append(out, ep)
		}
	}
	sort.Strings(out)
	return out, nil
}
