package kubetest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/fiomig/fiomig/internal/tooltest"
)

// BinsEnv is the environment variable naming a directory with the etcd and
// kube-apiserver binaries (default: <repo>/.cache/kube/bin).
const BinsEnv = "FIOMIG_KUBE_BINS"

// Versions the cached binaries are built at (build-bins.sh).
const (
	KubeVersion = "v1.37.2"
	EtcdVersion = "3.6.16"
)

// RepoRoot is the directory of the fiomig module's go.mod, found by walking
// up from the working directory (a test runs in its package directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/fiomig/fiomig\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("kubetest: no go.mod of module github.com/fiomig/fiomig above the working directory")
		}
		dir = parent
	}
}

// BinDir is the directory holding etcd and kube-apiserver: $FIOMIG_KUBE_BINS,
// or <repo>/.cache/kube/bin. The error says how to build them when either
// is missing.
func BinDir() (string, error) {
	dir := os.Getenv(BinsEnv)
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, ".cache", "kube", "bin")
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("kubetest: %s not found in %s (build it with `make kube-bins`, ~6 min once; or set %s)", name, dir, BinsEnv)
		}
	}
	return dir, nil
}

// Env is a running control plane.
type Env struct {
	// Config is an admin (system:masters) client config.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for the same admin user.
	Kubeconfig string
	// CRDDir is the directory whose CRDs were installed (deploy/crds).
	CRDDir string

	env      *envtest.Environment
	logPath  string
	stopOnce sync.Once
	stopErr  error
}

// Start starts etcd and kube-apiserver with RBAC on loopback, installs the
// CRDs of deploy/crds/ and registers Stop with tb.Cleanup. Startup takes
// about 3–5 s. Missing binaries skip tb (or fail it under
// FIOMIG_REQUIRE_TOOLS=1); any other startup error fails it.
func Start(tb testing.TB) *Env {
	tb.Helper()
	dir, err := BinDir()
	tooltest.Require(tb, err)
	if err != nil {
		return nil
	}
	e, err := StartIn(dir, tb.TempDir())
	if err != nil {
		tb.Fatalf("kubetest: %v", err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("kubetest: control plane log %s:\n%s", e.logPath, tail(e.logPath, 40))
		}
		if err := e.Stop(); err != nil {
			tb.Errorf("kubetest: stop: %v", err)
		}
	})
	return e
}

// StartIn starts a control plane from the binaries in binDir, writing its
// kubeconfig and log under workDir. The caller must call Stop.
func StartIn(binDir, workDir string) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	e := &Env{CRDDir: filepath.Join(root, "deploy", "crds"), logPath: filepath.Join(workDir, "control-plane.log")}
	logf, err := os.Create(e.logPath)
	if err != nil {
		return nil, err
	}
	if reaped := reapOrphans(binDir); len(reaped) > 0 {
		fmt.Fprintf(logf, "kubetest: removed what killed tests left: %s\n", strings.Join(reaped, ", "))
	}
	defer logf.Close() // the processes keep their own descriptors
	no := false
	e.env = &envtest.Environment{
		BinaryAssetsDirectory:    binDir,
		UseExistingCluster:       &no,
		CRDDirectoryPaths:        []string{e.CRDDir},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	e.env.ControlPlane.Etcd = &envtest.Etcd{Out: logf, Err: logf}
	api := e.env.ControlPlane.GetAPIServer()
	api.Out, api.Err = logf, logf
	// The API server's defaults (envtest): secure port on 127.0.0.1, client
	// certificate users, --authorization-mode=RBAC, ServiceAccount admission
	// off. With a loopback advertise address the endpoint reconciler refuses
	// to start (docs/sources.md §11).
	api.Configure().Set("authorization-mode", "RBAC")
	api.Configure().Set("endpoint-reconciler-type", "none")
	// Kubelets (internal/standin's, or a real one) are reached at the
	// Node's InternalIP, as kubeadm clusters do; a Node's Hostname address
	// does not resolve here.
	api.Configure().Set("kubelet-preferred-address-types", "InternalIP")
	cfg, err := e.env.Start()
	if err != nil {
		_ = e.env.Stop()
		return nil, fmt.Errorf("start etcd + kube-apiserver from %s: %w\n%s", binDir, err, tail(e.logPath, 40))
	}
	e.Config = cfg
	e.Kubeconfig = filepath.Join(workDir, "kubeconfig")
	if err := os.WriteFile(e.Kubeconfig, e.env.KubeConfig, 0o600); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

// Stop stops kube-apiserver and etcd and removes their data and certificate
// directories; it is idempotent.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() { e.stopErr = e.env.Stop() })
	return e.stopErr
}

// Impersonate returns a copy of the admin config that acts as user with
// groups (system:authenticated is added by the API server).
func (e *Env) Impersonate(user string, groups ...string) *rest.Config {
	c := rest.CopyConfig(e.Config)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return c
}

// ServiceAccount returns a config that acts as ServiceAccount ns/name, with
// the groups the API server gives a ServiceAccount token
// (system:serviceaccounts, system:serviceaccounts:<ns>, system:authenticated).
func (e *Env) ServiceAccount(ns, name string) *rest.Config {
	return e.Impersonate("system:serviceaccount:"+ns+":"+name,
		"system:serviceaccounts", "system:serviceaccounts:"+ns, "system:authenticated")
}

// APIServerVersion runs the cached kube-apiserver with --version.
func APIServerVersion(binDir string) (string, error) {
	out, err := exec.Command(filepath.Join(binDir, "kube-apiserver"), "--version").Output()
	return strings.TrimSpace(string(out)), err
}

// tail is the last n lines of the file at path (a diagnostic; "" on error).
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
