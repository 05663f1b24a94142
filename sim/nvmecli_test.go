package sim

import (
	"sort"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/internal/nvmecli"
	"github.com/fiomig/fiomig/internal/tooltest"
	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

type cliPath struct {
	Subsystem, NQN, Name, Transport, State string
	Address                                nvmeof.Address
}

// TestNvmeCliListSubsys materialises a simulated host's sysfs tree on disk
// and checks that the real `nvme list-subsys -o json` (in a private mount
// namespace with a tmpfs /sys holding the tree) lists the same
// controllers, states and addresses as nvmeof reads from the tree.
func TestNvmeCliListSubsys(t *testing.T) {
	tooltest.Require(t, nvmecli.Available()) // nvme-cli, unshare(1) and root for the private mount namespace

	w := newWorld(t, Config{Seed: 8, Model: record.Model{Volumes: 4, NamespacesPerVolume: 2, ConsumersPerVolume: 2}})
	advance(t, w, 1)
	// One connecting controller (its listener gone) among the live ones.
	v := w.Volumes()[0]
	ep := w.listenerEndpoints(v.NQN, v.LVS)[2]
	ts, _ := ep.node.Subsystem(v.NQN)
	ts.removeListener(ep.port)
	advance(t, w, 3)

	h := w.hosts[v.Consumers[0]]
	dir := t.TempDir()
	if err := Materialize(h.Sysfs(), dir); err != nil {
		t.Fatal(err)
	}
	hosts, err := nvmecli.ListSubsys(dir)
	if err != nil {
		tooltest.Require(t, err)
	}
	var got []cliPath
	for _, hh := range hosts {
		if hh.HostNQN != h.NQN {
			t.Errorf("nvme-cli host %q, want %q", hh.HostNQN, h.NQN)
		}
		for _, s := range hh.Subsystems {
			for _, p := range s.Paths {
				a, err := nvmeof.ParseAddress(p.Address)
				if err != nil {
					t.Fatalf("nvme-cli address %q: %v", p.Address, err)
				}
				got = append(got, cliPath{s.Name, s.NQN, p.Name, p.Transport, p.State, a})
			}
		}
	}
	st, err := nvmeof.ReadHost(h.Sysfs(), h.NQN)
	if err != nil {
		t.Fatal(err)
	}
	var want []cliPath
	connecting := 0
	for _, s := range st.Subsystems {
		for _, c := range s.Controllers {
			want = append(want, cliPath{"nvme-subsys" + itoa(s.Instance), s.NQN, c.Name, c.Transport, string(c.State), c.Address})
			if c.State == nvmeof.StateConnecting {
				connecting++
			}
		}
	}
	if connecting == 0 || len(want) < 6 {
		t.Fatalf("test setup: %d controllers, %d connecting", len(want), connecting)
	}
	less := func(a, b cliPath) bool { return a.Name < b.Name }
	sort.Slice(got, func(i, j int) bool { return less(got[i], got[j]) })
	sort.Slice(want, func(i, j int) bool { return less(want[i], want[j]) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nvme list-subsys differs from nvmeof.ReadHost (-nvmeof +nvme-cli):\n%s", diff)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
