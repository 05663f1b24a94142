package hostcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/internal/nvmecli"
	"github.com/fiomig/fiomig/internal/tooltest"
	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/sim"
)

// fixtureCaptures are every sysfs capture of the repository: the real ones
// (nvmeof/testdata/sysfs-captures) and this package's synthetic one (two
// hosts on one kernel, connecting and resetting controllers, IPv6,
// secrets, the multipath parameter).
func fixtureCaptures(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, g := range []string{"../testdata/sysfs-captures/*.tsv", "testdata/*.tsv"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) < 3 {
		t.Fatalf("captures %v: want the two real ones and testdata/mixed.tsv", out)
	}
	return out
}

// materialize writes capture as a directory tree (the sys root) under dir.
func materialize(t *testing.T, capture, dir string) {
	t.Helper()
	f, err := os.Open(capture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fsys, err := nvmeof.LoadCapture(f, capture)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Materialize(fsys, dir); err != nil {
		t.Fatal(err)
	}
}

// cliPath is one path as nvme list-subsys and fiomig hosts both name it.
type cliPath struct {
	HostNQN, HostID, Subsystem, NQN, Name, Transport, State string
	Address                                                 nvmeof.Address
}

// nvmeListSubsys runs the real "nvme list-subsys -o json" on the tree
// under dir (internal/nvmecli).
func nvmeListSubsys(t *testing.T, dir string) []cliPath {
	t.Helper()
	hosts, err := nvmecli.ListSubsys(dir)
	if err != nil {
		tooltest.Require(t, err)
	}
	var got []cliPath
	for _, h := range hosts {
		for _, s := range h.Subsystems {
			for _, p := range s.Paths {
				a, err := nvmeof.ParseAddress(p.Address)
				if err != nil {
					t.Fatalf("nvme-cli address %q: %v", p.Address, err)
				}
				got = append(got, cliPath{h.HostNQN, h.HostID, s.Name, s.NQN, p.Name, p.Transport, p.State, a})
			}
		}
	}
	return got
}

func sortPaths(ps []cliPath) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
}

// TestHostsAgreesWithNvmeCli: on every capture of the repository,
// "fiomig hosts -o json" names the same hosts, subsystems, controllers,
// transports, addresses and states as the real nvme-cli's
// "nvme list-subsys -o json" reading the same tree as its /sys.
func TestHostsAgreesWithNvmeCli(t *testing.T) {
	tooltest.Require(t, nvmecli.Available())
	for _, capture := range fixtureCaptures(t) {
		t.Run(filepath.Base(capture), func(t *testing.T) {
			code, stdout, stderr := runCLI("hosts", "-o", "json", "--capture", capture)
			if code != exitPass {
				t.Fatalf("fiomig hosts: exit %d: %s", code, stderr)
			}
			var v hostsJSON
			if err := json.Unmarshal([]byte(stdout), &v); err != nil {
				t.Fatal(err)
			}
			var mine []cliPath
			for _, h := range v.Hosts {
				for _, s := range h.Subsystems {
					for _, c := range s.Controllers {
						a, err := nvmeof.ParseAddress(c.Address)
						if err != nil {
							t.Fatalf("fiomig hosts address %q: %v", c.Address, err)
						}
						mine = append(mine, cliPath{h.HostNQN, h.HostID, s.Name, s.NQN, c.Name, c.Transport, c.State, a})
					}
				}
			}
			dir := t.TempDir()
			materialize(t, capture, dir)
			cli := nvmeListSubsys(t, dir)
			if len(cli) == 0 {
				t.Fatal("nvme-cli listed no path: the comparison shows nothing")
			}
			sortPaths(mine)
			sortPaths(cli)
			if d := cmp.Diff(cli, mine); d != "" {
				t.Errorf("fiomig hosts differs from nvme list-subsys (-nvme-cli +fiomig):\n%s", d)
			}
		})
	}
}

// The table names hosts, subsystems, controllers, legs with their ANA
// state, and the multipath mode.
func TestHostsTable(t *testing.T) {
	code, stdout, stderr := runCLI("hosts", "--capture", "testdata/mixed.tsv")
	if code != exitPass {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"native multipath: on",
		"host nqn.2014-08.org.nvmexpress:uuid:22222222-0000-4000-8000-000000000002",
		"nvme-subsys1  NQN=nqn.2023-02.io.simplyblock:mixed:lvol:00000002-0000-4000-8000-000000000002",
		"+- nvme4 tcp traddr=fd00::5,trsvcid=4420,src_addr=fd00::8 resetting",
		"nvme1c4n2 nsid 2 change (no I/O)",
		"nvme0c0n1 nsid 1 optimized\n",
		"+- nvme2 tcp traddr=10.0.0.4,trsvcid=4421 connecting",
		"no path leg: serves no namespace",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = runCLI("hosts", "--capture", "testdata/mixed.tsv", "--hostnqn", "nqn.2014-08.org.nvmexpress:uuid:11111111-0000-4000-8000-000000000001")
	if code != exitPass || strings.Contains(stdout, "22222222") || !strings.Contains(stdout, "nvme2") {
		t.Errorf("--hostnqn: exit %d, output:\n%s", code, stdout)
	}
}

// multipathOffCapture is mixed.tsv with nvme_core multipath=N.
func multipathOffCapture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/mixed.tsv")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "/sys/module/nvme_core/parameters/multipath\tY", "/sys/module/nvme_core/parameters/multipath\tN", 1)
	if s == string(b) {
		t.Fatal("test setup: mixed.tsv has no multipath parameter")
	}
	p := filepath.Join(t.TempDir(), "mp-off.tsv")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A host with native multipath off is detected and said so by hosts,
// inspect and release; release gives no cutover verdict for it.
func TestMultipathOffIsSaid(t *testing.T) {
	capture := multipathOffCapture(t)
	_, stdout, _ := runCLI("hosts", "--capture", capture)
	if !strings.Contains(stdout, "native multipath: off (nvme_core multipath=N") {
		t.Errorf("hosts does not say multipath is off:\n%s", stdout)
	}
	_, stdout, _ = runCLI("inspect", "--capture", capture)
	if !strings.Contains(stdout, "native multipath is off") {
		t.Errorf("inspect does not say multipath is off:\n%s", stdout)
	}
	_, stdout, _ = runCLI("inspect", "--capture", capture, "-o", "json")
	var ij struct{ Multipath, Note string }
	if err := json.Unmarshal([]byte(stdout), &ij); err != nil || ij.Multipath != "off" || ij.Note == "" {
		t.Errorf("inspect -o json: %+v (%v)\n%s", ij, err, stdout)
	}
	nqn := "nqn.2023-02.io.simplyblock:mixed:lvol:00000001-0000-4000-8000-000000000001"
	code, stdout, stderr := runCLI("release", "--capture", capture, "--nqn", nqn,
		"--connections", `[{"ip":"10.0.0.3","port":4421},{"ip":"10.0.0.4","port":4421}]`)
	if code != exitPass || strings.Contains(stdout, "cutover window") || !strings.Contains(stdout, "multipath is off") ||
		strings.Contains(stdout, "would release") {
		t.Errorf("release on multipath off: exit %d, stdout:\n%s\nstderr: %s\nwant nothing released, no cutover verdict, multipath named", code, stdout, stderr)
	}
	// With multipath on, the same release does release the inaccessible
	// and the connecting path.
	_, stdout, _ = runCLI("release", "--capture", "testdata/mixed.tsv", "--nqn", nqn,
		"--connections", `[{"ip":"10.0.0.3","port":4421},{"ip":"10.0.0.4","port":4421}]`)
	if !strings.Contains(stdout, "would release nvme1") || !strings.Contains(stdout, "would release nvme2") {
		t.Errorf("release with multipath on:\n%s", stdout)
	}
}

// inspect lists controllers that are not live (connecting, resetting) with
// their state, as notes: no defect, exit 0 (one reading cannot tell a
// reconnect from a leak); with --target, one at an unpublished endpoint is
// a stale-endpoint defect and not listed again.
func TestInspectListsNotLive(t *testing.T) {
	code, stdout, _ := runCLI("inspect", "--capture", "testdata/mixed.tsv", "-o", "json")
	var out inspectOut
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range out.NotLive {
		got = append(got, n.Controller+" "+n.State)
	}
	if want := []string{"nvme2 connecting", "nvme4 resetting"}; code != exitPass || len(out.Defects) != 0 || !cmp.Equal(want, got) {
		t.Errorf("exit %d, defects %v, not live %v; want 0, none and %v", code, out.Defects, got, want)
	}
	code, stdout, _ = runCLI("inspect", "--capture", "testdata/mixed.tsv")
	if code != exitPass || !strings.Contains(stdout, "note: nvme2 of nqn.2023-02.io.simplyblock:mixed:lvol:00000001-0000-4000-8000-000000000001 is connecting, not live (no defect") ||
		!strings.Contains(stdout, "note: nvme4 of") || !strings.Contains(stdout, "clean: no defect") {
		t.Errorf("table: exit %d\n%s", code, stdout)
	}
	nqn := "nqn.2023-02.io.simplyblock:mixed:lvol:00000001-0000-4000-8000-000000000001"
	code, stdout, _ = runCLI("inspect", "--capture", "testdata/mixed.tsv", "-o", "json", "--nqn", nqn, "--target", "10.0.0.1:4420", "--target", "10.0.0.3:4421")
	out = inspectOut{}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, d := range out.Defects {
		got = append(got, d.Kind+" "+strings.Join(d.Controllers, ","))
	}
	if want := []string{"stale-endpoint nvme2"}; code != exitCheckFailed || !cmp.Equal(want, got) || len(out.NotLive) != 0 {
		t.Errorf("with targets: exit %d, defects %v, not live %v; want 1, %v and none", code, got, out.NotLive, want)
	}
}

// secretValues are the key material in testdata/mixed.tsv, and a part of
// each long enough to recognise.
var secretValues = []string{
	"DHHC-1:00:bXktaG9zdC1zZWNyZXQta2V5LWRvLW5vdC1wcmludA==:", "bXktaG9zdC1zZWNyZXQ",
	"DHHC-1:00:Y3RybC1zZWNyZXQtc2hvdWxkLW5ldmVyLWxlYWs=:", "Y3RybC1zZWNyZXQ",
	"NVMeTLSkey-1:01:dGxzLWtleS1tdXN0LW5vdC1hcHBlYXI=:", "dGxzLWtleS1tdXN0",
}

// No command prints a secret attribute's value, whatever it is asked, in
// either output format, from a capture or a live tree (--sys-root), nor in
// an error about a malformed capture.
func TestSecretsNeverPrinted(t *testing.T) {
	b, err := os.ReadFile("testdata/mixed.tsv")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secretValues[:1] {
		if !strings.Contains(string(b), s) {
			t.Fatalf("test setup: mixed.tsv lacks secret %q", s)
		}
	}
	live := t.TempDir()
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		p, v, _ := strings.Cut(line, "\t")
		dst := filepath.Join(live, strings.TrimPrefix(p, "/sys/"))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tmp := t.TempDir()
	broken := func(name, from, to string) string {
		s := strings.Replace(string(b), from, to, 1)
		if s == string(b) {
			t.Fatalf("test setup: %q not in mixed.tsv", from)
		}
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noTab := broken("no-tab.tsv", "dhchap_secret\tDHHC", "dhchap_secret DHHC")
	dup := broken("dup.tsv", "/sys/class/nvme/nvme0/state\tlive", "/sys/class/nvme/nvme0/tls_key\tNVMeTLSkey-1:01:dGxzLWtleS1tdXN0LW5vdC1hcHBlYXI=:")
	nqn := "nqn.2023-02.io.simplyblock:mixed:lvol:00000001-0000-4000-8000-000000000001"
	conns := `[{"ip":"10.0.0.3","port":4421}]`
	var runs [][]string
	for _, src := range [][]string{{"--capture", "testdata/mixed.tsv"}, {"--sys-root", live}, {"--capture", noTab}, {"--capture", dup}} {
		for _, o := range []string{"table", "json"} {
			runs = append(runs,
				append([]string{"hosts", "-o", o}, src...),
				append([]string{"inspect", "-o", o}, src...),
				append([]string{"inspect", "-o", o, "--nqn", nqn, "--target", "10.0.0.1:4420"}, src...),
				append([]string{"release", "--dry-run", "-o", o, "--nqn", nqn, "--connections", conns}, src...),
				append([]string{"reap", "--dry-run", "-o", o}, src...))
		}
	}
	failedOn := map[string]bool{}
	for _, args := range runs {
		code, stdout, stderr := runCLI(args...)
		failedOn[args[len(args)-1]] = failedOn[args[len(args)-1]] || code == exitUsage
		for _, s := range secretValues {
			if strings.Contains(stdout, s) || strings.Contains(stderr, s) {
				t.Errorf("fiomig %s printed secret %q:\n%s\n%s", strings.Join(args, " "), s, stdout, stderr)
			}
		}
	}
	if !failedOn[noTab] || !failedOn[dup] || failedOn[live] || failedOn["testdata/mixed.tsv"] {
		t.Errorf("exit 2 by source %v: want the malformed captures refused, the good ones read", failedOn)
	}
}
