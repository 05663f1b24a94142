// Package kubenode runs a real Kubernetes cluster on this machine for
// tests: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
// and per node Debian's containerd (with runc and the CNI bridge plugin)
// and a kubelet, all v1.37.2 built from the Go module proxy (`make
// kube-bins kube-node-bins`) and started inside one network namespace it
// makes (Netns), with the images of `make images` imported into every
// containerd (no registry: pods use imagePullPolicy Never or
// IfNotPresent).
//
// Layout: node i (1-based) has IP 198.19.255.i on the namespace's end of
// a veth pair whose root end is 198.19.255.254, so the test process
// reaches the API server at https://198.19.255.1:6443; pods of node i get
// 198.18.i.0/24 on the node's own CNI bridge; no kube-proxy and no DNS
// run. Each kubelet has its own containerd (root, state, socket and runc
// state under BaseDir), its own root directory and cgroupRoot
// (/fiomig-kubenode-<i>), cgroupfs on this kernel's cgroup v1. The API
// server authenticates bearer tokens (admin, controller-manager,
// scheduler, and system:node:<name> per kubelet, so the Node authorizer
// and NodeRestriction apply) and serves a certificate from a CA made per
// cluster; it reaches kubelets anonymously (they listen only inside the
// namespace).
//
// One cluster per machine: the kubelets' cgroups, sysctls and
// /var/log/containers are machine-wide, so Start takes LockPath (flock)
// and waits for another cluster to finish. Everything a cluster makes is
// written to a ledger (LedgerPath) before it is made; Close tears it all
// down — kubelets, containers, shims, containerds, the control plane,
// mounts under BaseDir, pod and cluster network namespaces, cgroups, the
// kubelet's sysctls restored, BaseDir removed — and Start (or Janitor)
// does the same for a cluster whose process was killed. Leftovers lists
// what is still there, for tests.
//
// The research behind each setting (containerd 1.6 with kubelet 1.37,
// restrict_oom_score_adj, nsenter rather than `ip netns exec`, image GC
// off) is in docs/kube-tests.md.
//
// Imports: client-go, apimachinery, k8s.io/api, sigs.k8s.io/yaml and the
// standard library; it runs ip, nsenter, containerd and ctr. Only tests
// and suites/ use it.
package kubenode
