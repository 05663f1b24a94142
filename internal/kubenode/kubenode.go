package kubenode

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Addresses (RFC 2544 benchmarking space, never routed anywhere): node i
// (1-based) has 198.19.255.i and pod CIDR 198.18.i.0/24; the root
// namespace's end of the veth is 198.19.255.254; Services get
// 198.19.128.0/24 (no kube-proxy runs: no pod needs a Service).
const (
	nodeNet     = "198.19.255"
	hostIP      = nodeNet + ".254"
	serviceCIDR = "198.19.128.0/24"
	apiPort     = 6443
)

// NodeSpec is one kubelet: a Node of that name with those labels.
type NodeSpec struct {
	Name   string
	Labels map[string]string
}

// Options configure Start.
type Options struct {
	// Nodes are the kubelets (default one Node "node-1").
	Nodes []NodeSpec
	// BinDir holds etcd, kube-apiserver, kubelet, kube-scheduler and
	// kube-controller-manager (`make kube-bins kube-node-bins`).
	BinDir string
	// ImagesDir holds the OCI archives (*.tar) every node's containerd
	// imports and images.json naming them (`make images`); its "pause"
	// image is the sandbox image.
	ImagesDir string
	// LockWait is how long Start waits for another cluster on the
	// machine to finish (default 20 min).
	LockWait time.Duration
	// Logf hears one line per step (nil: discarded).
	Logf func(format string, args ...any)
}

// Node is a running kubelet's Node.
type Node struct {
	Name, IP, PodCIDR string
	// Socket is its containerd's socket (ctr --address).
	Socket string
	// KubeletRoot is its kubelet's --root-dir: CSI node plugins register
	// in its plugins_registry/ folder (the kubelet's plugin watcher).
	KubeletRoot string
}

// Cluster is a running cluster. Close tears it down.
type Cluster struct {
	// Kubeconfig is an admin (system:masters) kubeconfig file; the server
	// is https://198.19.255.1:6443, reached from the root namespace
	// through the veth.
	Kubeconfig string
	// Config is the same as a rest.Config.
	Config *rest.Config
	// Nodes are the kubelets' Nodes, all Ready when Start returns.
	Nodes []Node
	// Images maps each image's short name (images.json: "fiomig", "fio",
	// "pause") to its reference by tag, the form pods name it by here:
	// containerd 1.6's CRI plugin does not find an imported image by a
	// repository@digest reference (it tries to pull it).
	Images map[string]string
	// Digests maps the same names to images.json's tag@digest references.
	Digests map[string]string
	// Before is the machine's state before the cluster, for Leftovers.
	Before Snapshot

	opts      Options
	lockFile  *os.File
	ledger    *ledger
	mu        sync.Mutex
	closeOnce sync.Once
	closeErr  error
	closeDid  []string
	remaining []string
}

// Available says why a cluster cannot start here (nil when it can): not
// root, or a missing command, binary or image, each naming what installs
// it.
func Available(opts Options) error {
	if os.Geteuid() != 0 {
		return errors.New("kubenode: a real node needs root (network namespace, cgroups, mounts)")
	}
	for cmd, how := range map[string]string{"containerd": "make node-tools", "runc": "make node-tools", "ctr": "make node-tools",
		"nsenter": "util-linux", "ip": "make tools (iproute2)"} {
		if _, err := exec.LookPath(cmd); err != nil {
			return fmt.Errorf("kubenode: %s not found (%s)", cmd, how)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		return errors.New("kubenode: /usr/lib/cni/bridge not found (make node-tools: containernetworking-plugins)")
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(opts.BinDir, b)); err != nil {
			return fmt.Errorf("kubenode: %s not in %s (make kube-bins)", b, opts.BinDir)
		}
	}
	for _, b := range []string{"kubelet", "kube-scheduler", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(opts.BinDir, b)); err != nil {
			return fmt.Errorf("kubenode: %s not in %s (make kube-node-bins)", b, opts.BinDir)
		}
	}
	refs, err := readImages(opts.ImagesDir)
	if err != nil {
		return err
	}
	for _, n := range []string{"pause", "fiomig", "fio"} {
		if refs[n] == "" {
			return fmt.Errorf("kubenode: %s names no %s image (make images)", filepath.Join(opts.ImagesDir, "images.json"), n)
		}
		if _, err := os.Stat(filepath.Join(opts.ImagesDir, n+".tar")); err != nil {
			return fmt.Errorf("kubenode: %s.tar not in %s (make images)", n, opts.ImagesDir)
		}
	}
	return nil
}

func readImages(dir string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "images.json"))
	if err != nil {
		return nil, fmt.Errorf("kubenode: %w (make images)", err)
	}
	refs := map[string]string{}
	if err := json.Unmarshal(b, &refs); err != nil {
		return nil, fmt.Errorf("kubenode: %s: %w", filepath.Join(dir, "images.json"), err)
	}
	return refs, nil
}

func (o Options) withDefaults() Options {
	if len(o.Nodes) == 0 {
		o.Nodes = []NodeSpec{{Name: "node-1"}}
	}
	if o.LockWait == 0 {
		o.LockWait = 20 * time.Minute
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// Start takes the machine's cluster lock, removes what a killed cluster
// left (Janitor's sweep), and starts etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, and per node containerd (with
// the images imported) and kubelet, all in network namespace Netns; it
// returns when every Node is Ready and namespace default has its
// ServiceAccount. On any error everything started is torn down.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	opts = opts.withDefaults()
	if len(opts.Nodes) > 9 {
		return nil, fmt.Errorf("kubenode: %d nodes, at most 9", len(opts.Nodes))
	}
	if err := Available(opts); err != nil {
		return nil, err
	}
	refs, err := readImages(opts.ImagesDir)
	if err != nil {
		return nil, err
	}
	lf, err := lock(opts.LockWait, opts.Logf)
	if err != nil {
		return nil, err
	}
	c = &Cluster{opts: opts, lockFile: lf, Digests: refs, Images: map[string]string{}}
	for k, v := range refs {
		c.Images[k], _, _ = strings.Cut(v, "@")
	}
	defer func() {
		if err != nil {
			did, cerr := c.close()
			opts.Logf("kubenode: start failed; removed: %s", strings.Join(did, ", "))
			if cerr != nil {
				err = fmt.Errorf("%w (and tearing down: %v)", err, cerr)
			}
			c = nil
		}
	}()
	if did, err := sweep(false); err != nil {
		return c, fmt.Errorf("kubenode: removing what a killed cluster left: %w", err)
	} else if len(did) > 0 {
		opts.Logf("kubenode: removed what a killed cluster left: %s", strings.Join(did, ", "))
	}
	if c.Before, err = TakeSnapshot(); err != nil {
		return c, err
	}
	c.ledger = &ledger{Owner: os.Getpid(), OwnerStart: startTime(os.Getpid()), Started: time.Now(), Before: c.Before}
	if err := c.ledger.save(); err != nil {
		return c, err
	}
	for _, d := range []string{BaseDir, filepath.Join(BaseDir, "logs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return c, err
		}
	}
	t0 := time.Now()
	if err := c.network(); err != nil {
		return c, err
	}
	if err := c.controlPlane(ctx); err != nil {
		return c, err
	}
	opts.Logf("kubenode: control plane ready in %.1f s", time.Since(t0).Seconds())
	for i, spec := range opts.Nodes {
		if err := c.startNode(ctx, i+1, spec); err != nil {
			return c, err
		}
	}
	if err := c.waitReady(ctx); err != nil {
		return c, err
	}
	opts.Logf("kubenode: %d node(s) Ready %.1f s after start", len(c.Nodes), time.Since(t0).Seconds())
	return c, nil
}

// ip runs ip(8).
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubenode: ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// network makes Netns with the veth pair: the node side holds every
// node's IP, the root side hostIP.
func (c *Cluster) network() error {
	steps := [][]string{
		{"netns", "add", Netns},
		{"link", "add", hostVeth, "type", "veth", "peer", "name", nodeVeth, "netns", Netns},
		{"addr", "add", hostIP + "/24", "dev", hostVeth},
		{"link", "set", hostVeth, "up"},
		{"-n", Netns, "link", "set", "lo", "up"},
		{"-n", Netns, "link", "set", nodeVeth, "up"},
	}
	for i := range c.opts.Nodes {
		steps = append(steps, []string{"-n", Netns, "addr", "add", fmt.Sprintf("%s.%d/24", nodeNet, i+1), "dev", nodeVeth})
	}
	// No default route: pods reach other nodes' pod CIDRs through the
	// namespace itself (every bridge is in it), and nothing else.
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return err
		}
	}
	return nil
}

// spawn starts a daemon in Netns (nsenter --net: not `ip netns exec`,
// whose private mount namespace hides cgroup mounts from the kubelet),
// in its own process group, killed if this process dies (Pdeathsig),
// logging to logs/<name>.log; the ledger records it first.
func (c *Cluster) spawn(name string, args ...string) error {
	logf, err := os.Create(filepath.Join(BaseDir, "logs", name+".log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command("nsenter", append([]string{"--net=/run/netns/" + Netns, "--"}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = BaseDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("kubenode: start %s: %w", name, err)
	}
	c.mu.Lock()
	c.ledger.Procs = append(c.ledger.Procs, proc{Name: name, Pid: cmd.Process.Pid, Start: startTime(cmd.Process.Pid)})
	err = c.ledger.save()
	c.mu.Unlock()
	go cmd.Wait()
	return err
}

// Log is the last n lines of a daemon's log (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, containerd-<i>, kubelet-<i>).
func (c *Cluster) Log(name string, n int) string {
	b, err := os.ReadFile(filepath.Join(BaseDir, "logs", name+".log"))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (c *Cluster) controlPlane(ctx context.Context) error {
	bin := func(n string) string { return filepath.Join(c.opts.BinDir, n) }
	apiIP := nodeNet + ".1"
	p, err := newPKI(filepath.Join(BaseDir, "pki"), []net.IP{net.ParseIP(apiIP), net.ParseIP("198.19.128.1"), net.ParseIP(hostIP)})
	if err != nil {
		return err
	}
	admin, cm, sched := token(), token(), token()
	users := []tokenUser{
		{admin, "kubenode-admin", []string{"system:masters"}},
		{cm, "system:kube-controller-manager", nil},
		{sched, "system:kube-scheduler", nil},
	}
	kubeletTokens := map[string]string{}
	for _, n := range c.opts.Nodes {
		kubeletTokens[n.Name] = token()
		users = append(users, tokenUser{kubeletTokens[n.Name], "system:node:" + n.Name, []string{"system:nodes"}})
	}
	tokens := filepath.Join(BaseDir, "pki", "tokens.csv")
	if err := writeTokens(tokens, users); err != nil {
		return err
	}
	server := fmt.Sprintf("https://%s:%d", apiIP, apiPort)
	c.Kubeconfig = filepath.Join(BaseDir, "admin.kubeconfig")
	kcs := map[string][2]string{c.Kubeconfig: {"kubenode-admin", admin},
		filepath.Join(BaseDir, "controller-manager.kubeconfig"): {"system:kube-controller-manager", cm},
		filepath.Join(BaseDir, "scheduler.kubeconfig"):          {"system:kube-scheduler", sched}}
	for i, n := range c.opts.Nodes {
		kcs[filepath.Join(BaseDir, fmt.Sprintf("kubelet-%d.kubeconfig", i+1))] = [2]string{"system:node:" + n.Name, kubeletTokens[n.Name]}
	}
	for path, u := range kcs {
		if err := writeKubeconfig(path, server, p.caPEM, u[0], u[1]); err != nil {
			return err
		}
	}
	if err := c.spawn("etcd", bin("etcd"), "--data-dir", filepath.Join(BaseDir, "etcd"),
		"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", "default=http://127.0.0.1:2380", "--unsafe-no-fsync", "--log-level", "warn"); err != nil {
		return err
	}
	if err := c.spawn("kube-apiserver", bin("kube-apiserver"),
		"--etcd-servers", "http://127.0.0.1:2379", "--bind-address", "0.0.0.0", "--secure-port", fmt.Sprint(apiPort),
		"--advertise-address", apiIP, "--tls-cert-file", p.apiCert, "--tls-private-key-file", p.apiKey,
		"--token-auth-file", tokens, "--authorization-mode", "Node,RBAC", "--enable-admission-plugins", "NodeRestriction",
		"--allow-privileged=true", "--service-cluster-ip-range", serviceCIDR,
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", p.saPub,
		"--service-account-signing-key-file", p.saKey, "--kubelet-preferred-address-types", "InternalIP",
		"--cert-dir", filepath.Join(BaseDir, "apiserver-certs"), "--profiling=false", "--v=1"); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 100
	c.Config = cfg
	if err := c.waitHTTPS(ctx, server+"/readyz", p.caPEM, admin, 90*time.Second); err != nil {
		return fmt.Errorf("%w\nkube-apiserver log:\n%s\netcd log:\n%s", err, c.Log("kube-apiserver", 30), c.Log("etcd", 10))
	}
	if err := c.spawn("kube-controller-manager", bin("kube-controller-manager"),
		"--kubeconfig", filepath.Join(BaseDir, "controller-manager.kubeconfig"),
		"--authentication-kubeconfig", filepath.Join(BaseDir, "controller-manager.kubeconfig"),
		"--authorization-kubeconfig", filepath.Join(BaseDir, "controller-manager.kubeconfig"),
		"--service-account-private-key-file", p.saKey, "--root-ca-file", p.caCert, "--use-service-account-credentials=true",
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "10257",
		"--cluster-cidr", "198.18.0.0/16", "--service-cluster-ip-range", serviceCIDR,
		"--controllers", "*,-nodeipam", "--v=1"); err != nil {
		return err
	}
	return c.spawn("kube-scheduler", bin("kube-scheduler"),
		"--kubeconfig", filepath.Join(BaseDir, "scheduler.kubeconfig"),
		"--authentication-kubeconfig", filepath.Join(BaseDir, "scheduler.kubeconfig"),
		"--authorization-kubeconfig", filepath.Join(BaseDir, "scheduler.kubeconfig"),
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "10259", "--v=1")
}

// waitHTTPS polls url until it answers 200.
func (c *Cluster) waitHTTPS(ctx context.Context, url string, caPEM []byte, tok string, limit time.Duration) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := cl.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", url, resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
	return fmt.Errorf("kubenode: %s not ready after %v: %v", url, limit, last)
}

// startNode starts node i's containerd, imports the images into it, and
// starts its kubelet.
func (c *Cluster) startNode(ctx context.Context, i int, spec NodeSpec) error {
	d := newNodeDirs(BaseDir, i)
	for _, dir := range []string{d.dir, d.cniConf, d.ipam, d.kubeletRoot, d.podLogs, d.volumePlugins, d.certs} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	n := Node{Name: spec.Name, IP: fmt.Sprintf("%s.%d", nodeNet, i), PodCIDR: fmt.Sprintf("198.18.%d.0/24", i), Socket: d.socket,
		KubeletRoot: d.kubeletRoot}
	cni, err := cniConfig(fmt.Sprintf("%s%d", cniPrefix, i), fmt.Sprintf("fmkn-cni%d", i), n.PodCIDR, d.ipam)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d.cniConf, "10-bridge.conflist"), cni, 0o644); err != nil {
		return err
	}
	cfgPath := filepath.Join(d.dir, "containerd.toml")
	if err := os.WriteFile(cfgPath, []byte(containerdConfig(d, c.Images["pause"])), 0o644); err != nil {
		return err
	}
	if err := c.spawn(fmt.Sprintf("containerd-%d", i), "containerd", "--config", cfgPath); err != nil {
		return err
	}
	t0 := time.Now()
	var last error
	for time.Since(t0) < 60*time.Second {
		if last = exec.CommandContext(ctx, "ctr", "--address", d.socket, "version").Run(); last == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if last != nil {
		return fmt.Errorf("kubenode: containerd-%d not answering: %v\n%s", i, last, c.Log(fmt.Sprintf("containerd-%d", i), 20))
	}
	for _, name := range []string{"pause", "fiomig", "fio"} {
		out, err := exec.CommandContext(ctx, "ctr", "--address", d.socket, "-n", "k8s.io", "images", "import",
			filepath.Join(c.opts.ImagesDir, name+".tar")).CombinedOutput()
		if err != nil {
			return fmt.Errorf("kubenode: ctr images import %s.tar into containerd-%d: %w: %s", name, i, err, out)
		}
	}
	c.opts.Logf("kubenode: node %s: containerd up, images imported in %.1f s", spec.Name, time.Since(t0).Seconds())
	if err := makeCgroupRoot(d.cgroupRoot); err != nil {
		return err
	}
	kcfg, err := kubeletConfig(d, n.IP)
	if err != nil {
		return err
	}
	kcfgPath := filepath.Join(d.dir, "kubelet.yaml")
	if err := os.WriteFile(kcfgPath, kcfg, 0o644); err != nil {
		return err
	}
	var labels []string
	for k, v := range spec.Labels {
		labels = append(labels, k+"="+v)
	}
	args := []string{filepath.Join(c.opts.BinDir, "kubelet"), "--config", kcfgPath,
		"--kubeconfig", filepath.Join(BaseDir, fmt.Sprintf("kubelet-%d.kubeconfig", i)),
		"--root-dir", d.kubeletRoot, "--cert-dir", d.certs, "--hostname-override", spec.Name, "--node-ip", n.IP, "--v=1"}
	if len(labels) > 0 {
		args = append(args, "--node-labels", strings.Join(labels, ","))
	}
	if err := sharedMount(d.kubeletRoot); err != nil {
		return err
	}
	if err := c.spawn(fmt.Sprintf("kubelet-%d", i), args...); err != nil {
		return err
	}
	c.Nodes = append(c.Nodes, n)
	return nil
}

// sharedMount makes dir a shared bind mount of itself. The kubelet makes
// its --root-dir one at start when it is not (MakeRShared in its data-dir
// setup), while its pods API listener may already be creating its socket
// under that dir as a temporary file renamed into place: a rename that
// straddles the new mount fails with EXDEV ("failed to move temporary
// file to addr … invalid cross-device link") and the kubelet exits — seen
// once here in a cold CI run. Already shared, the kubelet mounts nothing.
// Teardown unmounts it with everything else under BaseDir.
func sharedMount(dir string) error {
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("kubenode: bind-mount %s onto itself: %w", dir, err)
	}
	if err := syscall.Mount("", dir, "", syscall.MS_SHARED|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("kubenode: make %s a shared mount: %w", dir, err)
	}
	return nil
}

// makeCgroupRoot makes a kubelet's cgroupRoot in every cgroup v1
// hierarchy (the kubelet refuses a root that is missing in any), with
// cpuset's cpus and mems copied from the parent (a cpuset without them
// takes no task).
func makeCgroupRoot(root string) error {
	hier, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return err
	}
	for _, h := range hier {
		if h.Name() == "unified" {
			continue
		}
		dir := filepath.Join("/sys/fs/cgroup", h.Name(), root)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("kubenode: cgroup %s: %w", dir, err)
		}
		if h.Name() == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpuset", f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					return fmt.Errorf("kubenode: %s: %w", filepath.Join(dir, f), err)
				}
			}
		}
	}
	return nil
}

// dead names a started daemon that is no longer running, with its log.
func (c *Cluster) dead() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.ledger.Procs {
		if !alive(p) {
			return fmt.Errorf("kubenode: %s (pid %d) exited:\n%s", p.Name, p.Pid, c.Log(p.Name, 20))
		}
	}
	return nil
}

// waitReady waits (up to 3 min) for every Node to be Ready and for the
// default ServiceAccount of namespace default (pods are refused before).
func (c *Cluster) waitReady(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(3 * time.Minute)
	var why string
	for time.Now().Before(deadline) {
		if err := c.dead(); err != nil {
			return err
		}
		why = ""
		for i, n := range c.Nodes {
			node, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				why = fmt.Sprintf("node %s: %v", n.Name, err)
				if apierrors.IsNotFound(err) {
					why += "\nkubelet log:\n" + c.Log(fmt.Sprintf("kubelet-%d", i+1), 15)
				}
				break
			}
			if !nodeReady(node) {
				why = fmt.Sprintf("node %s not Ready: %s", n.Name, readyMessage(node))
				break
			}
		}
		if why == "" {
			if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
				why = "ServiceAccount default/default: " + err.Error()
			}
		}
		if why == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("kubenode: not ready after 3 min: %s", why)
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func readyMessage(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Reason + ": " + c.Message
		}
	}
	return "no Ready condition yet"
}

// Close stops every process of the cluster (kubelets first, then the
// containers, shims, containerds, control plane), unmounts what is
// mounted under BaseDir, removes the pod and cluster network namespaces,
// restores the sysctls, removes the cgroups, links, CNI cache entries and
// BaseDir, and releases the lock. It is idempotent and returns what it
// removed.
func (c *Cluster) Close() ([]string, error) {
	c.closeOnce.Do(func() { c.closeDid, c.closeErr = c.close() })
	return c.closeDid, c.closeErr
}

func (c *Cluster) close() ([]string, error) {
	did, err := sweep(true)
	// Looked at while the lock is held: once it is released, the next
	// cluster on the machine (another test's) may start at once.
	c.remaining = Leftovers(c.Before)
	if c.lockFile != nil {
		c.lockFile.Close()
	}
	return did, err
}

// Remaining is what Leftovers found of the cluster right after Close
// removed it, before Close released the machine's cluster lock (after
// that another cluster may run): empty when nothing was left.
func (c *Cluster) Remaining() []string { return c.remaining }
