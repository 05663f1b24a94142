package collectors

import (
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
	want := record.Line{T: 1.5, Kind: record.KindSample, Host: "capture",
		Controllers: []record.Controller{
			{Name: "nvme0", NQN: nqn, Address: "127.0.0.1:14420", State: "live", Transport: "tcp",
				Legs: []record.Leg{{NSID: 1, ANA: "optimized"}, {NSID: 2, ANA: "optimized"}}},
			{Name: "nvme1", NQN: nqn, Address: "10.0.0.1:14420", State: "live", Transport: "tcp", Legs: []record.Leg{}},
		},
		Subsystems: []record.Subsystem{{NQN: nqn, NSIDs: []int{1, 2}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("SampleLine (-want +got):\n%s", d)
	}
}
