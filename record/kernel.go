package record

import (
	"regexp"
	"strconv"
	"strings"
)

// Kernel events a kernel line (KindKernel) can be: the lines of the host
// NVMe initiator the checks and the incident analysis count, typed from
// the text the host printed (Line.Message, kept as printed). The texts are
// drivers/nvme/host's (core.c, fabrics.c, tcp.c).
const (
	// KernelNewCtrl: "new ctrl: NQN "<nqn>", addr <ip:port>, ..." — a
	// controller created (fabrics.c nvmf_create_ctrl).
	KernelNewCtrl = "new-ctrl"
	// KernelRemoved: "Removing controller (...)" — the kernel gave up
	// reconnecting and removed the controller (tcp.c, after max_reconnects:
	// ctrl_loss_tmo / reconnect_delay attempts). KernelDisconnected:
	// "Removing ctrl: NQN ..." — the controller deleted on request (nvme
	// disconnect: a release).
	KernelRemoved      = "removed"
	KernelDisconnected = "disconnected"
	// KernelReconnectFailed: "Failed reconnect attempt <n>/<max>".
	KernelReconnectFailed = "reconnect-failed"
	// KernelReconnected: "Successfully reconnected (...)".
	KernelReconnected = "reconnected"
	// KernelSubsysNotFound: "Connect Invalid Data Parameter, subsysnqn
	// "<nqn>"" — the target answered the CONNECT "Could not find
	// subsystem" (fabrics.c, NVME_SC_CONNECT_INVALID_PARAM on subsysnqn).
	KernelSubsysNotFound = "subsys-not-found"
	// KernelKeepAliveTimeout: "I/O tag <t> (<cid>) type <n> opcode 0x18
	// (Keep Alive) QID 0 timeout" — a keep-alive command that timed out
	// (tcp.c:2862-2865; opcode 0x18 is nvme_admin_keep_alive).
	KernelKeepAliveTimeout = "keep-alive-timeout"
)

// KernelEvent is a kernel line typed: its Kind ("" for a line no check
// counts), and what the line names — the subsystem NQN, the address
// (ip:port) and, for a failed reconnect, the attempt's number.
type KernelEvent struct {
	Kind    string
	NQN     string
	Addr    string
	Attempt int
}

// Event is l's kernel event (ParseKernel of its Message); the zero
// KernelEvent for a line of another kind.
func (l Line) Event() KernelEvent {
	if l.Kind != KindKernel {
		return KernelEvent{}
	}
	return ParseKernel(l.Message)
}

var (
	reNewCtrl          = regexp.MustCompile(`^new ctrl: NQN "([^"]+)"(?:, addr ([^,]+))?`)
	reReconnectFailed  = regexp.MustCompile(`^Failed reconnect attempt (\d+)`)
	reSubsysNotFound   = regexp.MustCompile(`^Connect Invalid Data Parameter, subsysnqn "([^"]*)"`)
	reKeepAliveTimeout = regexp.MustCompile(`^I/O tag \d+ \([0-9a-f]+\) type \d+ opcode 0x18 \(Keep Alive\) QID 0 timeout$`)
)

// ParseKernel types a kernel line's text: the one parser of the host's
// kernel log (the checks and the incident analysis read it through
// Line.Event). A text it does not know is KernelEvent{} (Kind "").
func ParseKernel(msg string) KernelEvent {
	switch {
	case strings.HasPrefix(msg, "new ctrl: "):
		if m := reNewCtrl.FindStringSubmatch(msg); m != nil {
			return KernelEvent{Kind: KernelNewCtrl, NQN: m[1], Addr: m[2]}
		}
	case strings.HasPrefix(msg, "Removing controller"):
		return KernelEvent{Kind: KernelRemoved}
	case strings.HasPrefix(msg, "Removing ctrl"):
		return KernelEvent{Kind: KernelDisconnected}
	case strings.HasPrefix(msg, "Failed reconnect attempt "):
		if m := reReconnectFailed.FindStringSubmatch(msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			return KernelEvent{Kind: KernelReconnectFailed, Attempt: n}
		}
	case strings.HasPrefix(msg, "Successfully reconnected"):
		return KernelEvent{Kind: KernelReconnected}
	case strings.HasPrefix(msg, "Connect Invalid Data Parameter, subsysnqn"):
		if m := reSubsysNotFound.FindStringSubmatch(msg); m != nil {
			return KernelEvent{Kind: KernelSubsysNotFound, NQN: m[1]}
		}
	case strings.Contains(msg, "(Keep Alive)"):
		if reKeepAliveTimeout.MatchString(msg) {
			return KernelEvent{Kind: KernelKeepAliveTimeout}
		}
	}
	return KernelEvent{}
}
