package nvmeof

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fiomig/fiomig/internal/tooltest"
	"github.com/google/go-cmp/cmp"
)

// linuxFixture writes a sysfs tree to a temp dir and a fake nvme-cli script
// that logs its arguments and acts on the tree: "disconnect -d nvmeN"
// removes the controller directory; "connect" runs connectScript.
type linuxFixture struct {
	root, log, bin string
}

func newLinuxFixture(t *testing.T, connectScript string, subs ...tSubsys) linuxFixture {
	t.Helper()
	tooltest.Command(t, "sh")
	dir := t.TempDir()
	f := linuxFixture{root: filepath.Join(dir, "sys"), log: filepath.Join(dir, "nvme.log"), bin: filepath.Join(dir, "nvme")}
	for p, v := range treeFiles(subs...) {
		full := filepath.Join(f.root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{"nvme0", "nvme1", "nvme2"} {
		if d := filepath.Join(f.root, "class/nvme", c); dirExists(d) {
			if err := os.WriteFile(filepath.Join(d, "delete_controller"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	script := fmt.Sprintf(`#!/bin/sh
echo "$*" >> %q
SYS=%q
case "$1" in
disconnect)
	if [ -e "$SYS/class/nvme/$3/busy" ]; then echo "Failed to disconnect: Device or resource busy" >&2; exit 1; fi
	rm -rf "$SYS/class/nvme/$3"; echo "NQN:x disconnected 1 controller(s)";;
connect)
%s
;;
esac
`, f.log, f.root, connectScript)
	if err := os.WriteFile(f.bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func (f linuxFixture) calls(t *testing.T) []string {
	b, err := os.ReadFile(f.log)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func twoCtrls() tSubsys {
	return tSubsys{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
		{inst: 0, state: "live", addr: tcp("10.0.0.1:4420"), legs: legs("optimized", 1)},
		{inst: 1, state: "live", addr: tcp("10.0.0.3:4420")},
		{inst: 2, state: "live", addr: tcp("10.0.0.9:4420"), host: hostB},
	}}
}

func TestLinuxHostReadAndNvmeCLIDisconnect(t *testing.T) {
	f := newLinuxFixture(t, `echo "connecting to device: nvme9"`, twoCtrls())
	h := &LinuxHost{SysRoot: f.root, HostNQN: hostA, NvmeBin: f.bin}
	st, err := h.Read()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"nvme0", "nvme1"}, names(st.Controllers())); d != "" {
		t.Errorf("Read keeps this host's controllers (-want +got):\n%s", d)
	}

	got, err := ReleaseMigrationPaths(h, nqnX, []Target{{Traddr: "10.0.0.3", Trsvcid: "4420"}})
	if err != nil || len(got) != 1 || got[0].Controller != "nvme1" {
		t.Fatalf("ReleaseMigrationPaths = %+v, %v; want nvme1", got, err)
	}
	if dirExists(filepath.Join(f.root, "class/nvme/nvme1")) {
		t.Error("nvme1 still in the tree after release")
	}
	// Already gone: no error, and nvme-cli is not even called.
	if err := h.Disconnect("nvme1"); err != nil {
		t.Errorf("Disconnect of a gone controller: %v", err)
	}
	if d := cmp.Diff([]string{"disconnect -d nvme1"}, f.calls(t)); d != "" {
		t.Errorf("nvme calls (-want +got):\n%s", d)
	}
	// A failing disconnect of a controller still there is an error.
	if err := os.WriteFile(filepath.Join(f.root, "class/nvme/nvme0/busy"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.Disconnect("nvme0"); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("failing disconnect: %v, want nvme-cli's message", err)
	}
	if err := h.Disconnect("../etc"); err == nil {
		t.Error("Disconnect of a non-controller name should fail")
	}
	if _, err := (&LinuxHost{SysRoot: filepath.Join(f.root, "missing")}).Read(); err == nil {
		t.Error("Read of a missing sysfs root should fail")
	}
}

func TestLinuxHostNvmeCLIConnect(t *testing.T) {
	f := newLinuxFixture(t, `echo "connecting to device: nvme9"`, twoCtrls())
	var warned []string
	h := &LinuxHost{SysRoot: f.root, HostNQN: hostA, NvmeBin: f.bin, Warn: func(m string) { warned = append(warned, m) }}
	tg := MigrationTarget(Target{Transport: "tcp", Traddr: "10.0.0.4", Trsvcid: "4420", NQN: nqnX, FastIOFailTmo: Int(0)}, true)
	name, err := h.Connect(tg)
	if err != nil || name != "nvme9" {
		t.Fatalf("Connect = %q, %v; want nvme9", name, err)
	}
	want := "connect -t tcp -a 10.0.0.4 -s 4420 -n " + nqnX + " --hostnqn=" + hostA + " --ctrl-loss-tmo=60 --fast_io_fail_tmo=0"
	if d := cmp.Diff([]string{want}, f.calls(t)); d != "" {
		t.Errorf("nvme calls (-want +got):\n%s", d)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "fast_io_fail_tmo=0") {
		t.Errorf("warnings = %q, want one about fast_io_fail_tmo=0", warned)
	}
	// Already connected: refused before nvme-cli runs.
	_, err = h.Connect(Target{Traddr: "10.0.0.1", Trsvcid: "4420", NQN: nqnX})
	if !errors.Is(err, ErrAlreadyConnected) || !strings.Contains(err.Error(), "nvme0") {
		t.Errorf("Connect over nvme0: %v, want ErrAlreadyConnected naming nvme0", err)
	}
	if n := len(f.calls(t)); n != 1 {
		t.Errorf("nvme-cli ran %d times, want 1", n)
	}
}

func TestLinuxHostNvmeCLIConnectOutputs(t *testing.T) {
	// nvme-cli says nothing usable: the controller is found in sysfs.
	mk := `mkdir -p "$SYS/class/nvme/nvme7"; cd "$SYS/class/nvme/nvme7"
echo connecting > state; echo tcp > transport; echo "traddr=10.0.0.4,trsvcid=4420" > address
echo ` + nqnX + ` > subsysnqn; echo ` + hostA + ` > hostnqn`
	f := newLinuxFixture(t, mk, twoCtrls())
	h := &LinuxHost{SysRoot: f.root, HostNQN: hostA, NvmeBin: f.bin}
	name, err := h.Connect(Target{Traddr: "10.0.0.4", Trsvcid: "4420", NQN: nqnX})
	if err != nil || name != "nvme7" {
		t.Errorf("Connect = %q, %v; want nvme7 found in sysfs", name, err)
	}

	// The kernel's EALREADY as nvme-cli reports it.
	f = newLinuxFixture(t, `echo "Failed to write to /dev/nvme-fabrics: Operation already in progress" >&2; exit 1`, twoCtrls())
	h = &LinuxHost{SysRoot: f.root, HostNQN: hostA, NvmeBin: f.bin}
	if _, err := h.Connect(Target{Traddr: "10.0.0.4", Trsvcid: "4420", NQN: nqnX}); !errors.Is(err, ErrAlreadyConnected) {
		t.Errorf("EALREADY from nvme-cli: %v, want ErrAlreadyConnected", err)
	}

	// Any other failure carries nvme-cli's message.
	f = newLinuxFixture(t, `echo "could not add new controller: Connection refused" >&2; exit 1`, twoCtrls())
	h = &LinuxHost{SysRoot: f.root, NvmeBin: f.bin}
	if _, err := h.Connect(Target{Traddr: "10.0.0.4", Trsvcid: "4420", NQN: nqnX}); err == nil || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("failed connect: %v", err)
	}
}

// fakeFabrics stands in for /dev/nvme-fabrics: it records the option line
// and answers like the kernel's nvmf_dev_show.
type fakeFabrics struct {
	written  bytes.Buffer
	reply    string
	writeErr error
}

func (f *fakeFabrics) Write(b []byte) (int, error) {
	if f.writeErr != nil {
		return 0, f.writeErr
	}
	return f.written.Write(b)
}
func (f *fakeFabrics) Read(b []byte) (int, error) { return copy(b, f.reply), nil }
func (f *fakeFabrics) Close() error               { return nil }

func TestLinuxHostKernelRoute(t *testing.T) {
	f := newLinuxFixture(t, `exit 99`, twoCtrls())
	dev := &fakeFabrics{reply: "instance=12,cntlid=3\n"}
	h := &LinuxHost{SysRoot: f.root, HostNQN: hostA, NvmeBin: f.bin, Route: RouteKernel,
		OpenFabrics: func(string) (io.ReadWriteCloser, error) { return dev, nil }}
	tg := Target{Traddr: "10.0.0.4", Trsvcid: "4420", NQN: nqnX, FastIOFailTmo: Int(-1), KeepAliveTmo: Int(0)}
	name, err := h.Connect(tg)
	if err != nil || name != "nvme12" {
		t.Fatalf("Connect = %q, %v; want nvme12", name, err)
	}
	want := "nqn=" + nqnX + ",transport=tcp,traddr=10.0.0.4,trsvcid=4420,hostnqn=" + hostA + ",fast_io_fail_tmo=-1,keep_alive_tmo=0"
	if got := dev.written.String(); got != want {
		t.Errorf("option line:\n got %s\nwant %s", got, want)
	}

	dev2 := &fakeFabrics{writeErr: &fs.PathError{Op: "write", Path: "/dev/nvme-fabrics", Err: syscall.EALREADY}}
	h.OpenFabrics = func(string) (io.ReadWriteCloser, error) { return dev2, nil }
	if _, err := h.Connect(tg); !errors.Is(err, ErrAlreadyConnected) {
		t.Errorf("EALREADY write: %v, want ErrAlreadyConnected", err)
	}

	// The default opener on a plain file: the line is written, and the
	// missing kernel reply is an error.
	devPath := filepath.Join(t.TempDir(), "nvme-fabrics")
	if err := os.WriteFile(devPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h2 := &LinuxHost{SysRoot: f.root, Route: RouteKernel, FabricsDev: devPath}
	if _, err := h2.Connect(tg); err == nil || !strings.Contains(err.Error(), "not instance=N") {
		t.Errorf("no reply: %v", err)
	}
	if b, _ := os.ReadFile(devPath); string(b) != strings.Replace(want, ",hostnqn="+hostA, "", 1) {
		t.Errorf("fabrics file holds %q", b)
	}

	// Disconnect writes delete_controller and never runs nvme-cli.
	if err := h.Disconnect("nvme1"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "class/nvme/nvme1/delete_controller")); string(b) != "1" {
		t.Errorf("delete_controller holds %q, want 1", b)
	}
	if err := h.Disconnect("nvme5"); err != nil {
		t.Errorf("gone controller: %v", err)
	}
	if calls := f.calls(t); calls != nil {
		t.Errorf("nvme-cli ran on the kernel route: %q", calls)
	}
}

func TestParseInstanceReply(t *testing.T) {
	for in, want := range map[string]string{"instance=0,cntlid=1\n": "nvme0", "cntlid=1,instance=31": "nvme31", "": "", "instance=-1": "", "instance=x": ""} {
		got, err := parseInstanceReply(in, "dev")
		if got != want || (err == nil) != (want != "") {
			t.Errorf("parseInstanceReply(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
