package reports

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

// SeedCSVHeader is the header of the seed harness's ana/<migration>.csv
// (fio_migration_test.py; docs/sources.md §8).
var SeedCSVHeader = []string{"ts", "node", "phase", "address", "role", "ctrl_state", "nsid", "ana_state"}

// SeedCSVDir is the directory the seed harness keeps its ANA samples in.
const SeedCSVDir = "ana"

// SeedCSV renders migration m's ANA samples in the seed harness's
// ana/<migration>.csv format: one row per (sample, controller of m's
// subsystem, leg) of every consumer host of m, a controller without a leg
// as one row with empty nsid and ana_state (as the seed's sampler prints
// it). Columns: ts = seconds since run start (the seed writes its own
// clock; only differences matter to its checks); node = fiomig's host
// name; phase = the migration's phase in force at ts ("" before its first
// phase line); address = ip:port; role = source or target when the address
// is one of the migration's source or target endpoints (fiomig matches
// ip:port; the seed matched by IP, which cannot tell two ports of one node
// apart), else ""; ctrl_state = the kernel state; nsid; ana_state.
//
// Deviation, so that the seed's rules see every sample: a host sample that
// shows no controller of the subsystem at all is one row with only ts,
// node and phase (the seed's sampler prints nothing then, and a sample in
// which the volume is unreachable would vanish).
//
// Rows cover, per host, the samples from m's first phase line to its
// terminal phase plus plan.Params.AttributionMarginS, extended to the end
// of the last pause window attributed to m on that host, so that windows
// judged by the seed's rules (maximal runs of samples with a namespace
// without an accessible path on a live controller, first missing to first
// recovered sample) are the windows fiomig attributes to m.
func SeedCSV(plan record.Plan, m record.MigrationSummary, timeline []record.Line) []byte {
	return indexTimeline(timeline).seedCSV(plan, m)
}

func (ix *timelineIndex) seedCSV(plan record.Plan, m record.MigrationSummary) []byte {
	src, tgt := ix.source[m.ID], ix.target[m.ID]
	phases := ix.phases[m.ID]
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(SeedCSVHeader)
	phaseAt := func(t float64) string {
		p := ""
		for _, ph := range phases {
			if ph.TS <= t {
				p = ph.Phase
			}
		}
		return p
	}
	end := m.EndS + plan.Params.AttributionMarginS
	for _, h := range sortedHosts(m) {
		hEnd := end
		for _, wd := range m.Hosts[h].Windows {
			hEnd = math.Max(hEnd, wd[1])
		}
		for _, s := range ix.samples[h] {
			if s.T < m.StartS || s.T > hEnd {
				continue
			}
			ts := record.FormatT(s.T)
			ph := phaseAt(s.T)
			cs := make([]record.Controller, 0, len(s.Controllers))
			for _, c := range s.Controllers {
				if c.NQN == m.NQN {
					cs = append(cs, c)
				}
			}
			sort.SliceStable(cs, func(i, j int) bool { return cs[i].Address < cs[j].Address })
			if len(cs) == 0 {
				_ = w.Write([]string{ts, h, ph, "", "", "", "", ""})
				continue
			}
			for _, c := range cs {
				role := ""
				switch k := nvmeof.EndpointKey(c.Address); {
				case src[k]:
					role = "source"
				case tgt[k]:
					role = "target"
				}
				if len(c.Legs) == 0 {
					_ = w.Write([]string{ts, h, ph, c.Address, role, c.State, "", ""})
				}
				for _, l := range c.Legs {
					_ = w.Write([]string{ts, h, ph, c.Address, role, c.State, strconv.Itoa(l.NSID), l.ANA})
				}
			}
		}
	}
	w.Flush()
	return b.Bytes()
}

// WriteSeedCSV writes out/ana/<migration>.csv (SeedCSV) for every
// migration of sum and returns the files written. out is created when
// missing; a migration id is made file-safe (characters outside
// [A-Za-z0-9._-] become '_'). Errors name the file.
func WriteSeedCSV(out string, plan record.Plan, sum record.Summary, timeline []record.Line) ([]string, error) {
	dir := filepath.Join(out, SeedCSVDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	var files []string
	ix := indexTimeline(timeline)
	for _, m := range sum.Migrations {
		path := filepath.Join(dir, safeName(m.ID)+".csv")
		if err := os.WriteFile(path, ix.seedCSV(plan, m), 0o644); err != nil {
			return files, fmt.Errorf("write %s: %w", path, err)
		}
		files = append(files, path)
	}
	return files, nil
}
