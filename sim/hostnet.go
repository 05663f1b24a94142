package sim

import (
	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// What reaches a host over its NVMe/TCP connections, and what it takes the
// host's kernel to notice that nothing does (issue 28; docs/host-model.md).
//
// A controller's path is silent while its target's node is crashed or
// drops every packet (StopTarget silent), or its host is partitioned from
// that node. Nothing the target sends reaches a silent controller: no ANA
// change notice or ANA log page (Linux 6.12 drivers/nvme/host/core.c:4592
// nvme_complete_async_event, multipath.c:818-864 nvme_read_ana_log), no
// namespace notice or rescan (core.c nvme_handle_aen_notice), no FIN or RST
// (tcp.c:1167-1193 nvme_tcp_state_change). The controller stays live with
// the ANA states it last read (sysfs ana_state shows ns->ana_state,
// sysfs.c) until its keep-alive times out (core.c:1280-1293: a Keep Alive
// every kato/2; core.c:1372: each times out after kato; tcp.c:2856-2891
// nvme_tcp_timeout → error recovery) or the path heals, when TCP
// retransmission delivers what the target sent meanwhile [inference: the
// connection survives a silence shorter than the host's keep-alive timeout;
// SPDK's own keep-alive timer, at least NVMF_DEFAULT_MIN_KATO = 10 s
// (SPDK lib/nvmf/nvmf_internal.h:34, ctrlr.c:493-499, ctrlr.c:155-190 at
// 3230130e),
// fires only after the host's 1.5 × kato for kato ≤ 6 s, so the model
// leaves it out].

// The TCP connect of an NVMe/TCP queue: the host allows one SYN retry
// (Linux 6.12 drivers/nvme/host/tcp.c:2051-2052, 6.1.192 tcp.c:1634-1635
// tcp_sock_set_syncnt(sk, 1)); the kernel's SYN timers then give up after
// synGiveUpS. Linux 6.12 adds net.ipv4.tcp_syn_linear_timeouts = 4
// (net/ipv4/tcp_ipv4.c:3671), absent before 6.5.
const (
	nvmeTCPSynCnt = 1
	// tcpTimeoutInitS is TCP_TIMEOUT_INIT, the initial RTO of a SYN
	// (include/net/tcp.h:162 in 6.12), and tcpRTOMaxS TCP_RTO_MAX.
	tcpTimeoutInitS = 1.0
	tcpRTOMaxS      = 120.0
)

// Host kernels (Config.HostKernel).
const (
	HostKernel612 = record.HostKernel612
	HostKernel61  = record.HostKernel61
)

// synLinearTimeouts is net.ipv4.tcp_syn_linear_timeouts of kernel k: 4 in
// 6.12 (net/ipv4/tcp_ipv4.c:3671), none (0) in 6.1.
func synLinearTimeouts(k string) int {
	if k == HostKernel61 {
		return 0
	}
	return 4
}

// synGiveUpS is how long after the first SYN a TCP connect that gets no
// answer fails with ETIMEDOUT, seconds, computed as the kernel's
// retransmit timer runs it for a socket with syncnt SYN retries and
// linear linear timeouts:
//
//   - each firing first asks tcp_write_timeout (6.12
//     net/ipv4/tcp_timer.c:242-283; 6.1.192 :227-263): give up when the
//     retransmissions reached syncnt + linear (6.1: syncnt), or when
//     retransmits_timed_out says the time since the first SYN reached
//     tcp_model_timeout(syncnt, TCP_TIMEOUT_INIT) = (2^(syncnt+1) − 1) ×
//     1 s (6.12 :187-238; 6.1.192 :178-220);
//   - otherwise it retransmits and re-arms with the RTO, doubled (capped
//     at TCP_RTO_MAX) once more than linear SYNs were retransmitted
//     (6.12 :664-671; 6.1.192 :621, always doubled).
//
// With the NVMe/TCP host's one SYN retry both kernels give up 3 s after
// the first SYN: 6.12's linear timeouts allow 5 retransmissions, but the
// time bound (3 s) ends the connect first. The kernels' documentation
// checks the computation for tcp_syn_retries 6: 131 s with linear timeouts
// 4 (6.12 Documentation/networking/ip-sysctl.rst:905-911), 127 s without
// (6.1.192 ip-sysctl.rst:880-885); a connect with TCP_SYNCNT 1 to a port
// whose SYNs are dropped failed after 3.03-3.08 s on this machine's Linux
// 6.18 with tcp_syn_linear_timeouts 4 and 0 alike (measured in a network
// namespace; docs/host-model.md).
func synGiveUpS(syncnt, linear int) float64 {
	t, _ := synTimers(syncnt, linear)
	return t
}

// synTimers runs the SYN retransmit timer as synGiveUpS describes and
// returns when the connect gives up and when the SYN is retransmitted
// before that, seconds after the first SYN.
func synTimers(syncnt, linear int) (giveUp float64, retransmits []float64) {
	bound := tcpModelTimeoutS(syncnt, tcpTimeoutInitS)
	t, rto := 0.0, tcpTimeoutInitS
	for n := 0; ; {
		t += rto
		if n >= syncnt+linear || (n > 0 && t >= bound) {
			return t, retransmits
		}
		retransmits = append(retransmits, t)
		n++
		if n > linear {
			rto = min(2*rto, tcpRTOMaxS)
		}
	}
}

// tcpModelTimeoutS is tcp_model_timeout (6.12 net/ipv4/tcp_timer.c:187-200):
// the time boundary retransmissions take with exponential backoff from
// rtoBase, linear at TCP_RTO_MAX past ilog2(TCP_RTO_MAX / rtoBase).
func tcpModelTimeoutS(boundary int, rtoBase float64) float64 {
	thresh := 0
	for v := int(tcpRTOMaxS / rtoBase); v > 1; v >>= 1 {
		thresh++
	}
	if boundary <= thresh {
		return float64(int(2)<<boundary-1) * rtoBase
	}
	return float64(int(2)<<thresh-1)*rtoBase + float64(boundary-thresh)*tcpRTOMaxS
}

// synTimeoutS is the hosts' connect timeout for a SYN that gets no answer.
func (w *World) synTimeoutS() float64 {
	return synGiveUpS(nvmeTCPSynCnt, synLinearTimeouts(w.cfg.HostKernel))
}

// tcpConnect runs one connect attempt of hostNQN to nqn at ip:port
// (fabricConnect) and calls done with its outcome. With wait, a SYN that
// gets no answer is retransmitted as the kernel does (synTimers: 1 s and
// 2 s after the first on 6.12, 1 s on 6.1) — a retransmission that gets
// through (the path healed, the drop rule ended) connects then — and the
// attempt fails synTimeoutS after the first SYN; without wait it fails at
// once. Every other outcome is immediate. abort ends a wait for a SYN-ACK
// with ConnectInterrupted (the writer was killed: "failed to connect
// socket: -512", -ERESTARTSYS); it does nothing once done ran.
func (w *World) tcpConnect(ip string, port int, nqn, hostNQN string, wait bool, done func(connectResult)) (abort func()) {
	res := w.fabricConnect(ip, port, nqn, hostNQN)
	if res.err == nil || res.err.Kind != ConnectNoAnswer || !wait {
		done(res)
		return func() {}
	}
	finished := false
	finish := func(r connectResult) {
		if !finished {
			finished = true
			done(r)
		}
	}
	giveUp, retrans := synTimers(nvmeTCPSynCnt, synLinearTimeouts(w.cfg.HostKernel))
	for _, at := range retrans {
		w.after(at, func() {
			if finished || w.synDropped(ip, port, hostNQN) {
				return
			}
			if r := w.fabricConnect(ip, port, nqn, hostNQN); r.err == nil || r.err.Kind != ConnectNoAnswer {
				finish(r)
			}
		})
	}
	w.after(giveUp, func() { finish(res) })
	return func() {
		finish(connectResult{err: &ConnectError{Kind: ConnectInterrupted, Msg: "failed to connect socket: -512", Status: -512}})
	}
}

// synTimeoutMsg is the host's log line when the TCP connect of the admin
// queue times out (Linux 6.12 drivers/nvme/host/tcp.c:2131-2135 "failed to
// connect socket: %d", -ETIMEDOUT).
const synTimeoutMsg = "failed to connect socket: -110"

// pathSilent reports whether nothing gets through between host h and
// node n now.
func (w *World) pathSilent(h *Host, n *Node) bool {
	return n.crashed || n.blackhole || (len(w.partitions) > 0 && w.partitions[partitionKey{h.Name, n.Name}])
}

// silence is what a silent controller missed: the target's notices and
// its closing of the connection, delivered when the path heals.
type silence struct {
	// since is when the path went silent; epoch tells a keep-alive timer
	// which silence armed it.
	since float64
	epoch uint64
	// ana and scan: an ANA change notice or a namespace notice is waiting;
	// closed: the target closed the connection (the reason).
	ana, scan bool
	closed    string
	// stall is set while a stall line is open for the controller (see
	// stallStart).
	stall bool
}

// goSilent: c's path stopped carrying packets. The controller looks live
// and I/O sent to it does not complete; the host notices when a keep-alive
// times out: the last one answered was sent at most kato/2 before, the
// next one is sent within kato/2 and times out kato later (Linux 6.12
// drivers/nvme/host/core.c:1280-1293, 1372), so detection falls in
// [kato, 1.5 kato) after the silence began, drawn uniformly [inference:
// the phase of the keep-alive timer against the fault is unknown].
func (c *Ctrl) goSilent(reason string) {
	if c.silent != nil || c.State != nvmeof.StateLive {
		return
	}
	w := c.host.w
	c.epoch++
	c.silent = &silence{since: w.now, epoch: c.epoch}
	c.stallStart(reason)
	epoch, gen := c.epoch, c.gen
	kato := float64(c.Spec.Options.KeepAliveTmo)
	w.after(w.uniform(kato, 1.5*kato), func() {
		if c.gen != gen || c.State != nvmeof.StateLive || c.silent == nil || c.silent.epoch != epoch {
			return
		}
		c.host.kernelLog(c.Name(), "I/O tag 0 (0000) type 4 opcode 0x18 (Keep Alive) QID 0 timeout")
		c.transportLost("keep-alive timeout")
	})
}

// heard: c's path carries packets again while the connection still stands
// (its keep-alive has not expired): what the target sent meanwhile arrives
// now — its closing of the connection first (FIN or RST: error recovery),
// else a waiting ANA notice (then the ANA log page read) and namespace
// notice.
func (c *Ctrl) heard() {
	s := c.silent
	if s == nil {
		return
	}
	c.silent = nil
	c.stallEnd("path healed")
	switch {
	case s.closed != "":
		c.transportLost(s.closed)
	default:
		if s.ana {
			c.anaChangeNotice()
		}
		if s.scan {
			c.nsAttrNotice(c.host.w.rng)
		}
	}
}

// targetClosed: the target ends c's connection (SPDK disconnects the
// qpairs: listener removed, subsystem deleted, process gone). A controller
// that hears it starts error recovery; a silent one learns it when the path
// heals, or never (its keep-alive expires first).
func (c *Ctrl) targetClosed(reason string) {
	if c.ts != nil {
		c.ts.detach(c)
	}
	if c.silent != nil {
		if c.silent.closed == "" {
			c.silent.closed = reason
		}
		return
	}
	c.transportLost(reason)
}

// resumePaths: the paths between h (nil = every host) and n may carry
// packets again; every controller whose path is no longer silent hears
// what it missed. Returns how many resumed.
func (w *World) resumePaths(h *Host, n *Node) int {
	k := 0
	for _, c := range w.silentAt(n, h) {
		if !w.pathSilent(c.host, n) {
			c.heard()
			k++
		}
	}
	return k
}

// silentAt are the silent controllers of host h (nil = every host) whose
// connection is to node n, in host then instance order.
func (w *World) silentAt(n *Node, h *Host) []*Ctrl {
	var out []*Ctrl
	for _, x := range w.hosts {
		if h != nil && x != h {
			continue
		}
		for _, c := range x.ctrls {
			if c.silent != nil && c.ts != nil && c.ts.Node == n {
				out = append(out, c)
			}
		}
	}
	return out
}

// Silent stalls (issue 28 item 3): the time a controller was live and
// showed an optimized leg while its path was silent. The kernel's default
// iopolicy (numa) keeps sending a head's I/O to its current path while
// that path is live and optimized (Linux 6.12
// drivers/nvme/host/multipath.c:402-413 nvme_numa_path), so such a path
// holds the I/O until the keep-alive expires or the path heals — a pause
// no sample shows. The simulator knows when a path is silent and
// reports each stall as a pair of stall events.

// stallStart opens a stall for c if it shows an optimized leg.
func (c *Ctrl) stallStart(reason string) {
	nsids := c.optimizedNSIDs()
	if len(nsids) == 0 || c.silent == nil {
		return
	}
	c.silent.stall = true
	c.host.w.emit(Event{Kind: EventStall, Host: c.host.Name, Controller: c.Name(), NQN: c.Spec.NQN,
		Address: c.Spec.Addr(), Action: StallStart, NSIDs: nsids, Reason: reason})
}

// stallEnd closes c's open stall, if any.
func (c *Ctrl) stallEnd(reason string) {
	if c.silent == nil || !c.silent.stall {
		return
	}
	c.silent.stall = false
	since := c.silent.since
	c.host.w.emit(Event{Kind: EventStall, Host: c.host.Name, Controller: c.Name(), NQN: c.Spec.NQN,
		Address: c.Spec.Addr(), Action: StallEnd, StartS: &since, Reason: reason})
}

// optimizedNSIDs are the NSIDs of c's optimized legs, sorted.
func (c *Ctrl) optimizedNSIDs() []int {
	var out []int
	for _, l := range c.legs {
		if l.ana == nvmeof.ANAOptimized {
			out = append(out, l.nsid)
		}
	}
	return out
}

// noAnswerErr is the connect failure of a SYN nobody answers.
func noAnswerErr() *ConnectError {
	return &ConnectError{Kind: ConnectNoAnswer, Msg: synTimeoutMsg, Status: -110}
}
