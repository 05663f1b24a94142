package nvmeof

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The nvme_core multipath parameter decides; without it, a controller's own
// namespace disk (nvmeSnH under class/nvme/nvmeN) means multipath is off.
func TestReadSysfsMultipathMode(t *testing.T) {
	base := treeFiles(tSubsys{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
		{inst: 0, state: "live", addr: tcp("10.0.0.1:4420"), legs: legs("optimized", 1)}}})
	for _, tc := range []struct {
		name  string
		param string // "" = no parameter file
		disk  bool   // a namespace disk under the controller
		want  MultipathMode
	}{
		{"parameter Y", "Y", false, MultipathOn},
		{"parameter N", "N", false, MultipathOff},
		{"no parameter, heads only", "", false, MultipathUnknown},
		{"no parameter, a controller's own namespace disk", "", true, MultipathOff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range base {
				files[k] = v
			}
			if tc.param != "" {
				files[MultipathParam] = tc.param + "\n"
			}
			if tc.disk {
				files["class/nvme/nvme0/nvme0n1/nsid"] = "1\n"
			}
			h := readFiles(t, files)
			if h.Multipath != tc.want {
				t.Errorf("Multipath = %q, want %q", h.Multipath, tc.want)
			}
			if f := FilterHost(h, hostA); f.Multipath != tc.want {
				t.Errorf("FilterHost dropped Multipath: %q", f.Multipath)
			}
		})
	}
	files := map[string]string{MultipathParam: "maybe\n"}
	for k, v := range base {
		files[k] = v
	}
	fsys, _ := FSFromFiles(files)
	if _, err := ReadSysfs(fsys); err == nil || !strings.Contains(err.Error(), MultipathParam) || !strings.Contains(err.Error(), `"maybe"`) {
		t.Errorf("multipath parameter \"maybe\": %v, want an error naming the file and the value", err)
	}
}

// With multipath off there are no legs: release must not call that a
// cutover window, and releases nothing.
func TestPlanReleaseMultipathOff(t *testing.T) {
	h := buildHost(t, tSubsys{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
		{inst: 0, state: "live", addr: tcp("10.0.0.1:4420")}, {inst: 1, state: "live", addr: tcp("10.0.0.2:4420")}}})
	h.Multipath = MultipathOff
	p, err := PlanRelease(h, nqnX, EndpointTargets(nqnX, []string{"10.0.0.2:4420"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Release) != 0 || !strings.Contains(p.Refused, "multipath is off") || strings.Contains(p.Refused, "cutover window") {
		t.Errorf("plan %+v: want nothing released, refused because multipath is off (not a cutover window)", p)
	}
}

// NotLive lists each connecting/resetting/new/dead controller, with its
// state and reconnect budget; live and deleting ones are not listed.
func TestNotLive(t *testing.T) {
	files := treeFiles(tSubsys{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
		{inst: 0, state: "live", addr: tcp("10.0.0.1:4420"), legs: legs("optimized", 1)},
		{inst: 1, state: "connecting", addr: tcp("10.0.0.2:4420")},
		{inst: 2, state: "deleting", addr: tcp("10.0.0.3:4420")},
		{inst: 3, state: "resetting", addr: tcp("10.0.0.4:4420"), legs: legs("inaccessible", 1)},
	}})
	files["class/nvme/nvme1/ctrl_loss_tmo"] = "3600\n"
	files["class/nvme/nvme1/reconnect_delay"] = "2\n"
	h := readFiles(t, files)
	ds := NotLive(h, "", nil)
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("%s %s %s %s legs=%d", d.NQN, d.Controller, d.State, d.Address, d.Legs))
	}
	want := []string{nqnX + " nvme3 resetting 10.0.0.4:4420 legs=1", nqnX + " nvme1 connecting 10.0.0.2:4420 legs=0"}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if !strings.Contains(ds[1].Detail, "connecting") || !strings.Contains(ds[1].Detail, "1800 attempts") {
		t.Errorf("detail %q: want the state and the reconnect budget (3600/2 = 1800 attempts)", ds[1].Detail)
	}
	if got := NotLive(h, nqnX, map[string]bool{"nvme1": true, "nvme3": true}); len(got) != 0 {
		t.Errorf("skipped controllers listed: %v", got)
	}
	for _, sel := range []Selector{{NQN: nqnX}, {NQN: nqnX, NSID: 1}} {
		if ds := Inspect(h, sel, nil); len(ds) != 0 {
			t.Errorf("Inspect %+v: %v; a controller that is not live is no defect", sel, ds)
		}
	}
}

// A capture's secret attributes keep no value, and no error quotes one.
func TestLoadCaptureWithholdsSecrets(t *testing.T) {
	const secret = "DHHC-1:00:c2VjcmV0LXZhbHVlLXRoYXQtbXVzdC1uZXZlci1wcmludA==:"
	good := "/sys/class/nvme/nvme0/state\tlive\n"
	for _, a := range SecretAttrs {
		fsys, err := LoadCapture(strings.NewReader(good+"/sys/class/nvme/nvme0/"+a+"\t"+secret+"\n"), "c.tsv")
		if err != nil {
			t.Fatal(err)
		}
		b, err := fs.ReadFile(fsys, "class/nvme/nvme0/"+a)
		if err != nil || strings.Contains(string(b), secret) {
			t.Errorf("%s kept %q (%v)", a, b, err)
		}
		for _, bad := range []string{
			"/sys/class/nvme/nvme0/" + a + " " + secret + "\n",    // no tab
			"/sys/class/nvme/../" + a + "/" + secret + "\tx\n",    // not clean
			"sys/class/nvme/nvme0/" + a + "  " + secret + "\tx\n", // not absolute
		} {
			_, err := LoadCapture(strings.NewReader(good+bad), "c.tsv")
			if err == nil {
				t.Errorf("%q accepted", bad)
				continue
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "c2VjcmV0") {
				t.Errorf("error quotes the secret: %v", err)
			}
		}
	}
}
