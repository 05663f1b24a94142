// Package standin plays, against a real kube-apiserver, every part of a
// simplyblock Kubernetes cluster that no machine here can run, so that
// backend/kube is tested through the API server only, exactly as on a real
// cluster. Behind it is the deterministic simulator (package sim) on the
// wall clock (backend/sim.WallClock): 3 storage nodes that are also the 3
// consumer hosts, as in the incident topology.
//
// # Two kinds of parts
//
// The played simplyblock — what a real cluster would run and no machine
// here can — enforces simplyblock's sourced contract (docs/kube.md lists
// each fact with its upstream file); none of it is a guess of ours:
//
//   - cluster.go: the StorageCluster (status.uuid = the simulated cluster),
//     the StorageNodeSet (status.nodes[]: uuid, health, status "online",
//     hostname, mgmtIp = the Node's InternalIP, rpcPort, lvolPort = the
//     node's lvstore port, nvmfPort = NvmfPortBase+i, a different port),
//     the CSI's Secret simplyblock-csi-secret-v2 (secret.json), the
//     StorageClass (provisioner csi.simplyblock.io, cluster_id, pool_name)
//     and the control-plane pod simplyblock-webappapi-0.
//   - operator.go: the VolumeMigration controller. A VolumeMigration whose
//     namespace holds no StorageCluster of its PV's cluster goes Failed
//     with the operator's message; otherwise a simulated migration of the
//     PV's volume to spec.targetNodeUUID, its phases as status.phase with
//     the operator's status fields (sourceNodeUUID only from Running;
//     Aborted with completedAt and no errorMessage); validation Jobs as the
//     operator builds them (no labels, the VolumeMigration as controller
//     owner, nodeSelector = consumer host) while it validates; spec.abort
//     aborts it; deleting a validation Job kills that validation in the
//     simulator [stand-in choice: the operator at HEAD recreates a vanished
//     Job].
//   - controlplane.go: the control plane's REST API on the webappapi pod's
//     port 5000: the real connect-strings route and a node's data NICs,
//     each only with the cluster secret as bearer (401 otherwise, so a call
//     through pods/proxy, which strips Authorization, fails as on a
//     cluster); with Config.AllowedHosts a volume's connect strings need
//     an allowed host_nqn.
//   - sysfs.go: the hosts' sysfs as the CSI leaves it: controllers carry
//     hostnqn nqn.2014-08.io.simplyblock:uuid:<Node metadata.uid>.
//   - spdk.go: simplyblock's node API: one SPDK pod per node
//     (snode-spdk-pod-<rpcPort>-<cluster[:6]>, role=simplyblock-storage-node);
//     deleting it restarts that node's simulated target, and a replacement
//     pod with a new uid runs once the target is back TargetRestartS later.
//   - provisioner.go: the CSI provisioner of the StorageClass: a PV whose
//     volume handle <cluster>:<pool>:<volume> and volumeAttributes["nqn"]
//     name a simulated volume attached to the pod's node.
//   - containers.go: what runs inside pods: the real agent handler over the
//     host's played sysfs (agent DaemonSet pods), the nft helper (its rule
//     on the node's data address and ports; counter served), the control
//     plane's API (the webappapi pod), a logs sidecar with no files (no fio
//     runs here).
//
// The played Kubernetes node — kubelet.go — is what a real kubelet,
// scheduler and controller-manager do, and what a real node environment
// replaces: Node registration (Ready, InternalIP, kubelet port), the
// scheduler (nodeSelector and required node affinity; binding through
// pods/binding, after provisioning the pod's PVCs), the kubelet (a pod
// becomes Running with a pod IP; a pod being deleted is stopped and
// deleted for good; port-forward streams served on InternalIP:10250 with
// the kubelet's own protocol code), the DaemonSet controller, PVC
// protection and the PV controller's reclaim policy Delete.
//
// # Beside real kubelets
//
// With Config.Real (real.go) the stand-in runs beside a real cluster
// (internal/kubenode) whose kubelets carry the storage nodes' names: it
// plays no Kubernetes part at all (kubelet.go's pod, scheduler, DaemonSet
// and claim passes are off, no netns of its own) and meets the real pods
// where they touch the played simplyblock: the agents read each host's
// simulated sysfs from a FUSE tree (fusetree.go); a played CSI node
// plugin (csi.go) publishes each simulated volume's FUSE directory to the
// fio pods, the provisioner answering the real PV controller; the SPDK
// and control-plane pods run the pause image and the control plane
// listens in the nodes' network namespace; validation Jobs run a shell
// that exits with the simulated validation's outcome; real nftables rules
// decide which simulated CONNECTs are dropped, and each dropped one is
// sent as a real SYN. Data addresses are then addresses in the nodes'
// namespace, and every address the harness sees is translated to them.
//
// Pod IPs and Node InternalIPs live in a network namespace the stand-in
// makes itself (Netns, 198.18.0.0/15, veth to the root namespace) because
// the API server's pod proxy refuses loopback pod IPs; the harness reaches
// every listener above only through the API server (pods/proxy,
// pods/portforward). Netns needs root and iproute2; NetnsAvailable says why
// it cannot work, for tests to apply internal/tooltest's rule.
//
// # What differs from a real cluster
//
//   - No kubelet, container runtime, scheduler or kube-controller-manager
//     runs: no container image is pulled or run, pods do nothing but what is
//     listed above, no pod logs, exec or attach, no garbage collector
//     (ownerReferences do not cascade, foreground deletion never
//     completes), no namespace controller, no Job controller (validation
//     Jobs get no pods and no status), no ServiceAccount token controller.
//   - The data plane is the simulator: NVMe-oF targets, hosts' kernels,
//     sysfs trees, the control plane and the operator's state machine (its
//     phase timing and validation outcome, and a Pending phase the
//     operator writes only for a deferred create) are simulated; every
//     simulated volume is attached to its host from the start, so a PVC
//     binds only to a volume of the pod's node.
//   - Release Jobs are not created as objects (the simulated operator still
//     releases paths); validationJobs[].succeeded is never set true.
//   - An nft helper's counter counts dropped CONNECTs (one per connect
//     attempt); a real rule counts every dropped SYN, so real counts are
//     higher; bytes are not modelled (0).
//   - Validation Jobs' controllers carry the host's CSI NQN here; on a
//     cluster they may carry the rebalancer image's own [inference].
//   - Node InternalIPs (= mgmtIp) are netns addresses (198.18.x.y); data
//     addresses and NVMe traddrs are the simulator's 10.0.0.x (never
//     dialled). rpcPort values (5260+i), node and pool UUIDs and migration
//     UUIDs are the stand-in's.
//
// Imports: backend/sim (WallClock), backend/kube/agent, sim, workload,
// client-go, apimachinery, k8s.io/api, k8s.io/cri-streaming, go-fuse, the
// CSI spec and gRPC, k8s.io/kubelet's plugin registration API,
// golang.org/x/sys/unix and the standard library. Only tests use it.
package standin
