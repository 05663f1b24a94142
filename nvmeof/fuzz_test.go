package nvmeof

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The fuzz targets run their committed seed corpora (testdata/fuzz/) under
// "go test"; "make fuzz" runs each for 60 s.

func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{
		"traddr=10.0.0.1,trsvcid=4420,src_addr=10.0.0.2", "traddr=fd00::1,trsvcid=4420,host_iface=eth0",
		"", "traddr=", "=", ",", "traddr=a,traddr=b", "traddr=[::1],trsvcid=99999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddress(s)
		if err != nil {
			if a != (Address{}) {
				t.Errorf("ParseAddress(%q) returned %+v with an error", s, a)
			}
			return
		}
		back, err := ParseAddress(a.String())
		if err != nil || back != a {
			t.Errorf("round trip of %q: %+v -> %q -> %+v, %v", s, a, a.String(), back, err)
		}
		if e := a.Endpoint(); e != "" {
			again, err := CanonicalizeEndpoint(e)
			if err != nil || again != e {
				t.Errorf("endpoint %q of %q is not canonical: %q, %v", e, s, again, err)
			}
		}
	})
}

func FuzzParseState(f *testing.F) {
	for _, s := range []string{"live", "deleting (no IO)", "optimized", "non-optimized\n", "", "\x00"} {
		f.Add(s)
	}
	known := map[ControllerState]bool{StateNew: true, StateLive: true, StateResetting: true, StateConnecting: true,
		StateDeleting: true, StateDeletingNoIO: true, StateDead: true, StateUnknown: true}
	knownANA := map[ANAState]bool{ANAOptimized: true, ANANonOptimized: true, ANAInaccessible: true,
		ANAPersistentLoss: true, ANAChange: true, ANAUnknown: true}
	f.Fuzz(func(t *testing.T, s string) {
		st := ParseState(s)
		if !known[st] || ParseState(string(st)) != st {
			t.Errorf("ParseState(%q) = %q", s, st)
		}
		if st != StateUnknown && string(st) != strings.TrimSpace(s) {
			t.Errorf("ParseState(%q) = %q: not the trimmed input", s, st)
		}
		a := ParseANAState(s)
		if !knownANA[a] || ParseANAState(string(a)) != a {
			t.Errorf("ParseANAState(%q) = %q", s, a)
		}
		if a.Accessible() != (a == ANAOptimized || a == ANANonOptimized) {
			t.Errorf("Accessible(%q) wrong", a)
		}
	})
}

func FuzzLoadCapture(f *testing.F) {
	for _, name := range []string{"controller-not-contributing.tsv"} {
		b, err := os.ReadFile(filepath.Join(capturesDir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("/sys/class/nvme/nvme0/state\tlive\n/sys/class/nvme/nvme0/address\ttraddr=1.2.3.4,trsvcid=1\n"))
	f.Add([]byte("/sys/a\t1\n/sys/a/b\t2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys, err := LoadCapture(strings.NewReader(string(data)), "fuzz.tsv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.tsv:") {
				t.Errorf("error does not name the capture line: %v", err)
			}
			return
		}
		h, err := ReadSysfs(fsys)
		if err != nil {
			return
		}
		for _, s := range h.Subsystems {
			if !sort.SliceIsSorted(s.Controllers, func(i, j int) bool { return s.Controllers[i].Instance < s.Controllers[j].Instance }) {
				t.Errorf("controllers of %s not sorted", s.NQN)
			}
			for _, c := range s.Controllers {
				if c.NQN != s.NQN {
					t.Errorf("controller %s (NQN %q) placed in subsystem %q", c.Name, c.NQN, s.NQN)
				}
			}
		}
		for _, nqn := range h.NQNs() {
			for _, d := range Inspect(h, Selector{NQN: nqn, NSID: 1}, []Target{{Traddr: "10.0.0.1", Trsvcid: "4420"}}) {
				if len(d.Controllers) == 0 && d.Scope == ScopeController {
					t.Errorf("controller-scope defect without a controller: %+v", d)
				}
			}
			if nqn == "" {
				continue
			}
			if _, err := PlanReap(h, nqn); err != nil {
				t.Errorf("PlanReap(%q): %v", nqn, err)
			}
			if _, err := PlanRelease(h, nqn, []Target{{Traddr: "10.0.0.1", Trsvcid: "4420"}}); err != nil {
				t.Errorf("PlanRelease(%q): %v", nqn, err)
			}
		}
	})
}
