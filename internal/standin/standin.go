package standin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/fiomig/fiomig/backend/kube/agent"
	bsim "github.com/fiomig/fiomig/backend/sim"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/sim"
)

// Names and labels the stand-in uses (a real simplyblock cluster's where
// docs/sources.md §10.1 gives them).
const (
	// Provisioner is simplyblock's CSI driver and provisioner name.
	Provisioner = "csi.simplyblock.io"
	// StorageNodeSetName is the StorageNodeSet the stand-in maintains.
	StorageNodeSetName = "simplyblock-node"
	// ClusterName is the simulated StorageCluster's name.
	ClusterName = "simplyblock-cluster"
	// PoolUUID is the simulated pool's id (second field of a volume handle).
	PoolUUID = "7d2b9c40-1f6e-4a3b-8c5d-2e4f6a8b0c1d"
	// WebAPIPort is the control plane's REST port (simplyblock-webappapi).
	WebAPIPort = 5000
	// RPCPortBase is the first storage node's rpcPort (an assumption: the
	// stand-in numbers them RPCPortBase+i; real ones are set per node).
	RPCPortBase = 5260
	// NvmfPortBase is the first storage node's nvmfPort, the inter-node
	// device port (sbcli storage_node_ops.py), numbered NvmfPortBase+i: a
	// stand-in choice that differs from every lvstore port, as on a real
	// cluster, so that a harness taking it for the hosts' port is caught.
	NvmfPortBase = 4420
	// KubeletPort is where the stand-in's kubelet serves the API server's
	// streaming requests (port-forward) on each Node's InternalIP, the
	// kubelet's default port.
	KubeletPort = 10250
	// StorageClusterName is the StorageCluster the stand-in creates.
	StorageClusterName = ClusterName
	// CSISecretName is the Secret holding simplyblock's secret.json
	// (simplyblock-operator csi-driver/pkg/util/initiator.go).
	CSISecretName = "simplyblock-csi-secret-v2"
)

// Label keys and values the stand-in reads or writes.
const (
	LabelHostname    = "kubernetes.io/hostname"
	LabelConsumer    = "fiomig.io/consumer"
	LabelNodeSet     = "io.simplyblock.storagenodeset"
	LabelRole        = "role"
	RoleStorageNode  = "simplyblock-storage-node"
	LabelApp         = "app"
	AppWebAPI        = "simplyblock-webappapi"
	LabelAgent       = "app.kubernetes.io/name"
	AgentName        = "fiomig-agent"
	LabelFiomigRole  = "fiomig.io/role"
	RoleNFTHelper    = "nft-helper"
	AnnotationNFTIP  = "fiomig.io/nft-ip"
	AnnotationNFTPrt = "fiomig.io/nft-port"
	AnnotationNFTTbl = "fiomig.io/nft-table"
)

// VolumeMigrationGVR is the VolumeMigration resource (deploy/crds/).
var VolumeMigrationGVR = schema.GroupVersionResource{Group: "storage.simplyblock.io", Version: "v1alpha1", Resource: "volumemigrations"}

// StorageNodeSetGVR is the StorageNodeSet resource (deploy/crds/).
var StorageNodeSetGVR = schema.GroupVersionResource{Group: "storage.simplyblock.io", Version: "v1alpha1", Resource: "storagenodesets"}

// StorageClusterGVR is the StorageCluster resource (deploy/crds/).
var StorageClusterGVR = schema.GroupVersionResource{Group: "storage.simplyblock.io", Version: "v1alpha1", Resource: "storageclusters"}

// Config is the stand-in's world and its knobs.
type Config struct {
	// Rest is an admin client config for the API server (kubetest.Env.Config).
	Rest *rest.Config
	// Seed fixes the simulated world's random choices.
	Seed int64
	// Volumes is the number of simulated volumes (default 6): volume i is
	// attached to host i mod 3, so a PVC binds only while a volume of the
	// pod's host is unclaimed.
	Volumes int
	// Operator is the simulated operator variant, "fixed" (default) or "prefix".
	Operator string
	// StorageNamespace is where the StorageNodeSet, SPDK pods and control
	// plane pod live (default "simplyblock").
	StorageNamespace string
	// StorageClass is the name of the StorageClass the stand-in's
	// provisioner serves (default "simplyblock-standin").
	StorageClass string
	// TargetRestartS is how long a deleted SPDK pod's target stays down
	// before the replacement pod runs and the target is back (default 2 s;
	// a stand-in choice, no source gives the real figure).
	TargetRestartS float64
	// Tune adjusts the simulator's configuration last.
	Tune func(*sim.Config)
	// ClusterSecret is the simulated cluster's secret, the bearer every
	// control-plane route needs (default DefaultClusterSecret).
	ClusterSecret string
	// AllowedHosts gives every volume allowed hosts, its consumers' CSI
	// host NQNs, as a DHCHAP pool's volumes have: the control plane then
	// hands out connect strings only with host_nqn.
	AllowedHosts bool
	// Logf receives one line per thing the stand-in does (nil: discarded).
	Logf func(format string, args ...any)
	// Real, when set, runs the stand-in beside real kubelets (see Real):
	// it then plays no kubelet, scheduler or controller, and makes no
	// network namespace of its own.
	Real *Real
}

// DefaultClusterSecret is the simulated cluster's secret unless
// Config.ClusterSecret says otherwise; tests grep outputs for it.
const DefaultClusterSecret = "fiomig-standin-cluster-secret-6d1f0c2b9e"

func (c Config) withDefaults() Config {
	if c.Volumes == 0 {
		c.Volumes = 6
	}
	if c.StorageNamespace == "" {
		c.StorageNamespace = "simplyblock"
	}
	if c.StorageClass == "" {
		c.StorageClass = "simplyblock-standin"
	}
	if c.TargetRestartS == 0 {
		c.TargetRestartS = 2
	}
	if c.ClusterSecret == "" {
		c.ClusterSecret = DefaultClusterSecret
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return c
}

// StandIn is the running stand-in. Its world runs on the wall clock.
type StandIn struct {
	cfg   Config
	cs    kubernetes.Interface
	dyn   dynamic.Interface
	netns *Netns
	// real is set beside real kubelets (Config.Real).
	real *realState
	// addrs maps each simulated node's address to its data address (empty
	// when they are the same: no real kubelets).
	addrs map[string]string

	// mu guards w (the world is driven by one goroutine at a time).
	mu    sync.Mutex
	w     *sim.World
	clock *bsim.WallClock

	nodes []*node // index = sim node index

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	factory  informers.SharedInformerFactory
	dfactory dynamicinformer.DynamicSharedInformerFactory
	podInf   cache.SharedIndexInformer
	pvcInf   cache.SharedIndexInformer
	pvInf    cache.SharedIndexInformer
	dsInf    cache.SharedIndexInformer
	vmInf    cache.SharedIndexInformer
	scInf    cache.SharedIndexInformer

	// kubelets serve the API server's port-forward requests, one per Node.
	kubelets []*http.Server

	qmu   sync.Mutex
	queue []func()
	kick  chan struct{}
	wake  chan struct{} // wakes the world loop

	// Reconciler state: touched only by the reconciler goroutine.
	running   map[types.UID]*runningPod
	bound     map[types.UID]string // pod uid -> node it was bound to
	claims    map[int]string       // sim volume index -> PV name
	pvVolume  map[string]int       // PV name -> sim volume index
	dsCreated map[string]time.Time // "<ds uid>/<node>" -> when a pod was created
	vms       map[types.UID]*vmState
	bySimID   map[string]*vmState
	restarts  map[string]bool // node name -> SPDK pod waiting for its target
	errs      map[string]string
}

// node is one simulated storage node (and consumer host) as a Kubernetes Node.
type node struct {
	idx  int
	name string
	uuid string // the storage node's UUID
	// uid is the Node object's metadata.uid (set when it is created): the
	// CSI's host NQN of this host derives from it (csiNQN).
	uid string
	// dataIP is the data NIC's address hosts connect to: the simulated
	// node's address simIP (never dialled), or beside real kubelets an
	// address in the nodes' network namespace (Real.DataIPs); ip is the
	// Node's InternalIP, which is also the storage node's mgmtIp.
	dataIP, simIP string
	ip            netip.Addr
	// simNQN is the simulator's host NQN of this host, which the served
	// sysfs shows as csiNQN (hostFS).
	simNQN string
	// lvolPort is its own lvstore's NVMe/TCP port, the hosts' port;
	// nvmfPort the inter-node device port (NvmfPortBase+idx).
	lvolPort, nvmfPort int
}

// csiNQN is the host NQN simplyblock's CSI connects this host with.
func (n *node) csiNQN() string { return agent.CSIHostNQN(n.uid) }

// Start builds the simulated world, creates the cluster's objects (Nodes,
// StorageNodeSet, StorageClass, SPDK and control-plane pods) on the API
// server and runs the stand-in until Close. It needs root and `ip` for its
// network namespace (NetnsAvailable).
func Start(ctx context.Context, cfg Config) (*StandIn, error) {
	cfg = cfg.withDefaults()
	if cfg.Rest == nil {
		return nil, errors.New("standin: Config.Rest is nil")
	}
	s := &StandIn{cfg: cfg, clock: bsim.NewWallClock(), kick: make(chan struct{}, 1), wake: make(chan struct{}, 1),
		running: map[types.UID]*runningPod{}, bound: map[types.UID]string{}, claims: map[int]string{}, pvVolume: map[string]int{},
		dsCreated: map[string]time.Time{}, vms: map[types.UID]*vmState{}, bySimID: map[string]*vmState{},
		restarts: map[string]bool{}, errs: map[string]string{}, addrs: map[string]string{}}
	var err error
	if cfg.Real == nil {
		if s.netns, err = NewNetns(); err != nil {
			return nil, err
		}
	} else {
		s.real = &realState{cfg: cfg.Real, outcome: map[string]string{}, drops: map[string]*mirrorDrop{}, pvSeen: map[string]bool{},
			synSem: make(chan struct{}, 64), changed: make(chan struct{})}
	}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	sc := sim.Config{Seed: cfg.Seed, Clock: s.clock, Model: record.Model{Nodes: 3, Hosts: 3, HostsAreNodes: true, Volumes: cfg.Volumes, Operator: cfg.Operator}}
	if cfg.Tune != nil {
		cfg.Tune(&sc)
	}
	if s.w, err = sim.New(sc); err != nil {
		return nil, err
	}
	if s.cs, err = kubernetes.NewForConfig(cfg.Rest); err != nil {
		return nil, err
	}
	if s.dyn, err = dynamic.NewForConfig(cfg.Rest); err != nil {
		return nil, err
	}
	hosts := s.w.Hosts()
	for i, n := range s.w.Nodes() {
		nd := &node{idx: i, name: n.Name, uuid: NodeUUID(i), dataIP: n.IP, simIP: n.IP,
			simNQN: hosts[i].NQN, lvolPort: s.w.Config().BasePort + 2*i, nvmfPort: NvmfPortBase + i}
		if s.real == nil {
			if nd.ip, err = s.netns.AddAddr(); err != nil {
				return nil, err
			}
		} else {
			if i >= len(cfg.Real.DataIPs) {
				return nil, fmt.Errorf("standin: Real.DataIPs has %d addresses for %d storage nodes", len(cfg.Real.DataIPs), len(s.w.Nodes()))
			}
			nd.dataIP = cfg.Real.DataIPs[i].String()
			s.addrs[nd.simIP] = nd.dataIP
		}
		s.nodes = append(s.nodes, nd)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if s.real != nil {
		if err := s.realNodes(ctx); err != nil {
			return nil, err
		}
	}
	if err := s.createCluster(ctx); err != nil {
		return nil, err
	}
	s.startInformers()
	if s.real == nil {
		if err := s.startKubelets(); err != nil {
			return nil, err
		}
	} else if err := s.startReal(ctx); err != nil {
		return nil, err
	}
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), s.podInf.HasSynced, s.pvcInf.HasSynced, s.pvInf.HasSynced, s.dsInf.HasSynced, s.vmInf.HasSynced, s.scInf.HasSynced) {
		return nil, errors.New("standin: informer caches did not sync within 30 s")
	}
	s.wg.Add(2)
	go s.worldLoop()
	go s.reconcileLoop()
	ok = true
	where := "real kubelets"
	if s.netns != nil {
		where = fmt.Sprintf("played kubelets, netns %s (%s)", s.netns.Name, s.netns.Prefix)
	}
	s.logf("started: world seed %d, %d volumes, nodes %s, %s", cfg.Seed, cfg.Volumes, strings.Join(s.NodeNames(), " "), where)
	return s, nil
}

// NodeUUID is the simulated storage node i's UUID (StorageNodeSet
// status.nodes[].uuid, a VolumeMigration's targetNodeUUID).
func NodeUUID(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", 0x30000+i, i+1) }

// VolumeUUID is the lvol UUID in a simulated subsystem NQN
// (nqn.2023-02.io.simplyblock:<cluster>:lvol:<uuid>).
func VolumeUUID(nqn string) string {
	if i := strings.LastIndex(nqn, ":lvol:"); i >= 0 {
		return nqn[i+len(":lvol:"):]
	}
	return ""
}

// NodeNames are the Nodes' names, sorted.
func (s *StandIn) NodeNames() []string {
	var out []string
	for _, n := range s.nodes {
		out = append(out, n.name)
	}
	sort.Strings(out)
	return out
}

// StorageClass is the name of the StorageClass the stand-in provisions.
func (s *StandIn) StorageClass() string { return s.cfg.StorageClass }

// StorageNamespace is the namespace of the StorageCluster, StorageNodeSet,
// SPDK pods and the control-plane pod.
func (s *StandIn) StorageNamespace() string { return s.cfg.StorageNamespace }

// ClusterSecret is the simulated cluster's secret (the control plane's
// bearer); SecretJSON is simplyblock's secret.json holding it, as in
// Secret simplyblock-csi-secret-v2.
func (s *StandIn) ClusterSecret() string { return s.cfg.ClusterSecret }

// SecretJSON is secret.json of Secret simplyblock-csi-secret-v2
// (simplyblock-operator csi-driver/pkg/util/initiator.go ClustersInfo).
func (s *StandIn) SecretJSON() []byte {
	b, _ := json.Marshal(map[string]any{"clusters": []any{map[string]any{"cluster_id": sim.ClusterUUID,
		"cluster_endpoint": fmt.Sprintf("http://simplyblock-webappapi.%s.svc.cluster.local:%d", s.cfg.StorageNamespace, WebAPIPort),
		"cluster_secret":   s.cfg.ClusterSecret}}})
	return b
}

// NodeUID is the metadata.uid of Node name ("" if it is not the stand-in's).
func (s *StandIn) NodeUID(name string) string {
	if n := s.nodeByName(name); n != nil {
		return n.uid
	}
	return ""
}

// Netns is the network namespace holding the pod IPs (nil beside real
// kubelets).
func (s *StandIn) Netns() *Netns { return s.netns }

// World runs fn with the simulated world locked (for tests comparing what
// the harness saw with what happened). fn must not keep the world.
func (s *StandIn) World(fn func(w *sim.World)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.w)
}

// Errors are the reconcile errors the stand-in is still retrying, by object.
func (s *StandIn) Errors() map[string]string {
	done := make(chan map[string]string, 1)
	s.post(func() {
		m := map[string]string{}
		for k, v := range s.errs {
			m[k] = v
		}
		done <- m
	})
	select {
	case m := <-done:
		return m
	case <-time.After(10 * time.Second):
		return map[string]string{"standin": "reconciler did not answer within 10 s"}
	}
}

// Close stops the stand-in: its loops, every listener, the informers, and
// removes its network namespace. Objects on the API server stay (the
// control plane is stopped by its owner). Idempotent.
func (s *StandIn) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	if s.factory != nil {
		s.factory.Shutdown()
	}
	if s.dfactory != nil {
		s.dfactory.Shutdown()
	}
	for uid, rp := range s.running {
		rp.stop()
		delete(s.running, uid)
	}
	for _, k := range s.kubelets {
		k.Close()
	}
	err := s.closeReal()
	if s.netns != nil {
		err = errors.Join(err, s.netns.Close())
	}
	return err
}

func (s *StandIn) logf(format string, args ...any) {
	s.cfg.Logf("standin %7.3fs: "+format, append([]any{s.clock.Now()}, args...)...)
}

// post queues fn for the reconciler goroutine.
func (s *StandIn) post(fn func()) {
	s.qmu.Lock()
	s.queue = append(s.queue, fn)
	s.qmu.Unlock()
	s.poke()
}

func (s *StandIn) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// worldLoop advances the world with the wall clock and hands its events
// to the reconciler.
func (s *StandIn) worldLoop() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		evs, err := s.w.AdvanceTo(max(s.clock.Now(), s.w.Now()))
		next, has := s.w.NextEventTime()
		if s.real != nil {
			close(s.real.changed) // held FUSE I/O looks at the heads again
			s.real.changed = make(chan struct{})
		}
		s.mu.Unlock()
		if err != nil {
			s.logf("world: %v", err)
		}
		if len(evs) > 0 {
			s.post(func() { s.worldEvents(evs) })
		}
		wait := 200 * time.Millisecond
		if has {
			if d := time.Duration((next - s.clock.Now()) * float64(time.Second)); d < wait {
				wait = max(d, time.Millisecond)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-s.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// wakeWorld makes the world loop look at its queue now (after a call that
// scheduled events).
func (s *StandIn) wakeWorld() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// reconcileLoop is the one goroutine that writes to the API server.
func (s *StandIn) reconcileLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick:
		case <-tick.C:
		}
		s.qmu.Lock()
		q := s.queue
		s.queue = nil
		s.qmu.Unlock()
		for _, fn := range q {
			fn()
		}
		s.resync()
	}
}

// setErr records (or clears, with err nil) the error of reconciling key.
func (s *StandIn) setErr(key string, err error) {
	if err == nil {
		delete(s.errs, key)
		return
	}
	if s.errs[key] != err.Error() {
		s.logf("%s: %v", key, err)
	}
	s.errs[key] = err.Error()
}

func (s *StandIn) startInformers() {
	s.factory = informers.NewSharedInformerFactory(s.cs, 0)
	s.podInf = s.factory.Core().V1().Pods().Informer()
	s.pvcInf = s.factory.Core().V1().PersistentVolumeClaims().Informer()
	s.pvInf = s.factory.Core().V1().PersistentVolumes().Informer()
	s.dsInf = s.factory.Apps().V1().DaemonSets().Informer()
	jobInf := s.factory.Batch().V1().Jobs().Informer()
	s.dfactory = dynamicinformer.NewDynamicSharedInformerFactory(s.dyn, 0)
	s.vmInf = s.dfactory.ForResource(VolumeMigrationGVR).Informer()
	s.scInf = s.dfactory.ForResource(StorageClusterGVR).Informer()
	kick := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.poke() },
		UpdateFunc: func(any, any) { s.poke() },
		DeleteFunc: func(any) { s.poke() },
	}
	for _, inf := range []cache.SharedIndexInformer{s.pvcInf, s.pvInf, s.dsInf, s.vmInf, s.scInf} {
		inf.AddEventHandler(kick)
	}
	s.podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.poke() },
		UpdateFunc: func(any, any) { s.poke() },
		DeleteFunc: func(obj any) {
			if p, ok := unwrap(obj).(*corev1.Pod); ok {
				s.post(func() { s.podGone(p) })
			}
		},
	})
	jobInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if m, ok := metaOf(unwrap(obj)); ok {
				s.post(func() { s.jobGone(m.GetNamespace(), m.GetName()) })
			}
		},
	})
	s.factory.Start(s.ctx.Done())
	s.dfactory.Start(s.ctx.Done())
}

func unwrap(obj any) any {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}

// runningPod is a pod the stand-in's kubelet runs: its IP and listeners.
type runningPod struct {
	ns, name string
	ip       netip.Addr
	ownIP    bool // ip was allocated for the pod (not the node's)
	servers  []*http.Server
	onStop   []func()
	netns    *Netns
}

func (rp *runningPod) serve(l net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	rp.servers = append(rp.servers, srv)
	go srv.Serve(l)
}

func (rp *runningPod) stop() {
	for _, srv := range rp.servers {
		srv.Close()
	}
	rp.servers = nil
	for _, fn := range rp.onStop {
		fn()
	}
	rp.onStop = nil
	if rp.ownIP {
		rp.netns.ReleaseAddr(rp.ip)
		rp.ownIP = false
	}
}
