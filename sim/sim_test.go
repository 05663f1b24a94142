package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

func newWorld(t testing.TB, cfg Config) *World {
	t.Helper()
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func advance(t testing.TB, w *World, to float64) []Event {
	t.Helper()
	evs, err := w.AdvanceTo(to)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// runMigration starts a migration of volume vi and advances in steps of dt
// until it is terminal (at most limit seconds), calling each after every step.
func runMigration(t testing.TB, w *World, vi int, dt, limit float64, each func()) (string, []Event) {
	t.Helper()
	id, err := w.StartMigration(w.Volumes()[vi].NQN)
	if err != nil {
		t.Fatal(err)
	}
	var evs []Event
	end := w.Now() + limit
	for w.Now() < end {
		evs = append(evs, advance(t, w, w.Now()+dt)...)
		if each != nil {
			each()
		}
		if _, term := w.MigrationPhase(id); term {
			return id, evs
		}
	}
	t.Fatalf("migration %s not terminal after %g s", id, limit)
	return id, evs
}

func readHost(t testing.TB, h *Host) nvmeof.HostState {
	t.Helper()
	st, err := nvmeof.ReadHost(h.Sysfs(), h.NQN)
	if err != nil {
		t.Fatalf("host %s: %v", h.Name, err)
	}
	return st
}

// checkRoundTrip parses every host's rendered tree with nvmeof and compares
// it with the simulator's own state.
func checkRoundTrip(t *testing.T, w *World, when string) {
	t.Helper()
	for _, h := range w.Hosts() {
		got := readHost(t, h)
		if diff := cmp.Diff(h.State(), got); diff != "" {
			t.Errorf("%s: host %s: parsed tree differs from simulator state (-sim +parsed):\n%s", when, h.Name, diff)
		}
	}
}

func TestRoundTripThroughNvmeof(t *testing.T) {
	w := newWorld(t, Config{Seed: 7, Model: record.Model{Volumes: 4, NamespacesPerVolume: 2, NamespacedVolumes: 2, ConsumersPerVolume: 2}})
	advance(t, w, 0)
	checkRoundTrip(t, w, "t=0")
	st := readHost(t, w.Hosts()[0])
	if len(st.Subsystems) == 0 {
		t.Fatal("host worker-1 has no subsystem at t=0")
	}
	differ := 0
	for _, s := range st.Subsystems {
		for _, ns := range s.Namespaces {
			var S, H int
			if _, err := fmt.Sscanf(ns.Head, "nvme%dn%d", &S, &H); err != nil {
				t.Fatalf("head name %q: %v", ns.Head, err)
			}
			if S != s.Instance {
				t.Errorf("head %s of nvme-subsys%d: subsystem index %d", ns.Head, s.Instance, S)
			}
			if H != ns.NSID {
				differ++
			}
		}
		if len(s.Controllers) != 3 {
			t.Errorf("%s: %d controllers, want 3 (one per listener)", s.NQN, len(s.Controllers))
		}
		for _, c := range s.Controllers {
			if want := len(w.byNQN[s.NQN].NSIDs); len(c.Legs) != want {
				t.Errorf("%s: %d legs, want %d", c.Name, len(c.Legs), want)
			}
		}
	}
	if differ == 0 {
		t.Error("every head index equals its NSID; the simulator must render them different")
	}
	// Mid-validation (target paths inaccessible), mid-cutover, and after.
	id, err := w.StartMigration(w.Volumes()[0].NQN)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for w.Now() < 120 {
		advance(t, w, w.Now()+0.25)
		ph, term := w.MigrationPhase(id)
		if !seen[ph] {
			seen[ph] = true
			checkRoundTrip(t, w, "phase "+ph)
		}
		if term {
			break
		}
	}
	checkRoundTrip(t, w, "after migration")
	// A connecting controller (listener gone): address without src_addr.
	v := w.Volumes()[1]
	n := w.nodes[w.lvstores[v.LVS].Nodes[1]]
	ts, _ := n.Subsystem(v.NQN)
	ts.removeListener(w.lvstores[v.LVS].Port)
	advance(t, w, w.Now()+1)
	checkRoundTrip(t, w, "connecting controller")
	found := false
	for _, h := range w.Hosts() {
		for _, s := range readHost(t, h).Subsystems {
			for _, c := range s.Controllers {
				if c.State == nvmeof.StateConnecting {
					found = true
					if c.Address.SrcAddr != "" {
						t.Errorf("%s connecting but address has src_addr %q", c.Name, c.Address.SrcAddr)
					}
				}
			}
		}
	}
	if !found {
		t.Error("no connecting controller after the listener was removed")
	}
}

func TestSysfsLayout(t *testing.T) {
	w := newWorld(t, Config{Seed: 1, Model: record.Model{Volumes: 2}})
	h := w.Hosts()[0]
	fsys := h.Sysfs()
	ents, err := fs.ReadDir(fsys, "class/nvme")
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 3 {
		t.Fatalf("class/nvme has %d entries, want 3", len(ents))
	}
	for _, e := range ents {
		if e.Type() != fs.ModeSymlink || e.IsDir() {
			t.Errorf("class/nvme/%s: type %v, want a symlink that is not reported as a directory", e.Name(), e.Type())
		}
	}
	want := map[string]string{
		"class/nvme/nvme0/state":                                             "live\n",
		"class/nvme/nvme0/transport":                                         "tcp\n",
		"class/nvme/nvme0/ctrl_loss_tmo":                                     "60\n",
		"class/nvme/nvme0/reconnect_delay":                                   "2\n",
		"class/nvme/nvme0/fast_io_fail_tmo":                                  "off\n",
		"class/nvme/nvme0/kato":                                              "5\n",
		"class/nvme/nvme0/address":                                           "traddr=10.0.0.1,trsvcid=4426,src_addr=10.1.0.1\n",
		"class/nvme/nvme0/nvme0c0n1/nsid":                                    "2\n",
		"class/nvme/nvme0/nvme0c0n1/ana_state":                               "optimized\n",
		"class/nvme/nvme1/nvme0c1n1/ana_state":                               "non-optimized\n",
		"class/nvme/nvme0/nvme0c0n1/queue/logical_block_size":                "512\n",
		"class/nvme-subsystem/nvme-subsys0/iopolicy":                         "numa\n",
		"class/nvme-subsystem/nvme-subsys0/nvme0n1/nsid":                     "2\n",
		"class/nvme-subsystem/nvme-subsys0/nvme1/state":                      "live\n",
		"class/nvme-subsystem/nvme-subsys0/nvme0n1/size":                     fmt.Sprint((10<<30)/512) + "\n",
		"devices/virtual/nvme-fabrics/ctl/nvme2/nvme0c2n1/nsid":              "2\n",
		"class/nvme-subsystem/nvme-subsys0/subsysnqn":                        w.Volumes()[0].NQN + "\n",
		"class/nvme-subsystem/nvme-subsys0/nvme0n1/queue/logical_block_size": "512\n",
	}
	for p, v := range want {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if string(b) != v {
			t.Errorf("%s = %q, want %q", p, b, v)
		}
	}
	if b, _ := fs.ReadFile(fsys, "class/nvme/nvme0/model"); len(b) != 41 {
		t.Errorf("model %q: want 40 space-padded characters and a newline", b)
	}
	if _, err := fs.ReadFile(fsys, "class/nvme/nvme0/delete_controller"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("reading write-only delete_controller: err %v, want permission denied", err)
	}
	// The tree without the write-only files (which cannot be opened) must
	// pass the standard library's fs.FS conformance test.
	readable := h.render(false)
	var files []string
	fs.WalkDir(readable, "devices", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err := fstest.TestFS(readable, files...); err != nil {
		t.Fatal(err)
	}
}

func TestSysfsCachedUntilChange(t *testing.T) {
	w := newWorld(t, Config{Seed: 1, Model: record.Model{Volumes: 3}})
	h := w.Hosts()[0]
	a := h.Sysfs()
	advance(t, w, 5)
	if b := h.Sysfs(); b != a {
		t.Error("tree rebuilt although nothing changed on the host")
	}
	c := h.Controllers()[0]
	c.ts.setANA(c.port, nvmeof.ANAInaccessible)
	advance(t, w, 6)
	if b := h.Sysfs(); b == a {
		t.Error("tree not rebuilt after an ANA change")
	}
	if got, _ := fs.ReadFile(a, "class/nvme/nvme0/nvme0c0n1/ana_state"); string(got) != "optimized\n" {
		t.Errorf("an earlier snapshot changed: %q", got)
	}
}

// pauseWindows returns the pause windows host h saw of subsystem nqn when
// sampled every dt through f (docs/concepts.md "Pause window": some namespace
// has no accessible leg on a live controller).
type pauseTracker struct {
	nqn     string
	open    bool
	start   float64
	windows [][2]float64
}

func (p *pauseTracker) sample(t float64, st nvmeof.HostState) {
	paused := false
	subs := st.SubsystemsByNQN(p.nqn)
	var nsids []int
	for _, s := range subs {
		nsids = append(nsids, s.NSIDs()...)
	}
	if len(nsids) == 0 {
		paused = true
	}
	for _, id := range nsids {
		ok := false
		for _, s := range subs {
			for _, c := range s.Controllers {
				if l, has := c.LegTo(id); has && c.Accessible(l) {
					ok = true
				}
			}
		}
		if !ok {
			paused = true
		}
	}
	switch {
	case paused && !p.open:
		p.open, p.start = true, t
	case !paused && p.open:
		p.open = false
		p.windows = append(p.windows, [2]float64{p.start, t})
	}
}

func TestMigrationPhasesAndCutover(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			w := newWorld(t, Config{Seed: seed, Model: record.Model{Volumes: 3, ConsumersPerVolume: 2}})
			advance(t, w, 1)
			v := w.Volumes()[1]
			src := w.Endpoints(v.NQN)
			trackers := map[string]*pauseTracker{}
			var validatingSeen bool
			const dt = 0.02
			id, evs := runMigration(t, w, 1, dt, 120, func() {
				for _, hi := range v.Consumers {
					h := w.hosts[hi]
					if trackers[h.Name] == nil {
						trackers[h.Name] = &pauseTracker{nqn: v.NQN}
					}
					st := readHost(t, h)
					trackers[h.Name].sample(w.Now(), st)
					m, _ := w.Migration(v.migrationID())
					if m != nil && m.Phase == PhaseRunning && m.CutoverWindowS == 0 {
						// target paths exist, live, inaccessible; source serves.
						n := 0
						for _, s := range st.SubsystemsByNQN(v.NQN) {
							for _, c := range s.Controllers {
								if !containsStr(src, c.Endpoint()) {
									n++
									if c.State != nvmeof.StateLive || c.Serving() {
										t.Errorf("t=%.2f target path %s %s serving=%v during Running", w.Now(), c.Name, c.State, c.Serving())
									}
								}
							}
						}
						if n != 3 {
							t.Errorf("t=%.2f host %s has %d target paths during Running, want 3", w.Now(), h.Name, n)
						}
						validatingSeen = true
					}
				}
			})
			if !validatingSeen {
				t.Fatal("never sampled the Running phase")
			}
			var phases []string
			for _, e := range evs {
				if e.Kind == EventPhase && e.Migration == id {
					phases = append(phases, e.Phase)
				}
			}
			if diff := cmp.Diff([]string{PhasePending, PhaseValidating, PhaseRunning, PhaseCompleted}, phases); diff != "" {
				t.Errorf("phases (-want +got):\n%s", diff)
			}
			m, _ := w.Migration(id)
			if d := m.CutoverWindowS - 2.0; math.Abs(d) > 0.25*2.0+1e-9 {
				t.Errorf("cutover window %.3f s outside 2.0 s ± 25%%", m.CutoverWindowS)
			}
			// AEN latency: each leg update lands 0.01..0.03 s after the
			// target's change; sampling adds up to dt on each edge.
			tol := 2*0.03 + 2*dt
			for name, tr := range trackers {
				if len(tr.windows) != 1 || tr.open {
					t.Fatalf("host %s: pause windows %v (open %v), want exactly one", name, tr.windows, tr.open)
				}
				got := tr.windows[0][1] - tr.windows[0][0]
				if math.Abs(got-m.CutoverWindowS) > tol {
					t.Errorf("host %s: pause %.3f s, drawn cutover window %.3f s (tolerance %.3f)", name, got, m.CutoverWindowS, tol)
				}
			}
			// At completion the source controllers are still there: neither
			// operator releases them (OP 5aa711cc: nothing after Completed);
			// their listeners are gone, so they reconnect into rejected
			// CONNECTs until the kernel gives up after the CSI driver's
			// ctrl_loss_tmo 60 s (30 attempts, 2 s apart).
			for _, hi := range v.Consumers {
				left := ctrlsAt(w.hosts[hi], v.NQN, src)
				if len(left) != 3 {
					t.Errorf("host %s: %d source controllers at completion, want 3 (no release Job after Completed)", w.hosts[hi].Name, len(left))
				}
				for _, c := range left {
					if c.State == nvmeof.StateLive || c.sysfsCtrlLossTmo() != 60 {
						t.Errorf("host %s source %s: %s ctrl_loss_tmo %d, want not live with the CSI driver's 60", w.hosts[hi].Name, c.Spec.Addr(), c.State, c.sysfsCtrlLossTmo())
					}
				}
			}
			advance(t, w, w.Now()+60+2*2)
			// After: only target controllers, primary optimized, others non-optimized.
			dst := w.Endpoints(v.NQN)
			if len(dst) != 3 || containsStr(dst, src[0]) {
				t.Fatalf("published after completion %v (source was %v)", dst, src)
			}
			primary := canonicalAddr(w.nodes[w.lvstores[v.LVS].Nodes[0]].IP, w.lvstores[v.LVS].Port)
			for _, hi := range v.Consumers {
				st := readHost(t, w.hosts[hi])
				var got []string
				for _, s := range st.SubsystemsByNQN(v.NQN) {
					for _, c := range s.Controllers {
						got = append(got, c.Endpoint())
						wantANA := nvmeof.ANANonOptimized
						if c.Endpoint() == primary {
							wantANA = nvmeof.ANAOptimized
						}
						for _, l := range c.Legs {
							if l.ANA != wantANA || c.State != nvmeof.StateLive {
								t.Errorf("host %s %s %s: %s leg %s, want live %s", w.hosts[hi].Name, c.Name, c.Endpoint(), c.State, l.ANA, wantANA)
							}
						}
					}
				}
				if diff := cmp.Diff(dst, sortedCopy(got)); diff != "" {
					t.Errorf("host %s controllers after completion (-published +host):\n%s", w.hosts[hi].Name, diff)
				}
			}
			for _, n := range w.nodes {
				if ts, ok := n.Subsystem(v.NQN); ok {
					if _, has := ts.listener(w.lvstores[m.SrcLVS].Port); has {
						t.Errorf("node %s still has the source listener", n.Name)
					}
				}
			}
		})
	}
}

func (v *Volume) migrationID() string {
	if v.migration == nil {
		return ""
	}
	return v.migration.ID
}

func containsStr(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func sortedCopy(xs []string) []string {
	out := append([]string(nil), xs...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// scenario runs n migrations one after another, sampling every host every
// 0.5 s; it returns the events and a digest of every rendered tree.
func scenario(t *testing.T, seed int64, n int) ([]Event, []string) {
	w := newWorld(t, Config{Seed: seed})
	var evs []Event
	var trees []string
	sample := func() {
		for _, h := range w.Hosts() {
			trees = append(trees, treeDigest(t, h.Sysfs()))
		}
	}
	evs = append(evs, advance(t, w, 0)...)
	for i := 0; i < n; i++ {
		_, e := runMigration(t, w, i%len(w.Volumes()), 0.5, 300, sample)
		evs = append(evs, e...)
	}
	return evs, trees
}

func treeDigest(t *testing.T, fsys fs.FS) string {
	var b strings.Builder
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p)
		if d.Type()&fs.ModeSymlink != 0 {
			l, _ := fs.ReadLink(fsys, p)
			b.WriteString(" -> " + l)
		} else if d.Type().IsRegular() {
			data, err := fs.ReadFile(fsys, p)
			if err == nil {
				b.Write(data)
			}
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestDeterminism(t *testing.T) {
	e1, t1 := scenario(t, 42, 5)
	e2, t2 := scenario(t, 42, 5)
	if !reflect.DeepEqual(e1, e2) {
		t.Error("same seed, different events")
	}
	if !reflect.DeepEqual(t1, t2) {
		t.Error("same seed, different rendered trees")
	}
	e3, _ := scenario(t, 43, 5)
	if reflect.DeepEqual(e1, e3) {
		t.Error("seeds 42 and 43 gave identical events")
	}
}

func TestConnectSemantics(t *testing.T) {
	w := newWorld(t, Config{Seed: 1, Model: record.Model{Volumes: 1}})
	h := w.Hosts()[0]
	v := w.Volumes()[0]
	lvs := w.lvstores[v.LVS]
	n0 := w.nodes[lvs.Nodes[0]]
	// Already connected: same key as an existing live controller.
	_, err := h.Connect(nvmeof.Target{NQN: v.NQN, Traddr: n0.IP, Trsvcid: fmt.Sprint(lvs.Port)})
	if !errors.Is(err, nvmeof.ErrAlreadyConnected) {
		t.Errorf("second connect: %v, want already connected", err)
	}
	// Same ip:port, another host_traddr: another key, connects.
	name, err := h.Connect(nvmeof.Target{NQN: v.NQN, Traddr: n0.IP, Trsvcid: fmt.Sprint(lvs.Port), HostTraddr: h.IP})
	if err != nil {
		t.Fatalf("connect with host_traddr: %v", err)
	}
	if err := h.Disconnect(name); err != nil {
		t.Fatal(err)
	}
	if err := h.Disconnect(name); err != nil {
		t.Errorf("disconnecting a gone controller: %v", err)
	}
	before := len(h.Controllers())
	// Refused: nothing listens on that port.
	_, err = h.Connect(nvmeof.Target{NQN: v.NQN, Traddr: n0.IP, Trsvcid: "9999"})
	var ce *ConnectError
	if !errors.As(err, &ce) || ce.Kind != ConnectRefused {
		t.Errorf("connect to an unserved port: %v, want refused", err)
	}
	// Rejected: the port is served (another lvstore's) but the subsystem
	// has no listener there; counted at the target.
	other := w.lvstores[(v.LVS+1)%len(w.lvstores)]
	rej := n0.RejectedConnects()
	_, err = h.Connect(nvmeof.Target{NQN: v.NQN, Traddr: n0.IP, Trsvcid: fmt.Sprint(other.Port)})
	if !errors.As(err, &ce) || ce.Kind != ConnectRejected || !strings.Contains(ce.TargetMsg, "to connect at this address") {
		t.Errorf("connect where the subsystem has no listener: %v, want rejected (does not allow host ... at this address)", err)
	}
	if n0.RejectedConnects() != rej+1 {
		t.Errorf("rejected counter %d, want %d", n0.RejectedConnects(), rej+1)
	}
	if len(h.Controllers()) != before {
		t.Errorf("failed connects left controllers: %d, want %d", len(h.Controllers()), before)
	}
}

func TestReconnectLoopAndRemoval(t *testing.T) {
	for _, tc := range []struct {
		reset      string
		tmo        int
		goneBy     float64 // controller removed by then (0: never)
		stillAtEnd bool
	}{
		{ReconnectResetFull, 60, 70, false},
		{ReconnectResetFull, 3600, 3700, false},
		{ReconnectResetPartial, 60, 0, true},
	} {
		t.Run(fmt.Sprintf("%s-%d", tc.reset, tc.tmo), func(t *testing.T) {
			w := newWorld(t, Config{Seed: 1, Model: record.Model{Volumes: 1, ReconnectReset: tc.reset}})
			h := w.Hosts()[0]
			v := w.Volumes()[0]
			other := w.lvstores[(v.LVS+1)%len(w.lvstores)]
			n := w.nodes[other.Nodes[0]]
			ts := n.ensureSubsystem(v)
			ts.addListener(other.Port, nvmeof.ANAInaccessible)
			name, err := h.Connect(nvmeof.Target{NQN: v.NQN, Traddr: n.IP, Trsvcid: fmt.Sprint(other.Port),
				CtrlLossTmo: nvmeof.Int(tc.tmo), ReconnectDelay: nvmeof.Int(2)})
			if err != nil {
				t.Fatal(err)
			}
			rej0 := n.RejectedConnects()
			ts.removeListener(other.Port)
			evs := advance(t, w, 1)
			c, ok := h.Controller(name)
			if !ok || c.State != nvmeof.StateConnecting {
				t.Fatalf("after listener removal: present %v state %v, want connecting", ok, c.State)
			}
			end := 7200.0
			if tc.goneBy > 0 {
				end = tc.goneBy
			}
			evs = append(evs, advance(t, w, end)...)
			_, present := h.Controller(name)
			if present != tc.stillAtEnd {
				t.Fatalf("at %g s controller present=%v, want %v", end, present, tc.stillAtEnd)
			}
			attempts := 0
			for _, e := range evs {
				if e.Kind == EventKernel && e.Controller == name && strings.HasPrefix(e.Message, "Failed reconnect attempt") {
					attempts++
				}
			}
			want := tc.tmo / 2
			if tc.stillAtEnd {
				want = int((end - 0.005) / 2)
			}
			if attempts != want {
				t.Errorf("%d failed reconnect attempts, want %d", attempts, want)
			}
			if got := n.RejectedConnects() - rej0; got != int64(attempts) {
				t.Errorf("target counted %d rejections for %d attempts", got, attempts)
			}
		})
	}
}

func TestFailfastAndDNR(t *testing.T) {
	w := newWorld(t, Config{Seed: 1, Model: record.Model{Volumes: 1, TargetDNR: true}})
	h := w.Hosts()[0]
	v := w.Volumes()[0]
	lvs := w.lvstores[v.LVS]
	n := w.nodes[lvs.Nodes[1]]
	ts, _ := n.Subsystem(v.NQN)
	var name string
	for _, c := range h.Controllers() {
		if c.Spec.Traddr == n.IP {
			name = c.Name()
		}
	}
	ts.removeListener(lvs.Port)
	evs := advance(t, w, 30)
	if _, ok := h.Controller(name); ok {
		t.Error("controller still present: a DNR rejection must stop reconnecting under kernel-dnr=honor")
	}
	removed := false
	for _, e := range evs {
		if e.Controller == name && strings.HasPrefix(e.Message, "Removing controller") {
			removed = true
		}
	}
	if !removed {
		t.Error("no 'Removing controller' kernel line")
	}
}
