// Package kube is the Kubernetes backend: a backend.Cluster over client-go
// and sigs.k8s.io/e2e-framework (klient for access, envconf.NewWithKubeConfig
// — never env.NewFromFlags, which registers global flags —, wait and
// conditions for waiting) that runs fiomig's migrations scenario on any
// cluster running simplyblock.
//
// What it reads and writes (the contract with internal/standin, which
// plays simplyblock, kubelet, scheduler and provisioner in tests; the
// sources are in docs/kube.md):
//
//   - Namespaces: the run's PVCs, fio and helper pods, ConfigMap and Lease
//     in Namespace (with the agents); VolumeMigrations and the operator's
//     Jobs in StorageNamespace, the StorageCluster's (the operator fails a
//     VolumeMigration anywhere else); the control plane's pods in
//     ControlPlaneNamespace; SPDK pods in SPDKNamespace.
//   - Storage nodes: StorageNodeSet status.nodes (hostname, uuid, mgmtIp,
//     lvolPort, nvmfPort), and each node's data-NIC addresses from the
//     control plane; targets are data address : lvolPort, never mgmtIp or
//     nvmfPort. Consumer hosts: Nodes labelled fiomig.io/consumer=true,
//     each with a Running fiomig agent pod (deploy/agent/), passed its
//     Node's UID, from which and from its controllers it learns the
//     host's NVMe identity (agent.Identify).
//   - Workload: a ConfigMap of fio job files rendered by package fio, one
//     PVC of the StorageClass and one fio pod per volume, pinned to consumer
//     host i mod hosts by a required hostname node affinity.
//   - Volumes: the PV's CSI volume handle <cluster>:<pool>:<volume> and the
//     subsystem NQN; published endpoints from the control plane's connect
//     strings, GET /api/v2/clusters/{cluster}/storage-pools/{pool}/volumes/{volume}/connect,
//     through a port-forward to a webappapi pod with the cluster secret the
//     user gave as bearer (controlPlane; the pod proxy strips it).
//   - Migrations: a VolumeMigration per migration, its status.phase watched
//     (every write arrives, in order) and turned into phase lines; abort by
//     spec.abort; a migration not terminal after MigrationTimeout fails the
//     run with an error naming the object and its last phase.
//   - Hosts are sampled by GET /v1/sample from their agent; the agents, the
//     nft helper and the fio log sidecar are reached through the API
//     server's pod proxy in Namespace.
//   - Faults (faults/hooks.go, by method set): target restart deletes the
//     storage node's SPDK pod; dropped CONNECTs run a privileged nft helper
//     pod whose rule counter is the evidence; aborted validation sets
//     spec.abort or deletes the validation Job.
//   - Nothing left behind: every object carries fiomig.io/run=<id>, its
//     removal is registered right after it is created, Close removes all
//     of it (also after the run's context was cancelled), and the run keeps
//     a Lease that Janitor uses to tell dead runs from live ones.
//   - The cluster secret is held in memory only: never printed, logged or
//     recorded.
//   - A farm (fiomig sweep --on kube, docs/farm.md): one Indexed Job of
//     the fiomig image (FarmJobObject), its pods followed by their logs
//     (pods/log), deleted with them and its Lease at the end (Farm).
//
// Time is monotonic wall seconds since setup ended.
//
// Imports: backend, record, nvmeof, fio, workload, backend/kube/agent,
// client-go, apimachinery, api and e2e-framework. It prints only to
// Config.Progress.
package kube
