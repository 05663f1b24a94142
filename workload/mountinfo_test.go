package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMountInfo(t *testing.T) {
	fh, err := os.Open(filepath.Join("testdata", "mountinfo"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	got, err := ParseMountInfo(fh, "testdata/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	want := []MountEntry{
		{MountID: 22, Major: 0, Minor: 21, MountPoint: "/proc", FSType: "proc", Source: "proc"},
		{MountID: 28, Major: 253, Minor: 1, MountPoint: "/", FSType: "ext4", Source: "/dev/vda1"},
		{MountID: 112, Major: 0, Minor: 52, MountPoint: "/tmp/fiomig-mnt-123", FSType: "fuse.fiomig", Source: "fiomig"},
		{MountID: 113, Major: 0, Minor: 53, MountPoint: "/tmp/with space", FSType: "fuse.fiomig", Source: "fiomig"},
		{MountID: 114, Major: 0, Minor: 54, MountPoint: "/mnt/opt", FSType: "tmpfs", Source: "tmpfs"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

func TestParseMountInfoErrors(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"no separator", "22 28 0:21 / /proc rw shared:13 proc proc rw\n", "mi:1: malformed mountinfo line"},
		{"bad id", "x 28 0:21 / /proc rw - proc proc rw\n", `mi:1: mount id "x"`},
		{"bad device", "\n22 28 021 / /proc rw - proc proc rw\n", `mi:2: device "021": want major:minor`},
		{"bad minor", "22 28 0:z / /proc rw - proc proc rw\n", `mi:1: device "0:z"`},
		{"no fs type", "22 28 0:21 / /proc rw a b -\n", "mi:1: malformed"},
	} {
		_, err := ParseMountInfo(strings.NewReader(c.in), "mi")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

// The live mount table parses, and "/" is in it.
func TestMountedRoot(t *testing.T) {
	m, err := Mounted("/")
	if err != nil {
		t.Fatal(err)
	}
	if !m {
		t.Errorf("Mounted(\"/\") = false; %s lacks the root mount", MountInfoFile)
	}
	if m, err := Mounted(t.TempDir()); err != nil || m {
		t.Errorf("Mounted(fresh temp dir) = %v, %v; want false", m, err)
	}
}
