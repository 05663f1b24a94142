// Package kubetest starts a real Kubernetes control plane for tests: etcd
// and kube-apiserver, built from the Go module proxy by `make kube-bins`
// (build-bins.sh; docs/sources.md §11) and cached under the repo's
// gitignored .cache/kube/bin, driven by controller-runtime's envtest.
//
// The API server runs on loopback with --authorization-mode=RBAC (so the
// RBAC manifests are really enforced), --endpoint-reconciler-type=none
// (required with a loopback advertise address) and the ServiceAccount
// admission plugin off (no token controller runs). Start installs the CRDs
// of deploy/crds/ and waits until they are established. Env.Config is an
// admin (system:masters) rest.Config, Env.Kubeconfig the same as a file;
// Impersonate and ServiceAccount give configs acting as a user or a
// ServiceAccount, for RBAC tests. No kubelet, scheduler or
// controller-manager runs: internal/standin plays those.
//
// envtest starts etcd and kube-apiserver in their own process group, so a
// test killed by its timeout leaves them running: Start first kills such
// orphans of the same binaries (their parent is no longer a *.test binary)
// and removes their envtest directories.
//
// When the binaries are missing, Start applies internal/tooltest's rule:
// the test is skipped with the reason, or fails under FIOMIG_REQUIRE_TOOLS=1.
// FIOMIG_KUBE_BINS names another directory holding etcd and kube-apiserver.
//
// Imports: the standard library, internal/tooltest, client-go and
// controller-runtime's envtest. Only _test.go files import it.
package kubetest
