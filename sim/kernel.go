package sim

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strconv"

	"github.com/fiomig/fiomig/nvmeof"
)

// ConnectOptions are the Fabrics connect options the kernel keeps per
// controller (Linux 6.12 drivers/nvme/host/fabrics.c:713
// nvmf_parse_options).
// Seconds as int, as the kernel takes them.
type ConnectOptions struct {
	// CtrlLossTmo: give up reconnecting after about this many seconds
	// (max_reconnects = ceil(CtrlLossTmo/ReconnectDelay)); negative =
	// reconnect forever.
	CtrlLossTmo int
	// ReconnectDelay: seconds between reconnect attempts (> 0).
	ReconnectDelay int
	// FastIOFailTmo: seconds in connecting after which queued I/O fails;
	// -1 = off.
	FastIOFailTmo int
	// KeepAliveTmo is kato, seconds; 0 = the kernel default
	// (NVME_DEFAULT_KATO = 5).
	KeepAliveTmo int
}

// Connect options used in the world.
var (
	// CSIConnectOptions are the simplyblock CSI driver's options for a
	// volume's paths: ctrl-loss-tmo 60, reconnect-delay 2, fast-io-fail off,
	// kernel default keep-alive (matching the real captures).
	CSIConnectOptions = ConnectOptions{CtrlLossTmo: 60, ReconnectDelay: 2, FastIOFailTmo: -1, KeepAliveTmo: 0}
	// ControlPlaneConnectOptions are what simplyblock's control plane
	// answers CreateMigration with: ctrl-loss-tmo 3600, reconnect-delay 2,
	// fast-io-fail 8, keep-alive 4.
	ControlPlaneConnectOptions = ConnectOptions{CtrlLossTmo: 3600, ReconnectDelay: 2, FastIOFailTmo: 8, KeepAliveTmo: 4}
)

// Kernel defaults (Linux 6.12 drivers/nvme/host/nvme.h:31
// NVME_DEFAULT_KATO).
const (
	kernelDefaultKato = 5
)

// maxReconnects is the kernel's max_reconnects for o: -1 (forever) for a
// negative ctrl_loss_tmo, else ceil(ctrl_loss_tmo / reconnect_delay)
// (Linux 6.12 drivers/nvme/host/fabrics.c:1075-1079).
func (o ConnectOptions) maxReconnects() int {
	if o.CtrlLossTmo < 0 {
		return -1
	}
	d := o.ReconnectDelay
	if d <= 0 {
		d = 1
	}
	return (o.CtrlLossTmo + d - 1) / d
}

// ConnectSpec is one connect request: where (transport, traddr, trsvcid,
// optional host_traddr/host_iface), which subsystem, and the options.
type ConnectSpec struct {
	NQN        string
	Transport  string // "tcp"
	Traddr     string
	Trsvcid    string
	HostTraddr string
	HostIface  string
	Options    ConnectOptions
}

// Addr is the spec's canonical ip:port.
func (s ConnectSpec) Addr() string {
	p, err := strconv.Atoi(s.Trsvcid)
	if err != nil {
		return s.Traddr + ":" + s.Trsvcid
	}
	return canonicalAddr(s.Traddr, p)
}

// ConnectErrorKind classifies a failed connect.
type ConnectErrorKind string

// Connect failure kinds.
const (
	// ConnectRefused: nothing listens on ip:port (TCP RST, -ECONNREFUSED).
	ConnectRefused ConnectErrorKind = "refused"
	// ConnectRejected: the target answered the Fabrics CONNECT with an error.
	ConnectRejected ConnectErrorKind = "rejected"
	// ConnectNoAnswer: the CONNECT got no answer (dropped) and timed out.
	ConnectNoAnswer ConnectErrorKind = "no-answer"
	// ConnectAlready: a controller with the same key exists (Linux 6.12
	// drivers/nvme/host/tcp.c:3089-3105 nvme_tcp_existing_controller,
	// :3165-3167 -EALREADY).
	ConnectAlready ConnectErrorKind = "already-connected"
	// ConnectInvalid: the request itself is invalid.
	ConnectInvalid ConnectErrorKind = "invalid"
	// ConnectInterrupted: the writer was killed while its connect waited
	// for a SYN-ACK; the TCP connect returns -ERESTARTSYS (net/ipv4/af_inet.c
	// inet_wait_for_connect waits interruptibly).
	ConnectInterrupted ConnectErrorKind = "interrupted"
)

// ConnectError is why a connect failed: Msg is the host kernel's log text,
// TargetMsg the target's (SPDK) log text when the target rejected it.
type ConnectError struct {
	Kind      ConnectErrorKind
	Msg       string
	TargetMsg string
	DNR       bool // the rejection carried the Do Not Retry bit
	// Status is what the kernel's setup returned: a negative errno
	// (-111 refused, -110 SYN timeout, -512 interrupted) or the NVMe
	// status of a rejected CONNECT, (SCT << 8) | SC with 0x4000 for DNR
	// (Linux 6.12 include/linux/nvme.h:1964-1966 NVME_SC_CONNECT_INVALID_PARAM
	// 0x182, NVME_SC_CONNECT_INVALID_HOST 0x184); "Removing controller
	// (%d)..." prints it (drivers/nvme/host/tcp.c:2591).
	Status int
}

func (e *ConnectError) Error() string {
	if e.TargetMsg != "" {
		return fmt.Sprintf("%s: %s (target: %s)", e.Kind, e.Msg, e.TargetMsg)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Msg)
}

// Host is one consumer host's kernel NVMe-oF initiator (kernel
// drivers/nvme/host/{core,fabrics,tcp,multipath}.c): its controllers, the
// subsystems they belong to and the multipath heads of their namespaces.
type Host struct {
	Index int
	Name  string
	NQN   string // host NQN (hostnqn of its controllers)
	ID    string // hostid
	IP    string // source address of its connections

	w          *World
	ctrls      []*Ctrl       // sorted by instance
	subsystems []*hostSubsys // sorted by instance
	// held are instance numbers in use (kernel nvme_instance_ida): by a
	// controller, or by a subsystem named after its first controller.
	held map[int]bool

	version     uint64
	cache       *treeFS
	cacheVer    uint64
	cached      bool
	blockMinor  int
	diskseq     int
	sysfsBuilds int
	// nsAttrs caches namespace attribute files shared between renders
	// (sysfs.go nsAttrNodes).
	nsAttrs map[nsAttrKey][]*tnode
	// scratch are render's buffers, kept between renders.
	scratch struct {
		text    []byte
		pending []textSpan
		key     []byte
	}
	// ctrlDirs are the controllers' directories of the last render.
	ctrlDirs map[*Ctrl]ctrlDir
}

// Ctrl is one kernel controller nvmeN of a host.
type Ctrl struct {
	host     *Host
	Instance int
	State    nvmeof.ControllerState
	Spec     ConnectSpec
	Cntlid   int
	sub      *hostSubsys
	legs     []*leg // sorted by NSID
	maxRecon int

	// connection: the target subsystem and port while the admin queue is up.
	ts      *TargetSubsystem
	port    int
	srcAddr string

	// Origin is who created the controller: "csi" (a volume path), a
	// migration ID (its validation Job), or "leftover" (dirty start).
	Origin string

	nrReconnects    int
	failfastExpired bool
	// silent is set while the controller's path carries no packets (its
	// node crashed or drops everything, or its host is partitioned from
	// it): the controller still looks live, I/O sent to it does not
	// complete, and what the target sends waits in it (hostnet.go).
	silent *silence
	// epoch counts the silences, for their keep-alive timers.
	epoch uint64
	// firstConnect is set while the controller's first connect runs: it is
	// visible in sysfs (connecting) but in no subsystem yet and not among
	// the transport's controllers that block an identical connect
	// (connectWith).
	firstConnect bool
	// gen changes on every state transition; scheduled callbacks compare
	// it to tell whether they are stale.
	gen uint64
	// scanPending is set from a namespace attribute notice until the
	// rescan it queued runs (nsAttrNotice).
	scanPending bool
}

// Name is the controller's kernel name, "nvme3".
func (c *Ctrl) Name() string { return "nvme" + strconv.Itoa(c.Instance) }

type leg struct {
	nsid int
	ana  nvmeof.ANAState
	grp  int
	head *head
	ctrl *Ctrl
}

type hostSubsys struct {
	Instance int
	NQN      string
	ctrls    []*Ctrl // sorted by instance
	heads    []*head // sorted by head index
}

type head struct {
	idx  int // H of nvmeSnH
	nsid int
	// ident is the namespace the head stands for (its uuid/nguid: the
	// NSID its volume gave it, TargetSubsystem.identOf), taken from its
	// first path.
	ident   int
	minor   int // block device minor (259:minor)
	diskseq int
	// sibs are the head's paths in the order they joined it (the head's
	// sibling list: list_add_tail_rcu in core.c nvme_init_ns_head); cur is
	// its current path (head->current_path of the one NUMA node modelled),
	// nil when none is cached (pods.go route).
	sibs []*leg
	cur  *leg
}

func (h *Host) changed() { h.version++ }

// Version counts changes of the host's kernel state: equal versions mean an
// identical sysfs tree, so a reader may reuse what it parsed last time.
func (h *Host) Version() uint64 { return h.version }

func (h *Host) kernelLog(c string, msg string) {
	h.w.emit(Event{Kind: EventKernel, Host: h.Name, Controller: c, Message: msg})
}

// allocInstance takes the lowest free instance number (Linux 6.12
// drivers/nvme/host/core.c:4918 ida_alloc).
func (h *Host) allocInstance() int {
	if h.held == nil {
		h.held = map[int]bool{}
	}
	for i := 0; ; i++ {
		if !h.held[i] {
			h.held[i] = true
			return i
		}
	}
}

// Controllers are the host's controllers, sorted by instance.
func (h *Host) Controllers() []*Ctrl { return append([]*Ctrl(nil), h.ctrls...) }

// Controller returns the controller named name ("nvme3").
func (h *Host) Controller(name string) (*Ctrl, bool) {
	for _, c := range h.ctrls {
		if c.Name() == name {
			return c, true
		}
	}
	return nil, false
}

// existing is the controller that blocks a new connect with spec's key
// (subsysnqn, hostnqn, hostid, transport, traddr, trsvcid, host_traddr,
// host_iface), if any; deleting and dead controllers do not block, nor
// does one whose first connect still runs: the transport lists a
// controller only once its first connect succeeded (Linux 6.12
// drivers/nvme/host/tcp.c:3164-3167 nvme_tcp_existing_controller against
// nvme_tcp_ctrl_list, which tcp.c:3214-3216 joins after setup).
func (h *Host) existing(spec ConnectSpec) *Ctrl {
	for _, c := range h.ctrls {
		switch c.State {
		case nvmeof.StateDeleting, nvmeof.StateDeletingNoIO, nvmeof.StateDead:
			continue
		}
		if c.firstConnect {
			continue
		}
		s := c.Spec
		if s.NQN == spec.NQN && s.Transport == spec.Transport && s.Traddr == spec.Traddr &&
			s.Trsvcid == spec.Trsvcid && s.HostTraddr == spec.HostTraddr && s.HostIface == spec.HostIface {
			return c
		}
	}
	return nil
}

// connect is a write to /dev/nvme-fabrics, synchronous: on success the
// controller is live, on failure no controller is left behind. A SYN that
// gets no answer fails at once here with ConnectNoAnswer [a shortcut of
// the model: the initial connects at New, the CSI restore and
// LeaveLeftoverController do not wait]; connectAsync models the wait.
func (h *Host) connect(spec ConnectSpec) (*Ctrl, error) {
	var (
		out  *Ctrl
		oerr error
	)
	h.connectWith(spec, false, func(c *Ctrl, err error) { out, oerr = c, err })
	return out, oerr
}

// connectAsync is connect taking virtual time: a SYN that gets no answer
// fails after the kernel's SYN timers give up (World.synTimeoutS, 3 s).
// Meanwhile the new controller is visible in sysfs as connecting
// (Linux 6.12 drivers/nvme/host/tcp.c:3203-3211: nvme_add_ctrl registers
// nvmeN, core.c:4958-4985, and the state goes connecting before
// nvme_tcp_setup_ctrl opens the socket); it belongs to no subsystem yet
// (core.c nvme_init_subsystem runs once the admin queue is up) and has no
// src_addr. On failure it goes away and its instance is free again
// (tcp.c:3222-3225 nvme_uninit_ctrl). done runs when the write returns —
// at once for every other outcome. The returned abort is the writer being
// killed: a connect still waiting for its SYN-ACK fails then with
// ConnectInterrupted (the wait is interruptible); afterwards it does
// nothing.
func (h *Host) connectAsync(spec ConnectSpec, done func(*Ctrl, error)) (abort func()) {
	return h.connectWith(spec, true, done)
}

func (h *Host) connectWith(spec ConnectSpec, wait bool, done func(*Ctrl, error)) (abort func()) {
	abort = func() {}
	if spec.Transport == "" {
		spec.Transport = "tcp"
	}
	if spec.Options.KeepAliveTmo <= 0 {
		spec.Options.KeepAliveTmo = kernelDefaultKato
	}
	if spec.Options.ReconnectDelay <= 0 {
		done(nil, &ConnectError{Kind: ConnectInvalid, Msg: "Invalid reconnect_delay"})
		return abort
	}
	port, err := strconv.Atoi(spec.Trsvcid)
	if err != nil || port <= 0 || port > 65535 {
		done(nil, &ConnectError{Kind: ConnectInvalid, Msg: fmt.Sprintf("invalid trsvcid %q", spec.Trsvcid)})
		return abort
	}
	if h.existing(spec) != nil {
		done(nil, &ConnectError{Kind: ConnectAlready, Msg: "already connected"})
		return abort
	}
	c := &Ctrl{host: h, Instance: h.allocInstance(), State: nvmeof.StateNew, Spec: spec, maxRecon: spec.Options.maxReconnects()}
	c.State = nvmeof.StateConnecting
	pending, visible := true, false
	abort = h.w.tcpConnect(spec.Traddr, port, spec.NQN, h.NQN, wait, func(res connectResult) {
		pending = false
		h.firstConnectDone(c, visible, res, port, done)
	})
	if pending {
		c.firstConnect, visible = true, true
		h.ctrls = insertSorted(h.ctrls, c)
		h.changed()
	}
	return abort
}

// firstConnectDone ends c's first connect with the target's answer res:
// the controller joins its subsystem and goes live, or goes away (visible:
// it was shown connecting meanwhile). A controller deleted while its first
// connect ran fails it.
func (h *Host) firstConnectDone(c *Ctrl, visible bool, res connectResult, port int, done func(*Ctrl, error)) {
	if c.State == nvmeof.StateDead {
		done(nil, &ConnectError{Kind: ConnectInvalid, Msg: "controller deleted while connecting"})
		return
	}
	if visible {
		h.removeFirstConnect(c)
	}
	c.firstConnect = false
	if res.err != nil {
		h.kernelLog(c.Name(), res.err.Msg)
		delete(h.held, c.Instance)
		c.State = nvmeof.StateDead
		done(nil, res.err)
		return
	}
	c.State = nvmeof.StateConnecting
	h.insertCtrl(c)
	c.establish(res, port)
	h.kernelLog(c.Name(), fmt.Sprintf("new ctrl: NQN %q, addr %s, hostnqn: %s", c.Spec.NQN, c.Spec.Addr(), h.NQN))
	h.changed()
	done(c, nil)
}

// removeFirstConnect takes c, shown connecting during its first connect,
// off the host's controller list (its instance stays held).
func (h *Host) removeFirstConnect(c *Ctrl) {
	for i, x := range h.ctrls {
		if x == c {
			h.ctrls = append(h.ctrls[:i], h.ctrls[i+1:]...)
			break
		}
	}
	c.gen++
	h.changed()
}

// insertSorted inserts c into cs, kept sorted by instance.
func insertSorted(cs []*Ctrl, c *Ctrl) []*Ctrl {
	i := sort.Search(len(cs), func(i int) bool { return cs[i].Instance > c.Instance })
	cs = append(cs, nil)
	copy(cs[i+1:], cs[i:])
	cs[i] = c
	return cs
}

func (h *Host) insertCtrl(c *Ctrl) {
	h.ctrls = insertSorted(h.ctrls, c)
	// join or create the subsystem (Linux 6.12 drivers/nvme/host/core.c:3031
	// nvme_init_subsystem: a new subsystem is named after its first
	// controller's instance).
	for _, s := range h.subsystems {
		if s.NQN == c.Spec.NQN {
			c.sub = s
			s.ctrls = append(s.ctrls, c)
			sort.Slice(s.ctrls, func(i, j int) bool { return s.ctrls[i].Instance < s.ctrls[j].Instance })
			return
		}
	}
	s := &hostSubsys{Instance: c.Instance, NQN: c.Spec.NQN, ctrls: []*Ctrl{c}}
	c.sub = s
	h.subsystems = append(h.subsystems, s)
	sort.Slice(h.subsystems, func(i, j int) bool { return h.subsystems[i].Instance < h.subsystems[j].Instance })
}

// establish makes c live on target subsystem res.ts at port: the admin
// queue is up, and the controller learns the namespaces the target exposes
// to this host now, with the listener's ANA state (Linux 6.12
// drivers/nvme/host/tcp.c:2597-2660 nvme_tcp_setup_ctrl: multipath.c:1043
// nvme_mpath_init_identify reads the ANA log page on every (re)connect,
// core.c:4780-4809 nvme_start_ctrl queues a scan).
func (c *Ctrl) establish(res connectResult, port int) {
	c.ts, c.port, c.Cntlid = res.ts, port, res.cntlid
	res.ts.attach(c)
	c.srcAddr = c.host.IP
	c.setState(nvmeof.StateLive)
	c.failfastExpired = false
	c.syncNamespaces()
}

func (c *Ctrl) setState(s nvmeof.ControllerState) {
	c.State = s
	c.gen++
	c.host.changed()
}

// syncNamespaces rescans: legs for the namespaces the connected target
// exposes to this host (removing the others), all with the listener's ANA
// state (Linux 6.12 drivers/nvme/host/core.c:4285 nvme_scan_work +
// multipath.c:818 ANA log page). A namespace whose identity disagrees
// with the subsystem's head is refused on this controller, as the kernel
// does: a leg whose NSID now carries another namespace goes ("identifiers
// changed for nsid N", core.c:4075-4081 nvme_validate_ns) and is not
// re-attached in the same scan; a new one is refused when the head of its
// NSID stands for another namespace ("IDs don't match for shared namespace
// N", core.c:3844) or another head stands for its namespace ("duplicate
// IDs in subsystem for nsid N", core.c:3825; nvme_init_ns_head :3775)
// [sourced; the messages as sbcli quotes them too,
// lvol_controller.py:1264-1276]. A head goes only with its last path
// (releaseHead: core.c:4019 nvme_ns_remove).
func (c *Ctrl) syncNamespaces() {
	var visible []int
	ana := nvmeof.ANAInaccessible
	if c.ts != nil {
		visible = c.ts.exposedNSIDs(c.host.NQN)
		ana = c.ts.anaOf(c.port)
	}
	keep := c.legs[:0]
	var changed []int
	for _, l := range c.legs {
		switch {
		case !containsInt(visible, l.nsid):
			c.host.releaseHead(c.sub, l)
		case c.ts.identOf(l.nsid) != l.head.ident:
			c.host.kernelLog(c.Name(), fmt.Sprintf("identifiers changed for nsid %d", l.nsid))
			changed = append(changed, l.nsid)
			c.host.releaseHead(c.sub, l)
		default:
			keep = append(keep, l)
		}
	}
	c.legs = keep
	for _, ns := range visible {
		found := containsInt(changed, ns)
		for _, l := range c.legs {
			if l.nsid == ns {
				found = true
				break
			}
		}
		if found {
			continue
		}
		hd, refused := c.host.acquireHead(c.sub, ns, c.ts.identOf(ns))
		if refused != "" {
			c.host.kernelLog(c.Name(), refused)
			continue
		}
		l := &leg{nsid: ns, grp: ns, head: hd, ctrl: c}
		hd.sibs = append(hd.sibs, l)
		c.legs = append(c.legs, l)
	}
	sort.Slice(c.legs, func(i, j int) bool { return c.legs[i].nsid < c.legs[j].nsid })
	for _, l := range c.legs {
		l.ana = ana
	}
	c.host.changed()
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// acquireHead returns the subsystem's head for nsid carrying namespace
// ident, allocating the lowest free head index from 1 when none exists
// (Linux 6.12 drivers/nvme/host/core.c:3691 nvme_alloc_ns_head), or the
// kernel's refusal message when the identities disagree (core.c:3775-3850
// nvme_init_ns_head; see syncNamespaces).
func (h *Host) acquireHead(s *hostSubsys, nsid, ident int) (*head, string) {
	for _, hd := range s.heads {
		if hd.nsid == nsid {
			if hd.ident != ident {
				return nil, fmt.Sprintf("IDs don't match for shared namespace %d", nsid)
			}
			return hd, ""
		}
	}
	for _, hd := range s.heads {
		if hd.ident == ident {
			return nil, fmt.Sprintf("duplicate IDs in subsystem for nsid %d", nsid)
		}
	}
	idx := 1
	for _, hd := range s.heads { // sorted by idx
		if hd.idx == idx {
			idx++
		}
	}
	h.diskseq++
	hd := &head{idx: idx, nsid: nsid, ident: ident, minor: h.blockMinor, diskseq: h.diskseq}
	h.blockMinor++
	s.heads = append(s.heads, hd)
	sort.Slice(s.heads, func(i, j int) bool { return s.heads[i].idx < s.heads[j].idx })
	return hd, ""
}

// releaseHead drops path l of its head, and the head's current path if
// it was l (Linux 6.12 drivers/nvme/host/core.c:4019 nvme_ns_remove →
// multipath.c:190 nvme_mpath_clear_current_path); the head goes with its
// last path.
func (h *Host) releaseHead(s *hostSubsys, l *leg) {
	hd := l.head
	if hd.cur == l {
		hd.cur = nil
	}
	for i, x := range hd.sibs {
		if x == l {
			hd.sibs = append(hd.sibs[:i], hd.sibs[i+1:]...)
			break
		}
	}
	if len(hd.sibs) > 0 {
		return
	}
	for i, x := range s.heads {
		if x == hd {
			s.heads = append(s.heads[:i], s.heads[i+1:]...)
			return
		}
	}
}

// anaChangeNotice: the target changed the ANA state of c's listener; the
// host reads the ANA log page after the AEN latency and updates the legs
// (Linux 6.12 drivers/nvme/host/core.c:4570-4574 queues ana_work,
// multipath.c:818-864 nvme_read_ana_log; ana_work reads only on a live
// controller, multipath.c nvme_ana_work). Nothing reaches a silent
// controller: the notice waits for the path to heal (hostnet.go), and a
// log page read that finds the path silent waits with it.
func (c *Ctrl) anaChangeNotice() {
	if c.silent != nil {
		c.silent.ana = true
		return
	}
	gen := c.gen
	c.host.w.after(c.host.w.aenLatency(), func() {
		if c.gen != gen || c.State != nvmeof.StateLive || c.ts == nil {
			return
		}
		if c.silent != nil {
			c.silent.ana = true
			return
		}
		ana := c.ts.anaOf(c.port)
		for _, l := range c.legs {
			l.ana = ana
		}
		c.host.changed()
	})
}

// nsAttrNotice: the target added or removed a namespace of c's subsystem
// and sent a namespace attribute notice (SPDK lib/nvmf/ctrlr.c:4523
// nvmf_ctrlr_async_event_ns_notice at 3230130e). The host queues a rescan
// (Linux 6.12 drivers/nvme/host/core.c:4548-4556 nvme_handle_aen_notice →
// :150 nvme_queue_scan) that sees the target as it is when it runs
// (:4285 nvme_scan_work). While one is queued, further notices add
// nothing: SPDK masks the notice until the host reads the Changed
// Namespace List log page (SPDK ctrlr.c:2419 nvmf_ctrlr_mask_aen), which
// nvme_scan_work does first (core.c:4260 nvme_clear_changed_ns_log)
// [sourced]; a change after that gets a
// new notice and a new rescan. The delay from notice to scan is one draw
// of the AEN latency (Config.AENLatencyS, default 10-30 ms), from r
// [assumption: no source measures it; short against a swap's RPCs]. A
// silent controller hears the notice, and runs the rescan's commands, only
// when its path heals (hostnet.go).
func (c *Ctrl) nsAttrNotice(r *rand.Rand) {
	if c.silent != nil {
		c.silent.scan = true
		return
	}
	if c.scanPending {
		return
	}
	c.scanPending = true
	d := 0.0
	if m := c.host.w.cfg.AENLatencyS; m > 0 {
		d = m * (0.5 + r.Float64())
	}
	// No generation check: a rescan reads the target as it is, so a scan
	// queued before a reconnect is still a valid scan after it.
	c.host.w.after(d, func() {
		c.scanPending = false
		if c.State != nvmeof.StateLive || c.ts == nil {
			return
		}
		if c.silent != nil {
			c.silent.scan = true
			return
		}
		c.syncNamespaces()
	})
}

// transportLost: the host's connection to the target broke (the target's
// FIN or RST reached it, or its keep-alive expired). A live controller
// starts error recovery (Linux 6.12 drivers/nvme/host/tcp.c:639-645
// nvme_tcp_error_recovery: resetting, "starting error recovery";
// :2694-2719 nvme_tcp_error_recovery_work: teardown, connecting, then a
// reconnect every reconnect_delay).
func (c *Ctrl) transportLost(reason string) {
	c.disconnectTarget(reason)
	if c.State != nvmeof.StateLive {
		return
	}
	c.setState(nvmeof.StateResetting)
	c.host.kernelLog(c.Name(), "starting error recovery")
	gen := c.gen
	c.host.w.after(teardownS, func() {
		if c.gen != gen {
			return
		}
		c.enterConnecting()
		c.reconnectOrRemove(nil)
	})
}

// teardownS is how long error recovery's teardown of the queues takes.
const teardownS = 0.005

// disconnectTarget drops c's connection on the host's side; a silent
// controller's stall ends (why: reason).
func (c *Ctrl) disconnectTarget(reason string) {
	if c.silent != nil {
		c.stallEnd(reason)
		c.silent = nil
	}
	if c.ts != nil {
		c.ts.detach(c)
		c.ts = nil
	}
	c.srcAddr = ""
	c.host.changed()
}

// enterConnecting moves c to connecting and starts the fast_io_fail timer
// (Linux 6.12 drivers/nvme/host/core.c:188-195 nvme_start_failfast_work,
// :175-186 nvme_failfast_work: "failfast expired").
func (c *Ctrl) enterConnecting() {
	c.setState(nvmeof.StateConnecting)
	if tmo := c.Spec.Options.FastIOFailTmo; tmo >= 0 {
		gen := c.gen
		c.host.w.after(float64(tmo), func() {
			if c.gen != gen || c.State != nvmeof.StateConnecting {
				return
			}
			c.failfastExpired = true
			c.host.kernelLog(c.Name(), "failfast expired")
			c.host.changed()
		})
	}
}

// reconnectOrRemove schedules the next reconnect attempt or removes the
// controller (Linux 6.12 drivers/nvme/host/tcp.c:2574-2595
// nvme_tcp_reconnect_or_remove, fabrics.c:589-602 nvmf_should_reconnect):
// a rejection with DNR stops retrying when the kernel honours it;
// otherwise retry while max_reconnects is -1 or nr_reconnects <
// max_reconnects.
func (c *Ctrl) reconnectOrRemove(cerr *ConnectError) {
	if c.State != nvmeof.StateConnecting {
		return
	}
	w := c.host.w
	retry := c.maxRecon == -1 || c.nrReconnects < c.maxRecon
	if cerr != nil && cerr.DNR && w.cfg.KernelDNR == KernelDNRHonor {
		retry = false
	}
	if !retry {
		status := 0
		if cerr != nil {
			status = cerr.Status
		}
		c.host.kernelLog(c.Name(), fmt.Sprintf("Removing controller (%d)...", status))
		c.host.deleteCtrl(c)
		return
	}
	c.host.kernelLog(c.Name(), fmt.Sprintf("Reconnecting in %d seconds...", c.Spec.Options.ReconnectDelay))
	gen := c.gen
	w.after(float64(c.Spec.Options.ReconnectDelay), func() {
		if c.gen != gen || c.State != nvmeof.StateConnecting {
			return
		}
		c.reconnectAttempt()
	})
}

// reconnectAttempt is nvme_tcp_reconnect_ctrl_work (Linux 6.12
// drivers/nvme/host/tcp.c:2668-2692): the counter goes up, one connect
// attempt (World.tcpConnect: a SYN nobody answers fails after the kernel's
// SYN timers give up), then "Successfully reconnected (attempt N/M)" and
// the counter back to 0, or "Failed reconnect attempt N/M" and the next
// step of the loop.
func (c *Ctrl) reconnectAttempt() {
	h := c.host
	c.nrReconnects++
	port, _ := strconv.Atoi(c.Spec.Trsvcid)
	gen := c.gen
	h.w.tcpConnect(c.Spec.Traddr, port, c.Spec.NQN, h.NQN, true, func(res connectResult) {
		if c.gen != gen || c.State != nvmeof.StateConnecting {
			return
		}
		if res.err == nil {
			c.establish(res, port)
			h.kernelLog(c.Name(), fmt.Sprintf("Successfully reconnected (attempt %d/%d)", c.nrReconnects, c.maxRecon))
			c.nrReconnects = 0
			return
		}
		if res.err.Msg != "" {
			h.kernelLog(c.Name(), res.err.Msg)
		}
		h.kernelLog(c.Name(), fmt.Sprintf("Failed reconnect attempt %d/%d", c.nrReconnects, c.maxRecon))
		if res.err.Kind == ConnectRejected && h.w.cfg.ReconnectReset == ReconnectResetPartial {
			// Some kernels reset the counter once an attempt got as far as
			// the Fabrics CONNECT (field reports; docs/host-model.md).
			c.nrReconnects = 0
		}
		c.reconnectOrRemove(res.err)
	})
}

// deleteCtrl removes c (Linux 6.12 drivers/nvme/host/core.c:251
// nvme_delete_ctrl, :231-240 nvme_do_delete_ctrl: "Removing ctrl: NQN"):
// its legs, heads without other paths, and its subsystem with the last
// controller. Deleting is instantaneous here [a shortcut of the model], so
// the kernel's rule that a deleting controller still carries I/O while its
// queues are live (multipath.c:243-258; nvme.h:851-852) never applies.
func (h *Host) deleteCtrl(c *Ctrl) {
	if c.firstConnect {
		// Deleted while its first connect runs: it goes, and the connect
		// fails (firstConnectDone).
		h.removeFirstConnect(c)
		delete(h.held, c.Instance)
		c.State = nvmeof.StateDead
		return
	}
	c.disconnectTarget("controller deleted")
	c.setState(nvmeof.StateDeleting)
	h.kernelLog(c.Name(), fmt.Sprintf("Removing ctrl: NQN %q", c.Spec.NQN))
	for _, l := range c.legs {
		h.releaseHead(c.sub, l)
	}
	c.legs = nil
	for i, x := range h.ctrls {
		if x == c {
			h.ctrls = append(h.ctrls[:i], h.ctrls[i+1:]...)
			break
		}
	}
	s := c.sub
	for i, x := range s.ctrls {
		if x == c {
			s.ctrls = append(s.ctrls[:i], s.ctrls[i+1:]...)
			break
		}
	}
	// The instance number stays held while it names the subsystem
	// (Linux 6.12 core.c:4835 nvme_free_ctrl, :2938 nvme_release_subsystem).
	if c.Instance != s.Instance {
		delete(h.held, c.Instance)
	}
	if len(s.ctrls) == 0 {
		for i, x := range h.subsystems {
			if x == s {
				h.subsystems = append(h.subsystems[:i], h.subsystems[i+1:]...)
				break
			}
		}
		delete(h.held, s.Instance)
	}
	c.State = nvmeof.StateDead
	c.gen++
	h.changed()
}

// sysfsCtrlLossTmo is what class/nvme/nvmeN/ctrl_loss_tmo shows:
// max_reconnects × reconnect_delay, or -1 ("off") when reconnecting forever
// (Linux 6.12 drivers/nvme/host/sysfs.c:427-436).
func (c *Ctrl) sysfsCtrlLossTmo() int {
	if c.maxRecon < 0 {
		return -1
	}
	return c.maxRecon * c.Spec.Options.ReconnectDelay
}

// State is the host's kernel state as the simulator holds it, in nvmeof's
// model: what nvmeof.ReadHost must parse back from Sysfs().
// A controller whose first connect runs is in no subsystem directory;
// nvmeof files it under the host's subsystem of its NQN when there is one,
// else under a subsystem of its own with instance -1, listed first.
func (h *Host) State() nvmeof.HostState {
	var st nvmeof.HostState
	var joining map[*hostSubsys][]*Ctrl
	for _, c := range h.ctrls {
		if !c.firstConnect {
			continue
		}
		if s := h.subsystemOf(c.Spec.NQN); s != nil {
			if joining == nil {
				joining = map[*hostSubsys][]*Ctrl{}
			}
			joining[s] = append(joining[s], c)
			continue
		}
		i := sort.Search(len(st.Subsystems), func(i int) bool { return st.Subsystems[i].NQN >= c.Spec.NQN })
		if i == len(st.Subsystems) || st.Subsystems[i].NQN != c.Spec.NQN {
			st.Subsystems = slices.Insert(st.Subsystems, i, nvmeof.Subsystem{Instance: -1, NQN: c.Spec.NQN})
		}
		st.Subsystems[i].Controllers = append(st.Subsystems[i].Controllers, c.model())
	}
	for _, s := range h.subsystems {
		ss := nvmeof.Subsystem{Instance: s.Instance, NQN: s.NQN}
		ctrls := s.ctrls
		if j := joining[s]; len(j) > 0 {
			ctrls = append(append([]*Ctrl(nil), ctrls...), j...)
			sort.Slice(ctrls, func(a, b int) bool { return ctrls[a].Instance < ctrls[b].Instance })
		}
		for _, c := range ctrls {
			ss.Controllers = append(ss.Controllers, c.model())
		}
		for _, hd := range s.heads {
			ss.Namespaces = append(ss.Namespaces, nvmeof.Namespace{Head: hd.name(s), NSID: hd.nsid})
		}
		sort.Slice(ss.Namespaces, func(i, j int) bool { return ss.Namespaces[i].NSID < ss.Namespaces[j].NSID })
		st.Subsystems = append(st.Subsystems, ss)
	}
	return st
}

// subsystemOf is h's subsystem of nqn, nil if none.
func (h *Host) subsystemOf(nqn string) *hostSubsys {
	for _, s := range h.subsystems {
		if s.NQN == nqn {
			return s
		}
	}
	return nil
}

func (hd *head) name(s *hostSubsys) string { return fmt.Sprintf("nvme%dn%d", s.Instance, hd.idx) }

func (l *leg) name(c *Ctrl) string {
	return fmt.Sprintf("nvme%dc%dn%d", c.sub.Instance, c.Instance, l.head.idx)
}

func (c *Ctrl) model() nvmeof.Controller {
	m := nvmeof.Controller{
		Name: c.Name(), Instance: c.Instance, State: c.State, Transport: c.Spec.Transport,
		Address: nvmeof.Address{Traddr: c.Spec.Traddr, Trsvcid: c.Spec.Trsvcid, HostTraddr: c.Spec.HostTraddr,
			HostIface: c.Spec.HostIface, SrcAddr: c.srcAddr},
		NQN: c.Spec.NQN, Cntlid: c.Cntlid, HostNQN: c.host.NQN, HostID: c.host.ID,
		CtrlLossTmo: c.sysfsCtrlLossTmo(), ReconnectDelay: c.Spec.Options.ReconnectDelay,
		FastIOFailTmo: c.Spec.Options.FastIOFailTmo,
	}
	for _, l := range c.legs {
		m.Legs = append(m.Legs, nvmeof.Leg{Name: l.name(c), NSID: l.nsid, ANA: l.ana, ANAGroup: l.grp})
	}
	return m
}
