package hostcmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fiomig/fiomig/internal/tooltest"
	"github.com/fiomig/fiomig/nvmeof"
)

const (
	capDir   = "../testdata/sysfs-captures"
	cncCap   = capDir + "/controller-not-contributing.tsv"
	healthy  = capDir + "/healthy.tsv"
	cncNQN   = "nqn.2023-02.io.simplyblock:nvmetlab:lvol:00000001-0000-4000-8000-000000000001"
	s2NQN    = "nqn.2023-02.io.simplyblock:00000002-0000-4000-8000-000000000002:lvol:0000000f-0000-4000-8000-00000000000f"
	sub5NQN  = "nqn.2023-02.io.simplyblock:00000002-0000-4000-8000-000000000002:lvol:00000003-0000-4000-8000-000000000003"
	cncConns = `[{"nqn":"` + cncNQN + `","ip":"10.0.0.1","port":14420,"transport":"tcp","ctrlLossTmo":3600}]`
)

var ctrlNameRE = regexp.MustCompile(`\bnvme[0-9]+\b`)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = Main("fiomig", "devel", args, &o, &e)
	return code, o.String(), e.String()
}

// runCLI is run without a *testing.T.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = Main("fiomig", "devel", args, &o, &e)
	return code, o.String(), e.String()
}

func TestInspectAcceptance(t *testing.T) {
	code, out, errOut := run(t, "inspect", "--capture", cncCap, "--nqn", cncNQN, "--nsid", "1")
	if code != exitCheckFailed {
		t.Fatalf("exit %d, want 1 (a defect); stderr %s", code, errOut)
	}
	if n := strings.Count(out, "controller-not-contributing"); n != 1 || !strings.Contains(out, "controllers=nvme1\t") ||
		!strings.Contains(out, "10.0.0.1:14420") || strings.Contains(out, "nvme0") {
		t.Errorf("want exactly one controller-not-contributing on nvme1 (10.0.0.1:14420), got:\n%s", out)
	}

	code, out, _ = run(t, "inspect", "--capture", cncCap, "--nqn", cncNQN, "--nsid", "1", "-o", "json")
	var got struct {
		Defects []defectJSON `json:"defects"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitCheckFailed {
		t.Fatalf("json output: %v (exit %d):\n%s", err, code, out)
	}
	if len(got.Defects) != 1 || got.Defects[0].Kind != "controller-not-contributing" || got.Defects[0].Scope != "controller" ||
		fmt.Sprint(got.Defects[0].Controllers) != "[nvme1]" || got.Defects[0].NSID != 1 {
		t.Errorf("json defects = %+v, want one controller-not-contributing on nvme1 for nsid 1", got.Defects)
	}

	// healthy.tsv: every NQN and every NSID is clean, asked one by one and
	// all at once.
	f, err := os.Open(healthy)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := nvmeof.LoadCapture(f, healthy)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	st, err := nvmeof.ReadSysfs(fsys)
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	for _, nqn := range st.NQNs() {
		for _, s := range st.SubsystemsByNQN(nqn) {
			for _, id := range append([]int{0}, s.NSIDs()...) {
				args := []string{"inspect", "--capture", healthy, "--nqn", nqn}
				if id != 0 {
					args = append(args, "--nsid", fmt.Sprint(id))
				}
				if code, out, errOut := run(t, args...); code != exitPass || !strings.Contains(out, "clean") {
					t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
				}
				asked++
			}
		}
	}
	if asked != 4+1+1+1+5 {
		t.Errorf("asked %d NQN/NSID combinations, want 12", asked)
	}
	if code, out, _ := run(t, "inspect", "--capture", healthy); code != exitPass || !strings.Contains(out, "inspected 4 subsystems, 8 controllers") {
		t.Errorf("healthy.tsv, all NQNs: exit %d\n%s", code, out)
	}
	// Without --nsid the two-namespace capture reports nvme1 once per namespace.
	if code, out, _ := run(t, "inspect", "--capture", cncCap); code != exitCheckFailed || strings.Count(out, "controller-not-contributing") != 2 {
		t.Errorf("controller-not-contributing.tsv, every NSID: exit %d\n%s", code, out)
	}
}

func TestInspectTargets(t *testing.T) {
	// 4426 vs 4428: a controller at 10.0.0.1:4428 does not satisfy an
	// expected 10.0.0.1:4426, which is missing, and it is stale.
	code, out, _ := run(t, "inspect", "--capture", healthy, "--nqn", s2NQN, "--target", "10.0.0.1:4426", "--target", "10.0.0.3:4428")
	if code != exitCheckFailed || !strings.Contains(out, "stale-endpoint\tcontroller\t"+s2NQN+"\tcontrollers=nvme2\t") || strings.Contains(out, "nsid=0") ||
		!strings.Contains(out, "missing-endpoint\t"+s2NQN+"\t10.0.0.1:4426\t") || strings.Contains(out, "nvme4") {
		t.Errorf("exit %d, want nvme2 stale and 10.0.0.1:4426 missing:\n%s", code, out)
	}
	code, out, _ = run(t, "inspect", "--capture", healthy, "--nqn", s2NQN, "--target", "10.0.0.1:4428", "--target", "[::ffff:10.0.0.3]:4428", "-o", "json")
	if code != exitPass || !strings.Contains(out, `"defects": []`) {
		t.Errorf("all endpoints published: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "inspect", "--capture", healthy, "--nqn", sub5NQN, "--target", "10.0.0.2:4426")
	if code != exitCheckFailed || !strings.Contains(out, "controllers=nvme7") || strings.Contains(out, "missing-endpoint") {
		t.Errorf("subsys5 with one endpoint published: exit %d\n%s", code, out)
	}
}

func TestHostCmdsUsage(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.tsv")
	if err := os.WriteFile(bad, []byte("/sys/class/nvme/nvme0/state\tlive\n/sys/class/nvme/nvme0/address traddr=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badValue := filepath.Join(t.TempDir(), "bad-value.tsv")
	if err := os.WriteFile(badValue, []byte("/sys/class/nvme/nvme0/state\tlive\n/sys/class/nvme/nvme0/transport\ttcp\n"+
		"/sys/class/nvme/nvme0/subsysnqn\tn\n/sys/class/nvme/nvme0/address\ttraddr\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args    []string
		code    int
		wantErr string
	}{
		{[]string{"inspect", "--capture", bad}, exitUsage, "bad.tsv:2"},
		{[]string{"reap", "--capture", bad, "--dry-run"}, exitUsage, "bad.tsv:2"},
		{[]string{"release", "--capture", bad, "--nqn", "x", "--connections", "[]"}, exitUsage, "bad.tsv:2"},
		{[]string{"inspect", "--capture", badValue}, exitUsage, "bad-value.tsv:4"},
		{[]string{"inspect", "--capture", "/nonexistent.tsv"}, exitUsage, "nonexistent"},
		{[]string{"inspect", "--capture", cncCap, "--target", "10.0.0.1:4420"}, exitUsage, "--target needs --nqn"},
		{[]string{"inspect", "--capture", cncCap, "--nqn", "x", "--target", "10.0.0.1"}, exitUsage, "not IP:PORT"},
		{[]string{"inspect", "--capture", cncCap, "-o", "yaml"}, exitUsage, "table or json"},
		{[]string{"inspect", "--capture", cncCap, "--nsid", "-1"}, exitUsage, "--nsid"},
		{[]string{"inspect", "extra"}, exitUsage, "unexpected argument"},
		{[]string{"inspect", "--bogus"}, exitUsage, "bogus"},
		{[]string{"inspect", "--sys-root", "/nonexistent-sys"}, exitUsage, "nonexistent-sys"},
		{[]string{"release", "--capture", cncCap, "--connections", "[]"}, exitUsage, "--nqn is required"},
		{[]string{"release", "--capture", cncCap, "--nqn", cncNQN}, exitUsage, "--connections is required"},
		{[]string{"release", "--capture", cncCap, "--nqn", cncNQN, "--connections", "{"}, exitUsage, "--connections"},
		{[]string{"release", "--capture", cncCap, "--nqn", cncNQN, "--connections", "@/nonexistent.json"}, exitUsage, "nonexistent.json"},
		{[]string{"reap", "--capture", cncCap, "--route", "carrier-pigeon"}, exitUsage, "--route"},
	} {
		code, _, errOut := run(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.wantErr) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, errOut, tc.code, tc.wantErr)
		}
	}
	for _, c := range []string{"inspect", "release", "reap"} {
		code, out, _ := run(t, c, "--help")
		if code != exitPass || !strings.Contains(out, "Usage: fiomig "+c) || !strings.Contains(out, "Exit status") {
			t.Errorf("%s --help: exit %d\n%s", c, code, out)
		}
	}
}

func TestReapAndReleaseOnCapture(t *testing.T) {
	code, out, errOut := run(t, "reap", "--dry-run", "--capture", cncCap)
	if code != exitPass || !strings.Contains(out, "would reap nvme1 (10.0.0.1:14420)") ||
		fmt.Sprint(ctrlNameRE.FindAllString(out, -1)) != "[nvme1]" {
		t.Errorf("reap --dry-run: exit %d, want nvme1 named and nothing else:\n%s%s", code, out, errOut)
	}
	// Without --dry-run a capture is still only planned, and says so.
	code, out, errOut = run(t, "reap", "--capture", cncCap, "-o", "json")
	var plans []planJSON
	if err := json.Unmarshal([]byte(out), &plans); err != nil || code != exitPass || !strings.Contains(errOut, "dry run") {
		t.Fatalf("reap json: %v exit %d\n%s%s", err, code, out, errOut)
	}
	if len(plans) != 1 || !plans[0].DryRun || len(plans[0].Released) != 1 || plans[0].Released[0].Controller != "nvme1" {
		t.Errorf("reap json plans = %+v", plans)
	}
	if code, out, _ := run(t, "reap", "--dry-run", "--capture", healthy); code != exitPass || !strings.Contains(out, "nothing to reap") {
		t.Errorf("reap healthy.tsv: exit %d\n%s", code, out)
	}

	// The migration path 10.0.0.1:14420 serves nothing while nvme0 serves
	// both namespaces: release would tear it down and keep nvme0.
	code, out, _ = run(t, "release", "--capture", cncCap, "--nqn", cncNQN, "--connections", cncConns)
	if code != exitPass || !strings.Contains(out, "would release nvme1 (10.0.0.1:14420)") ||
		!strings.Contains(out, "keep nvme0 (127.0.0.1:14420) of "+cncNQN+": not a path of this migration") {
		t.Errorf("release: exit %d\n%s", code, out)
	}
	connFile := filepath.Join(t.TempDir(), "conns.json")
	if err := os.WriteFile(connFile, []byte(cncConns), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run(t, "release", "--capture", cncCap, "--nqn", cncNQN, "--connections", "@"+connFile, "--dry-run"); code != exitPass || !strings.Contains(out, "would release nvme1") {
		t.Errorf("release @file: exit %d\n%s", code, out)
	}
}

// TestReapLiveHost runs reap against a sysfs tree on disk with a fake
// nvme-cli, as on a real host.
func TestReapLiveHost(t *testing.T) {
	tooltest.Command(t, "sh")
	dir := t.TempDir()
	root := filepath.Join(dir, "sys")
	f, err := os.Open(cncCap)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := nvmeof.LoadCapture(f, cncCap)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(root, fsys); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "nvme.log")
	bin := filepath.Join(dir, "nvme")
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %q\n[ \"$1\" = disconnect ] && rm -rf %q/class/nvme/\"$3\"\nexit 0\n", log, root)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "reap", "--sys-root", root, "--nvme", bin)
	if code != exitPass || !strings.Contains(out, "reaped nvme1 (10.0.0.1:14420)") {
		t.Fatalf("reap: exit %d\n%s%s", code, out, errOut)
	}
	b, _ := os.ReadFile(log)
	if string(b) != "disconnect -d nvme1\n" {
		t.Errorf("nvme calls = %q, want one disconnect of nvme1", b)
	}
	// Reaping again finds nothing; inspect is clean for nsid 1.
	if code, out, _ := run(t, "reap", "--sys-root", root, "--nvme", bin); code != exitPass || !strings.Contains(out, "nothing to reap") {
		t.Errorf("second reap: exit %d\n%s", code, out)
	}
	if code, out, _ := run(t, "inspect", "--sys-root", root, "--nqn", cncNQN, "--nsid", "1"); code != exitPass {
		t.Errorf("inspect after reap: exit %d\n%s", code, out)
	}
}

// TestReleaseRejectsBadConnections: a connection that can never match a
// controller (an address that is not an IP, another subsystem) is a typo
// that would leak the migration's controllers, not "nothing to release".
func TestReleaseRejectsBadConnections(t *testing.T) {
	conn := func(nqn, ip string) string {
		b, _ := json.Marshal([]map[string]string{{"nqn": nqn, "ip": ip, "port": "14420"}})
		return string(b)
	}
	empty := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(empty, []byte("\n \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ conns, wantErr string }{
		{conn(cncNQN, "nope"), "connections[0].ip"},
		{conn(cncNQN, "10.0.0.01"), "connections[0].ip"},
		{conn(cncNQN, " 10.0.0.1"), "connections[0].ip"},
		{conn(cncNQN, "[10.0.0.1]"), "connections[0].ip"},
		{conn("nqn.2023-02.io.simplyblock:nvmetlab:lvol:other", "10.0.0.1"), "connections[0].nqn"},
		{`[{"nqn":"` + cncNQN + `","ip":"10.0.0.1","port":14420},{"nqn":"` + cncNQN + `","ip":"10.0.0.1.","port":14420}]`, "connections[1].ip"},
		{"@" + empty, empty + ": empty, want a JSON array of connections"},
		{" ", "empty, want a JSON array of connections"},
	} {
		code, out, errOut := run(t, "release", "--capture", cncCap, "--nqn", cncNQN, "--connections", tc.conns)
		if code != exitUsage || !strings.Contains(errOut, tc.wantErr) || strings.Contains(out, "nothing to release") {
			t.Errorf("--connections %s: exit %d, stdout %q, stderr %q; want exit 2 naming %q", tc.conns, code, out, errOut, tc.wantErr)
		}
	}
	// An entry without "nqn" belongs to --nqn.
	code, out, errOut := run(t, "release", "--capture", cncCap, "--nqn", cncNQN, "--connections", `[{"ip":"10.0.0.1","port":14420}]`)
	if code != exitPass || !strings.Contains(out, "would release nvme1") {
		t.Errorf("connection without nqn: exit %d\n%s%s", code, out, errOut)
	}
}

// TestHostCmdsNothingToLookAt: an NQN that is not attached is nothing to
// inspect, release or reap (exit 0, as the operator's Inspect and release
// answer), said with the NQNs that are attached so that a typo shows; a
// --hostnqn typo, an empty capture, a truncated one and a root that is no
// sysfs mount are bad input (exit 2). Messages about a capture say so
// instead of "on this host".
func TestHostCmdsNothingToLookAt(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.tsv")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The first 30 lines of the capture: a subsystem directory, no class/nvme.
	b, err := os.ReadFile(cncCap)
	if err != nil {
		t.Fatal(err)
	}
	noCtrl := filepath.Join(dir, "no-ctrl.tsv")
	if err := os.WriteFile(noCtrl, []byte(strings.Join(strings.SplitAfter(string(b), "\n")[:30], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	const cncHost = "nqn.2014-08.org.nvmexpress:uuid:00000002-0000-4000-8000-000000000002"
	live := t.TempDir()
	materialize(t, cncCap, live)
	for _, tc := range []struct {
		args     []string
		code     int
		wantOut  string // on stdout for exit 0 and 1, on stderr for exit 2
		wantNone string // nowhere in stdout
	}{
		{[]string{"inspect", "--capture", cncCap, "--nqn", "not-an-nqn"}, exitPass, `NQN "not-an-nqn" is not attached in capture ` + cncCap + ` (attached: ` + cncNQN + ")", "clean"},
		{[]string{"inspect", "--sys-root", live, "--nqn", "not-an-nqn"}, exitPass, `NQN "not-an-nqn" is not attached on this host (attached: ` + cncNQN + ")", "clean"},
		{[]string{"inspect", "--capture", cncCap, "--nqn", "not-an-nqn", "--target", "10.0.0.1:14420"}, exitCheckFailed, "missing-endpoint\tnot-an-nqn\t10.0.0.1:14420\tno controller at 10.0.0.1:14420 in capture", "clean"},
		{[]string{"inspect", "--sys-root", live, "--nqn", "not-an-nqn", "--target", "10.0.0.1:14420"}, exitCheckFailed, "no controller at 10.0.0.1:14420 on this host", "clean"},
		{[]string{"reap", "--capture", cncCap, "--nqn", "not-an-nqn"}, exitPass, `NQN "not-an-nqn" is not attached in capture`, "would reap"},
		{[]string{"release", "--capture", cncCap, "--nqn", "nqn.typo", "--connections", `[{"ip":"10.0.0.1","port":14420}]`}, exitPass, `NQN "nqn.typo" is not attached in capture`, "would release"},
		{[]string{"inspect", "--capture", cncCap, "--hostnqn", "bogus"}, exitUsage, `no controller with hostnqn "bogus" in capture ` + cncCap + ` (hostnqns there: ` + cncHost + ")", ""},
		{[]string{"reap", "--sys-root", live, "--hostnqn", "bogus"}, exitUsage, `no controller with hostnqn "bogus" on this host`, ""},
		{[]string{"inspect", "--capture", empty}, exitUsage, "empty.tsv: empty capture", ""},
		{[]string{"inspect", "--capture", noCtrl}, exitUsage, "no-ctrl.tsv: subsystems under /sys/class/nvme-subsystem but no NVMe controller under /sys/class/nvme: a truncated capture?", ""},
		{[]string{"inspect", "--sys-root", dir}, exitUsage, dir + " has no class directory: not a sysfs mount", ""},
		{[]string{"reap", "--sys-root", dir}, exitUsage, "not a sysfs mount", ""},
		{[]string{"release", "--capture", empty, "--nqn", cncNQN, "--connections", "[]"}, exitUsage, "empty capture", ""},
	} {
		code, out, errOut := run(t, tc.args...)
		where := out
		if tc.code == exitUsage {
			where = errOut
		}
		if code != tc.code || !strings.Contains(where, tc.wantOut) || (tc.wantNone != "" && strings.Contains(out, tc.wantNone)) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d saying %q", tc.args, code, out, errOut, tc.code, tc.wantOut)
		}
	}
	// The header counts what was asked for, not the whole host.
	if code, out, _ := run(t, "inspect", "--capture", healthy, "--nqn", s2NQN); code != exitPass || !strings.HasPrefix(out, "inspected 1 subsystem, 2 controllers\n") {
		t.Errorf("inspect one NQN of healthy.tsv: exit %d\n%s", code, out)
	}
	if code, out, _ := run(t, "inspect", "--capture", cncCap, "--hostnqn", cncHost, "--nqn", cncNQN, "--nsid", "1"); code != exitCheckFailed || !strings.HasPrefix(out, "inspected 1 subsystem, 2 controllers\n") {
		t.Errorf("inspect with the right --hostnqn: exit %d\n%s", code, out)
	}
}

// TestHostWithoutNVMe: a sysfs root without class/nvme (no nvme-core module)
// or with an empty one, and a capture with no NVMe controller, are answers:
// every command exits 0 with an empty list, in both output formats.
func TestHostWithoutNVMe(t *testing.T) {
	noModule, noCtrl := t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(noModule, "class", "net"), filepath.Join(noCtrl, "class", "nvme")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	onlyParam := filepath.Join(t.TempDir(), "no-nvme.tsv")
	if err := os.WriteFile(onlyParam, []byte("/sys/module/nvme_core/parameters/multipath\tY\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, src := range [][]string{{"--sys-root", noModule}, {"--sys-root", noCtrl}, {"--capture", onlyParam}} {
		for _, c := range [][]string{{"hosts"}, {"inspect"}, {"reap"}, {"inspect", "--nqn", cncNQN}, {"release", "--nqn", cncNQN, "--connections", cncConns}} {
			args := append(append([]string{}, c...), src...)
			code, out, errOut := run(t, args...)
			if code != exitPass || !strings.Contains(out, "no NVMe") && !strings.Contains(out, "not attached") {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 0 saying there is no NVMe subsystem", args, code, out, errOut)
			}
			code, out, errOut = run(t, append(args, "-o", "json")...)
			var v any
			if err := json.Unmarshal([]byte(out), &v); code != exitPass || err != nil {
				t.Errorf("%v -o json: exit %d, %v\n%s%s", args, code, err, out, errOut)
			}
			switch c[0] {
			case "hosts":
				if fmt.Sprint(v.(map[string]any)["hosts"]) != "[]" {
					t.Errorf("%v -o json: %s, want no hosts", args, out)
				}
			case "inspect":
				m := v.(map[string]any)
				if fmt.Sprint(m["defects"], m["subsystems"], m["controllers"], m["not_live"]) != "[] 0 0 []" {
					t.Errorf("%v -o json: %s, want no defect and 0 subsystems", args, out)
				}
			}
		}
	}
}

// TestHostCmdsFlagConsistency: help on stdout with exit 0, a flag error in
// one line, and the range checks of --nsid and --target.
func TestHostCmdsFlagConsistency(t *testing.T) {
	for _, c := range []string{"hosts", "inspect", "release", "reap"} {
		for _, args := range [][]string{{c, "--help"}, {c, "-h"}, {"help", c}} {
			code, out, errOut := run(t, args...)
			if code != exitPass || !strings.HasPrefix(out, "Usage: fiomig "+c) || !strings.Contains(out, "Flags:") || errOut != "" {
				t.Errorf("%v: exit %d, stdout starts %q, stderr %q; want the usage on stdout, exit 0", args, code, clipped(out), errOut)
			}
		}
		code, out, errOut := run(t, c, "--bogus")
		if code != exitUsage || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "-bogus") ||
			!strings.Contains(errOut, "see fiomig "+c+" --help") {
			t.Errorf("%s --bogus: exit %d, stdout %q, stderr %q; want one line naming the flag and pointing at --help", c, code, out, errOut)
		}
	}
	if code, _, errOut := run(t, "help", "nosuch"); code != exitUsage || !strings.Contains(errOut, `unknown command "nosuch"`) {
		t.Errorf("help nosuch: exit %d, stderr %q", code, errOut)
	}
	if code, out, _ := run(t, "help"); code != exitPass || !strings.Contains(out, "Commands:") {
		t.Errorf("help: exit %d\n%s", code, out)
	}

	b, err := os.ReadFile(cncCap)
	if err != nil {
		t.Fatal(err)
	}
	// Cut off inside nvme0's attributes (line 144 opens class/nvme/nvme0;
	// its state line is gone).
	trunc := filepath.Join(t.TempDir(), "trunc.tsv")
	if err := os.WriteFile(trunc, []byte(strings.Join(strings.SplitAfter(string(b), "\n")[:150], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"inspect", "--capture", cncCap, "--nsid", "0"}, "--nsid"},
		{[]string{"inspect", "--capture", cncCap, "--nsid", "4294967295"}, "broadcast"},
		{[]string{"inspect", "--capture", cncCap, "--nsid", "4294967296"}, "--nsid"},
		{[]string{"inspect", "--capture", cncCap, "--nqn", cncNQN, "--target", "10.0.0.1:0"}, "port 0"},
		{[]string{"inspect", "--capture", cncCap, "--sys-root", "/sys"}, "either --capture or --sys-root"},
		{[]string{"reap", "--capture", cncCap, "--sys-root", "/sys"}, "either --capture or --sys-root"},
		{[]string{"inspect", "--capture", trunc}, "trunc.tsv:144"},
		{[]string{"reap", "--capture", trunc}, "trunc.tsv:144"},
	} {
		code, _, errOut := run(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.wantErr) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 mentioning %q", tc.args, code, errOut, tc.wantErr)
		}
	}
	// The highest unicast NSID is a valid question (the namespace is missing).
	if code, out, errOut := run(t, "inspect", "--capture", cncCap, "--nqn", cncNQN, "--nsid", "4294967294"); code != exitCheckFailed || !strings.Contains(out, "namespace-missing") {
		t.Errorf("--nsid 4294967294: exit %d\n%s%s", code, out, errOut)
	}
}

func clipped(s string) string {
	if len(s) > 60 {
		return s[:60]
	}
	return s
}

// TestExampleConnections: the example connections file release --help
// prints is testdata/connections.json, every field of it is one
// VMIG_CONNECTIONS knows, and release with it on the capture it belongs to
// tears down the migration path that serves nothing (nvme1, 10.0.0.1:14420)
// and keeps the source path.
func TestExampleConnections(t *testing.T) {
	b, err := os.ReadFile("testdata/connections.json")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(b)) != exampleConnections {
		t.Errorf("testdata/connections.json and the example in release --help differ:\n%s\n%s", b, exampleConnections)
	}
	conns, err := nvmeof.ParseConnections(b)
	if err != nil || len(conns) != 2 || conns[0].CtrlLossTmo == nil || *conns[0].CtrlLossTmo != 3600 {
		t.Fatalf("ParseConnections: %+v, %v", conns, err)
	}
	if code, out, _ := run(t, "release", "--help"); code != exitPass || !strings.Contains(out, exampleConnections) {
		t.Errorf("release --help does not show the example:\n%s", out)
	}
	code, out, errOut := run(t, "release", "--capture", cncCap, "--nqn", cncNQN, "--connections", "@testdata/connections.json")
	if code != exitPass || !strings.Contains(out, "would release nvme1 (10.0.0.1:14420)") || !strings.Contains(out, "keep nvme0 (127.0.0.1:14420)") {
		t.Errorf("release with the example: exit %d\n%s%s", code, out, errOut)
	}
}

// TestMainNamesItsProgram: the lean binary's Main prints its own name in
// --version, help, usage and errors; no command or an unknown one is bad
// usage.
func TestMainNamesItsProgram(t *testing.T) {
	main := func(args ...string) (int, string, string) {
		var o, e bytes.Buffer
		code := Main("fiomig-host", "v9", args, &o, &e)
		return code, o.String(), e.String()
	}
	if code, out, _ := main("--version"); code != exitPass || !strings.HasPrefix(out, "fiomig-host v9 (") || !strings.Contains(out, "go1.") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	code, out, _ := main("help")
	for _, c := range Commands {
		if code != exitPass || !strings.Contains(out, "\n  "+c.Name+" ") {
			t.Errorf("help: exit %d, %s not listed:\n%s", code, c.Name, out)
		}
	}
	if code, out, _ := main("help", "inspect"); code != exitPass || !strings.HasPrefix(out, "Usage: fiomig-host inspect") {
		t.Errorf("help inspect: exit %d\n%.80s", code, out)
	}
	if code, _, errOut := main("inspect", "--bogus"); code != exitUsage || !strings.Contains(errOut, "see fiomig-host inspect --help") {
		t.Errorf("inspect --bogus: exit %d, %q", code, errOut)
	}
	if code, _, errOut := main(); code != exitUsage || !strings.Contains(errOut, "Usage: fiomig-host <command>") {
		t.Errorf("no command: exit %d, %q", code, errOut)
	}
	if code, _, errOut := main("run"); code != exitUsage || !strings.Contains(errOut, `unknown command "run"`) {
		t.Errorf("run: exit %d, %q", code, errOut)
	}
}
