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
type hostFS struct {
	fs.FS
	simNQN, csiNQN string
}

// Open implements fs.FS.
func (h hostFS) Open(name string) (fs.File, error) {
	if path.Base(name) != "hostnqn" {
		return h.FS.Open(name)
	}
	b, err := fs.ReadFile(h.FS, name)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(b)) == h.simNQN {
		b = []byte(h.csiNQN + "\n")
	}
	return fstest.MapFS{name: &fstest.MapFile{Data: b, Mode: 0o444}}.Open(name)
}
