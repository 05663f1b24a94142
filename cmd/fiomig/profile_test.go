package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStartProfiles: the profile options are taken only before the
// command, in every spelling, and leave the rest (including --version and
// --help, which dispatch answers) as they were; a missing or uncreatable
// file is an error naming the option; the files are written on stop.
func TestStartProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	for _, tc := range []struct {
		args, rest []string
	}{
		{[]string{"run", "--cpuprofile", "x"}, []string{"run", "--cpuprofile", "x"}},
		{[]string{"--version"}, []string{"--version"}},
		{[]string{"--help"}, []string{"--help"}},
		{[]string{"--cpuprofile", cpu, "--memprofile=" + mem, "run", "--seed", "3"}, []string{"run", "--seed", "3"}},
		{[]string{"-memprofile", mem, "report", "d"}, []string{"report", "d"}},
	} {
		rest, stop, err := startProfiles(tc.args)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if err := stop(); err != nil {
			t.Fatalf("%q: stop: %v", tc.args, err)
		}
		if !slices.Equal(rest, tc.rest) {
			t.Errorf("%q: rest %q, want %q", tc.args, rest, tc.rest)
		}
	}
	for _, f := range []string{cpu, mem} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: want a written profile (%v)", f, err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cpuprofile"}, "--cpuprofile needs a file name"},
		{[]string{"--memprofile=", "run"}, "--memprofile needs a file name"},
		{[]string{"--cpuprofile", filepath.Join(dir, "no", "such", "dir"), "run"}, "--cpuprofile"},
	} {
		_, _, err := startProfiles(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
