package sim

import (
	"fmt"

	"github.com/fiomig/fiomig/nvmeof"
)

var _ nvmeof.Host = (*Host)(nil)

// Kernel connect defaults (Linux 6.12 drivers/nvme/host/fabrics.h:15-19
// NVMF_DEF_*): what a controller gets for an option the connect request
// leaves unset.
const (
	kernelDefaultCtrlLossTmo    = 600
	kernelDefaultReconnectDelay = 10
	kernelDefaultFastIOFailTmo  = -1
)

// Read implements nvmeof.Host: the host's controllers as nvmeof reads them
// from the rendered sysfs tree. It returns State(), which equals what
// nvmeof.ReadHost parses from Sysfs() (TestRoundTripThroughNvmeof checks
// it), without rendering and parsing a tree for every Job step.
func (h *Host) Read() (nvmeof.HostState, error) {
	return h.State(), nil
}

// Connect implements nvmeof.Host as `nvme connect` does (nvme-cli/libnvme
// then a write to /dev/nvme-fabrics): options left unset take the kernel
// defaults, and nvme-cli drops --fast_io_fail_tmo <= 0 and --keep-alive-tmo
// 0 so the kernel default applies for those too. A connect blocked by a
// controller with the same key fails with an error wrapping
// nvmeof.ErrAlreadyConnected; a refused or rejected connect leaves no
// controller. A HostNQN or HostID other than the host's own is refused
// (this model keeps one identity per host).
func (h *Host) Connect(t nvmeof.Target) (string, error) {
	if (t.HostNQN != "" && t.HostNQN != h.NQN) || (t.HostID != "" && t.HostID != h.ID) {
		return "", fmt.Errorf("host %s: connect %s with a foreign host identity is not modelled", h.Name, t.Endpoint())
	}
	c, err := h.connect(SpecFromTarget(t))
	if err != nil {
		return "", err
	}
	return c.Name(), nil
}

// SpecFromTarget turns an nvmeof.Target into the connect request the kernel
// receives through nvme-cli: unset options take the kernel defaults,
// fast_io_fail_tmo <= 0 and keep_alive_tmo 0 are dropped by nvme-cli.
func SpecFromTarget(t nvmeof.Target) ConnectSpec {
	o := ConnectOptions{CtrlLossTmo: kernelDefaultCtrlLossTmo, ReconnectDelay: kernelDefaultReconnectDelay,
		FastIOFailTmo: kernelDefaultFastIOFailTmo, KeepAliveTmo: kernelDefaultKato}
	if t.CtrlLossTmo != nil {
		o.CtrlLossTmo = *t.CtrlLossTmo
	}
	if t.ReconnectDelay != nil {
		o.ReconnectDelay = *t.ReconnectDelay
	}
	if t.FastIOFailTmo != nil && *t.FastIOFailTmo > 0 {
		o.FastIOFailTmo = *t.FastIOFailTmo
	}
	if t.KeepAliveTmo != nil && *t.KeepAliveTmo != 0 {
		o.KeepAliveTmo = *t.KeepAliveTmo
	}
	tr := t.Transport
	if tr == "" {
		tr = "tcp"
	}
	return ConnectSpec{NQN: t.NQN, Transport: tr, Traddr: t.Traddr, Trsvcid: t.Trsvcid,
		HostTraddr: t.HostTraddr, HostIface: t.HostIface, Options: o}
}

// Disconnect implements nvmeof.Host (`nvme disconnect -d`): a controller
// already gone is not an error.
func (h *Host) Disconnect(name string) error {
	c, ok := h.Controller(name)
	if !ok {
		return nil
	}
	h.deleteCtrl(c)
	return nil
}

// Unwrap makes an "already connected" ConnectError match
// nvmeof.ErrAlreadyConnected with errors.Is.
func (e *ConnectError) Unwrap() error {
	if e.Kind == ConnectAlready {
		return nvmeof.ErrAlreadyConnected
	}
	return nil
}
