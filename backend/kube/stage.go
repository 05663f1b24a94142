package kube

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// MigrationStage implements faults.StageReporter from what the harness
// has seen: Validating is in-validation; while Running, the consumer
// host's last sample decides — some namespace of the subsystem without an
// optimized or non-optimized leg on a live controller is in-freeze (the
// pause window, docs/concepts.md), a live target path optimized is after-cutover,
// anything else before-cutover. "" for a migration that is pending, over
// or unknown, or whose host has not been sampled. The stage is as fresh as
// the last sample (one sample interval at most).
func (c *Cluster) MigrationStage(id string) string {
	c.migMu.Lock()
	m, ok := c.migs[id]
	var phase, nqn string
	var target []string
	if ok {
		phase, nqn = m.Phase, m.NQN
		target = slices.Clone(m.target)
	}
	c.migMu.Unlock()
	if !ok || record.IsTerminal(phase) {
		return ""
	}
	switch phase {
	case record.PhaseValidating:
		return record.StageInValidation
	case record.PhaseRunning:
	default:
		return ""
	}
	var v *volume
	for _, x := range c.vols {
		if x.NQN == nqn {
			v = x
		}
	}
	if v == nil {
		return ""
	}
	for _, h := range c.hosts {
		if h.name != v.Host || h.lastSys == nil {
			continue
		}
		hs, err := nvmeof.ReadHost(h.lastSys, "")
		if err != nil {
			return ""
		}
		return stageOf(hs, nqn, v.NSIDs, target)
	}
	return ""
}

// stageOf is the stage of a Running migration of subsystem nqn (namespaces
// nsids, target endpoints target) on one host's state.
func stageOf(hs nvmeof.HostState, nqn string, nsids []int, target []string) string {
	served := map[int]bool{}
	targetOptimized := false
	for _, ctrl := range hs.Controllers() {
		if ctrl.NQN != nqn || ctrl.State != nvmeof.StateLive {
			continue
		}
		ep := ctrl.Address.Key()
		if ap, err := netip.ParseAddrPort(strings.TrimSpace(ep)); err == nil {
			ep = ap.String()
		}
		for _, l := range ctrl.Legs {
			if l.ANA == nvmeof.ANAOptimized || l.ANA == nvmeof.ANANonOptimized {
				served[l.NSID] = true
			}
			if l.ANA == nvmeof.ANAOptimized && slices.Contains(target, ep) {
				targetOptimized = true
			}
		}
	}
	for _, n := range nsids {
		if !served[n] {
			return record.StageInFreeze
		}
	}
	if targetOptimized {
		return record.StageAfterCutover
	}
	return record.StageBeforeCutover
}
