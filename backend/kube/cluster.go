package kube

import (
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
	// Namespace is where the run's objects go (default "fiomig"); the agent
	// DaemonSet runs there too.
	Namespace string
	// StorageNamespace is simplyblock's namespace (default "simplyblock"):
	// StorageNodeSets, SPDK pods, the control-plane pod.
	StorageNamespace string
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
	// FioImage runs fio (default alpine:3, which installs fio with apk when
	// it is missing); HelperImage is an image holding the fiomig binary as
	// its entry point (log sidecar, nft helper).
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
	cfg    Config
	ctx    context.Context
	rest   *rest.Config
	kc     klient.Client
	cs     *kubernetes.Clientset
	dyn    dynamic.Interface
	http   *http.Client
	start  time.Time
	rng    *rand.Rand
	nodes  []storageNode
	hosts  []*host
	vols   []*volume
	cpPod  string // control-plane pod in StorageNamespace, for endpoints
	undo   []undo // cleanups, in creation order
	closed bool

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

type storageNode struct {
	Name, UUID, IP string
	Port           int // nvmfPort
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
		// registers global flags (research/kube.md §5).
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

func (c *Cluster) res(ns string) *resources.Resources { return c.kc.Resources(ns) }

func (c *Cluster) setup(ctx context.Context) error {
	ns := c.cfg.Namespace
	if err := c.createLease(ctx); err != nil {
		return err
	}
	if err := c.discoverNodes(ctx); err != nil {
		return err
	}
	if err := c.discoverHosts(ctx); err != nil {
		return err
	}
	c.progressf("kube: run %s in namespace %s: %d storage nodes, %d consumer hosts", c.cfg.RunID, ns, len(c.nodes), len(c.hosts))
	if err := c.createWorkload(ctx); err != nil {
		return err
	}
	if err := c.resolveVolumes(ctx); err != nil {
		return err
	}
	if err := c.findControlPlane(ctx); err != nil {
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
		hs, err := nvmeof.ReadHost(h.Sysfs(), h.nqn)
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

// discoverNodes reads the healthy storage nodes of every StorageNodeSet.
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
				continue
			}
			sn := storageNode{Name: str(m["hostname"]), UUID: str(m["uuid"]), IP: str(m["mgmtIp"])}
			sn.Port, _ = strconv.Atoi(fmt.Sprint(m["nvmfPort"]))
			if sn.Name == "" || sn.UUID == "" || sn.IP == "" {
				return fmt.Errorf("kube: StorageNodeSet %s/%s: node status %v lacks hostname, uuid or mgmtIp", set.GetNamespace(), set.GetName(), m)
			}
			c.nodes = append(c.nodes, sn)
		}
	}
	sort.Slice(c.nodes, func(i, j int) bool { return c.nodes[i].Name < c.nodes[j].Name })
	if len(c.nodes) < 2 {
		return fmt.Errorf("kube: %d healthy storage nodes in the StorageNodeSets of namespace %s; a migration needs at least 2", len(c.nodes), c.cfg.StorageNamespace)
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
		h := &host{c: c, name: n.Name, pod: pod}
		info, err := h.info(ctx)
		if err != nil {
			return err
		}
		if info.HostNQN == "" {
			return fmt.Errorf("kube: the agent %s on %s knows no hostnqn: start it with --hostnqn or --hostnqn-file", pod, n.Name)
		}
		h.nqn = info.HostNQN
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
// endpoints (one pod-proxy GET per volume).
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
	for i := len(c.undo) - 1; i >= 0; i-- {
		u := c.undo[i]
		if err := u.fn(ctx); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove %s: %w", u.what, err))
		}
	}
	c.undo = nil
	return errors.Join(errs...)
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
