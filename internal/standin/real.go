package standin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fiomig/fiomig/sim"
	"github.com/fiomig/fiomig/workload"
)

// Real runs the stand-in beside a real cluster (internal/kubenode): real
// kubelets named like the simulated storage nodes (storage-1, ...) run
// every pod, and the real scheduler, controller-manager (DaemonSet, Job,
// garbage collector, PV and PVC-protection controllers) and container
// runtime do their parts. The stand-in then plays only what no machine
// here can run — simplyblock's operator, control plane, CSI and SPDK
// targets, and the hosts' NVMe-oF state — and meets the real pods where
// they touch it:
//
//   - the agents (the real DaemonSet) read their host's simulated sysfs
//     from Dir/sysfs/<node>, a FUSE tree (fusetree.go);
//   - the CSI node plugin (csi.go) publishes each simulated volume's FUSE
//     directory Dir/volumes/<volume> (one file, fio.dat, whose I/O follows
//     the host's simulated multipath head) to the real fio pods, and the
//     provisioner answers the real PV controller for the StorageClass;
//   - the SPDK and control-plane pods are real pods (PauseImage,
//     hostNetwork); the control plane's REST API listens on
//     127.0.0.1:WebAPIPort in the nodes' network namespace, which is what a
//     port-forward to a hostNetwork pod reaches through the real kubelet
//     and containerd;
//   - validation Jobs run ShellImage; each pod asks 127.0.0.1:ValidationPort
//     (hostNetwork, as the operator's Jobs are) for its outcome and exits
//     with the code the simulated validation decided;
//   - dropped CONNECTs: the simulated hosts' SYNs to a storage node are
//     dropped exactly while a real nftables rule in the nodes' namespace
//     drops new TCP connections to that node's data address and port
//     (read every 300 ms with NFT), and every CONNECT the simulator drops
//     is sent as a real TCP connect from this process to the data address,
//     so the real rule's counter counts real SYNs (retransmits included).
//
// Data addresses are DataIPs, addresses in the nodes' namespace that this
// process reaches through the veth; the simulator keeps its own (never
// dialled), and every address the harness sees (connect strings, data
// NICs, VolumeMigration connections, the sysfs address attributes) is the
// data address.
type Real struct {
	// Listen opens a TCP listener in the nodes' network namespace.
	Listen func(addr string) (net.Listener, error)
	// NFT runs nft(8) with args in the nodes' network namespace.
	NFT func(ctx context.Context, args ...string) ([]byte, error)
	// DataIPs[i] is simulated storage node i's data address.
	DataIPs []netip.Addr
	// Dir holds the FUSE mounts (sysfs/<node>, volumes/<volume>) and the
	// volumes' backing files.
	Dir string
	// KubeletRoots maps each Node's name to its kubelet's --root-dir
	// (where the CSI plugin registers).
	KubeletRoots map[string]string
	// PauseImage runs in the SPDK and control-plane pods; ShellImage, an
	// image with busybox, in validation Jobs. Both must be on the nodes
	// already (imagePullPolicy Never).
	PauseImage, ShellImage string
	// VolumeSize is each simulated volume's size as a file (default 1 GiB,
	// sparse).
	VolumeSize int64
}

// ValidationPort is where validation Job pods ask for their outcome
// (127.0.0.1 in the nodes' network namespace).
const ValidationPort = 5071

// realState is what the stand-in keeps beside real kubelets.
type realState struct {
	cfg     *Real
	sysfs   []*treeMount
	vols    []*workload.FS // by simulated volume index
	csi     []*csiNode
	lns     []net.Listener
	srv     []*http.Server
	outMu   sync.Mutex
	outcome map[string]string // validation Job name -> exit code ("" pending)
	// pvSeen: the PVs of claims the informer's cache has shown.
	pvSeen map[string]bool
	// nft mirror: active simulated drop targets (sim ip:port) and the
	// dropped CONNECTs already sent as real SYNs.
	drops  map[string]*mirrorDrop
	synSem chan struct{}
	// changed is closed and replaced (under StandIn.mu) after every step
	// of the world: held FUSE I/O looks again.
	changed chan struct{}
}

type mirrorDrop struct {
	simTarget, dataTarget string
	sent                  int64
}

// startReal sets up everything Real lists, after createCluster.
func (s *StandIn) startReal(ctx context.Context) error {
	r := s.real
	for _, n := range s.nodes {
		h := s.w.Hosts()[n.idx]
		m, err := mountTree(filepath.Join(r.cfg.Dir, "sysfs", n.name), func() fs.FS {
			s.mu.Lock()
			defer s.mu.Unlock()
			return hostFS{FS: h.Sysfs(), simNQN: n.simNQN, csiNQN: n.csiNQN(), addrs: s.addrs}
		})
		if err != nil {
			return err
		}
		r.sysfs = append(r.sysfs, m)
	}
	size := r.cfg.VolumeSize
	if size == 0 {
		size = 1 << 30
	}
	for i, v := range s.w.Volumes() {
		dir := filepath.Join(r.cfg.Dir, "volumes", v.Name)
		f, err := workload.Mount(workload.MountOptions{Dir: dir, BackingDir: filepath.Join(r.cfg.Dir, "backing", v.Name),
			Paths: volPaths{s: s, idx: i}}, []workload.Volume{{Name: "fio.dat", Size: size}})
		if err != nil {
			return err
		}
		r.vols = append(r.vols, f)
	}
	if err := s.ensureCSIDriver(ctx); err != nil {
		return err
	}
	for _, n := range s.nodes {
		root, ok := r.cfg.KubeletRoots[n.name]
		if !ok {
			return fmt.Errorf("standin: Real.KubeletRoots names no kubelet root of Node %s", n.name)
		}
		c, err := s.startCSI(n, root)
		if err != nil {
			return err
		}
		r.csi = append(r.csi, c)
	}
	serve := func(addr string, h http.Handler) error {
		l, err := r.cfg.Listen(addr)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		r.lns, r.srv = append(r.lns, l), append(r.srv, srv)
		go srv.Serve(l)
		return nil
	}
	if err := serve(fmt.Sprintf("127.0.0.1:%d", WebAPIPort), s.webAPI()); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/validation/{job}", func(w http.ResponseWriter, req *http.Request) {
		r.outMu.Lock()
		code, ok := r.outcome[req.PathValue("job")]
		r.outMu.Unlock()
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Write([]byte(code))
	})
	if err := serve(fmt.Sprintf("127.0.0.1:%d", ValidationPort), mux); err != nil {
		return err
	}
	s.wg.Add(1)
	go s.nftLoop()
	return nil
}

// closeReal stops the CSI plugins, the listeners and the FUSE mounts (a
// mount the real cluster's teardown already removed counts as done).
func (s *StandIn) closeReal() error {
	r := s.real
	if r == nil {
		return nil
	}
	var errs []error
	for _, c := range r.csi {
		c.stop()
	}
	r.csi = nil
	for _, srv := range r.srv {
		srv.Close()
	}
	r.srv = nil
	for _, m := range r.sysfs {
		errs = append(errs, m.unmount())
	}
	r.sysfs = nil
	for _, f := range r.vols {
		err := f.Unmount()
		if _, serr := os.Stat(f.Dir()); errors.Is(serr, fs.ErrNotExist) {
			// The real cluster's teardown (everything under its base
			// folder) unmounted and removed it already.
			err = nil
		}
		errs = append(errs, err)
	}
	r.vols = nil
	return errors.Join(errs...)
}

// volPaths is one simulated volume's multipath head on its consumer host,
// as workload.Paths (fio.dat of the volume's FUSE directory).
type volPaths struct {
	s   *StandIn
	idx int
}

// State implements workload.Paths (sim.Host.HeadIO: served -> Serve,
// failed -> Fail, requeued or hung -> Wait).
func (p volPaths) State(string) (workload.IOState, <-chan struct{}) {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.w.Volumes()[p.idx]
	ch := s.real.changed
	if len(v.Consumers) == 0 || len(v.NSIDs) == 0 {
		return workload.Fail, ch
	}
	switch s.w.Hosts()[v.Consumers[0]].HeadIO(v.NQN, v.NSIDs[0]) {
	case sim.IOServed:
		return workload.Serve, ch
	case sim.IOFail:
		return workload.Fail, ch
	}
	return workload.Wait, ch
}

// volumeDir is the FUSE directory of the simulated volume with lvol UUID
// uuid, and the host it is attached to.
func (s *StandIn) volumeDir(uuid string) (string, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, v := range s.w.Volumes() {
		if VolumeUUID(v.NQN) == uuid && i < len(s.real.vols) && len(v.Consumers) > 0 {
			return s.real.vols[i].Dir(), v.Consumers[0], nil
		}
	}
	return "", 0, fmt.Errorf("no simulated volume %s", uuid)
}

// realNodes reads the real Nodes named like the simulated storage nodes:
// their UIDs and InternalIPs (the storage nodes' mgmtIp), and labels them
// as simplyblock's chart and the user do (consumer host, StorageNodeSet,
// the storage node's UUID).
func (s *StandIn) realNodes(ctx context.Context) error {
	for _, n := range s.nodes {
		obj, err := s.cs.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("standin: real Node %s: %w", n.name, err)
		}
		n.uid = string(obj.UID)
		for _, a := range obj.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				n.ip, err = netip.ParseAddr(a.Address)
				if err != nil {
					return fmt.Errorf("standin: Node %s InternalIP %q: %w", n.name, a.Address, err)
				}
			}
		}
		if !n.ip.IsValid() {
			return fmt.Errorf("standin: Node %s has no InternalIP", n.name)
		}
		labels := map[string]string{LabelConsumer: "true", LabelNodeSet: StorageNodeSetName,
			"io.simplyblock.node-type":                                   "simplyblock-storage-plane-" + ClusterName,
			"simplyblock.io/storage-node-uuid." + sim.ClusterUUID + ".0": n.uuid}
		data, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
		if _, err := s.cs.CoreV1().Nodes().Patch(ctx, n.name, types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("standin: label Node %s: %w", n.name, err)
		}
	}
	return nil
}

// reconcileProvisioning is the external provisioner of the StorageClass
// beside a real PV controller: a PVC of the StorageClass whose pod the
// scheduler placed (annotation volume.kubernetes.io/selected-node) gets a
// PV of an unclaimed simulated volume attached to that node, with the
// PVC as claimRef (the PV controller binds them); a Released PV of ours
// is deleted (reclaim policy Delete) and its simulated volume is free
// again once the PV is gone.
func (s *StandIn) reconcileProvisioning() {
	pvs := map[string]*corev1.PersistentVolume{}
	for _, o := range s.pvInf.GetStore().List() {
		pv := o.(*corev1.PersistentVolume)
		pvs[pv.Name] = pv
	}
	for idx, name := range s.claims {
		if _, ok := pvs[name]; ok {
			s.real.pvSeen[name] = true
			continue
		}
		// Gone only once the cache had it: a PV just created may not be
		// in it yet.
		if s.real.pvSeen[name] {
			delete(s.claims, idx)
			delete(s.pvVolume, name)
			delete(s.real.pvSeen, name)
			s.logf("PV %s gone; simulated volume %d free", name, idx)
		}
	}
	for _, pv := range pvs {
		if _, ours := s.pvVolume[pv.Name]; !ours || pv.Status.Phase != corev1.VolumeReleased || pv.DeletionTimestamp != nil {
			continue
		}
		ctx, cancel := s.call()
		err := s.cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
		cancel()
		if apierrors.IsNotFound(err) {
			err = nil
		}
		s.setErr("pv "+pv.Name, err)
	}
	for _, o := range s.pvcInf.GetStore().List() {
		pvc := o.(*corev1.PersistentVolumeClaim)
		sel := pvc.Annotations["volume.kubernetes.io/selected-node"]
		if pvc.Spec.VolumeName != "" || pvc.DeletionTimestamp != nil || sel == "" ||
			pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != s.cfg.StorageClass {
			continue
		}
		if _, ok := pvs["pvc-"+string(pvc.UID)]; ok {
			continue // created; the PV controller binds it
		}
		key := "pvc " + pvc.Namespace + "/" + pvc.Name
		n := s.nodeByName(sel)
		if n == nil {
			s.setErr(key, fmt.Errorf("selected node %s is no storage node", sel))
			continue
		}
		free := s.freeVolumes(n.idx)
		if len(free) == 0 {
			s.setErr(key, fmt.Errorf("no unclaimed simulated volume attached to %s (Config.Volumes = %d, volume i is attached to host i mod 3)", sel, s.cfg.Volumes))
			continue
		}
		s.setErr(key, s.createPV(pvc, n, free[0]))
	}
}

// createPV creates the PV of simulated volume idx for pvc, claimRef set
// (the external provisioner's part; the PV controller binds).
func (s *StandIn) createPV(pvc *corev1.PersistentVolumeClaim, n *node, idx int) error {
	s.mu.Lock()
	v := s.w.Volumes()[idx]
	nqn, volUUID := v.NQN, VolumeUUID(v.NQN)
	s.mu.Unlock()
	name := "pvc-" + string(pvc.UID)
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.IsZero() {
		size = resource.MustParse("1Gi")
	}
	modes := pvc.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": Provisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              s.cfg.StorageClass,
			VolumeMode:                    pvc.Spec.VolumeMode,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver:       Provisioner,
				VolumeHandle: sim.ClusterUUID + ":" + PoolUUID + ":" + volUUID,
				FSType:       "xfs",
				VolumeAttributes: map[string]string{"nqn": nqn, "cluster_id": sim.ClusterUUID, "pool_name": "pool1",
					"storage.kubernetes.io/csiProvisionerIdentity": "fiomig-standin"},
			}},
		},
	}
	ctx, cancel := s.call()
	defer cancel()
	if _, err := s.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("provision PV %s for PVC %s/%s: %w", name, pvc.Namespace, pvc.Name, err)
	}
	s.claims[idx], s.pvVolume[name] = name, idx
	s.logf("provisioned PV %s (%s, host %s) for PVC %s/%s", name, nqn, n.name, pvc.Namespace, pvc.Name)
	return nil
}

// validationScript is what a validation Job's container runs beside real
// kubelets: it asks the stand-in for the outcome the simulated validation
// decided for its Job (VMIG_JOB) every 0.5 s and exits with it.
func validationScript() string {
	return fmt.Sprintf(`while :; do r=$(busybox wget -q -O - http://127.0.0.1:%d/v1/validation/$VMIG_JOB 2>/dev/null); `+
		`case "$r" in [0-9]*) echo "validation of $VMIG_JOB on $NODE_NAME: exit $r"; exit "$r";; esac; sleep 0.5; done`, ValidationPort)
}

// setOutcome records the exit code of validation Job name ("" pending).
func (s *StandIn) setOutcome(name, code string) {
	s.real.outMu.Lock()
	s.real.outcome[name] = code
	s.real.outMu.Unlock()
}

// nftLoop mirrors the real nftables rules of the nodes' network namespace
// into the simulator and the simulated dropped CONNECTs onto the real
// network (see Real).
func (s *StandIn) nftLoop() {
	defer s.wg.Done()
	r := s.real
	t := time.NewTicker(300 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
		out, err := r.cfg.NFT(ctx, "-j", "list", "ruleset")
		cancel()
		if err != nil {
			s.post(func() { s.setErr("nft ruleset", err) })
			continue
		}
		rules, err := ParseDropRules(out)
		if err != nil {
			s.post(func() { s.setErr("nft ruleset", err) })
			continue
		}
		want := map[string]string{} // sim target -> data target
		for _, rule := range rules {
			n := s.nodeByDataIP(rule.IP)
			if n == nil {
				continue // not a storage node's data address: no simulated host connects there
			}
			for _, p := range rule.Ports {
				want[netip.AddrPortFrom(netip.MustParseAddr(n.simIP), uint16(p)).String()] = netip.AddrPortFrom(netip.MustParseAddr(rule.IP), uint16(p)).String()
			}
		}
		s.mu.Lock()
		for target, d := range r.drops {
			if _, ok := want[target]; !ok {
				ev, _ := s.w.StopDroppingConnects(target)
				delete(r.drops, target)
				s.logf("nft rule for %s gone: simulated hosts' SYNs to %s pass again (%s CONNECTs dropped)", d.dataTarget, target, ev["dropped_connects"])
			}
		}
		for target, data := range want {
			if _, ok := r.drops[target]; !ok {
				if _, err := s.w.DropConnects(target); err == nil {
					r.drops[target] = &mirrorDrop{simTarget: target, dataTarget: data}
					s.logf("nft rule drops new connections to %s: simulated hosts' SYNs to %s are dropped", data, target)
				}
			}
		}
		var syns []string
		for target, d := range r.drops {
			n, _ := s.w.DroppedConnects(target)
			for ; d.sent < n; d.sent++ {
				syns = append(syns, d.dataTarget)
			}
		}
		s.mu.Unlock()
		s.wakeWorld()
		for _, a := range syns {
			select {
			case r.synSem <- struct{}{}:
				go func() {
					defer func() { <-r.synSem }()
					// The kernel sends the SYN and retransmits it after
					// 1 s; nothing answers while the rule drops it.
					c, err := net.DialTimeout("tcp", a, 1500*time.Millisecond)
					if err == nil {
						c.Close()
					}
				}()
			default:
				s.logf("nft mirror: %d real connects in flight, one to %s not sent", cap(r.synSem), a)
			}
		}
	}
}

func (s *StandIn) nodeByDataIP(ip string) *node {
	for _, n := range s.nodes {
		if n.dataIP == ip {
			return n
		}
	}
	return nil
}

// DropRule is one nftables rule that drops new TCP connections to IP at
// Ports, as the nft helper writes it (agent.NFT.Rule).
type DropRule struct {
	Table string
	IP    string
	Ports []int
}

// ParseDropRules finds, in the JSON of "nft -j list ruleset"
// (libnftables-json(5)), every rule that matches "ip daddr A" and "tcp
// dport P" (one port or a set) and ends in drop — the rules that make new
// connections to A:P get no answer. Other rules are ignored.
func ParseDropRules(b []byte) ([]DropRule, error) {
	var doc struct {
		Nftables []struct {
			Rule *struct {
				Table string            `json:"table"`
				Expr  []json.RawMessage `json:"expr"`
			} `json:"rule"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("nft -j list ruleset: %w", err)
	}
	var out []DropRule
	for _, o := range doc.Nftables {
		if o.Rule == nil {
			continue
		}
		r := DropRule{Table: o.Rule.Table}
		drop := false
		for _, raw := range o.Rule.Expr {
			var e struct {
				Match *struct {
					Op   string `json:"op"`
					Left struct {
						Payload *struct {
							Protocol string `json:"protocol"`
							Field    string `json:"field"`
						} `json:"payload"`
					} `json:"left"`
					Right json.RawMessage `json:"right"`
				} `json:"match"`
			}
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(raw, &keys); err != nil {
				return nil, fmt.Errorf("nft rule of table %s: %w", r.Table, err)
			}
			if _, ok := keys["drop"]; ok {
				drop = true // {"drop": null}
			}
			if err := json.Unmarshal(raw, &e); err != nil {
				return nil, fmt.Errorf("nft rule of table %s: %w", r.Table, err)
			}
			if e.Match == nil || e.Match.Left.Payload == nil || e.Match.Op != "==" {
				continue
			}
			switch pl := e.Match.Left.Payload; {
			case pl.Protocol == "ip" && pl.Field == "daddr":
				json.Unmarshal(e.Match.Right, &r.IP)
			case pl.Protocol == "tcp" && pl.Field == "dport":
				var one int
				var set struct {
					Set []int `json:"set"`
				}
				if json.Unmarshal(e.Match.Right, &one) == nil {
					r.Ports = []int{one}
				} else if json.Unmarshal(e.Match.Right, &set) == nil {
					r.Ports = slices.Clone(set.Set)
				}
			}
		}
		if drop && r.IP != "" && len(r.Ports) > 0 {
			out = append(out, r)
		}
	}
	return out, nil
}

// dataEndpoint maps a simulated "ip:port" to the data address's.
func (s *StandIn) dataEndpoint(ep string) string {
	ap, err := netip.ParseAddrPort(ep)
	if err != nil {
		return ep
	}
	if to, ok := s.addrs[ap.Addr().String()]; ok {
		return net.JoinHostPort(to, strconv.Itoa(int(ap.Port())))
	}
	return ep
}
