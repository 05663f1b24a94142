package faults

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/fiomig/fiomig/backend"
	"github.com/fiomig/fiomig/nvmeof"
)

// Fault kinds beyond the first three (issue 10). Each models what breaks
// NVMe-oF migrations in practice; the facts each rests on are in
// docs/sources.md, assumptions are marked so.
const (
	// KindNodeCrash: a storage node crashes and stays down for for_s
	// seconds (no restart), then boots. Target: the node.
	KindNodeCrash = "node-crash"
	// KindNetworkPartition: consumer host ↔ storage node, both directions,
	// for for_s seconds. Target: "<host>/<node>".
	KindNetworkPartition = "network-partition"
	// KindConnectRejected: the target rejects CONNECTs with "does not
	// allow host … to connect at this address" for for_s seconds. Target:
	// node or ip:port; params host (default every host).
	KindConnectRejected = "connect-rejected"
	// KindOperatorRestart: the migration operator is down for for_s
	// seconds, mid-migration. Target: "operator".
	KindOperatorRestart = "operator-restart"
	// KindResetController: `nvme reset` (sysfs reset_controller) of a
	// host's live controllers, at one instant. Target: the host; params
	// node (only controllers at that node).
	KindResetController = "reset-controller"
	// KindANAFlap: a node's listeners report ANA inaccessible for for_s
	// seconds, then their own state again. Target: the node.
	KindANAFlap = "ana-flap"
)

// OperatorTarget is the target of operator-restart.
const OperatorTarget = "operator"

func init() {
	Kinds = append(Kinds, KindNodeCrash, KindNetworkPartition, KindConnectRejected, KindOperatorRestart, KindResetController, KindANAFlap)
}

// SplitPartitionTarget splits "<host>/<node>".
func SplitPartitionTarget(t string) (host, node string, ok bool) {
	host, node, ok = strings.Cut(t, "/")
	return host, node, ok && host != "" && node != ""
}

// lostSince is the landing rule of faults that take controllers out of
// live over time (node-crash, network-partition): which of the
// controllers live at injection (baseline, "<host>/<nvmeN>") are no longer
// live now, read from the hosts' sysfs through nvmeof.
type lostSince struct {
	ip       string
	host     string // "" = every host
	baseline []string
	firstS   float64
	lost     []string
	// hosts re-reads a host only when its tree changed (polled every tick).
	hosts backend.HostReader
}

func (l *lostSince) start(env Env) error {
	live, err := liveAtHost(env, &l.hosts, l.ip, l.host)
	l.baseline, l.lost, l.firstS = live, nil, 0
	return err
}

func (l *lostSince) landed(env Env) (map[string]string, float64, bool) {
	if len(l.lost) == 0 {
		live, err := liveAtHost(env, &l.hosts, l.ip, l.host)
		if err != nil {
			return nil, 0, false
		}
		for _, c := range l.baseline {
			if !slices.Contains(live, c) {
				l.lost = append(l.lost, c)
			}
		}
		if len(l.lost) == 0 {
			return nil, 0, false
		}
		l.firstS = env.Cluster.Now()
	}
	return map[string]string{"controllers_no_longer_live": strconv.Itoa(len(l.lost)), "controllers": list(l.lost, 8)}, l.firstS, true
}

// liveAtHost is liveAt restricted to one host ("" = all).
func liveAtHost(env Env, hosts *backend.HostReader, ip, host string) ([]string, error) {
	all, err := liveAt(env.Cluster, hosts, ip)
	if host == "" || err != nil {
		return all, err
	}
	var out []string
	for _, c := range all {
		if strings.HasPrefix(c, host+"/") {
			out = append(out, c)
		}
	}
	return out, nil
}

// NodeCrash crashes a node for a window (NodeCrasher). It lands when a host
// controller that was live at the node at injection leaves live — the hosts
// notice a crash only by keep-alive timeout (kato, 4–5 s for simplyblock's
// paths; docs/sources.md §4.2, §7), so the landed line comes seconds after
// the inject line.
type NodeCrash struct {
	Node string
	seen lostSince
}

// Kind implements Fault.
func (f *NodeCrash) Kind() string { return KindNodeCrash }

// Target implements Fault.
func (f *NodeCrash) Target() string { return f.Node }

// Inject implements Fault.
func (f *NodeCrash) Inject(env Env) (map[string]string, error) {
	c, ok := env.Cluster.(NodeCrasher)
	if !ok {
		return nil, fmt.Errorf("%s: the %s backend cannot crash nodes", KindNodeCrash, env.Cluster.Name())
	}
	f.seen = lostSince{ip: nodeIP(env.Cluster, f.Node)}
	if err := f.seen.start(env); err != nil {
		return nil, err
	}
	_, err := c.CrashNode(f.Node)
	return nil, err
}

// Landed implements Lagging.
func (f *NodeCrash) Landed(env Env) (map[string]string, float64, bool) { return f.seen.landed(env) }

// CanLand implements Precondition: some host has a live controller at the
// node, whose loss would show the crash, and no earlier fault's effect
// makes it the last usable path of a namespace (lastPath).
func (f *NodeCrash) CanLand(env Env) error {
	return errors.Join(anyLive(env, "", f.Node), lastPath(env, "", f.Node))
}

// Recover implements Fault: boot the node (idempotent).
func (f *NodeCrash) Recover(env Env) (map[string]string, error) {
	c, ok := env.Cluster.(NodeCrasher)
	if !ok {
		return nil, nil
	}
	return c.BootNode(f.Node)
}

// NetworkPartition cuts host ↔ node both ways for a window (Partitioner).
// It lands when one of the host's controllers that was live at the node at
// injection leaves live (keep-alive timeout, as for NodeCrash).
type NetworkPartition struct {
	Host, Node string
	seen       lostSince
}

// Kind implements Fault.
func (f *NetworkPartition) Kind() string { return KindNetworkPartition }

// Target implements Fault.
func (f *NetworkPartition) Target() string { return f.Host + "/" + f.Node }

// Inject implements Fault.
func (f *NetworkPartition) Inject(env Env) (map[string]string, error) {
	p, ok := env.Cluster.(Partitioner)
	if !ok {
		return nil, fmt.Errorf("%s: the %s backend cannot partition the network", KindNetworkPartition, env.Cluster.Name())
	}
	f.seen = lostSince{ip: nodeIP(env.Cluster, f.Node), host: f.Host}
	if err := f.seen.start(env); err != nil {
		return nil, err
	}
	_, err := p.Partition(f.Host, f.Node)
	return nil, err
}

// Landed implements Lagging.
func (f *NetworkPartition) Landed(env Env) (map[string]string, float64, bool) {
	return f.seen.landed(env)
}

// CanLand implements Precondition: the host has a live controller at the
// node, whose loss would show the partition, and no earlier fault's effect
// makes it the last usable path of a namespace (lastPath).
func (f *NetworkPartition) CanLand(env Env) error {
	return errors.Join(anyLive(env, f.Host, f.Node), lastPath(env, f.Host, f.Node))
}

// Recover implements Fault: heal (idempotent).
func (f *NetworkPartition) Recover(env Env) (map[string]string, error) {
	p, ok := env.Cluster.(Partitioner)
	if !ok {
		return nil, nil
	}
	return p.Heal(f.Host, f.Node)
}

// ConnectRejected makes the target reject CONNECTs for a window
// (ConnectRejecter): SPDK answers "Subsystem … does not allow host … to
// connect at this address" without DNR (docs/sources.md §3), so the host keeps
// retrying every reconnect_delay. It lands with the first rejected CONNECT.
type ConnectRejected struct {
	At, Host string
	firstS   float64
	n        int64
}

// Kind implements Fault.
func (f *ConnectRejected) Kind() string { return KindConnectRejected }

// Target implements Fault.
func (f *ConnectRejected) Target() string { return f.At }

// Inject implements Fault.
func (f *ConnectRejected) Inject(env Env) (map[string]string, error) {
	r, ok := env.Cluster.(ConnectRejecter)
	if !ok {
		return nil, fmt.Errorf("%s: the %s backend cannot reject CONNECTs", KindConnectRejected, env.Cluster.Name())
	}
	f.firstS, f.n = 0, 0
	_, err := r.RejectConnects(f.At, f.Host)
	return nil, err
}

// Landed implements Lagging.
func (f *ConnectRejected) Landed(env Env) (map[string]string, float64, bool) {
	r, ok := env.Cluster.(ConnectRejecter)
	if !ok {
		return nil, 0, false
	}
	if f.n == 0 {
		if f.n = r.RejectedConnects(f.At, f.Host); f.n == 0 {
			return nil, 0, false
		}
		f.firstS = env.Cluster.Now()
	}
	return map[string]string{"connects_rejected": strconv.FormatInt(f.n, 10)}, f.firstS, true
}

// Recover implements Fault: stop rejecting (idempotent).
func (f *ConnectRejected) Recover(env Env) (map[string]string, error) {
	r, ok := env.Cluster.(ConnectRejecter)
	if !ok {
		return nil, nil
	}
	n, err := r.StopRejectingConnects(f.At, f.Host)
	return map[string]string{"connects_rejected": strconv.FormatInt(n, 10)}, err
}

// OperatorRestart stops the operator for a window (OperatorRestarter). It
// lands when a reconcile had to wait for it: an operator down while no
// migration needs it changed nothing.
type OperatorRestart struct {
	firstS float64
	n      int64
}

// Kind implements Fault.
func (f *OperatorRestart) Kind() string { return KindOperatorRestart }

// Target implements Fault.
func (f *OperatorRestart) Target() string { return OperatorTarget }

// Inject implements Fault.
func (f *OperatorRestart) Inject(env Env) (map[string]string, error) {
	o, ok := env.Cluster.(OperatorRestarter)
	if !ok {
		return nil, fmt.Errorf("%s: the %s backend cannot restart the operator", KindOperatorRestart, env.Cluster.Name())
	}
	f.firstS, f.n = 0, 0
	_, err := o.StopOperator()
	return nil, err
}

// Landed implements Lagging.
func (f *OperatorRestart) Landed(env Env) (map[string]string, float64, bool) {
	o, ok := env.Cluster.(OperatorRestarter)
	if !ok {
		return nil, 0, false
	}
	if f.n == 0 {
		if f.n = o.DeferredReconciles(); f.n == 0 {
			return nil, 0, false
		}
		f.firstS = env.Cluster.Now()
	}
	return map[string]string{"reconciles_deferred": strconv.FormatInt(f.n, 10)}, f.firstS, true
}

// Recover implements Fault: start the operator (idempotent).
func (f *OperatorRestart) Recover(env Env) (map[string]string, error) {
	o, ok := env.Cluster.(OperatorRestarter)
	if !ok {
		return nil, nil
	}
	return o.StartOperator()
}

// ResetController resets a host's live controllers (ControllerResetter).
// Its evidence is what the host's kernel shows right after: controllers
// that were live and no longer are (resetting), read from sysfs. Nothing
// to recover: the kernel reconnects on its own.
type ResetController struct {
	Host, Node string
}

// Kind implements Fault.
func (f *ResetController) Kind() string { return KindResetController }

// Target implements Fault.
func (f *ResetController) Target() string { return f.Host }

// Inject implements Fault.
func (f *ResetController) Inject(env Env) (map[string]string, error) {
	r, ok := env.Cluster.(ControllerResetter)
	if !ok {
		return nil, fmt.Errorf("%s: the %s backend cannot reset controllers", KindResetController, env.Cluster.Name())
	}
	ip := ""
	if f.Node != "" {
		ip = nodeIP(env.Cluster, f.Node)
	}
	before, err := liveOnHost(env, f.Host, ip)
	if err != nil {
		return nil, err
	}
	if _, err := r.ResetControllers(f.Host, f.Node); err != nil {
		return nil, err
	}
	after, err := liveOnHost(env, f.Host, ip)
	if err != nil {
		return nil, err
	}
	var lost []string
	for _, c := range before {
		if !slices.Contains(after, c) {
			lost = append(lost, c)
		}
	}
	if len(lost) == 0 {
		return nil, nil
	}
	return map[string]string{"controllers_no_longer_live": strconv.Itoa(len(lost)), "controllers": list(lost, 8)}, nil
}

// Recover implements Fault: nothing to undo.
func (f *ResetController) Recover(Env) (map[string]string, error) { return nil, nil }

// CanLand implements Precondition: the host has a live controller (at the
// node, when one is named) to reset, and no earlier fault's effect makes
// it the last usable path of a namespace (lastPath).
func (f *ResetController) CanLand(env Env) error {
	return errors.Join(anyLive(env, f.Host, f.Node), lastPath(env, f.Host, f.Node))
}

// anyLive is nil when host ("" = any host) has a live controller at node
// ("" = any node), read from the hosts' sysfs; else it says there is none.
func anyLive(env Env, host, node string) error {
	ip := ""
	if node != "" {
		if ip = nodeIP(env.Cluster, node); ip == "" {
			return nil // an ip:port or unknown target: let the injection say
		}
	}
	var live []string
	var err error
	if ip == "" {
		live, err = liveOnHost(env, host, "")
	} else {
		var hosts backend.HostReader
		live, err = liveAtHost(env, &hosts, ip, host)
	}
	if err != nil || len(live) > 0 {
		return err
	}
	who, at := "any host", ""
	if host != "" {
		who = host
	}
	if node != "" {
		at = " at " + node
	}
	return fmt.Errorf("no live controller of %s%s", who, at)
}

// liveOnHost lists host's live controllers ("<host>/<nvmeN>"), only those
// at ip when ip is not "".
func liveOnHost(env Env, host, ip string) ([]string, error) {
	var want netip.Addr
	if ip != "" {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return nil, nil
		}
		want = a
	}
	for _, h := range env.Cluster.Hosts() {
		if h.Name() != host {
			continue
		}
		hs, err := nvmeof.ReadHost(h.Sysfs(), h.HostNQN())
		if err != nil {
			return nil, fmt.Errorf("read host %s: %w", host, err)
		}
		var out []string
		for _, c := range hs.Controllers() {
			if c.State != nvmeof.StateLive {
				continue
			}
			if ip != "" {
				a, err := netip.ParseAddr(strings.Trim(c.Address.Traddr, "[]"))
				if err != nil || a != want {
					continue
				}
			}
			out = append(out, host+"/"+c.Name)
		}
		return out, nil
	}
	return nil, fmt.Errorf("no host %q", host)
}

// ANAFlap forces a node's listeners to ANA inaccessible for a window
// (ANAFlapper). Its evidence is the backend's count of listeners that were
// accessible and now report inaccessible; a node whose listeners were all
// inaccessible already (e.g. mid-cutover of its only subsystem) shows no
// change, and the fault left no evidence.
type ANAFlap struct{ Node string }

// Kind implements Fault.
func (f *ANAFlap) Kind() string { return KindANAFlap }

// Target implements Fault.
func (f *ANAFlap) Target() string { return f.Node }

// Inject implements Fault.
func (f *ANAFlap) Inject(env Env) (map[string]string, error) {
	a, ok := env.Cluster.(ANAFlapper)
	if !ok {
		return nil, fmt.Errorf("%s: the %s backend cannot change ANA states", KindANAFlap, env.Cluster.Name())
	}
	ev, err := a.ForceANAInaccessible(f.Node)
	if err != nil || ev["listeners_made_inaccessible"] == "" || ev["listeners_made_inaccessible"] == "0" {
		return nil, err
	}
	return ev, nil
}

// CanLand implements Precondition (lastPath).
func (f *ANAFlap) CanLand(env Env) error { return lastPath(env, "", f.Node) }

// Recover implements Fault: restore (idempotent).
func (f *ANAFlap) Recover(env Env) (map[string]string, error) {
	a, ok := env.Cluster.(ANAFlapper)
	if !ok {
		return nil, nil
	}
	return a.RestoreANA(f.Node)
}

// lastPath is nil unless the node's paths (of host only, when host is not
// "") are now the last usable ones (a live controller with an optimized
// or non-optimized leg, nvmeof.Controller.Accessible) of some namespace on
// a host. A healthy system rides out every path of one node going away;
// when only the node's are left, an earlier fault's effect has not ended
// (a crashed or partitioned node's paths still reconnecting, a source
// tertiary sbcli's cancel deleted) and a fault there would stack on it,
// which the default schedule's spacing means to avoid. A namespace with no usable path now (a migration's freeze) is
// not counted.
func lastPath(env Env, host, node string) error {
	ip := nodeIP(env.Cluster, node)
	want, err := netip.ParseAddr(ip)
	if err != nil {
		return nil // an ip:port or unknown target: let the injection say
	}
	for _, h := range env.Cluster.Hosts() {
		if host != "" && h.Name() != host {
			continue
		}
		hs, err := nvmeof.ReadHost(h.Sysfs(), h.HostNQN())
		if err != nil {
			return fmt.Errorf("read host %s: %w", h.Name(), err)
		}
		for _, s := range hs.Subsystems {
			for _, ns := range s.Namespaces {
				at, elsewhere := 0, 0
				for _, c := range s.Controllers {
					a, _ := netip.ParseAddr(strings.Trim(c.Address.Traddr, "[]"))
					for _, l := range c.Legs {
						switch {
						case l.NSID != ns.NSID || !c.Accessible(l):
						case a == want:
							at++
						default:
							elsewhere++
						}
					}
				}
				if at > 0 && elsewhere == 0 {
					return fmt.Errorf("%s holds the last usable path of %s NSID %d on %s", node, s.NQN, ns.NSID, h.Name())
				}
			}
		}
	}
	return nil
}
