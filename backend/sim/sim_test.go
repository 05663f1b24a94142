package sim

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// run drives a cluster through n migrations one after another, sampling
// every host's tree through nvmeof every 0.1 s, and returns the lines
// encoded as JSONL plus the parsed samples encoded the same way.
func run(t *testing.T, cfg Config, n int) (lines []record.Line, jsonl []byte, samples []byte) {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var buf, sbuf bytes.Buffer
	enc, senc := json.NewEncoder(&buf), json.NewEncoder(&sbuf)
	step := func(to float64) {
		ls, err := c.AdvanceTo(to)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			lines = append(lines, l)
			if err := enc.Encode(l); err != nil {
				t.Fatal(err)
			}
		}
		for _, h := range c.Hosts() {
			st, err := nvmeof.ReadHost(h.Sysfs(), h.HostNQN())
			if err != nil {
				t.Fatal(err)
			}
			senc.Encode(st)
		}
	}
	step(0)
	vols := c.Topology().Volumes
	for i := 0; i < n; i++ {
		id, err := c.StartMigration(vols[i%len(vols)].NQN)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; ; k++ {
			step(c.Now() + 0.1)
			if _, term := c.MigrationPhase(id); term {
				break
			}
			if k > 3000 {
				t.Fatalf("migration %s not terminal", id)
			}
		}
	}
	return lines, buf.Bytes(), sbuf.Bytes()
}

func TestSameSeedSameRecord(t *testing.T) {
	_, a, sa := run(t, Config{Seed: 9}, 4)
	_, b, sb := run(t, Config{Seed: 9}, 4)
	if !bytes.Equal(a, b) {
		t.Error("same seed: timeline lines differ")
	}
	if !bytes.Equal(sa, sb) {
		t.Error("same seed: sampled host states differ")
	}
	_, c, _ := run(t, Config{Seed: 10}, 4)
	if bytes.Equal(a, c) {
		t.Error("seeds 9 and 10 gave identical lines")
	}
}

func TestLines(t *testing.T) {
	lines, _, _ := run(t, Config{Seed: 3, Model: record.Model{Volumes: 4}}, 2)
	c, _ := New(Config{Seed: 3, Model: record.Model{Volumes: 4}})
	topo := c.Topology()
	if len(topo.Nodes) != 3 || len(topo.Hosts) != 3 || len(topo.Volumes) != 4 {
		t.Fatalf("topology %d nodes %d hosts %d volumes", len(topo.Nodes), len(topo.Hosts), len(topo.Volumes))
	}
	// Initial publish at t=0 for every volume.
	initial := map[string][]string{}
	for _, l := range lines {
		if l.T == 0 && l.Kind == record.KindEndpoints {
			initial[l.NQN] = l.Endpoints
		}
	}
	for _, v := range topo.Volumes {
		if len(initial[v.NQN]) != 3 {
			t.Errorf("%s: initial endpoints %v, want 3", v.Name, initial[v.NQN])
		}
	}
	// Phases of each migration, in order; Pending carries the endpoints.
	phases := map[string][]string{}
	prevT := 0.0
	for _, l := range lines {
		if l.T < prevT {
			t.Fatalf("lines out of time order: %g after %g", l.T, prevT)
		}
		prevT = l.T
		switch l.Kind {
		case record.KindPhase:
			phases[l.Migration] = append(phases[l.Migration], l.Phase)
			if l.Phase == record.PhasePending {
				if len(l.SourceEndpoints) != 3 || len(l.TargetEndpoints) != 3 {
					t.Errorf("%s Pending: source %v target %v", l.Migration, l.SourceEndpoints, l.TargetEndpoints)
				}
				if diff := cmp.Diff(initial[l.NQN], l.SourceEndpoints); l.Migration == "mig-0001" && diff != "" {
					t.Errorf("source endpoints differ from the published ones:\n%s", diff)
				}
			} else if l.SourceEndpoints != nil || l.TargetEndpoints != nil {
				t.Errorf("%s %s carries endpoints", l.Migration, l.Phase)
			}
		case record.KindTarget:
			if l.Node == "" || l.RejectedConnects == nil {
				t.Errorf("target line without node or counter: %+v", l)
			}
		case record.KindKernel:
			if l.Host == "" || l.Controller == "" || l.Message == "" {
				t.Errorf("kernel line incomplete: %+v", l)
			}
		}
	}
	want := []string{record.PhasePending, record.PhaseValidating, record.PhaseRunning, record.PhaseCompleted}
	for _, id := range []string{"mig-0001", "mig-0002"} {
		if diff := cmp.Diff(want, phases[id]); diff != "" {
			t.Errorf("%s phases (-want +got):\n%s", id, diff)
		}
	}
}

func TestBadConfig(t *testing.T) {
	if _, err := New(Config{Model: record.Model{ConsumersPerVolume: 5, Hosts: 3}}); err == nil {
		t.Error("5 consumers per volume on 3 hosts accepted")
	}
}

func TestWallClockDrivesTheWorld(t *testing.T) {
	clk := NewWallClock()
	c, err := New(Config{Seed: 1, Clock: clk, Model: record.Model{Volumes: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AdvanceTo(0.05); err != nil {
		t.Fatal(err)
	}
	if clk.Now() < 0.05 {
		t.Errorf("after AdvanceTo(0.05) the wall clock reads %.3f s", clk.Now())
	}
}
