package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fuzz targets run their seeds (testdata/mountinfo/*, the f.Add lines)
// under "go test"; "make fuzz" runs each for FUZZTIME.

// FuzzParseMountInfo: any input gives entries or an error naming
// "name:line"; never a panic.
func FuzzParseMountInfo(f *testing.F) {
	paths, _ := filepath.Glob("testdata/mountinfo/*")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("36 35 98:0 /mnt1 /mnt\\0402 rw,noatime master:1 - ext3 /dev/root rw\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := ParseMountInfo(strings.NewReader(string(data)), "mi")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "mi:") {
				t.Errorf("error does not name the line: %v", err)
			}
			return
		}
		for _, e := range es {
			if e.FSType == "" {
				t.Errorf("entry without a file system type: %+v", e)
			}
		}
	})
}

// FuzzReadOwned: any input gives valid entries or an error naming
// "name:line"; never a panic.
func FuzzReadOwned(f *testing.F) {
	f.Add([]byte(`{"kind":"owner","pid":12,"start_ticks":345,"marker":"fiomig-12-345"}
{"kind":"tmpdir","path":"/tmp/fiomig-mnt-1"}
{"kind":"mount","path":"/tmp/fiomig-mnt-1"}
{"kind":"fio","pid":13,"start_ticks":350,"volume":"vol-001"}
{"kind":"fio","pid":14,"sta`))
	f.Add([]byte(`{"kind":"bogus"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := ReadOwned(strings.NewReader(string(data)), "o")
		if err != nil && !strings.HasPrefix(err.Error(), "o:") {
			t.Errorf("error does not name the line: %v", err)
		}
		for _, e := range es {
			if verr := e.validate(); verr != nil {
				t.Errorf("invalid entry %+v returned: %v", e, verr)
			}
		}
	})
}
