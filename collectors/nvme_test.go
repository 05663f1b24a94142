package collectors

import (
	"io/fs"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// TestSampleLineFromCapture renders the real controller-not-contributing
// capture as a sample line: nvme0 (127.0.0.1:14420) with legs to both
// namespaces, nvme1 (10.0.0.1:14420) live with no leg.
func TestSampleLineFromCapture(t *testing.T) {
	f, err := os.Open("../nvmeof/testdata/sysfs-captures/controller-not-contributing.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fsys, err := nvmeof.LoadCapture(f, f.Name())
	if err != nil {
		t.Fatal(err)
	}
	hs, err := nvmeof.ReadHost(fsys, "")
	if err != nil {
		t.Fatal(err)
	}
	got := SampleLine(1.5, "capture", hs)
	const nqn = "nqn.2023-02.io.simplyblock:nvmetlab:lvol:00000001-0000-4000-8000-000000000001"
	tmo := 600 // the capture's ctrl_loss_tmo (the kernel default)
	want := record.Line{T: 1.5, Kind: record.KindSample, Host: "capture",
		Controllers: []record.Controller{
			{Name: "nvme0", NQN: nqn, Address: "127.0.0.1:14420", State: "live", Transport: "tcp", CtrlLossTmo: &tmo,
				Legs: []record.Leg{{NSID: 1, ANA: "optimized"}, {NSID: 2, ANA: "optimized"}}},
			{Name: "nvme1", NQN: nqn, Address: "10.0.0.1:14420", State: "live", Transport: "tcp", CtrlLossTmo: &tmo, Legs: []record.Leg{}},
		},
		Subsystems: []record.Subsystem{{NQN: nqn, NSIDs: []int{1, 2}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("SampleLine (-want +got):\n%s", d)
	}
}

// versionedHost is a backend.Host whose tree changes only when version does.
type versionedHost struct {
	fsys    fs.FS
	version uint64
	reads   int
}

func (h *versionedHost) Name() string    { return "h1" }
func (h *versionedHost) HostNQN() string { return "" }
func (h *versionedHost) Sysfs() fs.FS    { h.reads++; return h.fsys }
func (h *versionedHost) Version() uint64 { return h.version }

func TestNVMeRereadsOnlyChangedHosts(t *testing.T) {
	f, err := os.Open("../nvmeof/testdata/sysfs-captures/healthy.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fsys, err := nvmeof.LoadCapture(f, f.Name())
	if err != nil {
		t.Fatal(err)
	}
	h := &versionedHost{fsys: fsys}
	c := &NVMe{}
	first, err := c.Collect(1, h)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Collect(2, h)
	if err != nil {
		t.Fatal(err)
	}
	if h.reads != 1 {
		t.Errorf("unchanged version: sysfs read %d times, want 1", h.reads)
	}
	if again[0].T != 2 {
		t.Errorf("reused sample has t=%v, want 2", again[0].T)
	}
	first[0].T = 2
	if d := cmp.Diff(first, again); d != "" {
		t.Errorf("reused sample differs (-first +again):\n%s", d)
	}
	h.version++
	if _, err := c.Collect(3, h); err != nil {
		t.Fatal(err)
	}
	if h.reads != 2 {
		t.Errorf("changed version: sysfs read %d times in all, want 2", h.reads)
	}
}
