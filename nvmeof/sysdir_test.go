package nvmeof

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// writeFiles writes files ("path" -> content) under a new directory.
func writeFiles(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, v := range files {
		dst := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// sysDir is a conforming fs.FS whose ReadFile and ReadDir give what
// os.DirFS's do, files longer than its first buffer included, and reads a
// host as os.DirFS does.
func TestSysDir(t *testing.T) {
	files := treeFiles(tSubsys{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
		{inst: 0, state: "live", addr: tcp("10.0.0.1:4420"), legs: legs("optimized", 1)},
		{inst: 1, state: "connecting", addr: tcp("10.0.0.2:4420")}}})
	long := strings.Repeat("0123456789abcdef", 100) // 1,600 bytes: several reads
	files["class/nvme/nvme0/long"] = long
	files["class/nvme/nvme0/empty"] = ""
	root := writeFiles(t, files)
	d := newSysDir(root)
	if err := fstest.TestFS(d, "class/nvme/nvme0/long", "class/nvme/nvme0/state", "class/nvme/nvme0/empty"); err != nil {
		t.Fatal(err)
	}
	for p := range files {
		got, err := d.ReadFile(p)
		if err != nil || string(got) != files[p] {
			t.Errorf("ReadFile(%s) = %d bytes, %v; want %d bytes", p, len(got), err, len(files[p]))
		}
	}
	want, err := fs.ReadDir(os.DirFS(root), "class/nvme/nvme0")
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.ReadDir("class/nvme/nvme0")
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ReadDir = %v, %v; want %v", got, err, want)
	}
	if _, err := d.ReadFile("class/nvme/nvme9/state"); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "class/nvme/nvme9/state") {
		t.Errorf("missing file: %v, want fs.ErrNotExist naming the path", err)
	}
	if _, err := d.ReadDir("class/nvme/nvme9"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v, want fs.ErrNotExist", err)
	}
	if _, err := d.ReadFile("../etc/passwd"); err == nil {
		t.Error("ReadFile accepted a path outside the root")
	}
	viaOS, err := ReadSysfs(os.DirFS(root))
	if err != nil {
		t.Fatal(err)
	}
	viaSys, err := ReadSysfs(d)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(viaOS, viaSys); diff != "" {
		t.Errorf("ReadSysfs over sysDir differs from os.DirFS (-os +sysDir):\n%s", diff)
	}
}

// BenchmarkReadSysfsDisk: a 1,000-controller tree on disk read through
// os.DirFS and through sysDir (what LinuxHost.Read uses).
func BenchmarkReadSysfsDisk(b *testing.B) {
	var subs []tSubsys
	inst := 0
	for s := range 250 {
		sub := tSubsys{inst: s, nqn: fmt.Sprintf("nqn.bench:%d", s), nsids: []int{1}}
		for c := range 4 {
			sub.ctrls = append(sub.ctrls, tCtrl{inst: inst, state: "live", addr: tcp(fmt.Sprintf("10.0.%d.%d:4420", s, c)), legs: legs("optimized", 1)})
			inst++
		}
		subs = append(subs, sub)
	}
	root := writeFiles(b, treeFiles(subs...))
	for _, fsys := range []struct {
		name string
		fs   fs.FS
	}{{"os.DirFS", os.DirFS(root)}, {"sysDir", newSysDir(root)}} {
		b.Run(fsys.name, func(b *testing.B) {
			for b.Loop() {
				h, err := ReadSysfs(fsys.fs)
				if err != nil || len(h.Controllers()) != 1000 {
					b.Fatal(err, len(h.Controllers()))
				}
			}
		})
	}
}
