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
// only from record/FORMAT.md and DESIGN.md — generic JSON, no record or
// checks code — rebuilds every host's state at every tick from a version-2
// timeline.jsonl, recomputes each consumer host's pause windows per volume
// and finds exactly the windows summary.json reports (attributed to a
// migration or not).
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
	}
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
			in, start := false, 0.0
			for _, o := range ticks[h] {
				p := paused(o.s, v.NQN, v.NSIDs)
				if p && !in {
					in, start = true, o.t
				} else if !p && in {
					in = false
					mine = append(mine, fmt.Sprintf("%s %s [%v, %v]", h, v.NQN, start, o.t))
				}
			}
			if in {
				mine = append(mine, fmt.Sprintf("%s %s [%v, %v]", h, v.NQN, start, ticks[h][len(ticks[h])-1].t))
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
	sort.Strings(mine)
	sort.Strings(theirs)
	if len(mine) < 5 { // some migrations end Failed or Aborted, before any cutover
		t.Fatalf("the independent reader found %d pause windows in 12 migrations: %v", len(mine), mine)
	}
	if d := cmp.Diff(theirs, mine); d != "" {
		t.Errorf("pause windows: summary.json (-) vs recomputed from the format (+):\n%s", d)
	}
}
