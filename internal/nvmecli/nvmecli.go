package nvmecli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
)

// Host is one element of "nvme list-subsys -o json" (nvme-cli 2.x): a
// host NQN and its subsystems with their paths (controllers).
type Host struct {
	HostNQN, HostID string
	Subsystems      []struct {
		Name, NQN string
		Paths     []struct{ Name, Transport, Address, State string }
	}
}

// Available says why ListSubsys cannot run here, or nil: it needs nvme-cli
// (nvme), unshare(1) and root, for the private mount namespace.
func Available() error {
	if _, err := exec.LookPath("nvme"); err != nil {
		return err
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("running as uid %d: the private mount namespace needs root", os.Geteuid())
	}
	return nil
}

// ListSubsys runs "nvme list-subsys -o json" with the tree under dir as
// /sys: a tmpfs mounted on /sys in a private mount namespace (unshare -m),
// dir copied into it. The error carries nvme-cli's stderr.
func ListSubsys(dir string) ([]Host, error) {
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs sysfs-tree /sys && cp -a "$1"/. /sys/ && exec nvme list-subsys -o json`, "sh", dir)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return nil, fmt.Errorf("nvme list-subsys in a private mount namespace: %w: %s", err, stderr)
	}
	var hosts []Host
	if err := json.Unmarshal(out, &hosts); err != nil {
		return nil, fmt.Errorf("nvme list-subsys -o json: %w\n%s", err, out)
	}
	return hosts, nil
}
