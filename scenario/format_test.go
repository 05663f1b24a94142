package scenario

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/record"
)

// TestIndependentPauseWindowsFromTheFormat (issue 15): a reader written
// only from record/FORMAT.md and docs/run-record.md — generic JSON, no record or
// checks code — rebuilds every host's state at every tick from a version-2
// timeline.jsonl, recomputes each consumer host's pause windows per volume
// (with the silent stalls of its stall lines, docs/concepts.md) and finds
// exactly the windows summary.json reports (attributed to a migration, to
// a fault, or neither).
func TestIndependentPauseWindowsFromTheFormat(t *testing.T) {
	res := scaleRun(t, 2, 3, 10, 12, record.FormatChangeOnly)
	var plan struct {
		Params struct {
			TimelineFormat int `json:"timeline_format"`
		} `json:"params"`
		Topology struct {
			Volumes []struct {
				NQN       string   `json:"nqn"`
				NSIDs     []int    `json:"nsids"`
				Consumers []string `json:"consumers"`
			} `json:"volumes"`
		} `json:"topology"`
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Params.TimelineFormat != 2 {
		t.Fatalf("plan.json timeline_format %d, want 2", plan.Params.TimelineFormat)
	}

	type leg struct {
		NSID int    `json:"nsid"`
		ANA  string `json:"ana"`
	}
	type ctrl struct {
		NQN   string `json:"nqn"`
		State string `json:"state"`
		Legs  []leg  `json:"legs"`
	}
	type sub struct {
		NQN   string `json:"nqn"`
		NSIDs []int  `json:"nsids"`
	}
	type state struct {
		Controllers []ctrl `json:"controllers"`
		Subsystems  []sub  `json:"subsystems"`
	}
	type line struct {
		T       float64  `json:"t"`
		Kind    string   `json:"kind"`
		Version int      `json:"version"`
		Host    string   `json:"host"`
		Hosts   []string `json:"hosts"`
		state
		// stall lines (docs/host-model.md "Silent stalls")
		Controller string   `json:"controller"`
		NQN        string   `json:"nqn"`
		Action     string   `json:"action"`
		StartS     *float64 `json:"start_s"`
	}
	// A silent stall [start, end) of a host's path to a subsystem is
	// paused time though no sample shows it (docs/concepts.md "Pause
	// window").
	type stall struct{ start, end float64 }
	stalls := map[string][]stall{} // host\x00nqn
	paused := func(s state, nqn string, nsids []int) bool {
		want, served, any := map[int]bool{}, map[int]bool{}, false
		for _, n := range nsids {
			want[n] = true
		}
		for _, x := range s.Subsystems {
			if x.NQN == nqn {
				for _, n := range x.NSIDs {
					want[n] = true
				}
			}
		}
		for _, c := range s.Controllers {
			if c.NQN != nqn {
				continue
			}
			for _, l := range c.Legs {
				want[l.NSID] = true
				if c.State == "live" && (l.ANA == "optimized" || l.ANA == "non-optimized") {
					served[l.NSID], any = true, true
				}
			}
		}
		if len(want) == 0 {
			return !any
		}
		for n := range want {
			if !served[n] {
				return true
			}
		}
		return false
	}

	// Per-tick states of every host.
	type obs struct {
		t float64
		s state
	}
	ticks := map[string][]obs{}
	last := map[string]state{}
	f, err := os.Open(filepath.Join(res.Dir, "timeline.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	first := true
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if first && (l.Kind != "format" || l.Version != 2) {
			t.Fatalf("first line %s: want the version-2 format line", sc.Text())
		}
		first = false
		switch {
		case l.Kind == "stall" && l.Action == "end" && l.StartS != nil:
			stalls[l.Host+"\x00"+l.NQN] = append(stalls[l.Host+"\x00"+l.NQN], stall{*l.StartS, l.T})
		case l.Kind == "sample":
			last[l.Host] = l.state
			ticks[l.Host] = append(ticks[l.Host], obs{l.T, l.state})
		case l.Kind == "heartbeat":
			for _, h := range l.Hosts {
				s, ok := last[h]
				if !ok {
					t.Fatalf("heartbeat at %v names %s before any sample of it", l.T, h)
				}
				ticks[h] = append(ticks[h], obs{l.T, s})
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}

	var mine []string
	for _, v := range plan.Topology.Volumes {
		for _, h := range v.Consumers {
			// A tick is paused when its state is or a stall covers it; a
			// window runs from its first paused tick — or the start of a
			// stall that reaches into it, if earlier — to the first tick
			// after it that is not paused. A stall with no tick inside is
			// a window of its own to the first tick after it.
			ss := stalls[h+"\x00"+v.NQN]
			var ws [][2]float64
			in, start := false, 0.0
			for _, o := range ticks[h] {
				p := paused(o.s, v.NQN, v.NSIDs)
				for _, x := range ss {
					p = p || (x.start <= o.t && o.t < x.end)
				}
				if p && !in {
					in, start = true, o.t
				} else if !p && in {
					in = false
					ws = append(ws, [2]float64{start, o.t})
				}
			}
			if in {
				ws = append(ws, [2]float64{start, ticks[h][len(ticks[h])-1].t})
			}
			for _, x := range ss {
				k := sort.Search(len(ticks[h]), func(i int) bool { return ticks[h][i].t >= x.start })
				if k == len(ticks[h]) {
					continue
				}
				ws = append(ws, [2]float64{x.start, ticks[h][k].t})
			}
			sort.Slice(ws, func(a, b int) bool { return ws[a][0] < ws[b][0] })
			var merged [][2]float64
			for _, w := range ws {
				if n := len(merged); n > 0 && w[0] <= merged[n-1][1] {
					merged[n-1][1] = max(merged[n-1][1], w[1])
					continue
				}
				merged = append(merged, w)
			}
			for _, w := range merged {
				mine = append(mine, fmt.Sprintf("%s %s [%v, %v]", h, v.NQN, w[0], w[1]))
			}
		}
	}

	var sum struct {
		Migrations []struct {
			NQN   string `json:"nqn"`
			Hosts map[string]struct {
				Windows [][2]float64 `json:"windows"`
			} `json:"hosts"`
		} `json:"migrations"`
		Unattributed []struct {
			Host   string     `json:"host"`
			NQN    string     `json:"nqn"`
			Window [2]float64 `json:"window"`
		} `json:"unattributed_windows"`
		FaultWindows []struct {
			Host   string     `json:"host"`
			NQN    string     `json:"nqn"`
			Window [2]float64 `json:"window"`
		} `json:"fault_windows"`
	}
	b, err = os.ReadFile(filepath.Join(res.Dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	var theirs []string
	for _, m := range sum.Migrations {
		for h, hp := range m.Hosts {
			for _, w := range hp.Windows {
				theirs = append(theirs, fmt.Sprintf("%s %s [%v, %v]", h, m.NQN, w[0], w[1]))
			}
		}
	}
	for _, w := range sum.Unattributed {
		theirs = append(theirs, fmt.Sprintf("%s %s [%v, %v]", w.Host, w.NQN, w.Window[0], w.Window[1]))
	}
	for _, w := range sum.FaultWindows {
		theirs = append(theirs, fmt.Sprintf("%s %s [%v, %v]", w.Host, w.NQN, w.Window[0], w.Window[1]))
	}
	sort.Strings(mine)
	sort.Strings(theirs)
	if len(mine) < 5 { // some migrations end Failed or Aborted, before any cutover
		t.Fatalf("the independent reader found %d pause windows in 12 migrations: %v", len(mine), mine)
	}
	if d := cmp.Diff(theirs, mine); d != "" {
		t.Errorf("pause windows: summary.json (-) vs recomputed from the format (+):\n%s", d)
	}
}
