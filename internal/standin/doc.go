// Package standin plays, against a real kube-apiserver, every part of a
// simplyblock Kubernetes cluster that no machine here can run, so that
// backend/kube is tested through the API server only, exactly as on a real
// cluster. Behind it is the deterministic simulator (package sim) on the
// wall clock (backend/sim.WallClock): 3 storage nodes that are also the 3
// consumer hosts, as in the incident topology.
//
// What it plays, each through ordinary API objects:
//
//   - Nodes storage-1..3 (Ready, InternalIP in the stand-in's network
//     namespace, labels kubernetes.io/hostname, fiomig.io/consumer=true,
//     io.simplyblock.storagenodeset=simplyblock-node) and the StorageNodeSet
//     simplyblock-node in the storage namespace (default simplyblock) whose
//     status.nodes[] gives uuid, health, status "online", hostname, mgmtIp
//     (the simulated NVMe/TCP address, 10.0.0.x, never dialled), rpcPort,
//     lvolPort and nvmfPort.
//   - The CSI provisioner and PV controller of StorageClass
//     simplyblock-standin (provisioner csi.simplyblock.io,
//     WaitForFirstConsumer): when a pod using an unbound PVC is scheduled,
//     a PV is created whose volume handle <cluster>:<pool>:<volume> and
//     volumeAttributes["nqn"] name a simulated volume attached to the pod's
//     node, and PVC and PV are bound; PVC protection and reclaim policy
//     Delete are honoured.
//   - The scheduler (nodeSelector and required node affinity on node
//     labels; binding through pods/binding) and the kubelet: a pod on a
//     stand-in node becomes Running with a pod IP (the node's InternalIP for
//     hostNetwork pods); a pod being deleted is stopped and deleted for
//     good (grace 0).
//   - The DaemonSet controller: one pod per node the template's
//     nodeSelector allows; pods of a deleted DaemonSet are deleted.
//   - Inside pods: an agent pod (label app.kubernetes.io/name=fiomig-agent)
//     serves backend/kube/agent.Handler over its host's simulated sysfs on
//     pod IP:9560; an nft helper pod (label fiomig.io/role=nft-helper,
//     annotations fiomig.io/nft-ip, fiomig.io/nft-port, fiomig.io/nft-table)
//     makes the simulated target drop CONNECTs to ip[:port] while it runs
//     and serves the rule's counter (agent.CounterHandler) on node IP:9561;
//     the control-plane pod simplyblock-webappapi-0 serves the published
//     endpoints of each volume on :5000
//     (GET /api/v2/clusters/<cluster>/volumes/<volume>/connect) and the
//     volume's current storage node (GET /api/v2/clusters/<cluster>/volumes/<volume>);
//     a pod declaring container port 9562 (the fio pod's logs sidecar)
//     serves agent.FilesHandler over an empty directory: no fio runs there.
//   - simplyblock's node API: one SPDK pod per node
//     (snode-spdk-pod-<rpcPort>-<cluster[:6]>, role=simplyblock-storage-node);
//     deleting it restarts that node's simulated target (sim StopTarget),
//     a replacement pod with a new uid is created Pending (a node without
//     an SPDK pod gets one on every resync until the API server takes it;
//     a refused create shows in Errors) and runs once the target is back
//     TargetRestartS later (sim StartTarget).
//   - The operator: a new VolumeMigration starts a simulated migration of
//     its PV's volume to the lvstore of spec.targetNodeUUID; the simulated
//     phases become status.phase with the status fields of
//     research/upstream.md §2.1; validation Jobs (vmig-validate-…, owned by
//     the VolumeMigration, nodeSelector = consumer host) exist while it
//     validates; deleting one kills that validation in the simulator;
//     spec.abort aborts the simulated migration.
//
// Pod IPs live in a network namespace the stand-in makes itself (Netns,
// 198.18.0.0/15, veth to the root namespace) because the API server's pod
// proxy refuses loopback pod IPs; the harness reaches every listener above
// only through pods/proxy. Netns needs root and iproute2; NetnsAvailable
// says why it cannot work, for tests to apply internal/tooltest's rule.
//
// # What differs from a real cluster
//
//   - No kubelet, container runtime, scheduler or kube-controller-manager
//     runs: no container image is pulled or run, pods do nothing but what is
//     listed above, no pod logs or exec (pods/log, pods/exec fail), no
//     garbage collector (ownerReferences do not cascade, foreground deletion
//     never completes), no namespace controller (a deleted namespace stays
//     Terminating), no Job controller (validation Jobs get no pods and no
//     status), no ServiceAccount token controller.
//   - The data plane is the simulator: NVMe-oF targets, hosts' kernels,
//     sysfs trees, the control plane and the operator's state machine (its
//     phase timing and validation outcome) are simulated; every simulated
//     volume is attached to its host from the start (sim consumers are
//     fixed), so a PVC binds only to a volume of the pod's node and
//     provisioning never creates a volume.
//   - Release Jobs are not created as objects (the simulated operator still
//     releases paths); validationJobs[].succeeded is never set true (the
//     list is cleared when the migration runs, as upstream does).
//   - An nft helper's counter counts dropped CONNECTs (one per connect
//     attempt); a real rule counts every dropped SYN, retransmissions
//     included, so real counts are higher; bytes are not modelled (0).
//   - Pod IPs and node InternalIPs are netns addresses (198.18.x.y), while
//     storage nodes' mgmtIp and NVMe traddrs are the simulator's 10.0.0.x.
//   - rpcPort values (5260+i), node and pool UUIDs and migration UUIDs are
//     the stand-in's; lvolPort = nvmfPort = the node's own lvstore port.
//
// Imports: backend/sim (WallClock), backend/kube/agent, sim, client-go,
// apimachinery, k8s.io/api, golang.org/x/sys/unix and the standard library.
// Only tests use it.
package standin
