package standin

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/netip"
	"testing/fstest"

	corev1 "k8s.io/api/core/v1"

	"github.com/fiomig/fiomig/backend/kube/agent"
)

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
		// The real agent's code over the host's simulated sysfs, shown
		// as simplyblock's CSI leaves it (hostFS). It is given no
		// identity: it learns it as on a cluster.
		h := s.w.Hosts()[n.idx]
		return listen(agent.Port, agent.Handler(agent.Config{Node: n.name,
			SysFunc: func() fs.FS {
				s.mu.Lock()
				defer s.mu.Unlock()
				return hostFS{FS: h.Sysfs(), simNQN: n.simNQN, csiNQN: n.csiNQN()}
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
// `ip daddr IP tcp dport { P1, P2 } ct state new counter drop` on node n
// drops the CONNECTs the simulated hosts send to IP:P for each listed port
// (every port of IP when none is listed), and its counter, the sum over
// the ports, is served on agent.HelperPort. A rule whose IP is not node
// n's data address matches nothing, as on a real node; so does one on the
// management address (hosts never connect there).
func (s *StandIn) startHelper(p *corev1.Pod, n *node, rp *runningPod, listen func(int, http.Handler) error) error {
	ip, port, table := p.Annotations[AnnotationNFTIP], p.Annotations[AnnotationNFTPrt], p.Annotations[AnnotationNFTTbl]
	if ip == "" || table == "" {
		return fmt.Errorf("nft helper: annotations %s and %s are required", AnnotationNFTIP, AnnotationNFTTbl)
	}
	var targets []string // none: a rule for another address matches nothing here
	if ip == n.dataIP {
		if port == "" || port == "0" {
			targets = []string{ip}
		} else {
			ports, err := agent.ParsePorts(port)
			if err != nil {
				return fmt.Errorf("nft helper: annotation %s=%q: %w", AnnotationNFTPrt, port, err)
			}
			for _, pn := range ports {
				targets = append(targets, netip.AddrPortFrom(netip.MustParseAddr(ip), uint16(pn)).String())
			}
		}
	}
	for _, target := range targets {
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
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, target := range targets {
			n, _ := s.w.DroppedConnects(target)
			c.Packets += n
		}
		return c, nil
	}))
}
