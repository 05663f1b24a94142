package nvmeof

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The fuzz targets run their seeds (the fixtures, the f.Add lines and the
// committed corpora under testdata/fuzz/) under "go test"; "make fuzz"
// runs each for FUZZTIME.

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
		// The strict parsers agree, and refuse exactly the unknown.
		if cs, err := ParseControllerState(s); (err != nil) != (st == StateUnknown) || (err == nil && cs != st) ||
			(err != nil && !errors.Is(err, ErrUnknownState)) {
			t.Errorf("ParseControllerState(%q) = %q, %v; ParseState %q", s, cs, err, st)
		}
		if as, err := ParseANA(s); (err != nil) != (a == ANAUnknown) || (err == nil && as != a) ||
			(err != nil && !errors.Is(err, ErrUnknownState)) {
			t.Errorf("ParseANA(%q) = %q, %v; ParseANAState %q", s, as, err, a)
		}
	})
}

// FuzzParseConnections: any input gives targets with a valid ip, port and
// transport, or an error naming "connections"; never a panic.
func FuzzParseConnections(f *testing.F) {
	for _, s := range []string{
		`[{"nqn":"nqn.x","ip":"10.0.0.3","port":4420,"transport":"tcp","ctrlLossTmo":3600,"reconnectDelay":2,"fastIOFailTmo":8,"keepAliveTmo":4}]`,
		`[{"nqn":"nqn.x","ip":"fd00::4","port":"4421","transport":"RDMA"}]`,
		`[]`, ``, `{}`, `[{"ip":"1.2.3.4","port":0}]`, `[{"ip":"10.0.0.1","port":4420,"nqm":"nqn.x"}]`,
		`[{"ip":"10.0.0.1","port":4420,"transport":"tpc"}]`, `[] []`, `[{"ip":"10.0.0.01","port":4420}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := ParseConnections(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "connections") {
				t.Errorf("error does not name connections: %v", err)
			}
			return
		}
		for i, tg := range ts {
			if e := tg.Endpoint(); e == "" {
				t.Errorf("target %d %+v has no endpoint", i, tg)
			}
			if tg.Transport != "" && !slices.Contains(Transports, strings.ToLower(tg.Transport)) {
				t.Errorf("target %d: transport %q accepted", i, tg.Transport)
			}
		}
	})
}

func FuzzLoadCapture(f *testing.F) {
	for _, name := range []string{"controller-not-contributing.tsv", "healthy.tsv"} {
		b, err := os.ReadFile(filepath.Join(capturesDir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(readAttrLines(b))
	}
	f.Add([]byte("/sys/class/nvme/nvme0/state\tlive\n/sys/class/nvme/nvme0/address\ttraddr=1.2.3.4,trsvcid=1\n"))
	f.Add([]byte("/sys/a\t1\n/sys/a/b\t2\n"))
	f.Add([]byte("/sys/class/nvme/nvme0/dhchap_secret DHHC-1:00:c2VjcmV0LXZhbHVl:\n"))
	f.Add([]byte("/sys/module/nvme_core/parameters/multipath\tN\n/sys/class/nvme/nvme0/state\tbogus\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys, err := LoadCapture(strings.NewReader(string(data)), "fuzz.tsv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.tsv:") {
				t.Errorf("error does not name the capture line: %v", err)
			}
			checkNoSecret(t, data, err.Error())
			return
		}
		h, err := ReadSysfs(fsys)
		if err != nil {
			checkNoSecret(t, data, err.Error())
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

// checkNoSecret fails when msg quotes the value of a secret attribute line
// of capture data. The message's own words (the attribute names, "[value
// withheld]", the error templates) are taken out first, and only values of
// 12 bytes or more are looked for, so that a value made of those words (the
// fuzzer finds "dhchap_secretp_secret") is not taken for a quote.
func checkNoSecret(t *testing.T, data []byte, msg string) {
	t.Helper()
	words := append([]string{"[value withheld]", "no tab between path and value in",
		"is not a clean absolute path under /sys/", "given again (first at", "is a file here but a directory at"}, SecretAttrs...)
	for _, w := range words {
		msg = strings.ReplaceAll(msg, w, "\x00")
	}
	for _, line := range strings.Split(string(data), "\n") {
		for _, a := range SecretAttrs {
			i := strings.Index(line, a)
			if i < 0 {
				continue
			}
			v := strings.TrimSpace(line[i+len(a):])
			if len(v) >= 12 && strings.Contains(msg, v) {
				t.Errorf("message quotes the value of %s: %s", a, msg)
			}
		}
	}
}

// readAttrLines keeps the lines of a capture whose attribute ReadSysfs
// reads: the fixtures' other attributes (queue counts, model strings) only
// slow the fuzzer down.
func readAttrLines(capture []byte) []byte {
	read := map[string]bool{"state": true, "address": true, "transport": true, "subsysnqn": true, "cntlid": true,
		"hostnqn": true, "hostid": true, "ctrl_loss_tmo": true, "reconnect_delay": true, "fast_io_fail_tmo": true,
		"nsid": true, "ana_state": true, "ana_grpid": true}
	var out []byte
	for _, line := range strings.SplitAfter(string(capture), "\n") {
		p, _, _ := strings.Cut(line, "\t")
		if read[filepath.Base(p)] {
			out = append(out, line...)
		}
	}
	return out
}
