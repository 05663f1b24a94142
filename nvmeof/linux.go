package nvmeof

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// Route is how a LinuxHost connects and disconnects controllers.
type Route string

const (
	// RouteNvmeCLI runs "nvme connect ..." (Target.ConnectArgs) and
	// "nvme disconnect -d nvmeN". nvme-cli drops --fast_io_fail_tmo <= 0
	// and --keep-alive-tmo 0; LinuxHost.Warn hears about it.
	RouteNvmeCLI Route = "nvme-cli"
	// RouteKernel writes the option line (Target.FabricsOptions) to
	// /dev/nvme-fabrics and reads back "instance=N,cntlid=M"; it
	// disconnects by writing 1 to class/nvme/nvmeN/delete_controller. It
	// carries every option value.
	RouteKernel Route = "kernel"
)

// LinuxHost is a real Linux host's initiator. The zero value reads /sys,
// keeps every controller, and uses nvme-cli from $PATH. Tests point SysRoot,
// NvmeBin and FabricsDev at a temporary tree.
type LinuxHost struct {
	SysRoot    string // sysfs mount; "" = "/sys"
	HostNQN    string // this host's NQN; "" = every controller (and Connect leaves --hostnqn to nvme-cli)
	NvmeBin    string // nvme-cli binary; "" = "nvme"
	FabricsDev string // fabrics control device; "" = "/dev/nvme-fabrics"
	Route      Route  // "" = RouteNvmeCLI
	// Warn receives a message for every connect option that cannot travel
	// by the chosen route; nil discards them.
	Warn func(msg string)
	// OpenFabrics opens FabricsDev read-write; nil = os.OpenFile. Tests
	// replace it, since only the kernel answers a write with "instance=".
	OpenFabrics func(path string) (io.ReadWriteCloser, error)
}

var _ Host = (*LinuxHost)(nil)

func (l *LinuxHost) sysRoot() string    { return orDefault(l.SysRoot, "/sys") }
func (l *LinuxHost) nvmeBin() string    { return orDefault(l.NvmeBin, "nvme") }
func (l *LinuxHost) fabricsDev() string { return orDefault(l.FabricsDev, "/dev/nvme-fabrics") }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Read reads SysRoot with ReadHost(HostNQN). Errors: SysRoot is not a
// directory, or ReadSysfs fails.
func (l *LinuxHost) Read() (HostState, error) {
	root := l.sysRoot()
	fi, err := os.Stat(root)
	if err != nil {
		return HostState{}, fmt.Errorf("nvmeof: sysfs root: %w", err)
	}
	if !fi.IsDir() {
		return HostState{}, fmt.Errorf("nvmeof: sysfs root %s is not a directory", root)
	}
	return ReadHost(newSysDir(root), l.HostNQN)
}

var deviceRE = regexp.MustCompile(`\bnvme[0-9]+\b`)

// Connect connects t (with HostNQN filled in from l when t has none). It
// first reads the host and refuses with ErrAlreadyConnected when a
// controller with the same key exists (AlreadyConnected), as the kernel
// would (EALREADY); an EALREADY from the kernel or nvme-cli's report of it
// maps to ErrAlreadyConnected too. It returns the new controller's name:
// from nvme-cli's output ("connecting to device: nvme7" or JSON
// {"device":"nvme7"}), from the fabrics device's "instance=7" reply, or,
// when the output names none, from re-reading sysfs.
func (l *LinuxHost) Connect(t Target) (string, error) {
	if t.HostNQN == "" {
		t.HostNQN = l.HostNQN
	}
	st, err := l.Read()
	if err != nil {
		return "", err
	}
	if c, ok := AlreadyConnected(st, t); ok {
		return "", fmt.Errorf("connect %s at %s: %w by %s", t.NQN, endpointOf(t), ErrAlreadyConnected, c.Name)
	}
	if l.Route == RouteKernel {
		return l.connectKernel(t)
	}
	args, warns := t.ConnectArgs()
	for _, w := range warns {
		if l.Warn != nil {
			l.Warn(w)
		}
	}
	out, err := exec.Command(l.nvmeBin(), args...).CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if strings.Contains(msg, "already in progress") || strings.Contains(msg, "already connected") {
			return "", fmt.Errorf("connect %s at %s: %w: %s", t.NQN, endpointOf(t), ErrAlreadyConnected, msg)
		}
		return "", fmt.Errorf("%s %s: %w: %s", l.nvmeBin(), strings.Join(args, " "), err, msg)
	}
	if m := deviceRE.FindString(string(out)); m != "" {
		return m, nil
	}
	st, err = l.Read()
	if err != nil {
		return "", err
	}
	if c, ok := AlreadyConnected(st, t); ok {
		return c.Name, nil
	}
	return "", fmt.Errorf("%s connect: succeeded but no controller for %s at %s appeared: %q",
		l.nvmeBin(), t.NQN, endpointOf(t), strings.TrimSpace(string(out)))
}

func endpointOf(t Target) string {
	if e := t.Endpoint(); e != "" {
		return e
	}
	return t.Traddr + ":" + t.Trsvcid
}

func (l *LinuxHost) connectKernel(t Target) (string, error) {
	open := l.OpenFabrics
	if open == nil {
		open = func(p string) (io.ReadWriteCloser, error) { return os.OpenFile(p, os.O_RDWR, 0) }
	}
	dev := l.fabricsDev()
	f, err := open(dev)
	if err != nil {
		return "", fmt.Errorf("connect: open %s: %w", dev, err)
	}
	defer f.Close()
	line := t.FabricsOptions()
	if _, err := io.WriteString(f, line); err != nil {
		if errors.Is(err, syscall.EALREADY) {
			return "", fmt.Errorf("connect %s at %s: %w (%v)", t.NQN, endpointOf(t), ErrAlreadyConnected, err)
		}
		return "", fmt.Errorf("connect: write %q to %s: %w", line, dev, err)
	}
	buf := make([]byte, 256)
	n, err := f.Read(buf)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("connect: read reply from %s: %w", dev, err)
	}
	return parseInstanceReply(string(buf[:n]), dev)
}

// parseInstanceReply reads the fabrics device's reply "instance=N,cntlid=M"
// (kernel fabrics.c nvmf_dev_show) into "nvmeN".
func parseInstanceReply(s, dev string) (string, error) {
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if v, ok := strings.CutPrefix(part, "instance="); ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				return "nvme" + strconv.Itoa(n), nil
			}
		}
	}
	return "", fmt.Errorf("connect: %s replied %q, not instance=N", dev, strings.TrimSpace(s))
}

// Disconnect deletes one controller: "nvme disconnect -d nvmeN" on
// RouteNvmeCLI, writing "1" to class/nvme/nvmeN/delete_controller on
// RouteKernel. A controller whose directory is missing (before or after a
// failed attempt) is already gone: nil. Errors: a name that is not nvmeN,
// the command or write failing while the controller is still there.
func (l *LinuxHost) Disconnect(name string) error {
	if _, ok := parseCtrlName(name); !ok {
		return fmt.Errorf("disconnect: %q is not a controller name (nvmeN)", name)
	}
	dir := filepath.Join(l.sysRoot(), classNvme, name)
	gone := func() bool {
		_, err := os.Stat(dir)
		return errors.Is(err, fs.ErrNotExist)
	}
	if gone() {
		return nil
	}
	var err error
	if l.Route == RouteKernel {
		err = writeAttr(filepath.Join(dir, "delete_controller"), "1")
	} else {
		var out []byte
		out, err = exec.Command(l.nvmeBin(), "disconnect", "-d", name).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%s disconnect -d %s: %w: %s", l.nvmeBin(), name, err, strings.TrimSpace(string(out)))
		}
	}
	if err != nil && !gone() {
		return err
	}
	return nil
}

// writeAttr writes value to an existing sysfs attribute (never creating it).
func writeAttr(p, value string) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(value); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
