package sim

import (
	"fmt"
	"math/rand"
	"net/netip"
	"sort"
	"strconv"

	"github.com/fiomig/fiomig/nvmeof"
)

// Node is one storage node running an SPDK-like NVMe-oF target
// (simplyblock's data plane). It listens on one TCP port per logical volume
// store it serves — its own lvstore as primary, other nodes' as secondary —
// and every subsystem of that lvstore is exposed at that port. A TCP
// connection to a served port succeeds even when the subsystem has no
// listener there; the Fabrics CONNECT is then rejected and counted.
type Node struct {
	Index int
	Name  string
	IP    string

	w *World
	// ports are the TCP ports of the lvstores this node serves, sorted.
	ports []int
	// subsystems are the target subsystems on this node, by NQN.
	subsystems map[string]*TargetSubsystem
	// rejected is the cumulative count of rejected Fabrics CONNECTs;
	// notAllowed those SPDK logs as "does not allow host".
	rejected   int64
	notAllowed int64
	// reported is the rejected count last reported in a target event.
	reported  int64
	cntlidSeq int
	// down is set while the node's target is gone (restart fault): nothing
	// listens, TCP connections are refused.
	down bool
	// blackhole is set while the node drops every packet (a hung or
	// partitioned node): connections look up but nothing answers.
	blackhole bool
	// crashed is set while the node is crashed (CrashNode): like
	// blackhole, but undone only by BootNode.
	crashed bool
	// anaForced makes every listener report inaccessible (ANA flap).
	anaForced bool
}

// LVStore is a logical volume store: the volumes placed on it are served by
// Nodes (primary first) at Port on each of them.
type LVStore struct {
	Index int
	Port  int
	Nodes []int // node indexes, primary first
}

// TargetSubsystem is one NVMe subsystem on one node's target: its listeners
// (port at the node's IP, with the listener's ANA state), the hosts it
// allows, its namespaces, and the host controllers connected to it.
type TargetSubsystem struct {
	NQN       string
	Node      *Node
	Listeners []Listener // sorted by port
	// AllowAny admits every host; otherwise only host NQNs in Allowed.
	AllowAny bool
	Allowed  map[string]bool
	NSIDs    []int // attached namespaces, sorted
	// member names the namespace an attached NSID carries, by the NSID
	// the volume gave it (its identity: uuid/nguid in SPDK and in the
	// host's Identify data); an NSID absent here carries its own. They
	// differ only after a re-add without an explicit NSID took another
	// free NSID (addNS).
	member map[int]int
	// ctrls are the host controllers currently connected (admin queue up).
	ctrls []*Ctrl
}

// exposedNSIDs are the namespaces the subsystem exposes to hostNQN now.
func (ts *TargetSubsystem) exposedNSIDs(hostNQN string) []int {
	if !ts.allows(hostNQN) {
		return nil
	}
	return ts.NSIDs
}

// Listener is one ip:port at which a subsystem accepts hosts, with its ANA
// state (optimized, non-optimized, inaccessible).
type Listener struct {
	Port int
	ANA  nvmeof.ANAState
}

// Volume is one logical volume: one subsystem with NSIDs, placed on an
// lvstore, consumed by hosts.
type Volume struct {
	Index     int
	Name      string
	NQN       string
	NSIDs     []int
	SizeBytes int64
	Consumers []int // host indexes
	LVS       int   // the lvstore currently serving the volume

	migration     *Migration // in progress, nil otherwise
	published     []string
	publishedOnce bool
}

// endpoint is one (node, port) listener position.
type endpoint struct {
	node *Node
	port int
}

func (e endpoint) addr() string { return canonicalAddr(e.node.IP, e.port) }

func (e endpoint) target(nqn string, o ConnectOptions) ConnectSpec {
	return ConnectSpec{NQN: nqn, Transport: "tcp", Traddr: e.node.IP, Trsvcid: strconv.Itoa(e.port), Options: o}
}

// canonicalAddr is the canonical ip:port (IPv6 bracketed) of ip and port.
func canonicalAddr(ip string, port int) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip + ":" + strconv.Itoa(port)
	}
	return netip.AddrPortFrom(a, uint16(port)).String()
}

func nodeIP(i int) string { return fmt.Sprintf("10.0.%d.%d", i/250, i%250+1) }
func hostIP(i int) string { return fmt.Sprintf("10.1.%d.%d", i/250, i%250+1) }

// ClusterUUID is the simulated simplyblock cluster's id, part of every
// subsystem NQN.
const ClusterUUID = "5f3c0d2a-7b1e-4c6d-9a8f-0c1d2e3f4a5b"

func (w *World) buildTopology() {
	cfg := w.cfg
	for i := 0; i < cfg.Nodes; i++ {
		n := &Node{Index: i, Name: fmt.Sprintf("storage-%d", i+1), IP: nodeIP(i), w: w,
			subsystems: map[string]*TargetSubsystem{}, cntlidSeq: i*1000 + 1}
		w.nodes = append(w.nodes, n)
		w.nodeByIP[n.IP] = n
	}
	for i := 0; i < cfg.Nodes; i++ {
		l := &LVStore{Index: i, Port: cfg.BasePort + 2*i}
		for k := 0; k < cfg.HA; k++ {
			l.Nodes = append(l.Nodes, (i+k)%cfg.Nodes)
		}
		w.lvstores = append(w.lvstores, l)
		for _, ni := range l.Nodes {
			w.nodes[ni].ports = append(w.nodes[ni].ports, l.Port)
		}
	}
	for _, n := range w.nodes {
		sort.Ints(n.ports)
	}
	for i := 0; i < cfg.Hosts; i++ {
		uuid := fmt.Sprintf("%08x-0000-4000-8000-%012x", 0x10000+i, i+1)
		h := &Host{Index: i, w: w, Name: fmt.Sprintf("worker-%d", i+1), IP: hostIP(i),
			NQN: "nqn.2014-08.org.nvmexpress:uuid:" + uuid, ID: uuid}
		if cfg.HostsAreNodes {
			h.Name, h.IP = w.nodes[i].Name, w.nodes[i].IP
		}
		w.hosts = append(w.hosts, h)
	}
	for i := 0; i < cfg.Volumes; i++ {
		lvol := fmt.Sprintf("%08x-0000-4000-8000-%012x", 0x20000+i, i+1)
		v := &Volume{Index: i, Name: fmt.Sprintf("vol-%03d", i+1),
			NQN:       "nqn.2023-02.io.simplyblock:" + ClusterUUID + ":lvol:" + lvol,
			SizeBytes: 10 << 30, LVS: i % cfg.Nodes}
		// A namespaced volume has NSIDs 1..N; a single one NSID 2 + i%3, so
		// that head indexes (allocated from 1 in discovery order) differ
		// from NSIDs.
		n, base := 1, 2+i%3
		if cfg.NamespacedVolumes == 0 || i >= cfg.Volumes-cfg.NamespacedVolumes {
			n = cfg.NamespacesPerVolume
		}
		if n > 1 {
			base = 1
		}
		for k := 0; k < n; k++ {
			v.NSIDs = append(v.NSIDs, base+k)
		}
		for k := 0; k < cfg.ConsumersPerVolume; k++ {
			v.Consumers = append(v.Consumers, (i+k)%cfg.Hosts)
		}
		w.volumes = append(w.volumes, v)
		w.byNQN[v.NQN] = v
		lvs := w.lvstores[v.LVS]
		for k, ni := range lvs.Nodes {
			ts := w.nodes[ni].ensureSubsystem(v)
			ts.addListener(lvs.Port, haANA(k))
		}
	}
}

// haANA is the ANA state of the k-th listener of an lvstore: the primary
// is optimized, the others non-optimized.
func haANA(k int) nvmeof.ANAState {
	if k == 0 {
		return nvmeof.ANAOptimized
	}
	return nvmeof.ANANonOptimized
}

// listenerEndpoints are the listener positions of lvstore lvs (primary first).
func (w *World) listenerEndpoints(nqn string, lvs int) []endpoint {
	l := w.lvstores[lvs]
	out := make([]endpoint, 0, len(l.Nodes))
	for _, ni := range l.Nodes {
		out = append(out, endpoint{node: w.nodes[ni], port: l.Port})
	}
	return out
}

// ensureSubsystem returns the node's subsystem for v, creating it (attach
// its namespaces at their NSIDs) if the node has none. Every host is
// allowed: sbcli creates lvol subsystems with allow_any_host=True (sbcli
// rpc_client.py:302-311 subsystem_create; the lvol monitor's repair too
// unless the lvol names allowed hosts, storage_node_ops.py:9975-9983) and
// adds no per-namespace host mask [sourced, docs/sources.md §3].
func (n *Node) ensureSubsystem(v *Volume) *TargetSubsystem {
	if ts, ok := n.subsystems[v.NQN]; ok {
		return ts
	}
	ts := &TargetSubsystem{NQN: v.NQN, Node: n, AllowAny: true, NSIDs: append([]int(nil), v.NSIDs...)}
	n.subsystems[v.NQN] = ts
	return ts
}

// serves reports whether something listens on port at the node.
func (n *Node) serves(port int) bool {
	if n.down {
		return false
	}
	i := sort.SearchInts(n.ports, port)
	return i < len(n.ports) && n.ports[i] == port
}

func (ts *TargetSubsystem) listener(port int) (int, bool) {
	for i, l := range ts.Listeners {
		if l.Port == port {
			return i, true
		}
	}
	return -1, false
}

func (ts *TargetSubsystem) addListener(port int, ana nvmeof.ANAState) {
	if i, ok := ts.listener(port); ok {
		ts.Listeners[i].ANA = ana
		return
	}
	ts.Listeners = append(ts.Listeners, Listener{Port: port, ANA: ana})
	sort.Slice(ts.Listeners, func(i, j int) bool { return ts.Listeners[i].Port < ts.Listeners[j].Port })
}

// setANA changes the ANA state of the listener at port and sends an ANA
// change notice to every host controller connected through it (SPDK
// lib/nvmf/ctrlr.c:4544 nvmf_ctrlr_async_event_ana_change_notice at
// 3230130e).
func (ts *TargetSubsystem) setANA(port int, ana nvmeof.ANAState) {
	i, ok := ts.listener(port)
	if !ok || ts.Listeners[i].ANA == ana {
		return
	}
	ts.Listeners[i].ANA = ana
	for _, c := range append([]*Ctrl(nil), ts.ctrls...) {
		if c.port == port {
			c.anaChangeNotice()
		}
	}
}

// removeListener deletes the listener at port; SPDK disconnects the
// qpairs of host controllers connected through it (SPDK
// lib/nvmf/subsystem.c:1924 spdk_nvmf_subsystem_remove_listener,
// transport.c:516 nvmf_stop_listen_disconnect_qpairs at 3230130e;
// Ctrl.targetClosed).
func (ts *TargetSubsystem) removeListener(port int) {
	i, ok := ts.listener(port)
	if !ok {
		return
	}
	ts.Listeners = append(ts.Listeners[:i], ts.Listeners[i+1:]...)
	for _, c := range append([]*Ctrl(nil), ts.ctrls...) {
		if c.port == port {
			c.targetClosed("listener removed")
		}
	}
}

// removeNamespaces detaches the volume's namespaces from the subsystem
// (SPDK nvmf_subsystem_remove_ns): listeners and connections stay, and each
// connected host controller gets a namespace-changed notice, after which
// the kernel drops the namespaces and the controller is live with none.
func (ts *TargetSubsystem) removeNamespaces() {
	if len(ts.NSIDs) == 0 {
		return
	}
	ts.NSIDs, ts.member = nil, nil
	ts.notifyNSChange(ts.Node.w.rng)
}

// notifyNSChange sends every connected host controller a namespace
// attribute notice (SPDK lib/nvmf/ctrlr.c:4523
// nvmf_ctrlr_async_event_ns_notice at 3230130e, sent on every namespace
// add and remove); r draws the hosts' rescan delays.
func (ts *TargetSubsystem) notifyNSChange(r *rand.Rand) {
	for _, c := range append([]*Ctrl(nil), ts.ctrls...) {
		c.nsAttrNotice(r)
	}
}

// identOf is the namespace (by the NSID the volume gave it) that nsid
// carries on this subsystem.
func (ts *TargetSubsystem) identOf(nsid int) int {
	if m, ok := ts.member[nsid]; ok {
		return m
	}
	return nsid
}

// nsidOf is the NSID at which the subsystem carries namespace ident, if it
// does.
func (ts *TargetSubsystem) nsidOf(ident int) (int, bool) {
	for _, n := range ts.NSIDs {
		if ts.identOf(n) == ident {
			return n, true
		}
	}
	return 0, false
}

// removeNS detaches the namespace at nsid (SPDK lib/nvmf/subsystem.c:2240
// spdk_nvmf_subsystem_remove_ns at 3230130e)
// and notifies the connected controllers (rescan delays drawn from r);
// false when nothing is there.
func (ts *TargetSubsystem) removeNS(nsid int, r *rand.Rand) bool {
	i := sort.SearchInts(ts.NSIDs, nsid)
	if i == len(ts.NSIDs) || ts.NSIDs[i] != nsid {
		return false
	}
	ts.NSIDs = append(ts.NSIDs[:i], ts.NSIDs[i+1:]...)
	delete(ts.member, nsid)
	ts.notifyNSChange(r)
	return true
}

// addNS attaches namespace ident (SPDK nvmf_subsystem_add_ns) at nsid, or,
// for nsid 0 (sbcli's migration add_ns passes none), at the lowest free
// NSID as SPDK picks it (lib/nvmf/subsystem.c:2499
// spdk_nvmf_subsystem_add_ns_ext at 3230130e) [sourced]; it notifies the
// connected controllers (rescan delays drawn from r) and returns the
// NSID, or false when nsid is taken.
func (ts *TargetSubsystem) addNS(ident, nsid int, r *rand.Rand) (int, bool) {
	if nsid == 0 {
		nsid = 1
		for _, n := range ts.NSIDs { // sorted
			if n == nsid {
				nsid++
			}
		}
	} else if containsInt(ts.NSIDs, nsid) {
		return 0, false
	}
	ts.NSIDs = append(ts.NSIDs, nsid)
	sort.Ints(ts.NSIDs)
	if ident != nsid {
		if ts.member == nil {
			ts.member = map[int]int{}
		}
		ts.member[nsid] = ident
	}
	ts.notifyNSChange(r)
	return nsid, true
}

func (ts *TargetSubsystem) allows(hostNQN string) bool { return ts.AllowAny || ts.Allowed[hostNQN] }

func (ts *TargetSubsystem) attach(c *Ctrl) { ts.ctrls = append(ts.ctrls, c) }

func (ts *TargetSubsystem) detach(c *Ctrl) {
	for i, x := range ts.ctrls {
		if x == c {
			ts.ctrls = append(ts.ctrls[:i], ts.ctrls[i+1:]...)
			return
		}
	}
}

// anaOf is the ANA state a controller connected at port sees.
func (ts *TargetSubsystem) anaOf(port int) nvmeof.ANAState {
	if ts.Node != nil && ts.Node.anaForced {
		return nvmeof.ANAInaccessible
	}
	if i, ok := ts.listener(port); ok {
		return ts.Listeners[i].ANA
	}
	return nvmeof.ANAInaccessible
}

// connectResult is the target's answer to one CONNECT attempt.
type connectResult struct {
	ts     *TargetSubsystem
	cntlid int
	err    *ConnectError
}

// fabricConnect runs the target's side of one CONNECT from hostNQN for nqn
// arriving at ip:port (SPDK lib/nvmf/ctrlr.c:1001 nvmf_ctrlr_cmd_connect,
// :846-870 nvmf_qpair_access_allowed at 3230130e): the
// SYN gets no answer when the node is silent to the host (crashed, drops
// every packet, partitioned from it) or a DropConnects rule drops it (the
// drop is counted); the TCP connect is refused when nothing listens on the
// port; otherwise the Fabrics CONNECT is rejected (and counted) when the
// subsystem is not on the node, has no listener at that port, or does not
// allow the host.
func (w *World) fabricConnect(ip string, port int, nqn, hostNQN string) connectResult {
	r := w.fabricConnect1(ip, port, nqn, hostNQN)
	if r.err != nil && r.err.Kind == ConnectRejected && w.cfg.TargetDNR {
		r.err.DNR = true
		r.err.Status |= nvmeStatusDNR
	}
	return r
}

// NVMe statuses of rejected CONNECTs as the Linux 6.12 host sees them
// (include/linux/nvme.h:1964-1966; NVME_STATUS_DNR 0x4000): SPDK answers
// "does not allow host" with INVALID_HOST (SPDK lib/nvmf/ctrlr.c:1054-1055
// at 3230130e) and "Could not find subsystem" with INVALID_PARAM
// (SPDK_NVMF_INVALID_CONNECT_DATA, ctrlr.c:65-66).
const (
	nvmeSCConnectInvalidParam = 0x182
	nvmeSCConnectInvalidHost  = 0x184
	nvmeStatusDNR             = 0x4000
)

func (w *World) fabricConnect1(ip string, port int, nqn, hostNQN string) connectResult {
	n, ok := w.nodeByIP[ip]
	if ok && w.silentNode(n, hostNQN) {
		return connectResult{err: noAnswerErr()}
	}
	if !ok || !n.serves(port) {
		return connectResult{err: &ConnectError{Kind: ConnectRefused, Msg: "failed to connect socket: -111", Status: -111}}
	}
	if w.dropConnect(n, port) {
		return connectResult{err: noAnswerErr()}
	}
	if w.rejectConnect(n, port, hostNQN) {
		n.rejected++
		n.notAllowed++
		return connectResult{err: &ConnectError{Kind: ConnectRejected, Status: nvmeSCConnectInvalidHost,
			Msg:       fmt.Sprintf("Connect for subsystem %s is not allowed, hostnqn: %s", nqn, hostNQN),
			TargetMsg: fmt.Sprintf("Subsystem '%s' does not allow host '%s' to connect at this address.", nqn, hostNQN)}}
	}
	ts, ok := n.subsystems[nqn]
	if !ok {
		n.rejected++
		return connectResult{err: &ConnectError{Kind: ConnectRejected, Status: nvmeSCConnectInvalidParam,
			Msg:       fmt.Sprintf("Connect Invalid Data Parameter, subsysnqn %q", nqn),
			TargetMsg: fmt.Sprintf("Could not find subsystem '%s'", nqn)}}
	}
	if _, ok := ts.listener(port); !ok {
		n.rejected++
		n.notAllowed++
		return connectResult{err: &ConnectError{Kind: ConnectRejected, Status: nvmeSCConnectInvalidHost,
			Msg:       fmt.Sprintf("Connect for subsystem %s is not allowed, hostnqn: %s", nqn, hostNQN),
			TargetMsg: fmt.Sprintf("Subsystem '%s' does not allow host '%s' to connect at this address.", nqn, hostNQN)}}
	}
	if !ts.allows(hostNQN) {
		n.rejected++
		n.notAllowed++
		return connectResult{err: &ConnectError{Kind: ConnectRejected, Status: nvmeSCConnectInvalidHost,
			Msg:       fmt.Sprintf("Connect for subsystem %s is not allowed, hostnqn: %s", nqn, hostNQN),
			TargetMsg: fmt.Sprintf("Subsystem '%s' does not allow host '%s'", nqn, hostNQN)}}
	}
	return connectResult{ts: ts, cntlid: n.nextCntlid()}
}

func (n *Node) nextCntlid() int {
	id := n.cntlidSeq
	n.cntlidSeq++
	return id
}

// emitTarget reports the node's cumulative rejected CONNECT count.
func (w *World) emitTarget(n *Node) {
	n.reported = n.rejected
	w.emit(Event{Kind: EventTarget, Node: n.Name, RejectedConnects: n.rejected, NotAllowedConnects: n.notAllowed})
}

// RejectedConnects is the node's cumulative count of rejected CONNECTs.
func (n *Node) RejectedConnects() int64 { return n.rejected }

// Ports are the TCP ports the node serves (one per lvstore), sorted.
func (n *Node) Ports() []int { return append([]int(nil), n.ports...) }

// Subsystem returns the node's target subsystem nqn.
func (n *Node) Subsystem(nqn string) (*TargetSubsystem, bool) {
	ts, ok := n.subsystems[nqn]
	return ts, ok
}
