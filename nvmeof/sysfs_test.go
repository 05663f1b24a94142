package nvmeof

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

const (
	cncNQN  = "nqn.2023-02.io.simplyblock:nvmetlab:lvol:00000001-0000-4000-8000-000000000001"
	cncHost = "nqn.2014-08.org.nvmexpress:uuid:00000002-0000-4000-8000-000000000002"
)

// TestReadSysfsControllerNotContributingCapture pins every parsed value of
// the real capture: nvme1 at 10.0.0.1:14420 is live with no leg.
func TestReadSysfsControllerNotContributingCapture(t *testing.T) {
	got := readCaptureFile(t, "controller-not-contributing.tsv")
	ctrl := func(name string, inst, cntlid int, traddr, src string, legs []Leg) Controller {
		return Controller{
			Name: name, Instance: inst, State: StateLive, Transport: "tcp",
			Address: Address{Traddr: traddr, Trsvcid: "14420", SrcAddr: src},
			NQN:     cncNQN, Cntlid: cntlid, HostNQN: cncHost, HostID: "00000002-0000-4000-8000-000000000002",
			CtrlLossTmo: 600, ReconnectDelay: 10, FastIOFailTmo: -1, Legs: legs,
		}
	}
	want := HostState{Subsystems: []Subsystem{{
		Instance: 0,
		NQN:      cncNQN,
		Controllers: []Controller{
			ctrl("nvme0", 0, 1, "127.0.0.1", "127.0.0.1", []Leg{
				{Name: "nvme0c0n1", NSID: 1, ANA: ANAOptimized, ANAGroup: 1},
				{Name: "nvme0c0n2", NSID: 2, ANA: ANAOptimized, ANAGroup: 1},
			}),
			ctrl("nvme1", 1, 1000, "10.0.0.1", "10.0.0.2", nil),
		},
		Namespaces: []Namespace{{Head: "nvme0n1", NSID: 1}, {Head: "nvme0n2", NSID: 2}},
	}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ReadSysfs(controller-not-contributing.tsv) mismatch (-want +got):\n%s", d)
	}
	if e := got.Subsystems[0].Controllers[1].Endpoint(); e != "10.0.0.1:14420" {
		t.Errorf("nvme1 endpoint = %q, want 10.0.0.1:14420", e)
	}
}

// TestReadSysfsHealthyCapture checks the healthy capture's shape and exact
// values: five subsystems' worth of controllers, nvme-subsys5 with two
// controllers of five legs each.
func TestReadSysfsHealthyCapture(t *testing.T) {
	h := readCaptureFile(t, "healthy.tsv")
	type row struct {
		Sub, Ctrl, State, Endpoint string
		Legs                       map[int]ANAState
		Tmo                        [3]int
	}
	var got []row
	for _, s := range h.Subsystems {
		for _, c := range s.Controllers {
			r := row{Sub: s.NQN[len(s.NQN)-2:], Ctrl: c.Name, State: string(c.State), Endpoint: c.Endpoint(),
				Legs: map[int]ANAState{}, Tmo: [3]int{c.CtrlLossTmo, c.ReconnectDelay, c.FastIOFailTmo}}
			for _, l := range c.Legs {
				r.Legs[l.NSID] = l.ANA
			}
			got = append(got, r)
		}
	}
	opt, non := ANAOptimized, ANANonOptimized
	five := func(a ANAState) map[int]ANAState { return map[int]ANAState{1: a, 2: a, 3: a, 4: a, 5: a} }
	tmo := [3]int{60, 2, -1}
	want := []row{
		{"12", "nvme0", "live", "10.0.0.2:4426", map[int]ANAState{1: opt}, tmo},
		{"12", "nvme1", "live", "10.0.0.1:4426", map[int]ANAState{1: non}, tmo},
		{"0f", "nvme2", "live", "10.0.0.1:4428", map[int]ANAState{1: opt}, tmo},
		{"0f", "nvme4", "live", "10.0.0.3:4428", map[int]ANAState{1: non}, tmo},
		{"0e", "nvme3", "live", "10.0.0.2:4426", map[int]ANAState{1: opt}, tmo},
		{"0e", "nvme6", "live", "10.0.0.1:4426", map[int]ANAState{1: non}, tmo},
		{"03", "nvme5", "live", "10.0.0.2:4426", five(opt), tmo},
		{"03", "nvme7", "live", "10.0.0.1:4426", five(non), tmo},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("healthy.tsv controllers mismatch (-want +got):\n%s", d)
	}

	var s5 *Subsystem
	for i := range h.Subsystems {
		if h.Subsystems[i].Instance == 5 {
			s5 = &h.Subsystems[i]
		}
	}
	if s5 == nil {
		t.Fatal("no nvme-subsys5")
	}
	if len(s5.Controllers) != 2 {
		t.Fatalf("nvme-subsys5 has %d controllers, want 2", len(s5.Controllers))
	}
	for _, c := range s5.Controllers {
		if len(c.Legs) != 5 {
			t.Errorf("nvme-subsys5 %s has %d legs, want 5", c.Name, len(c.Legs))
		}
	}
	if d := cmp.Diff([]int{1, 2, 3, 4, 5}, s5.NSIDs()); d != "" {
		t.Errorf("nvme-subsys5 NSIDs (-want +got):\n%s", d)
	}
	if got, want := s5.Controllers[1].Legs[2], (Leg{Name: "nvme5c7n3", NSID: 3, ANA: ANANonOptimized, ANAGroup: 3}); got != want {
		t.Errorf("nvme7 third leg = %+v, want %+v", got, want)
	}
	var insts []int
	for _, s := range h.Subsystems {
		insts = append(insts, s.Instance)
	}
	if d := cmp.Diff([]int{0, 2, 3, 5}, insts); d != "" {
		t.Errorf("subsystem instances (-want +got):\n%s", d)
	}
}

// TestReadSysfsNSIDFromFileNotName: heads and legs whose index differs from
// the NSID are read by their nsid file.
func TestReadSysfsNSIDFromFileNotName(t *testing.T) {
	h := buildHost(t, tSubsys{inst: 4, nqn: nqnX, nsids: []int{7, 3}, ctrls: []tCtrl{
		{inst: 9, state: "live", addr: tcp("10.0.0.1:4420"), legs: legs("optimized", 7, 3)},
	}})
	s := h.Subsystems[0]
	if d := cmp.Diff([]Namespace{{Head: "nvme4n2", NSID: 3}, {Head: "nvme4n1", NSID: 7}}, s.Namespaces); d != "" {
		t.Errorf("namespaces (-want +got):\n%s", d)
	}
	want := []Leg{
		{Name: "nvme4c9n2", NSID: 3, ANA: ANAOptimized, ANAGroup: 1},
		{Name: "nvme4c9n1", NSID: 7, ANA: ANAOptimized, ANAGroup: 1},
	}
	if d := cmp.Diff(want, s.Controllers[0].Legs); d != "" {
		t.Errorf("legs (-want +got):\n%s", d)
	}
}

// An unknown controller state or ANA state is bad input: the error names
// the file and the string and lists the kernel's states.
func TestReadSysfsRejectsUnknownStates(t *testing.T) {
	for _, tc := range []struct {
		name, state, ana string
		want             []string
	}{
		{"controller state", "frobnicating", "optimized", []string{"class/nvme/nvme0/state", `"frobnicating"`, "not a controller state", "deleting (no IO)"}},
		{"ANA state", "live", "sideways", []string{"class/nvme/nvme0/nvme0c0n1/ana_state", `"sideways"`, "not an ANA state", "persistent-loss"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys, err := FSFromFiles(treeFiles(tSubsys{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
				{inst: 0, state: tc.state, addr: tcp("10.0.0.1:4420"), legs: []tLeg{{nsid: 1, ana: tc.ana}}}}}))
			if err != nil {
				t.Fatal(err)
			}
			_, err = ReadSysfs(fsys)
			if !errors.Is(err, ErrUnknownState) {
				t.Fatalf("ReadSysfs = %v, want ErrUnknownState", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}

func TestReadSysfsDefaults(t *testing.T) {
	files := treeFiles(tSubsys{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
		{inst: 0, state: "live", addr: tcp("10.0.0.1:4420"), legs: []tLeg{{nsid: 1, ana: "inaccessible"}}},
		{inst: 1, state: "deleting (no IO)", addr: tcp("10.0.0.2:4420"), legs: []tLeg{{nsid: 1}}},
	}})
	// A controller without the optional fabrics attributes.
	for _, f := range []string{"ctrl_loss_tmo", "reconnect_delay", "fast_io_fail_tmo", "hostid", "cntlid"} {
		delete(files, "class/nvme/nvme1/"+f)
	}
	h := readFiles(t, files)
	c0, c1 := h.Subsystems[0].Controllers[0], h.Subsystems[0].Controllers[1]
	if c0.State != StateLive || c0.Legs[0].ANA != ANAInaccessible {
		t.Errorf("state %q ana %q, want live/inaccessible", c0.State, c0.Legs[0].ANA)
	}
	if c1.State != StateDeletingNoIO {
		t.Errorf("state = %q, want %q", c1.State, StateDeletingNoIO)
	}
	if c1.Legs[0].ANA != ANAOptimized {
		t.Errorf("leg without ana_state: ANA %q, want optimized (no ANA: the kernel treats the path as optimized)", c1.Legs[0].ANA)
	}
	if c1.CtrlLossTmo != 0 || c1.ReconnectDelay != 0 || c1.FastIOFailTmo != 0 || c1.HostID != "" || c1.Cntlid != 0 {
		t.Errorf("absent optional attributes should read as zero values: %+v", c1)
	}
}

func TestParseState(t *testing.T) {
	for in, want := range map[string]ControllerState{
		"live": StateLive, "live\n": StateLive, " connecting ": StateConnecting, "new": StateNew,
		"resetting": StateResetting, "deleting": StateDeleting, "deleting (no IO)": StateDeletingNoIO,
		"dead": StateDead, "": StateUnknown, "Live": StateUnknown, "unknown": StateUnknown, "deleting(no IO)": StateUnknown,
	} {
		if got := ParseState(in); got != want {
			t.Errorf("ParseState(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]ANAState{
		"optimized": ANAOptimized, "non-optimized\n": ANANonOptimized, "inaccessible": ANAInaccessible,
		"persistent-loss": ANAPersistentLoss, "change": ANAChange, "": ANAUnknown, "nonoptimized": ANAUnknown,
	} {
		if got := ParseANAState(in); got != want {
			t.Errorf("ParseANAState(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReadSysfsMalformed: each malformed tree gives an error naming the
// offending path and, for a capture, its line.
func TestReadSysfsMalformed(t *testing.T) {
	base := func() map[string]string {
		return treeFiles(tSubsys{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
			{inst: 3, state: "live", addr: tcp("10.0.0.1:4420"), legs: legs("optimized", 1)},
		}})
	}
	for _, tc := range []struct {
		name   string
		edit   func(map[string]string)
		inErr  []string
		isGone bool
	}{
		{"address not key=value", func(f map[string]string) { f["class/nvme/nvme3/address"] = "10.0.0.1:4420\n" },
			[]string{"class/nvme/nvme3/address", "not key=value"}, false},
		{"address key twice", func(f map[string]string) { f["class/nvme/nvme3/address"] = "traddr=a,traddr=b\n" },
			[]string{"class/nvme/nvme3/address", "twice"}, false},
		{"cntlid not a number", func(f map[string]string) { f["class/nvme/nvme3/cntlid"] = "x1\n" },
			[]string{"class/nvme/nvme3/cntlid", "not an integer"}, false},
		{"ctrl_loss_tmo garbage", func(f map[string]string) { f["class/nvme/nvme3/ctrl_loss_tmo"] = "of\n" },
			[]string{"class/nvme/nvme3/ctrl_loss_tmo"}, false},
		{"leg nsid not a number", func(f map[string]string) { f["class/nvme/nvme3/nvme0c3n1/nsid"] = "one\n" },
			[]string{"class/nvme/nvme3/nvme0c3n1/nsid"}, false},
		{"leg without nsid", func(f map[string]string) { delete(f, "class/nvme/nvme3/nvme0c3n1/nsid") },
			[]string{"class/nvme/nvme3/nvme0c3n1/nsid", "missing"}, false},
		{"head nsid garbage", func(f map[string]string) { f["class/nvme-subsystem/nvme-subsys0/nvme0n1/nsid"] = "\n" },
			[]string{"class/nvme-subsystem/nvme-subsys0/nvme0n1/nsid"}, false},
		{"controller without state", func(f map[string]string) { delete(f, "class/nvme/nvme3/state") },
			[]string{"class/nvme/nvme3/state", "missing"}, false},
		{"subsystem without subsysnqn", func(f map[string]string) { delete(f, "class/nvme-subsystem/nvme-subsys0/subsysnqn") },
			[]string{"class/nvme-subsystem/nvme-subsys0/subsysnqn", "missing"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := base()
			tc.edit(f)
			fsys, err := FSFromFiles(f)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ReadSysfs(fsys)
			if err == nil {
				t.Fatal("ReadSysfs succeeded, want an error")
			}
			for _, s := range tc.inErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

// TestReadSysfsMalformedCaptureNamesLine: a malformed value in a capture is
// reported with the capture's file:line.
func TestReadSysfsMalformedCaptureNamesLine(t *testing.T) {
	capture := strings.Join([]string{
		"/sys/class/nvme-subsystem/nvme-subsys0/subsysnqn\t" + nqnX,
		"/sys/class/nvme/nvme0/state\tlive",
		"/sys/class/nvme/nvme0/transport\ttcp",
		"/sys/class/nvme/nvme0/subsysnqn\t" + nqnX,
		"/sys/class/nvme/nvme0/address\ttraddr=10.0.0.1,trsvcid",
	}, "\n")
	fsys, err := LoadCapture(strings.NewReader(capture), "bad.tsv")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReadSysfs(fsys)
	if err == nil || !strings.Contains(err.Error(), "bad.tsv:5") || !strings.Contains(err.Error(), "class/nvme/nvme0/address") {
		t.Fatalf("ReadSysfs error = %v, want one naming class/nvme/nvme0/address and bad.tsv:5", err)
	}
}

// vanishingFS removes a directory between listing and reading, as a
// controller torn down mid-read does on a real /sys.
type vanishingFS struct {
	fs.FS
	gone string // paths under this prefix do not exist once listed
}

func (v vanishingFS) Open(name string) (fs.File, error) {
	if name == v.gone || strings.HasPrefix(name, v.gone+"/") {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return v.FS.Open(name)
}

func (v vanishingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name == v.gone || strings.HasPrefix(name, v.gone+"/") {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	return fs.ReadDir(v.FS, name) // lists v.gone itself: it vanishes after the listing
}

func TestReadSysfsVanishedIsNotMalformed(t *testing.T) {
	base := buildTree(t, tSubsys{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
		{inst: 0, state: "live", addr: tcp("10.0.0.1:4420"), legs: legs("optimized", 1)},
		{inst: 1, state: "live", addr: tcp("10.0.0.2:4420"), legs: legs("non-optimized", 1)},
	}})
	for _, tc := range []struct {
		gone      string
		wantCtrls []string
		wantLegs  int // legs of nvme0
	}{
		{"class/nvme/nvme1", []string{"nvme0"}, 1},
		{"class/nvme/nvme0/nvme0c0n1", []string{"nvme0", "nvme1"}, 0},
		{"class/nvme-subsystem/nvme-subsys0/nvme0n1", []string{"nvme0", "nvme1"}, 1},
	} {
		h, err := ReadSysfs(vanishingFS{FS: base, gone: tc.gone})
		if err != nil {
			t.Errorf("gone %s: ReadSysfs error %v, want none", tc.gone, err)
			continue
		}
		if d := cmp.Diff(tc.wantCtrls, names(h.Controllers())); d != "" {
			t.Errorf("gone %s: controllers (-want +got):\n%s", tc.gone, d)
		}
		if n := len(h.Controllers()[0].Legs); n != tc.wantLegs {
			t.Errorf("gone %s: nvme0 has %d legs, want %d", tc.gone, n, tc.wantLegs)
		}
	}
}

func TestReadSysfsEmptyAndPlacement(t *testing.T) {
	h, err := ReadSysfs(fstest.MapFS{})
	if err != nil || len(h.Subsystems) != 0 {
		t.Errorf("empty tree: %+v, %v; want an empty host and no error", h, err)
	}

	// A controller its subsystem does not list is placed by its legs' S, or
	// by the only subsystem with its NQN; a lone NQN gets Instance -1.
	files := treeFiles(
		tSubsys{inst: 2, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
			{inst: 0, state: "live", addr: tcp("10.0.0.1:4420"), legs: legs("optimized", 1), noSubsy: true},
			{inst: 1, state: "connecting", addr: tcp("10.0.0.2:4420"), noSubsy: true},
		}},
	)
	for k, v := range treeFiles(tSubsys{inst: 99, nqn: nqnY, ctrls: []tCtrl{{inst: 5, state: "connecting", addr: tcp("10.0.0.3:4420")}}}) {
		if strings.HasPrefix(k, "class/nvme/") {
			files[k] = v
		}
	}
	fsys, err := FSFromFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	h, err = ReadSysfs(fsys)
	if err != nil {
		t.Fatal(err)
	}
	type place struct {
		Inst  int
		NQN   string
		Ctrls []string
	}
	var got []place
	for _, s := range h.Subsystems {
		got = append(got, place{s.Instance, s.NQN, names(s.Controllers)})
	}
	want := []place{{-1, nqnY, []string{"nvme5"}}, {2, nqnX, []string{"nvme0", "nvme1"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("placement (-want +got):\n%s", d)
	}
}

// TestReadSysfsMultipathOff: with nvme_core.multipath=N the namespace disk
// hangs under the controller and there are no legs.
func TestReadSysfsMultipathOff(t *testing.T) {
	files := treeFiles(tSubsys{inst: 0, nqn: nqnX, ctrls: []tCtrl{
		{inst: 0, state: "live", addr: tcp("10.0.0.1:4420")},
		{inst: 1, state: "live", addr: tcp("10.0.0.2:4420")},
	}})
	files["class/nvme/nvme0/nvme0n1/nsid"] = "1\n"
	files["class/nvme/nvme1/nvme1n1/nsid"] = "1\n"
	h := readFiles(t, files)
	if d := cmp.Diff([]Namespace{{Head: "nvme0n1", NSID: 1, Controller: "nvme0"}}, h.Subsystems[0].Namespaces); d != "" {
		t.Errorf("namespaces (-want +got):\n%s", d)
	}
	if ds := Inspect(h, Selector{NQN: nqnX, NSID: 1}, nil); len(ds) != 0 {
		t.Errorf("multipath off: Inspect = %v, want nothing (the check stands down)", ds)
	}
}

func TestReadHostKeepsOnlyThatHost(t *testing.T) {
	fsys := buildTree(t,
		tSubsys{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
			{inst: 0, state: "live", addr: tcp("10.0.0.1:4420"), legs: legs("optimized", 1)},
			{inst: 1, state: "live", addr: tcp("10.0.0.1:4420"), host: hostB, legs: legs("optimized", 1)},
		}},
		tSubsys{inst: 1, nqn: nqnY, nsids: []int{1}, ctrls: []tCtrl{
			{inst: 2, state: "live", addr: tcp("10.0.0.2:4420"), host: hostB, legs: legs("optimized", 1)},
		}},
	)
	h, err := ReadHost(fsys, hostA)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Subsystems) != 1 || d(names(h.Controllers()), []string{"nvme0"}) != "" {
		t.Errorf("ReadHost(hostA) = %+v, want only nvme0 in %s", h, nqnX)
	}
	hb, _ := ReadHost(fsys, hostB)
	if dd := d(names(hb.Controllers()), []string{"nvme1", "nvme2"}); dd != "" {
		t.Errorf("ReadHost(hostB) controllers (-want +got):\n%s", dd)
	}
	all, _ := ReadHost(fsys, "")
	if len(all.Controllers()) != 3 {
		t.Errorf("ReadHost(\"\") has %d controllers, want 3", len(all.Controllers()))
	}
}

func d(got, want []string) string { return cmp.Diff(want, got) }

// TestReadSysfsFollowsSymlinks builds a real-/sys-shaped tree on disk (class
// entries are symlinks into devices/) and reads it through os.DirFS.
func TestReadSysfsFollowsSymlinks(t *testing.T) {
	root := t.TempDir()
	h := rebuildOnDisk(t, loadCaptureFile(t, "controller-not-contributing.tsv"), root)
	fi, err := os.Lstat(filepath.Join(root, "class/nvme/nvme1"))
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("class/nvme/nvme1 should be a symlink in the rebuilt tree: %v %v", fi, err)
	}
	got, err := ReadSysfs(os.DirFS(root))
	if err != nil {
		t.Fatal(err)
	}
	if dd := cmp.Diff(h, got); dd != "" {
		t.Errorf("symlinked tree reads differently from the capture (-capture +disk):\n%s", dd)
	}
}

// TestReadSysfsRejectsABadPort: a tcp or rdma controller's trsvcid is a
// port, a number 0-65535; "abc" or 70000 is bad input naming the
// attribute file (its controller) and, from a capture, the capture's file
// and line — not an address shown and judged clean. An FC controller's
// trsvcid is not a port and is read as it is.
func TestReadSysfsRejectsABadPort(t *testing.T) {
	for _, port := range []string{"abc", "70000", "-1", "44 20"} {
		fsys, err := FSFromFiles(treeFiles(tSubsys{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
			{inst: 0, state: "live", addr: "traddr=10.0.0.1,trsvcid=" + port, legs: []tLeg{{nsid: 1, ana: "optimized"}}}}}))
		if err != nil {
			t.Fatal(err)
		}
		_, err = ReadSysfs(fsys)
		for _, w := range []string{"class/nvme/nvme0/address", fmt.Sprintf("trsvcid %q", port), "a port is a number 0-65535"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("trsvcid=%s: ReadSysfs = %v, want an error naming %s", port, err, w)
			}
		}
	}
	b, err := os.ReadFile("testdata/sysfs-captures/healthy.tsv")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.ReplaceAll(string(b), "trsvcid=4426", "trsvcid=abc")
	if bad == string(b) {
		t.Fatal("test edit did not apply")
	}
	fsys, err := LoadCapture(strings.NewReader(bad), "healthy.tsv")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReadSysfs(fsys)
	m := regexp.MustCompile(`healthy\.tsv:(\d+)`).FindStringSubmatch(fmt.Sprint(err))
	if m == nil {
		t.Fatalf("capture: ReadSysfs = %v, want an error naming healthy.tsv and the line", err)
	}
	n, _ := strconv.Atoi(m[1])
	if lines := strings.Split(bad, "\n"); n < 1 || n > len(lines) || !strings.Contains(lines[n-1], "/address\ttraddr=") || !strings.Contains(lines[n-1], "trsvcid=abc") {
		t.Errorf("capture: %v names line %d, not an address with trsvcid=abc", err, n)
	}
	fc := treeFiles(tSubsys{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
		{inst: 0, state: "live", addr: "traddr=nn-0x1:pn-0x2,host_traddr=nn-0x3:pn-0x4", legs: []tLeg{{nsid: 1, ana: "optimized"}}}}})
	fc["class/nvme/nvme0/transport"] = "fc\n"
	if _, err := ReadSysfs(mustFS(t, fc)); err != nil {
		t.Errorf("an FC controller: %v", err)
	}
}

func mustFS(t *testing.T, files map[string]string) fs.FS {
	t.Helper()
	fsys, err := FSFromFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}
