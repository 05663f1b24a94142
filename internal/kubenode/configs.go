package kubenode

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// writeKubeconfig writes a kubeconfig for server with the cluster CA and a
// bearer token.
func writeKubeconfig(path, server string, caPEM []byte, user, tok string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubenode"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: tok}
	cfg.Contexts["kubenode"] = &clientcmdapi.Context{Cluster: "kubenode", AuthInfo: user}
	cfg.CurrentContext = "kubenode"
	return clientcmd.WriteToFile(*cfg, path)
}

// tokenUser is one line of the API server's --token-auth-file.
type tokenUser struct {
	token, user string
	groups      []string
}

func writeTokens(path string, users []tokenUser) error {
	var b strings.Builder
	for i, u := range users {
		fmt.Fprintf(&b, "%s,%s,%d,\"%s\"\n", u.token, u.user, 1000+i, strings.Join(u.groups, ","))
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// containerdConfig is one node's containerd 1.6 configuration (version 2):
// its own root, state, socket and runc state; the CRI plugin with the
// node's CNI configuration, sandbox image, cgroupfs, and
// restrict_oom_score_adj (root here may not lower oom_score_adj).
func containerdConfig(n *nodeDirs, sandboxImage string) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
`, n.containerdRoot, n.containerdState, n.socket, n.opt, sandboxImage, n.runcRoot, n.cniConf)
}

// cniConfig is one node's CNI network: a bridge (its own, in the cluster's
// network namespace) with host-local addresses from the node's pod CIDR,
// kept in the node's directory.
func cniConfig(name, bridge, podCIDR, ipamDir string) ([]byte, error) {
	return json.MarshalIndent(map[string]any{
		"cniVersion": "0.4.0",
		"name":       name,
		"plugins": []any{map[string]any{
			"type": "bridge", "bridge": bridge, "isGateway": true, "ipMasq": false, "hairpinMode": true,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  [][]map[string]string{{{"subnet": podCIDR}}},
				"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
				"dataDir": ipamDir,
			},
		}},
	}, "", "  ")
}

// kubeletConfig is one node's KubeletConfiguration (research figures:
// cgroupfs because containerd 1.6 lacks the CRI RuntimeConfig call;
// failCgroupV1 false for this kernel's cgroup v1; image GC off because a
// removed image cannot be pulled back; eviction thresholds low so that a
// loaded test machine evicts nothing). The API server reaches it
// anonymously (authorization AlwaysAllow): it listens only on the node IP
// inside the cluster's network namespace.
func kubeletConfig(n *nodeDirs, ip string) ([]byte, error) {
	return yaml.Marshal(map[string]any{
		"apiVersion":                    "kubelet.config.k8s.io/v1beta1",
		"kind":                          "KubeletConfiguration",
		"address":                       ip,
		"port":                          10250,
		"readOnlyPort":                  0,
		"healthzBindAddress":            ip,
		"healthzPort":                   10248,
		"authentication":                map[string]any{"anonymous": map[string]any{"enabled": true}, "webhook": map[string]any{"enabled": false}},
		"authorization":                 map[string]any{"mode": "AlwaysAllow"},
		"cgroupDriver":                  "cgroupfs",
		"cgroupRoot":                    n.cgroupRoot,
		"cgroupsPerQOS":                 true,
		"failCgroupV1":                  false,
		"failSwapOn":                    false,
		"containerRuntimeEndpoint":      "unix://" + n.socket,
		"resolvConf":                    "",
		"clusterDomain":                 "cluster.local",
		"imageGCHighThresholdPercent":   100,
		"imageGCLowThresholdPercent":    99,
		"evictionHard":                  map[string]string{"memory.available": "1%", "nodefs.available": "1%", "nodefs.inodesFree": "1%", "imagefs.available": "1%"},
		"podLogsDir":                    n.podLogs,
		"volumePluginDir":               n.volumePlugins,
		"serializeImagePulls":           false,
		"registerNode":                  true,
		"maxPods":                       64,
		"nodeStatusUpdateFrequency":     "4s",
		"syncFrequency":                 "10s",
		"fileCheckFrequency":            "10s",
		"localStorageCapacityIsolation": true,
		"protectKernelDefaults":         false,
	})
}

// nodeDirs are one node's paths, all under its directory.
type nodeDirs struct {
	dir, containerdRoot, containerdState, socket, opt, runcRoot, cniConf, ipam,
	kubeletRoot, podLogs, volumePlugins, certs, cgroupRoot string
}

func newNodeDirs(base string, i int) *nodeDirs {
	d := filepath.Join(base, fmt.Sprintf("n%d", i))
	return &nodeDirs{dir: d,
		containerdRoot: filepath.Join(d, "containerd"), containerdState: filepath.Join(d, "containerd-state"),
		socket: filepath.Join(d, "containerd.sock"), opt: filepath.Join(d, "opt"), runcRoot: filepath.Join(d, "runc"),
		cniConf: filepath.Join(d, "net.d"), ipam: filepath.Join(d, "ipam"), kubeletRoot: filepath.Join(d, "kubelet"),
		podLogs: filepath.Join(d, "pod-logs"), volumePlugins: filepath.Join(d, "volume-plugins"),
		certs: filepath.Join(d, "kubelet-pki"), cgroupRoot: fmt.Sprintf("/%s%d", cgroupPrefix, i)}
}
