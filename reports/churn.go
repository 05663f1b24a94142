package reports

import (
	"strconv"

	"github.com/fiomig/fiomig/record"
)

func itoa(n int) string { return strconv.Itoa(n) }

// ChurnOf counts controller churn in timeline's sample lines (record.Churn):
// per host, a controller is keyed by (kernel name, address); one present in a
// sample but not in the host's previous sample is created (none is counted at
// the host's first sample, which is the starting state), one absent that was
// present is removed, and a present controller of the previous sample whose
// state becomes "connecting" from another state is a reconnect (the kernel's
// reconnect loop; sbtest's nvme.controller-churn judges the same kind of
// figure, docs/sources.md §8). Lines of other kinds are ignored; samples must
// be in time order per host (the timeline's order).
func ChurnOf(timeline []record.Line) record.Churn {
	type key struct{ name, addr string }
	prev := map[string]map[key]string{}
	prevCtrls := map[string][]record.Controller{}
	net := map[string]int{}
	var ch record.Churn
	for _, l := range timeline {
		if l.Kind != record.KindSample {
			continue
		}
		if p, ok := prevCtrls[l.Host]; ok && len(p) == len(l.Controllers) && (len(p) == 0 || &p[0] == &l.Controllers[0]) {
			continue // the same controllers as the host's previous sample (a heartbeat's repeat): no churn
		}
		prevCtrls[l.Host] = l.Controllers
		cur := make(map[key]string, len(l.Controllers))
		for _, c := range l.Controllers {
			cur[key{c.Name, c.Address}] = c.State
		}
		old, seen := prev[l.Host]
		if seen {
			for k, st := range cur {
				ost, was := old[k]
				if !was {
					ch.Created++
					net[l.Host]++
				}
				if was && st == "connecting" && ost != "connecting" {
					ch.Reconnects++
				}
			}
			for k := range old {
				if _, still := cur[k]; !still {
					ch.Removed++
					net[l.Host]--
				}
			}
		}
		prev[l.Host] = cur
	}
	for _, n := range net {
		ch.NetCreatedMax = max(ch.NetCreatedMax, n)
	}
	return ch
}

// churnSentence states c in one line.
func churnSentence(c record.Churn) string {
	return "controllers created " + itoa(c.Created) + ", removed " + itoa(c.Removed) + ", reconnects (entering connecting) " +
		itoa(c.Reconnects) + "; most net created on one host " + itoa(c.NetCreatedMax) + "."
}
