//go:build linux

package nvmeof

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/procfs/sysfs"
)

// crossView is what both parsers can say about a tree: per controller its
// state, cntlid, transport, address and subsystem; per leg its NSID and ANA
// state; per subsystem its NQN and heads.
type crossView struct {
	Controllers map[string]crossCtrl
	Subsystems  map[string]crossSubsys
}

type crossCtrl struct {
	State, Cntlid, Transport string
	Address                  Address
	Subsystem                string
	Legs                     map[string]crossLeg // by leg name
}

type crossLeg struct{ NSID, ANA string }

type crossSubsys struct {
	NQN   string
	Heads []string
}

func ourView(h HostState) crossView {
	v := crossView{Controllers: map[string]crossCtrl{}, Subsystems: map[string]crossSubsys{}}
	for _, s := range h.Subsystems {
		sname := "nvme-subsys" + itoa(s.Instance)
		var heads []string
		for _, n := range s.Namespaces {
			if n.Controller == "" {
				heads = append(heads, n.Head)
			}
		}
		sort.Strings(heads)
		v.Subsystems[sname] = crossSubsys{NQN: s.NQN, Heads: heads}
		for _, c := range s.Controllers {
			cc := crossCtrl{State: string(c.State), Cntlid: itoa(c.Cntlid), Transport: c.Transport,
				Address: c.Address, Subsystem: sname, Legs: map[string]crossLeg{}}
			for _, l := range c.Legs {
				cc.Legs[l.Name] = crossLeg{NSID: itoa(l.NSID), ANA: string(l.ANA)}
			}
			v.Controllers[c.Name] = cc
		}
	}
	return v
}

func itoa(n int) string { return strconv.Itoa(n) }

func procfsView(t *testing.T, root string) crossView {
	t.Helper()
	pfs, err := sysfs.NewFS(root)
	if err != nil {
		t.Fatal(err)
	}
	class, err := pfs.NVMeClass()
	if err != nil {
		t.Fatalf("procfs NVMeClass: %v", err)
	}
	subs, err := pfs.NVMeSubsystemClass()
	if err != nil {
		t.Fatalf("procfs NVMeSubsystemClass: %v", err)
	}
	v := crossView{Controllers: map[string]crossCtrl{}, Subsystems: map[string]crossSubsys{}}
	for _, s := range subs {
		heads := append([]string(nil), s.Namespaces...)
		sort.Strings(heads)
		v.Subsystems[s.Name] = crossSubsys{NQN: s.NQN, Heads: heads}
		for _, c := range s.Controllers {
			d, ok := class[c.Name]
			if !ok {
				t.Errorf("procfs: %s lists %s, which class/nvme does not have", s.Name, c.Name)
				continue
			}
			// The address is parsed from procfs' raw string with our
			// parser; the comparison is of the fields, so a parser that
			// drops or misplaces one shows up as a diff.
			addr, err := ParseAddress(c.Address)
			if err != nil {
				t.Errorf("procfs address of %s %q: %v", c.Name, c.Address, err)
			}
			cc := crossCtrl{State: d.State, Cntlid: d.ControllerID, Transport: c.Transport, Address: addr,
				Subsystem: s.Name, Legs: map[string]crossLeg{}}
			if c.State != d.State {
				t.Errorf("procfs disagrees with itself on %s: %q vs %q", c.Name, c.State, d.State)
			}
			for _, ns := range d.Namespaces {
				cc.Legs[ns.Name] = crossLeg{NSID: ns.ID, ANA: ns.ANAState}
			}
			v.Controllers[c.Name] = cc
		}
	}
	return v
}

// addProcfsRequirements adds the files procfs v0.23.0 insists on but a tree
// may lack, and returns what it added: queue/logical_block_size (and size)
// of every namespace block device under a controller, model/serial/
// firmware_rev of a controller, model/serial/iopolicy of a subsystem. None
// of them is read by this package.
func addProcfsRequirements(t *testing.T, root string) []string {
	t.Helper()
	var added []string
	add := func(p, v string) {
		if _, err := os.Stat(p); err == nil {
			return
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		added = append(added, rel)
	}
	ctrls, _ := os.ReadDir(filepath.Join(root, "class/nvme"))
	for _, c := range ctrls {
		cd := filepath.Join(root, "class/nvme", c.Name())
		for _, f := range []string{"model", "serial", "firmware_rev"} {
			add(filepath.Join(cd, f), "x")
		}
		es, _ := os.ReadDir(cd)
		for _, e := range es {
			if _, _, _, ok := parseLegName(e.Name()); ok {
				add(filepath.Join(cd, e.Name(), "queue/logical_block_size"), "512")
				add(filepath.Join(cd, e.Name(), "size"), "0")
			}
		}
	}
	subs, _ := os.ReadDir(filepath.Join(root, "class/nvme-subsystem"))
	for _, s := range subs {
		for _, f := range []string{"model", "serial", "iopolicy"} {
			add(filepath.Join(root, "class/nvme-subsystem", s.Name(), f), "x")
		}
	}
	return added
}

// TestProcfsAgrees rebuilds each capture (and trees built for the rule
// tests) on disk in the shape of a real /sys and compares our controllers,
// states, addresses and per-leg ANA states with what the independent parser
// github.com/prometheus/procfs v0.23.0 sysfs reads from the same tree.
func TestProcfsAgrees(t *testing.T) {
	trees := map[string]fs.FS{
		"healthy.tsv":                     loadCaptureFile(t, "healthy.tsv"),
		"controller-not-contributing.tsv": loadCaptureFile(t, "controller-not-contributing.tsv"),
		"built: states, IPv6, head index != NSID, two subsystems": buildTree(t,
			tSubsys{inst: 3, nqn: nqnX, nsids: []int{7, 2}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: "traddr=fd00::1,trsvcid=4420,host_iface=eth1,src_addr=fd00::9", legs: []tLeg{{7, "optimized"}, {2, "non-optimized"}}},
				{inst: 4, state: "connecting", addr: tcp("10.0.0.2:4428"), legs: legs("inaccessible", 7, 2)},
				{inst: 5, state: "live", addr: tcp("10.0.0.3:4426")},
			}},
			tSubsys{inst: 1, nqn: nqnY, nsids: []int{1}, ctrls: []tCtrl{
				{inst: 2, state: "deleting (no IO)", addr: tcp("10.0.0.4:4420"), legs: []tLeg{{1, "persistent-loss"}}},
				{inst: 3, state: "resetting", addr: tcp("10.0.0.5:4420"), legs: []tLeg{{1, "change"}}},
			}}),
	}
	for name, fsys := range trees {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			h := rebuildOnDisk(t, fsys, root)
			if added := addProcfsRequirements(t, root); len(added) > 0 {
				kinds := map[string]bool{}
				for _, a := range added {
					k := filepath.Base(a)
					if filepath.Base(filepath.Dir(a)) == "queue" {
						k = "queue/" + k
					}
					kinds[k] = true
				}
				var ks []string
				for k := range kinds {
					ks = append(ks, k)
				}
				sort.Strings(ks)
				t.Logf("added %d file(s) procfs insists on and this tree lacks (nvmeof reads none of them): %s",
					len(added), strings.Join(ks, ", "))
			}
			disk, err := ReadSysfs(os.DirFS(root))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(h, disk); d != "" {
				t.Errorf("our reading of the on-disk tree differs from the in-memory one (-mem +disk):\n%s", d)
			}
			if len(disk.Controllers()) == 0 {
				t.Fatal("no controllers: nothing compared")
			}
			if d := cmp.Diff(procfsView(t, root), ourView(disk)); d != "" {
				t.Errorf("nvmeof and procfs disagree (-procfs +nvmeof):\n%s", d)
			}
		})
	}
}
