package fio

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/fiomig/fiomig/internal/tooltest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current code")

// runFio runs fio in dir with args and returns its stderr; a non-zero exit
// is returned as err with stdout and stderr, not a test failure, so tests
// can check fio's own verdict.
func runFio(t testing.TB, dir string, args ...string) (stderr []byte, err error) {
	t.Helper()
	fio := tooltest.Command(t, "fio")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, fio, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if out.Len() > 0 {
		t.Logf("fio stdout: %s", out.Bytes())
	}
	return errb.Bytes(), err
}

// writeJobFile renders jf into dir/name.
func writeJobFile(t testing.TB, dir, name string, jf JobFile) string {
	t.Helper()
	p := filepath.Join(dir, name)
	var b bytes.Buffer
	if err := jf.Render(&b); err != nil {
		t.Fatalf("render %s: %v", name, err)
	}
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// golden compares got with testdata/golden/name, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run `go test ./fio -run %s -update` to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (rerun with -update if the change is intended):\n--- got\n%s\n--- want\n%s", p, got, want)
	}
}

func boolPtr(b bool) *bool { return &b }
