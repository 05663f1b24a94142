package sim

import (
	"io/fs"
	"maps"
	"testing"

	"github.com/fiomig/fiomig/backend"
)

// treeFiles reads every file and symlink of a host's tree (the target of a
// symlink, the contents of a file that opens; write-only files count by
// name).
func treeFiles(t *testing.T, h backend.Host) map[string]string {
	t.Helper()
	fsys := h.Sysfs()
	out := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if rl, ok := fsys.(fs.ReadLinkFS); ok && d.Type()&fs.ModeSymlink != 0 {
			target, err := rl.ReadLink(p)
			if err != nil {
				return err
			}
			out[p] = "-> " + target
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			out[p] = "unreadable"
			return nil
		}
		out[p] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVersionMovesWithTheTree: a sim host's Version stays put only while
// its sysfs tree is identical, file for file, through migrations of the
// incident's model (cancels, pods, the lvol monitor) and of the default
// one, with CONNECTs dropped, a target stopped and a node crashed (reconnect
// loops) and each undone; and it does stay
// put across most changes of kernel state (failed reconnect attempts), so
// the readers' cache is used.
func TestVersionMovesWithTheTree(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"default", Config{Seed: 3, Volumes: 4}},
		{"incident prefix", Config{Seed: 1, Nodes: 3, Hosts: 3, Volumes: 2, ConsumersPerVolume: 3, NamespacesPerVolume: 5,
			HostsAreNodes: true, CutoverPauseS: 2, Operator: "prefix", ReconnectReset: "full", KernelDNR: "honor",
			ControlPlane: "sbcli", LvolMonitor: true, CSIRestore: "ip", Pods: true, PodToleranceS: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			type last struct {
				version, state uint64
				files          map[string]string
			}
			prev := map[string]*last{}
			stateMoves, treeMoves := 0, 0
			step := func(to float64) {
				if _, err := c.AdvanceTo(to); err != nil {
					t.Fatal(err)
				}
				for _, h := range c.Hosts() {
					sh := h.(host)
					v, sv := h.(backend.Versioned).Version(), sh.h.Version()
					p := prev[h.Name()]
					if p != nil && p.state == sv {
						continue // no change of state at all
					}
					files := treeFiles(t, h)
					if p != nil {
						stateMoves++
						if v != p.version {
							treeMoves++
						} else if !maps.Equal(files, p.files) {
							t.Fatalf("t=%.1f s: host %s: version %d kept but its tree changed", to, h.Name(), v)
						}
					}
					prev[h.Name()] = &last{version: v, state: sv, files: files}
				}
			}
			step(0)
			vols := c.Topology().Volumes
			nodes := c.Topology().Nodes
			must := func(_ any, err error) {
				if err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 6; i++ {
				switch i {
				case 1:
					must(c.DropConnects(nodes[2].Name))
				case 3:
					must(c.StopTarget(nodes[1].Name))
				case 5:
					must(c.CrashNode(nodes[0].Name))
				}
				id, err := c.StartMigration(vols[i%len(vols)].NQN)
				if err != nil {
					t.Fatal(err)
				}
				for k := 0; k < 4000; k++ {
					step(c.Now() + 0.1)
					if _, term := c.MigrationPhase(id); term {
						break
					}
				}
				switch i {
				case 2:
					must(c.StopDroppingConnects(nodes[2].Name))
				case 4:
					must(c.StartTarget(nodes[1].Name))
				}
			}
			for k := 0; k < 60; k++ { // settle: reconnect loops run on
				if k == 30 {
					must(c.BootNode(nodes[0].Name))
				}
				step(c.Now() + 10)
			}
			t.Logf("%d changes of kernel state, %d of the tree", stateMoves, treeMoves)
			if treeMoves == 0 || treeMoves >= stateMoves {
				t.Errorf("the tree changed %d times over %d changes of state: want some, and fewer", treeMoves, stateMoves)
			}
		})
	}
}
