package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/fiomig/fiomig/backend"
	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// Config is one run on a Kubernetes cluster.
type Config struct {
	// Kubeconfig is the kubeconfig file; ignored when REST is set.
	Kubeconfig string
	// REST, when set, is used instead of Kubeconfig (tests: an
	// impersonated config of internal/kubetest).
	REST *rest.Config
	// Namespace is where the run's PVCs, fio pods, helper pods, ConfigMap
	// and Lease go (default "fiomig"); the agent DaemonSet runs there too.
	Namespace string
	// StorageNamespace is the StorageCluster's namespace (default
	// "simplyblock"): its StorageNodeSets, and the run's VolumeMigrations
	// and the operator's Jobs for them. The operator fails a
	// VolumeMigration whose own namespace holds no StorageCluster with the
	// PV's cluster UUID, and creates its Jobs there (simplyblock-operator
	// volumemigration_controller.go reconcileStart, resolveRebalancerImage,
	// migrationPathJob).
	StorageNamespace string
	// ControlPlaneNamespace holds the control-plane (webappapi) pods, the
	// operator chart's release namespace (default StorageNamespace).
	ControlPlaneNamespace string
	// SPDKNamespace holds the storage nodes' SPDK pods, whatever namespace
	// simplyblock's node API was given (default StorageNamespace).
	SPDKNamespace string
	// ClusterSecret is the control plane's credential as the user gave it:
	// the bare cluster secret or simplyblock's secret.json (ClusterSecret
	// picks the cluster's). Required (ErrNoSecret); never printed.
	ClusterSecret []byte
	// StorageClass is the class of the volumes' PVCs. Required.
	StorageClass string
	// RunID labels every object (default NewRunID).
	RunID string
	// Seed fixes the migration targets chosen.
	Seed int64
	// Volumes is the number of volumes (PVC + fio pod each). Default 3.
	Volumes int
	// VolumeSize is each PVC's request (default "1Gi").
	VolumeSize string
	// FioRuntime bounds each fio job (default 24 h: fio runs until StopFio).
	FioRuntime time.Duration
	// FioImage runs fio (default ghcr.io/fiomig/fio:3.33-3, which `make
	// images` builds from Debian's fio; an image without fio installs it
	// with apk at start); HelperImage is an image holding the fiomig binary
	// as its entry point (log sidecar, nft helper; default
	// ghcr.io/fiomig/fiomig:latest, which `make images` also tags).
	FioImage, HelperImage string
	// SetupTimeout bounds waiting for PVCs, pods and agents (default 5 min).
	SetupTimeout time.Duration
	// Progress receives one line per setup stage; nil = silent.
	Progress io.Writer
}

// ErrUnreachable wraps every error of New that means the API server could
// not be reached or refused the credentials (fiomig run exits 2 on it).
var ErrUnreachable = errors.New("no reachable Kubernetes cluster")

// Cluster is a run on a real Kubernetes cluster; it implements
// backend.Cluster and the fault knobs of faults/hooks.go
// (TargetRestarter, ConnectDropper, MigrationAborter). Time is monotonic
// wall seconds since the end of setup (New). Driven by one goroutine
// (the scenario), except the migration watch, which feeds it.
type Cluster struct {
	cfg     Config
	ctx     context.Context
	rest    *rest.Config
	kc      klient.Client
	cs      *kubernetes.Clientset
	dyn     dynamic.Interface
	http    *http.Client
	start   time.Time
	rng     *rand.Rand
	nodes   []storageNode
	hosts   []*host
	vols    []*volume
	cp      *controlPlane
	resMu   sync.Mutex
	resByNS map[string]*resources.Resources
	// clusterUUID is the StorageClass's cluster_id (the StorageCluster's
	// status.uuid, the first field of every volume handle).
	clusterUUID string
	undo        []undo // cleanups, in creation order
	closed      bool

	endpoints     map[string][]string // nqn -> canonical ip:port, sorted
	endpointsRead time.Time
	stepStart     float64 // Now when the current AdvanceTo began

	migMu      sync.Mutex
	migs       map[string]*migration // by object name
	lastTarget map[string]string     // nqn -> target IP of its last Completed migration
	pending    []record.Line         // phase lines seen by the watch, not yet returned
	watchFn    context.CancelFunc
	migN       int

	leaseRenewed time.Time
	drops        map[string]*drop // fault target -> helper pod
}

// storageNode is one online storage node: from its StorageNodeSet status
// (hostname, uuid, mgmtIp, lvolPort, nvmfPort) and the control plane (its
// data-NIC addresses).
type storageNode struct {
	Name, UUID string
	// IP is the first data-NIC address (what hosts connect to), IPs all;
	// MgmtIP the management address, never an NVMe/TCP endpoint.
	IP     string
	IPs    []string
	MgmtIP string
	// LvolPort is the port of the node's own lvstore, the port hosts
	// connect to (sbcli lvol_controller.py: get_lvol_subsys_port);
	// NvmfPort the inter-node device port (sbcli storage_node_ops.py),
	// never a host's.
	LvolPort, NvmfPort int
}

type volume struct {
	Name, PVC, Pod, Host, PV string
	Cluster, Pool, UUID      string // from the PV's CSI volume handle
	NQN                      string
	NSIDs                    []int // from the consumer host's kernel
}

type migration struct {
	Name, NQN, Phase string
	UID              string
	Terminal         bool
	created          time.Time
	source, target   []string // endpoints (canonical ip:port, sorted)
	endpointsSaid    bool     // a phase line named them
	targetIP         string
}

type undo struct {
	what string
	fn   func(ctx context.Context) error
}

var _ backend.Cluster = (*Cluster)(nil)

func (c *Config) defaults() {
	if c.Namespace == "" {
		c.Namespace = defaultNamespace
	}
	if c.StorageNamespace == "" {
		c.StorageNamespace = defaultStorageNS
	}
	if c.ControlPlaneNamespace == "" {
		c.ControlPlaneNamespace = c.StorageNamespace
	}
	if c.SPDKNamespace == "" {
		c.SPDKNamespace = c.StorageNamespace
	}
	if c.Volumes <= 0 {
		c.Volumes = 3
	}
	if c.VolumeSize == "" {
		c.VolumeSize = defaultVolumeSize
	}
	if c.FioRuntime <= 0 {
		// fio runs until StopFio deletes its pod.
		c.FioRuntime = 24 * time.Hour
	}
	if c.FioImage == "" {
		c.FioImage = defaultFioImage
	}
	if c.HelperImage == "" {
		c.HelperImage = defaultHelperImage
	}
	if c.SetupTimeout <= 0 {
		c.SetupTimeout = defaultSetupTimeout
	}
	if c.RunID == "" {
		c.RunID = NewRunID(time.Now())
	}
}

// Connect builds the clients of cfg and checks that the API server answers
// (GET /version within 10 s). Its errors wrap ErrUnreachable.
func Connect(ctx context.Context, cfg Config) (*rest.Config, klient.Client, error) {
	var kc klient.Client
	var err error
	if cfg.REST != nil {
		kc, err = klient.New(cfg.REST)
	} else {
		if cfg.Kubeconfig == "" {
			return nil, nil, fmt.Errorf("%w: no kubeconfig given", ErrUnreachable)
		}
		// envconf.NewWithKubeConfig, never env.NewFromFlags: that one
		// registers global flags (docs/sources.md §10.4).
		kc, err = envconf.NewWithKubeConfig(cfg.Kubeconfig).NewClient()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	rc := rest.CopyConfig(kc.RESTConfig())
	rc.QPS, rc.Burst = 50, 100
	probe := rest.CopyConfig(rc)
	probe.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(probe)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		return nil, nil, fmt.Errorf("%w at %s: %v", ErrUnreachable, rc.Host, err)
	}
	return rc, kc, nil
}

// New connects to the cluster, discovers its storage nodes, consumer
// hosts and agents, creates one PVC and one fio pod per volume (each
// labelled with the run id, its cleanup registered right after it was
// created), waits for them, and starts the run clock. On error everything
// it created is removed again. Errors name the object and what was missing.
func New(ctx context.Context, cfg Config) (*Cluster, error) {
	cfg.defaults()
	if cfg.StorageClass == "" {
		return nil, errors.New("kube: no StorageClass given (--storage-class)")
	}
	if len(bytes.TrimSpace(cfg.ClusterSecret)) == 0 {
		return nil, ErrNoSecret
	}
	rc, kc, err := Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, ctx: ctx, rest: rc, kc: kc, migs: map[string]*migration{}, lastTarget: map[string]string{},
		endpoints: map[string][]string{}, drops: map[string]*drop{},
		rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6b756265))}
	if c.cs, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, err
	}
	if c.dyn, err = dynamic.NewForConfig(rc); err != nil {
		return nil, err
	}
	if c.http, err = rest.HTTPClientFor(rc); err != nil {
		return nil, err
	}
	c.cp = &controlPlane{rest: rc, cs: c.cs, ns: cfg.ControlPlaneNamespace}
	c.start = time.Now()
	if err := c.setup(ctx); err != nil {
		cerr := c.Close()
		return nil, errors.Join(err, cerr)
	}
	c.start = time.Now()
	return c, nil
}

// RunID is the run's id (the value of every object's fiomig.io/run label).
func (c *Cluster) RunID() string { return c.cfg.RunID }

// Namespace is the run's namespace.
func (c *Cluster) Namespace() string { return c.cfg.Namespace }

func (c *Cluster) progressf(format string, a ...any) {
	if c.cfg.Progress != nil {
		fmt.Fprintf(c.cfg.Progress, format+"\n", a...)
	}
}

// register records a cleanup right after its object was created.
func (c *Cluster) register(what string, fn func(ctx context.Context) error) {
	c.undo = append(c.undo, undo{what, fn})
}

// res is the Resources of namespace ns ("" for cluster-scoped objects),
// one per namespace: klient's Client.Resources hands out one shared value
// whose namespace each call overwrites, so a value kept (a registered
// cleanup, a List) would act in whatever namespace the last call named.
func (c *Cluster) res(ns string) *resources.Resources {
	c.resMu.Lock()
	defer c.resMu.Unlock()
	if r, ok := c.resByNS[ns]; ok {
		return r
	}
	r, err := resources.New(c.rest)
	if err != nil {
		// New only fails for a config klient.New already accepted.
		panic(fmt.Sprintf("kube: resources for namespace %q: %v", ns, err))
	}
	r.WithNamespace(ns)
	if c.resByNS == nil {
		c.resByNS = map[string]*resources.Resources{}
	}
	c.resByNS[ns] = r
	return r
}

func (c *Cluster) setup(ctx context.Context) error {
	ns := c.cfg.Namespace
	// What needs no object of the run first: a wrong namespace or secret
	// ends the run before anything is created.
	if err := c.findStorageCluster(ctx); err != nil {
		return err
	}
	secret, err := ClusterSecret(c.cfg.ClusterSecret, c.clusterUUID)
	if err != nil {
		return fmt.Errorf("kube: %w", err)
	}
	c.cp.secret = secret
	if err := c.discoverNodes(ctx); err != nil {
		return err
	}
	if err := c.discoverHosts(ctx); err != nil {
		return err
	}
	if err := c.createLease(ctx); err != nil {
		return err
	}
	c.progressf("kube: run %s in namespace %s: %d storage nodes, %d consumer hosts", c.cfg.RunID, ns, len(c.nodes), len(c.hosts))
	if err := c.createWorkload(ctx); err != nil {
		return err
	}
	if err := c.resolveVolumes(ctx); err != nil {
		return err
	}
	for _, v := range c.vols {
		eps, err := c.fetchEndpoints(ctx, v)
		if err != nil {
			return err
		}
		c.endpoints[v.NQN] = eps
		if err := c.readNSIDs(v); err != nil {
			return err
		}
	}
	return c.startWatch()
}

// readNSIDs reads the volume's namespaces (NSIDs) from its consumer host:
// the subsystem's namespaces as the host's kernel shows them (the NSID is
// the control plane's, not always 1).
func (c *Cluster) readNSIDs(v *volume) error {
	for _, h := range c.hosts {
		if h.name != v.Host {
			continue
		}
		hs, err := nvmeof.ReadHost(h.Sysfs(), "")
		if err != nil {
			return fmt.Errorf("kube: read host %s: %w", h.name, err)
		}
		for _, sub := range hs.Subsystems {
			if sub.NQN != v.NQN {
				continue
			}
			for _, ns := range sub.Namespaces {
				if !slices.Contains(v.NSIDs, ns.NSID) {
					v.NSIDs = append(v.NSIDs, ns.NSID)
				}
			}
		}
	}
	slices.Sort(v.NSIDs)
	if len(v.NSIDs) == 0 {
		return fmt.Errorf("kube: consumer host %s shows no namespace of subsystem %s (volume %s, pod %s): is the volume attached?", v.Host, v.NQN, v.Name, v.Pod)
	}
	return nil
}

// findStorageCluster reads the StorageClass's cluster_id and checks that a
// StorageCluster with that status.uuid lives in StorageNamespace, where the
// run's VolumeMigrations go (the operator fails them anywhere else:
// simplyblock-operator volumemigration_controller.go resolveRebalancerImage
// lists StorageClusters InNamespace(vm.Namespace)), with volume migration
// not disabled.
func (c *Cluster) findStorageCluster(ctx context.Context) error {
	sc, err := c.cs.StorageV1().StorageClasses().Get(ctx, c.cfg.StorageClass, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("kube: get StorageClass %s: %w", c.cfg.StorageClass, err)
	}
	c.clusterUUID = sc.Parameters["cluster_id"]
	if c.clusterUUID == "" {
		return fmt.Errorf("kube: StorageClass %s has no parameter cluster_id: is it one of simplyblock's (provisioner %s)?", c.cfg.StorageClass, csiDriver)
	}
	ns := c.cfg.StorageNamespace
	list, err := c.dyn.Resource(GVRStorageCluster).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("kube: list StorageClusters in namespace %s: %w", ns, err)
	}
	for _, u := range list.Items {
		if id, _, _ := unstructured.NestedString(u.Object, "status", "uuid"); id != c.clusterUUID {
			continue
		}
		if on, found, _ := unstructured.NestedBool(u.Object, "spec", "volumeMigrationSettings", "enabled"); found && !on {
			return fmt.Errorf("kube: StorageCluster %s/%s (cluster %s) has volumeMigrationSettings.enabled false: the operator fails every VolumeMigration", ns, u.GetName(), c.clusterUUID)
		}
		return nil
	}
	return fmt.Errorf("kube: no StorageCluster with status.uuid %s (StorageClass %s's cluster_id) in namespace %s: the operator fails a VolumeMigration outside its StorageCluster's namespace; give that namespace as --storage-namespace (kubectl get storageclusters -A -o custom-columns=NAMESPACE:.metadata.namespace,UUID:.status.uuid)",
		c.clusterUUID, c.cfg.StorageClass, ns)
}

// discoverNodes reads the healthy storage nodes of every StorageNodeSet
// and, from the control plane, their data-NIC addresses.
func (c *Cluster) discoverNodes(ctx context.Context) error {
	list, err := c.dyn.Resource(GVRStorageNodeSet).Namespace(c.cfg.StorageNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("kube: list StorageNodeSets in namespace %s: %w", c.cfg.StorageNamespace, err)
	}
	for _, set := range list.Items {
		nodes, _, _ := unstructured.NestedSlice(set.Object, "status", "nodes")
		for _, n := range nodes {
			m, ok := n.(map[string]any)
			if !ok {
				continue
			}
			health, _ := m["health"].(bool)
			status, _ := m["status"].(string)
			if !health || status != "online" {
				// The operator's placeholder entry of a node in creation
				// has neither uuid nor health (simplyblock-operator
				// simplyblockstoragenodeset_controller.go).
				continue
			}
			sn := storageNode{Name: str(m["hostname"]), UUID: str(m["uuid"]), MgmtIP: str(m["mgmtIp"])}
			sn.LvolPort, _ = strconv.Atoi(str(m["lvolPort"]))
			sn.NvmfPort, _ = strconv.Atoi(str(m["nvmfPort"]))
			if sn.Name == "" || sn.UUID == "" || sn.LvolPort <= 0 {
				return fmt.Errorf("kube: StorageNodeSet %s/%s: online node status %v lacks hostname, uuid or lvolPort", set.GetNamespace(), set.GetName(), m)
			}
			c.nodes = append(c.nodes, sn)
		}
	}
	sort.Slice(c.nodes, func(i, j int) bool { return c.nodes[i].Name < c.nodes[j].Name })
	if len(c.nodes) < 2 {
		return fmt.Errorf("kube: %d healthy storage nodes in the StorageNodeSets of namespace %s; a migration needs at least 2", len(c.nodes), c.cfg.StorageNamespace)
	}
	for i := range c.nodes {
		ips, err := c.fetchDataIPs(ctx, c.nodes[i])
		if err != nil {
			return err
		}
		c.nodes[i].IPs, c.nodes[i].IP = ips, ips[0]
	}
	return nil
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// discoverHosts reads the consumer Nodes and their agents' hostnqn.
func (c *Cluster) discoverHosts(ctx context.Context) error {
	var nodes corev1.NodeList
	if err := c.res("").List(ctx, &nodes, resources.WithLabelSelector(LabelConsumer+"=true")); err != nil {
		return fmt.Errorf("kube: list Nodes labelled %s=true: %w", LabelConsumer, err)
	}
	if len(nodes.Items) == 0 {
		return fmt.Errorf("kube: no Node is labelled %s=true (label the consumer hosts: kubectl label node NAME %s=true)", LabelConsumer, LabelConsumer)
	}
	var pods corev1.PodList
	if err := c.res(c.cfg.Namespace).List(ctx, &pods, resources.WithLabelSelector(LabelAgent+"="+AgentName)); err != nil {
		return fmt.Errorf("kube: list agent pods in namespace %s: %w", c.cfg.Namespace, err)
	}
	agents := map[string]string{}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			agents[p.Spec.NodeName] = p.Name
		}
	}
	for _, n := range nodes.Items {
		pod, ok := agents[n.Name]
		if !ok {
			return fmt.Errorf("kube: consumer host %s has no Running fiomig agent pod (label %s=%s) in namespace %s: apply deploy/agent/", n.Name, LabelAgent, AgentName, c.cfg.Namespace)
		}
		h := &host{c: c, name: n.Name, pod: pod, uid: string(n.UID)}
		info, err := h.info(ctx)
		if err != nil {
			return err
		}
		if info.HostNQN == "" {
			return fmt.Errorf("kube: the agent %s on %s cannot tell this host's NVMe identity (source %s)", pod, n.Name, info.Source)
		}
		h.nqn, h.source = info.HostNQN, info.Source
		c.progressf("kube: consumer host %s: host NQN %s (from %s)", n.Name, h.nqn, h.source)
		c.hosts = append(c.hosts, h)
	}
	sort.Slice(c.hosts, func(i, j int) bool { return c.hosts[i].name < c.hosts[j].name })
	return nil
}

// Name implements backend.Cluster.
func (c *Cluster) Name() string { return "kube" }

// Now implements backend.Cluster: monotonic wall seconds since setup ended.
func (c *Cluster) Now() float64 { return time.Since(c.start).Seconds() }

// AdvanceTo implements backend.Cluster: it waits until t (wall time), then
// returns what changed on the way: the phase lines the migration watch
// saw (each stamped when the harness received it) and an endpoints line
// for every volume whose published endpoints changed (read at most every
// EndpointsInterval).
// The run's Lease is renewed every 10 s.
func (c *Cluster) AdvanceTo(t float64) ([]record.Line, error) {
	c.stepStart = c.Now()
	if d := t - c.Now(); d > 0 {
		tm := time.NewTimer(time.Duration(d * float64(time.Second)))
		select {
		case <-c.ctx.Done():
			tm.Stop()
			return nil, c.ctx.Err()
		case <-tm.C:
		}
	}
	if err := c.ctx.Err(); err != nil {
		return nil, err
	}
	var out []record.Line
	c.migMu.Lock()
	// A phase line that arrived while the previous step's hosts were being
	// sampled is stamped at this step (the timeline is append-only, and
	// those samples are already written at later times); the time it
	// arrived is kept in details.seen_s.
	for _, l := range c.pending {
		if l.T < c.stepStart {
			l.Details = map[string]string{"seen_s": record.FormatT(l.T)}
			l.T = c.stepStart
		}
		out = append(out, l)
	}
	c.pending = nil
	c.migMu.Unlock()
	for _, v := range c.vols {
		if time.Since(c.endpointsRead) < EndpointsInterval {
			break
		}
		eps, err := c.fetchEndpoints(c.ctx, v)
		if err != nil {
			return out, err
		}
		if !slices.Equal(eps, c.endpoints[v.NQN]) {
			c.endpoints[v.NQN] = eps
			out = append(out, record.Line{T: c.Now(), Kind: record.KindEndpoints, NQN: v.NQN, Endpoints: eps})
		}
	}
	if time.Since(c.endpointsRead) >= EndpointsInterval {
		c.endpointsRead = time.Now()
	}
	if err := c.checkTimeouts(); err != nil {
		return out, err
	}
	if time.Since(c.leaseRenewed) > 10*time.Second {
		if err := c.renewLease(c.ctx); err != nil {
			return out, err
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].T < out[j].T })
	return out, nil
}

// EndpointsInterval is how often AdvanceTo re-reads the published
// endpoints (one control-plane GET per volume).
var EndpointsInterval = time.Second

// Topology implements backend.Cluster.
func (c *Cluster) Topology() record.Topology {
	var t record.Topology
	for _, n := range c.nodes {
		t.Nodes = append(t.Nodes, record.Node{Name: n.Name, IP: n.IP})
	}
	for _, h := range c.hosts {
		t.Hosts = append(t.Hosts, record.HostInfo{Name: h.name, HostNQN: h.nqn})
	}
	for _, v := range c.vols {
		t.Volumes = append(t.Volumes, record.VolumeInfo{Name: v.Name, NQN: v.NQN, NSIDs: slices.Clone(v.NSIDs), Consumers: []string{v.Host}})
	}
	return t
}

// Hosts implements backend.Cluster.
func (c *Cluster) Hosts() []backend.Host {
	out := make([]backend.Host, len(c.hosts))
	for i, h := range c.hosts {
		out[i] = h
	}
	return out
}

// Endpoints implements backend.Cluster: the endpoints last read from the
// control plane (at setup and at every AdvanceTo).
func (c *Cluster) Endpoints(nqn string) []string { return slices.Clone(c.endpoints[nqn]) }

// canonical turns ip and port into the canonical ip:port.
func canonical(ip string, port int) (string, error) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return "", err
	}
	return netip.AddrPortFrom(a, uint16(port)).String(), nil
}

// Close implements backend.Cluster: it stops the watch and removes every
// object the run created, newest first, waiting (up to 2 min) until they
// are gone. It works after the run's context was cancelled (SIGINT) and is
// idempotent. Errors name the objects that could not be removed.
func (c *Cluster) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	if c.watchFn != nil {
		c.watchFn()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), 2*time.Minute)
	defer cancel()
	var errs []error
	// Every fio pod's deletion first, at once: each takes its grace period
	// (fio writes its files, the logs sidecar lingers), which one by one
	// would outlast the timeout.
	if err := c.StopFio(ctx); err != nil {
		errs = append(errs, err)
	}
	for i := len(c.undo) - 1; i >= 0; i-- {
		u := c.undo[i]
		if err := u.fn(ctx); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove %s: %w", u.what, err))
		}
	}
	c.undo = nil
	if c.cp != nil {
		c.cp.close()
	}
	return errors.Join(errs...)
}

// host is the consumer host named name (nil if none).
func (c *Cluster) host(name string) *host {
	for _, h := range c.hosts {
		if h.name == name {
			return h
		}
	}
	return nil
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
