// Package agent is what fiomig runs inside a Kubernetes cluster and what the
// harness reads from it, both sides of one small HTTP API reached only
// through the API server's pod proxy (pods/proxy):
//
//   - Handler serves one consumer host's NVMe-oF state: GET /v1/sample
//     answers with the host's sysfs, read now, in the capture format of the
//     fixtures (nvmeof.LoadCapture reads it: one "/sys/<path>\t<value>"
//     line per attribute), keeping only the host's controllers, stamped
//     with the host's own clock (header Fiomig-Host-Time, unix
//     nanoseconds). Which controllers are the host's it learns from the
//     host (Identify): simplyblock's CSI connects with
//     nqn.2014-08.io.simplyblock:uuid:<Node UID> (the harness passes the
//     UID as ?node_uid=), other identities on simplyblock subsystems, such
//     as validation Jobs, are kept too, another node's CSI NQN (a kernel
//     shared by several nodes) is not. GET /v1/host names the node, the
//     hostnqns kept and where they came from; GET /healthz answers ok. It
//     reads /sys only: the DaemonSet (deploy/agent/) mounts it read-only
//     with no other privilege and no other host path.
//   - CounterHandler serves the packet counter of the nftables rule the
//     dropped-CONNECTs helper pod installed (GET /v1/counter), and NFT is
//     that helper's nft(8) side.
//   - FilesHandler serves a directory's regular files read-only (the fio
//     pod's log sidecar).
//   - Decode turns a /v1/sample answer back into a Sample (an fs.FS for
//     nvmeof.ReadHost, with the host time).
//
// The pod proxy is used because it works through any kubeconfig that may
// get pods/proxy: no NodePort, hostPort, exec or network route from the
// harness to the nodes is needed, and the API server's authentication and
// RBAC apply (deploy/rbac/).
//
// Imports: nvmeof and the standard library only, so that the stand-in of
// internal/standin and cmd/fiomig can serve it without pulling in
// client-go.
package agent
