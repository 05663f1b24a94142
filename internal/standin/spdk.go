package standin

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fiomig/fiomig/sim"
)

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

// spdkPod is node n's SPDK pod as simplyblock's node API creates it
// (docs/sources.md §10.1: snode-spdk-pod-<rpcPort>-<first 6 of the cluster
// id>, labels app=spdk-app-<rpcPort> and role=simplyblock-storage-node,
// hostNetwork, restartPolicy Never).
func (s *StandIn) spdkPod(n *node) *corev1.Pod {
	rpc := strconv.Itoa(RPCPortBase + n.idx)
	p := &corev1.Pod{
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
	if s.real != nil {
		s.realContainers(&p.Spec)
	}
	return p
}

// spdkPodGone is simplyblock's node API seeing its SPDK pod p gone: the
// target process is gone with it; the pod is recreated
// (reconcileSPDKPods) and the target comes back TargetRestartS later.
func (s *StandIn) spdkPodGone(p *corev1.Pod) {
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
