package standin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// The played CSI node plugin of simplyblock (csi.simplyblock.io), one per
// real kubelet. On a cluster its NodeStageVolume connects the host to the
// volume's subsystem (nvme connect with the CSI's host NQN) and mounts the
// namespace's block device; here the host's kernel and NVMe-oF paths are
// the simulator's, so NodePublishVolume bind-mounts the simulated volume's
// FUSE directory (a file fio.dat whose I/O follows the simulated host's
// multipath head, workload.Mount) at the kubelet's target path instead.
// It registers with the kubelet as a CSI driver does (the kubelet's plugin
// watcher: a registration socket in <root-dir>/plugins_registry/ answering
// GetInfo with the CSI endpoint, node-driver-registrar's part), and
// CSIDriver csi.simplyblock.io says no attach step is needed
// (attachRequired false [assumption: simplyblock's chart; a volume is
// attached by the node plugin's NVMe connect, not by a controller]).

// csiNode is one kubelet's plugin: its two gRPC servers.
type csiNode struct {
	s        *StandIn
	node     *node
	reg, csi *grpc.Server
	sockets  []string
}

// startCSI starts the plugin for node n whose kubelet's root directory is
// root, and makes sure CSIDriver csi.simplyblock.io exists.
func (s *StandIn) startCSI(n *node, root string) (*csiNode, error) {
	dir := filepath.Join(root, "plugins", Provisioner)
	regDir := filepath.Join(root, "plugins_registry")
	for _, d := range []string{dir, regDir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, err
		}
	}
	c := &csiNode{s: s, node: n, reg: grpc.NewServer(), csi: grpc.NewServer()}
	endpoint := filepath.Join(dir, "csi.sock")
	csi.RegisterIdentityServer(c.csi, csiIdentity{})
	csi.RegisterNodeServer(c.csi, csiNodeServer{c: c})
	registerapi.RegisterRegistrationServer(c.reg, csiRegistration{c: c, endpoint: endpoint})
	// The CSI socket first: the kubelet dials it as soon as it sees the
	// registration socket.
	for _, p := range []struct {
		path string
		srv  *grpc.Server
	}{{endpoint, c.csi}, {filepath.Join(regDir, Provisioner+"-reg.sock"), c.reg}} {
		os.Remove(p.path)
		l, err := net.Listen("unix", p.path)
		if err != nil {
			c.stop()
			return nil, fmt.Errorf("standin: CSI plugin of %s: %w", n.name, err)
		}
		c.sockets = append(c.sockets, p.path)
		go p.srv.Serve(l)
	}
	return c, nil
}

// stop stops both servers and removes the sockets (the kubelet then
// deregisters the driver).
func (c *csiNode) stop() {
	c.reg.Stop()
	c.csi.Stop()
	for _, p := range c.sockets {
		os.Remove(p)
	}
}

// ensureCSIDriver creates CSIDriver csi.simplyblock.io: no attach, no pod
// info on mount, persistent volumes only.
func (s *StandIn) ensureCSIDriver(ctx context.Context) error {
	no := false
	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: Provisioner},
		Spec: storagev1.CSIDriverSpec{AttachRequired: &no, PodInfoOnMount: &no,
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}}}
	if _, err := s.cs.StorageV1().CSIDrivers().Create(ctx, d, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("standin: CSIDriver %s: %w", Provisioner, err)
	}
	return nil
}

type csiRegistration struct {
	registerapi.UnimplementedRegistrationServer
	c        *csiNode
	endpoint string
}

// GetInfo implements the kubelet's plugin registration.
func (r csiRegistration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: Provisioner, Endpoint: r.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

// NotifyRegistrationStatus implements the kubelet's plugin registration.
func (r csiRegistration) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if !st.PluginRegistered {
		r.c.s.logf("CSI plugin on %s: the kubelet refused it: %s", r.c.node.name, st.Error)
	} else {
		r.c.s.logf("CSI plugin on %s registered with its kubelet", r.c.node.name)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

type csiIdentity struct {
	csi.UnimplementedIdentityServer
}

func (csiIdentity) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: Provisioner, VendorVersion: "fiomig-standin"}, nil
}

func (csiIdentity) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{}, nil
}

func (csiIdentity) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

type csiNodeServer struct {
	csi.UnimplementedNodeServer
	c *csiNode
}

// NodeGetInfo names the node (node_id = the Node's name).
func (n csiNodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: n.c.node.name}, nil
}

// NodeGetCapabilities: no stage step, no stats.
func (n csiNodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

// NodePublishVolume bind-mounts the simulated volume of the volume handle
// <cluster>:<pool>:<volume> at the target path. A volume attached to
// another host is refused (FailedPrecondition): the simulated volume is
// connected on its consumer host only.
func (n csiNodeServer) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	target := req.GetTargetPath()
	if target == "" || req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id and target path are required")
	}
	parts := strings.Split(req.GetVolumeId(), ":")
	if len(parts) != 3 {
		return nil, status.Errorf(codes.NotFound, "volume id %q is not <cluster>:<pool>:<volume>", req.GetVolumeId())
	}
	src, host, err := n.c.s.volumeDir(parts[2])
	if err != nil {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	if host != n.c.node.idx {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is attached to %s, not to %s", parts[2], n.c.s.nodes[host].name, n.c.node.name)
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if mounted(target) {
		return &csi.NodePublishVolumeResponse{}, nil
	}
	flags := uintptr(syscall.MS_BIND)
	if err := syscall.Mount(src, target, "", flags, ""); err != nil {
		return nil, status.Errorf(codes.Internal, "bind %s at %s: %v", src, target, err)
	}
	if req.GetReadonly() {
		if err := syscall.Mount("", target, "", flags|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			syscall.Unmount(target, 0)
			return nil, status.Errorf(codes.Internal, "read-only %s: %v", target, err)
		}
	}
	n.c.s.logf("CSI plugin on %s: volume %s published at %s", n.c.node.name, parts[2], target)
	return &csi.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume unmounts the target path and removes it; a target
// that is not mounted or not there is done.
func (n csiNodeServer) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	target := req.GetTargetPath()
	if target == "" {
		return nil, status.Error(codes.InvalidArgument, "target path is required")
	}
	if mounted(target) {
		if err := syscall.Unmount(target, 0); err != nil && !errors.Is(err, syscall.EINVAL) {
			if err := syscall.Unmount(target, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
				return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
			}
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// mounted reports whether dir is a mount point (its device differs from
// its parent's, or it is a bind mount of the same file system: compared
// by /proc/self/mountinfo).
func mounted(dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	clean := filepath.Clean(dir)
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && f[4] == clean {
			return true
		}
	}
	return false
}
