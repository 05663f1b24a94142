package standin

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Netns is a network namespace the stand-in made itself, joined to the root
// namespace by a veth pair: the root side holds <prefix>.1/24, the
// namespace side (eth0) every address handed out by AddAddr. The API
// server, in the root namespace, reaches pod IPs in it through the veth —
// loopback pod IPs cannot be proxied (kube-apiserver's pod ResourceLocation
// refuses an IP that is not global unicast), so pod IPs live here, in
// 198.18.0.0/15 (RFC 2544, benchmarking: no real network uses it).
//
// It needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and iproute2's `ip`. Close
// removes the namespace and with it the veth pair; a namespace left by a
// process that died (named fiomig-<pid>-<n>) is removed by the next
// NewNetns.
type Netns struct {
	// Name is the namespace's name (`ip netns`), fiomig-<pid>-<n>.
	Name string
	// Prefix is the /24 the namespace's addresses come from.
	Prefix netip.Prefix

	ip     string
	hostIf string
	mu     sync.Mutex
	next   int
	free   []netip.Addr
	closed bool
}

const netnsDir = "/var/run/netns"

var netnsSeq struct {
	sync.Mutex
	n int
}

// NetnsAvailable says why NewNetns cannot work here (nil when it can):
// not root, or no `ip` command.
func NetnsAvailable() error {
	if os.Geteuid() != 0 {
		return errors.New("standin: a network namespace needs root (the API server's pod proxy cannot reach loopback pod IPs)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("standin: `ip` (iproute2) not found: install it with `make tools`")
	}
	return nil
}

// NewNetns makes a network namespace with a veth pair to the root
// namespace on a /24 of 198.18.0.0/15 that no interface uses yet.
func NewNetns() (*Netns, error) {
	if err := NetnsAvailable(); err != nil {
		return nil, err
	}
	ipPath, _ := exec.LookPath("ip")
	// One process at a time picks a subnet and sets it up.
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "fiomig-netns.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("standin: lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	removeStaleNetns(ipPath)
	prefix, err := freePrefix(ipPath)
	if err != nil {
		return nil, err
	}
	netnsSeq.Lock()
	netnsSeq.n++
	seq := netnsSeq.n
	netnsSeq.Unlock()
	n := &Netns{
		Name:   fmt.Sprintf("fiomig-%d-%d", os.Getpid(), seq),
		Prefix: prefix,
		ip:     ipPath,
		hostIf: fmt.Sprintf("fm%dh%d", os.Getpid(), seq),
		next:   2,
	}
	if len(n.hostIf) > 15 {
		n.hostIf = n.hostIf[len(n.hostIf)-15:]
	}
	gw := n.addr(1)
	steps := [][]string{
		{"netns", "add", n.Name},
		{"link", "add", n.hostIf, "type", "veth", "peer", "name", "eth0", "netns", n.Name},
		{"addr", "add", gw.String() + "/24", "dev", n.hostIf},
		{"link", "set", n.hostIf, "up"},
		{"-n", n.Name, "link", "set", "lo", "up"},
		{"-n", n.Name, "link", "set", "eth0", "up"},
	}
	for _, args := range steps {
		if err := n.run(args...); err != nil {
			_ = n.Close()
			return nil, err
		}
	}
	return n, nil
}

func (n *Netns) run(args ...string) error {
	out, err := exec.Command(n.ip, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("standin: ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (n *Netns) addr(host int) netip.Addr {
	a := n.Prefix.Addr().As4()
	a[3] = byte(host)
	return netip.AddrFrom4(a)
}

// Gateway is the root namespace's address on the veth (<prefix>.1).
func (n *Netns) Gateway() netip.Addr { return n.addr(1) }

// AddAddr assigns the next free address of Prefix to the namespace's eth0
// and returns it; an address given back with ReleaseAddr is reused first.
func (n *Netns) AddAddr() (netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return netip.Addr{}, errors.New("standin: netns closed")
	}
	if len(n.free) > 0 {
		a := n.free[0]
		n.free = n.free[1:]
		return a, nil
	}
	if n.next > 254 {
		return netip.Addr{}, fmt.Errorf("standin: netns %s: all 253 addresses of %s in use", n.Name, n.Prefix)
	}
	a := n.addr(n.next)
	if err := n.run("-n", n.Name, "addr", "add", a.String()+"/24", "dev", "eth0"); err != nil {
		return netip.Addr{}, err
	}
	n.next++
	return a, nil
}

// ReleaseAddr gives an address back for reuse (it stays on eth0).
func (n *Netns) ReleaseAddr(a netip.Addr) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.free = append(n.free, a)
}

// Listen opens a TCP listener at addr inside the namespace: the socket is
// made on an OS thread that joined the namespace and is then thrown away
// (the goroutine exits locked), so no other goroutine runs in it.
func (n *Netns) Listen(addr netip.AddrPort) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		f, err := os.Open(filepath.Join(netnsDir, n.Name))
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("standin: setns %s: %w", n.Name, err)}
			return
		}
		l, err := net.Listen("tcp", addr.String())
		ch <- result{l, err}
	}()
	r := <-ch
	if r.err != nil {
		return nil, fmt.Errorf("standin: listen on %s in netns %s: %w", addr, n.Name, r.err)
	}
	return r.l, nil
}

// Close deletes the namespace (and its veth pair); idempotent.
func (n *Netns) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	var errs []error
	if _, err := os.Stat(filepath.Join(netnsDir, n.Name)); err == nil {
		errs = append(errs, n.run("netns", "del", n.Name))
	}
	// The root side of the pair goes with its peer, asynchronously: remove
	// it if it stayed, and count it removed when it vanished meanwhile (the
	// kernel finished tearing the pair down between the look and the
	// delete: "Cannot find device").
	if _, err := net.InterfaceByName(n.hostIf); err == nil {
		if err := n.run("link", "del", n.hostIf); err != nil {
			if _, still := net.InterfaceByName(n.hostIf); still == nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeStaleNetns deletes namespaces fiomig-<pid>-<n> whose process is gone.
func removeStaleNetns(ipPath string) {
	entries, _ := os.ReadDir(netnsDir)
	for _, e := range entries {
		parts := strings.Split(e.Name(), "-")
		if len(parts) != 3 || parts[0] != "fiomig" {
			continue
		}
		pid, err := strconv.Atoi(parts[1])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue
		}
		_ = exec.Command(ipPath, "netns", "del", e.Name()).Run()
	}
}

// freePrefix is the first /24 of 198.18.0.0/15 that no root-namespace
// address falls in.
func freePrefix(ipPath string) (netip.Prefix, error) {
	out, err := exec.Command(ipPath, "-4", "-o", "addr", "show").Output()
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("standin: ip -4 -o addr show: %w", err)
	}
	used := map[netip.Prefix]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] != "inet" {
				continue
			}
			if p, err := netip.ParsePrefix(f[i+1]); err == nil {
				if q, err := p.Addr().Prefix(24); err == nil {
					used[q] = true
				}
			}
		}
	}
	for b := 18; b <= 19; b++ {
		for c := 0; c < 256; c++ {
			p := netip.PrefixFrom(netip.AddrFrom4([4]byte{198, byte(b), byte(c), 0}), 24)
			if !used[p] {
				return p, nil
			}
		}
	}
	return netip.Prefix{}, errors.New("standin: every /24 of 198.18.0.0/15 is in use")
}
