//go:build linux

package simcheck

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/procfs/sysfs"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/sim"
)

type ctrlView struct {
	State, Cntlid, Transport, Subsystem string
	Address                             nvmeof.Address
	Legs                                map[string][2]string // leg name -> {nsid, ana_state}
}

type subsysView struct {
	NQN   string
	Heads []string
}

type view struct {
	Controllers map[string]ctrlView
	Subsystems  map[string]subsysView
}

func ours(h nvmeof.HostState) view {
	v := view{map[string]ctrlView{}, map[string]subsysView{}}
	for _, s := range h.Subsystems {
		name := "nvme-subsys" + strconv.Itoa(s.Instance)
		var heads []string
		for _, n := range s.Namespaces {
			heads = append(heads, n.Head)
		}
		sort.Strings(heads)
		v.Subsystems[name] = subsysView{s.NQN, heads}
		for _, c := range s.Controllers {
			cv := ctrlView{string(c.State), strconv.Itoa(c.Cntlid), c.Transport, name, c.Address, map[string][2]string{}}
			for _, l := range c.Legs {
				cv.Legs[l.Name] = [2]string{strconv.Itoa(l.NSID), string(l.ANA)}
			}
			v.Controllers[c.Name] = cv
		}
	}
	return v
}

func theirs(t *testing.T, root string) view {
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
	v := view{map[string]ctrlView{}, map[string]subsysView{}}
	for _, s := range subs {
		heads := append([]string(nil), s.Namespaces...)
		sort.Strings(heads)
		v.Subsystems[s.Name] = subsysView{s.NQN, heads}
		for _, c := range s.Controllers {
			d := class[c.Name]
			addr, err := nvmeof.ParseAddress(c.Address)
			if err != nil {
				t.Errorf("%s address %q: %v", c.Name, c.Address, err)
			}
			cv := ctrlView{d.State, d.ControllerID, c.Transport, s.Name, addr, map[string][2]string{}}
			for _, ns := range d.Namespaces {
				cv.Legs[ns.Name] = [2]string{ns.ID, ns.ANAState}
			}
			v.Controllers[c.Name] = cv
		}
	}
	return v
}

// TestSimulatorTreesAgreeWithProcfs renders every host of a simulated world
// at several instants of a migration (before it, target paths parked
// inaccessible, inside the cutover window, after it), copies each tree to
// disk with its symlinks, and checks that nvmeof reads the disk copy as it
// reads the in-memory tree, and as procfs reads it.
func TestSimulatorTreesAgreeWithProcfs(t *testing.T) {
	w, err := sim.New(sim.Config{Seed: 7, Model: record.Model{Volumes: 3, ConsumersPerVolume: 2, NamespacesPerVolume: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.StartMigration(w.Volumes()[0].NQN); err != nil {
		t.Fatal(err)
	}
	compared := 0
	seen := map[string]bool{}
	for _, at := range []float64{0, 0.5, 1, 2, 3, 4, 5, 6, 8, 12, 20} {
		if _, err := w.AdvanceTo(at); err != nil {
			t.Fatal(err)
		}
		for _, h := range w.Hosts() {
			fsys := h.Sysfs()
			mem, err := nvmeof.ReadSysfs(fsys)
			if err != nil {
				t.Fatalf("t=%v: ReadSysfs(sim tree): %v", at, err)
			}
			root := t.TempDir()
			if err := copyTree(root, fsys); err != nil {
				t.Fatalf("t=%v: copying the sim tree to disk: %v", at, err)
			}
			disk, err := nvmeof.ReadSysfs(os.DirFS(root))
			if err != nil {
				t.Fatalf("t=%v: ReadSysfs(disk copy): %v", at, err)
			}
			if d := cmp.Diff(mem, disk); d != "" {
				t.Errorf("t=%v: in-memory and on-disk readings differ (-mem +disk):\n%s", at, d)
			}
			if d := cmp.Diff(theirs(t, root), ours(disk)); d != "" {
				t.Errorf("t=%v: nvmeof and procfs disagree (-procfs +nvmeof):\n%s", at, d)
			}
			compared += len(disk.Controllers())
			for _, c := range disk.Controllers() {
				seen[string(c.State)] = true
				for _, l := range c.Legs {
					seen[string(l.ANA)] = true
				}
			}
		}
	}
	if compared == 0 {
		t.Fatal("no controller compared")
	}
	for _, want := range []string{"live", "optimized", "non-optimized", "inaccessible"} {
		if !seen[want] {
			t.Errorf("no sample showed %q: the instants miss the migration", want)
		}
	}
	t.Logf("compared %d controller readings; states seen: %v", compared, seen)
}

// copyTree writes fsys under root, recreating symbolic links (fs.ReadLinkFS)
// and write-only attributes (delete_controller, ...) as empty files with
// their mode: os.CopyFS cannot open those for reading.
func copyTree(root string, fsys fs.FS) error {
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(root, filepath.FromSlash(p))
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := fs.ReadLink(fsys, p)
			if err != nil {
				return err
			}
			return os.Symlink(target, dst)
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if errors.Is(err, fs.ErrPermission) {
			data, err = nil, nil
		}
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, info.Mode().Perm()|0o200)
	})
}
