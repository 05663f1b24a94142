package standin

import (
	"io/fs"
	"path"
	"strings"
	"testing/fstest"
)

// hostFS is a simulated host's sysfs tree as simplyblock's CSI leaves it:
// every controller's hostnqn attribute that the simulator fills with its
// own host NQN (simNQN) reads csiNQN, the NQN the CSI node plugin connects
// with, nqn.2014-08.io.simplyblock:uuid:<Node metadata.uid>
// (simplyblock-operator csi-driver/pkg/spdk/nodeserver.go NodeStageVolume;
// sbcli utils/nvme.py puts it into every connect line as --hostnqn). That
// the kernel's controllers then carry it is an [inference] from that code
// chain (docs/kube.md gives the command that checks it). It is part of the
// played simplyblock, not of the kubelet.
//
// With addrs (beside real kubelets), every address in a controller's
// address attribute (traddr, host_traddr, src_addr) that is a simulated
// node's address reads that node's data address in the nodes' network
// namespace, the one the control plane hands out.
type hostFS struct {
	fs.FS
	simNQN, csiNQN string
	addrs          map[string]string
}

// Open implements fs.FS.
func (h hostFS) Open(name string) (fs.File, error) {
	base := path.Base(name)
	if base != "hostnqn" && (base != "address" || len(h.addrs) == 0) {
		return h.FS.Open(name)
	}
	b, err := fs.ReadFile(h.FS, name)
	if err != nil {
		return nil, err
	}
	switch {
	case base == "hostnqn" && strings.TrimSpace(string(b)) == h.simNQN:
		b = []byte(h.csiNQN + "\n")
	case base == "address":
		b = []byte(translateAddress(string(b), h.addrs))
	}
	return fstest.MapFS{name: &fstest.MapFile{Data: b, Mode: 0o444}}.Open(name)
}

// Lstat implements fs.ReadLinkFS.
func (h hostFS) Lstat(name string) (fs.FileInfo, error) { return fs.Lstat(h.FS, name) }

// ReadLink implements fs.ReadLinkFS.
func (h hostFS) ReadLink(name string) (string, error) { return fs.ReadLink(h.FS, name) }

// ReadDir implements fs.ReadDirFS.
func (h hostFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(h.FS, name) }

// translateAddress rewrites the values of a controller's address
// attribute ("traddr=A,trsvcid=P[,host_traddr=H][,src_addr=S]") that addrs
// maps.
func translateAddress(v string, addrs map[string]string) string {
	nl := strings.HasSuffix(v, "\n")
	parts := strings.Split(strings.TrimSuffix(v, "\n"), ",")
	for i, p := range parts {
		if k, val, ok := strings.Cut(p, "="); ok {
			if to, ok := addrs[val]; ok {
				parts[i] = k + "=" + to
			}
		}
	}
	out := strings.Join(parts, ",")
	if nl {
		out += "\n"
	}
	return out
}
