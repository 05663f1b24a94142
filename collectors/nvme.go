package collectors

import (
	"cmp"
	"slices"

	"github.com/fiomig/fiomig/backend"
	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// NVMe samples a host's NVMe-oF controllers, their states and each leg's ANA
// state from its sysfs tree (kernel class/nvme and class/nvme-subsystem),
// keeping only controllers whose hostnqn is the host's. A host that
// implements backend.Versioned is parsed again only when its version
// changed (backend.HostReader); otherwise its last line is reused, slices
// shared, so that record.SameState sees it unchanged in constant time.
type NVMe struct {
	hosts backend.HostReader
	last  map[string]record.Line // by host name
}

// Name implements Collector.
func (*NVMe) Name() string { return "nvme" }

// Collect implements Collector: one "sample" line for the host.
func (c *NVMe) Collect(t float64, h backend.Host) ([]record.Line, error) {
	hs, same, err := c.hosts.Read(h)
	if err != nil {
		return nil, err
	}
	if prev, ok := c.last[h.Name()]; ok && same {
		prev.T = t
		return []record.Line{prev}, nil
	}
	l := SampleLine(t, h.Name(), hs)
	if c.last == nil {
		c.last = map[string]record.Line{}
	}
	c.last[h.Name()] = l
	return []record.Line{l}, nil
}

// SampleLine renders a host's state as a timeline sample line: controllers
// sorted by instance, legs by NSID, subsystems with their namespaces.
// Addresses are written as nvmeof.Address.Key: ip:port, or the raw traddr
// (with :trsvcid when there is one) for transports without IP.
func SampleLine(t float64, host string, hs nvmeof.HostState) record.Line {
	l := record.Line{T: t, Kind: record.KindSample, Host: host,
		Controllers: []record.Controller{}, Subsystems: []record.Subsystem{}}
	var ctrls []nvmeof.Controller
	for _, s := range hs.Subsystems {
		sub := record.Subsystem{NQN: s.NQN, NSIDs: []int{}}
		for _, ns := range s.Namespaces {
			sub.NSIDs = append(sub.NSIDs, ns.NSID)
		}
		l.Subsystems = append(l.Subsystems, sub)
		ctrls = append(ctrls, s.Controllers...)
	}
	slices.SortFunc(ctrls, func(a, b nvmeof.Controller) int { return cmp.Compare(a.Instance, b.Instance) })
	for _, c := range ctrls {
		rc := record.Controller{Name: c.Name, NQN: c.NQN, Address: c.Address.Key(),
			State: string(c.State), Transport: c.Transport, Legs: []record.Leg{}}
		if c.CtrlLossTmo != 0 { // 0: the file is absent (non-fabrics)
			rc.CtrlLossTmo = &c.CtrlLossTmo
		}
		for _, leg := range c.Legs {
			rc.Legs = append(rc.Legs, record.Leg{NSID: leg.NSID, ANA: string(leg.ANA)})
		}
		l.Controllers = append(l.Controllers, rc)
	}
	return l
}
