package kubenode

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// NetnsPath is the cluster's network namespace as a file (nsenter --net).
const NetnsPath = "/run/netns/" + Netns

// AddAddress puts a on the nodes' end of the veth pair, inside Netns: an
// address of 198.19.255.0/24 that no node uses (nodes have .1 to .9, the
// root end .254) is reached from the root namespace directly through the
// veth, so a packet the test process sends to it enters Netns as a node's
// traffic from outside would (the prerouting hook sees it). It goes with
// the namespace.
func (c *Cluster) AddAddress(a netip.Addr) error {
	pfx := netip.MustParsePrefix(nodeNet + ".0/24")
	if !pfx.Contains(a) {
		return fmt.Errorf("kubenode: address %s is not in %s", a, pfx)
	}
	if b := a.As4(); int(b[3]) <= len(c.Nodes) || b[3] == 254 || b[3] == 0 || b[3] == 255 {
		return fmt.Errorf("kubenode: address %s is a node's, the root end's or not a host address", a)
	}
	return ip("-n", Netns, "addr", "add", a.String()+"/32", "dev", nodeVeth)
}

// Listen opens a TCP listener at addr inside Netns (127.0.0.1:P there is
// what a hostNetwork pod's port-forward reaches): the socket is made on an
// OS thread that joined the namespace and is then thrown away (the
// goroutine exits locked), so no other goroutine runs in it.
func (c *Cluster) Listen(addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		f, err := os.Open(NetnsPath)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("setns %s: %w", NetnsPath, err)}
			return
		}
		l, err := net.Listen("tcp", addr)
		ch <- result{l, err}
	}()
	r := <-ch
	if r.err != nil {
		return nil, fmt.Errorf("kubenode: listen on %s in %s: %w", addr, Netns, r.err)
	}
	return r.l, nil
}

// NFT runs nft(8) with args inside Netns (the nodes' one network
// namespace, where a hostNetwork pod's nftables rules live) and returns
// its output.
func (c *Cluster) NFT(ctx context.Context, args ...string) ([]byte, error) {
	out, err := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + NetnsPath, "--", "nft"}, args...)...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return nil, fmt.Errorf("kubenode: nft %s in %s: %w: %s", strings.Join(args, " "), Netns, err, msg)
	}
	return out, nil
}
