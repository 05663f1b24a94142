package nvmeof

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/fstest"
	"testing/iotest"
)

func TestLoadCaptureValues(t *testing.T) {
	fsys := loadCaptureFile(t, "controller-not-contributing.tsv")
	for p, want := range map[string]string{
		"class/nvme/nvme1/state":             "live\n",
		"class/nvme/nvme1/model":             "00000001-0000-4000-8000-000000000001    \n", // trailing blanks kept
		"class/nvme/nvme1/delete_controller": "\n",                                         // empty value
		"class/nvme/nvme0/nvme0c0n2/stat":    "      49        0     2096        4        0        0        0        0        0        3        4        0        0        0        0        0        0\n",
	} {
		b, err := fsys.(interface{ ReadFile(string) ([]byte, error) }).ReadFile(p)
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
		}
	}
	if o := fsys.(originFS).Origin("class/nvme/nvme1/address"); o != "controller-not-contributing.tsv:119" {
		t.Errorf("Origin(class/nvme/nvme1/address) = %q, want controller-not-contributing.tsv:119", o)
	}
}

// TestCaptureFSConforms runs the standard library's fs.FS conformance checks
// on a loaded capture.
func TestCaptureFSConforms(t *testing.T) {
	fsys := loadCaptureFile(t, "healthy.tsv")
	if err := fstest.TestFS(fsys, "class/nvme/nvme7/nvme5c7n3/ana_state", "class/nvme-subsystem/nvme-subsys5/subsysnqn"); err != nil {
		t.Fatal(err)
	}
}

func TestLoadCaptureMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     string
	}{
		{"no tab", "/sys/class/nvme/nvme0/state\tlive\n/sys/class/nvme/nvme0/address traddr=1", "cap.tsv:2: no tab"},
		{"relative path", "class/nvme/nvme0/state\tlive", "cap.tsv:1: path"},
		{"outside /sys", "/proc/self/status\tx", "cap.tsv:1: path \"/proc/self/status\""},
		{"dot-dot", "/sys/class/../nvme/state\tx", "cap.tsv:1: path"},
		{"empty element", "/sys/class//nvme/state\tx", "cap.tsv:1: path"},
		{"bare /sys/", "/sys/\tx", "cap.tsv:1: path"},
		{"duplicate", "/sys/a/b\t1\n\n/sys/a/b\t1", "cap.tsv:3: \"a/b\" given again (first at cap.tsv:1)"},
		{"file then dir", "/sys/a/b\t1\n/sys/a/b/c\t2", "cap.tsv:2: \"a/b/c\" needs \"a/b\" to be a directory, but it is a file at cap.tsv:1"},
		{"dir then file", "/sys/a/b/c\t1\n/sys/a/b\t2", "cap.tsv:2: \"a/b\" is a file here but a directory at cap.tsv:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadCapture(strings.NewReader(tc.in), "cap.tsv")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadCapture error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestLoadCaptureReadError(t *testing.T) {
	r := io.MultiReader(strings.NewReader("/sys/a\t1\n"), iotest.ErrReader(errors.New("disk on fire")))
	_, err := LoadCapture(r, "cap.tsv")
	if err == nil || !strings.Contains(err.Error(), "cap.tsv:2") || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("LoadCapture error = %v, want the read error at cap.tsv:2", err)
	}
}

func TestLoadCaptureTolerates(t *testing.T) {
	// CRLF line ends, blank lines, tabs inside a value.
	fsys, err := LoadCapture(strings.NewReader("/sys/a/x\tone\r\n\n/sys/a/y\tp\tq\r\n"), "cap.tsv")
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"a/x": "one\n", "a/y": "p\tq\n"} {
		b, _ := fsys.(*memFS).ReadFile(p)
		if string(b) != want {
			t.Errorf("%s = %q, want %q", p, b, want)
		}
	}
}

func TestFSFromFilesErrors(t *testing.T) {
	if _, err := FSFromFiles(map[string]string{"/abs": "x"}); err == nil || !strings.Contains(err.Error(), "/abs") {
		t.Errorf("absolute path: %v", err)
	}
	if _, err := FSFromFiles(map[string]string{"a": "x", "a/b": "y"}); err == nil || !strings.Contains(err.Error(), "a/b") {
		t.Errorf("file/dir clash: %v", err)
	}
}

// TestTruncatedCaptureNamesLine: a capture cut off inside a controller's
// attributes lacks a required file; the error names the capture line where
// that controller's directory begins, not only the sysfs path.
func TestTruncatedCaptureNamesLine(t *testing.T) {
	in := "/sys/class/nvme/nvme0/transport\ttcp\n" +
		"/sys/class/nvme/nvme0/address\ttraddr=10.0.0.1,trsvcid=4420\n" +
		"/sys/class/nvme/nvme0/subsysnqn\tnqn.x\n" // state is missing
	fsys, err := LoadCapture(strings.NewReader(in), "cut.tsv")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReadSysfs(fsys)
	if err == nil || !strings.Contains(err.Error(), "class/nvme/nvme0/state") || !strings.Contains(err.Error(), "cut.tsv:1") {
		t.Fatalf("ReadSysfs error = %v, want one naming class/nvme/nvme0/state and cut.tsv:1", err)
	}
}
