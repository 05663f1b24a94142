package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fiomig --version (and "version") names the build on stdout, exit 0.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		code, stdout, _ := runCLI(arg)
		if code != exitPass || !strings.HasPrefix(stdout, "fiomig "+version+" (") || !strings.Contains(stdout, "go1.") {
			t.Errorf("fiomig %s: exit %d, %q", arg, code, stdout)
		}
	}
}

// readOnly makes dir read-only for this process: a read-only bind mount
// as root (permission bits do not stop root), chmod otherwise.
func readOnly(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		return
	}
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount %s read-only here: %v", dir, err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	if err := syscall.Mount(dir, dir, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("cannot remount %s read-only here: %v", dir, err)
	}
}

// report on a read-only run directory says so in one line (exit 2) and
// names --out; with --out it writes the report there and touches nothing
// in the run directory.
func TestReportReadOnlyRunDir(t *testing.T) {
	dir := writeRunDir(t, 2, true)
	before, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	readOnly(t, dir)
	code, stdout, stderr := runCLI("report", dir)
	if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "cannot write the report into "+dir) ||
		!strings.Contains(stderr, "--out DIR") || stdout != "" {
		t.Errorf("read-only run directory: exit %d, stdout %q, stderr %q; want exit 2 and one line naming it and --out", code, stdout, stderr)
	}
	out := filepath.Join(t.TempDir(), "elsewhere")
	code, stdout, stderr = runCLI("report", dir, "--out", out)
	if code == exitUsage || !strings.Contains(stdout, "report: "+filepath.Join(out, "report.md")) {
		t.Errorf("--out: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, f := range []string{"summary.json", "report.md", "report.html", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("--out: %v", err)
		}
	}
	after, _ := os.ReadDir(dir)
	if len(after) != len(before) {
		t.Errorf("run directory changed: %d entries, was %d", len(after), len(before))
	}
}

// run and the host tools share the flag conventions: help on stdout with
// exit 0, a flag error in one line pointing at --help; fiomig runs the host
// tools under its own name (nvmeof/hostcmd tests them in full).
func TestFlagConsistency(t *testing.T) {
	for _, c := range []string{"run", "inspect", "hosts"} {
		for _, args := range [][]string{{c, "--help"}, {c, "-h"}, {"help", c}} {
			code, out, errOut := runCLI(args...)
			if code != exitPass || !strings.HasPrefix(out, "Usage: fiomig "+c) || !strings.Contains(out, "Flags:") || errOut != "" {
				t.Errorf("%v: exit %d, stderr %q; want the usage on stdout, exit 0:\n%.80s", args, code, errOut, out)
			}
		}
		code, out, errOut := runCLI(c, "--bogus")
		if code != exitUsage || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "-bogus") ||
			!strings.Contains(errOut, "see fiomig "+c+" --help") {
			t.Errorf("%s --bogus: exit %d, stdout %q, stderr %q; want one line naming the flag and pointing at --help", c, code, out, errOut)
		}
	}
	if code, _, errOut := runCLI("help", "nosuch"); code != exitUsage || !strings.Contains(errOut, `unknown command "nosuch"`) {
		t.Errorf("help nosuch: exit %d, stderr %q", code, errOut)
	}
	code, out, _ := runCLI("help")
	for _, c := range []string{"hosts", "inspect", "release", "reap"} {
		if code != exitPass || !strings.Contains(out, "\n  "+c+" ") {
			t.Errorf("help: exit %d, %s not listed:\n%s", code, c, out)
		}
	}
}

// TestMistypedVerbSaysDidYouMean: a verb within two edits of one fiomig
// has gets the same "did you mean" as a mistyped flag; one far from every
// verb gets none.
func TestMistypedVerbSaysDidYouMean(t *testing.T) {
	for typed, want := range map[string]string{"rn": "run", "reprodce": "reproduce", "swep": "sweep", "histroy": "history"} {
		code, _, errOut := runCLI(typed)
		if code != exitUsage || !strings.HasPrefix(errOut, fmt.Sprintf("fiomig: unknown command %q; did you mean %s?\n", typed, want)) {
			t.Errorf("%s: exit %d, stderr %.120q; want a hint toward %s", typed, code, errOut, want)
		}
	}
	if _, _, errOut := runCLI("frobnicate"); strings.Contains(errOut, "did you mean") {
		t.Errorf("frobnicate: %.120q: a hint toward nothing near", errOut)
	}
}
