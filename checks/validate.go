package checks

import (
	"fmt"

	"github.com/fiomig/fiomig/record"
)

// LineValidator returns a per-line check of a timeline against its plan,
// for record.ScanTimeline (which adds "file:line: " to the error), called
// once per line in order:
//
//   - The format version (record/FORMAT.md) is the plan's: when
//     plan.Params.TimelineFormat is 2 (record.FormatChangeOnly) the first
//     line must be the format line stating version 2 — a timeline without
//     it contradicts its plan (a lost first line or another run's file),
//     and the writer puts it first, before anything can be lost; when the
//     plan says 1 or nothing, a timeline without a format line is a legal
//     version 1 and a format line stating another version contradicts the
//     plan. A format line anywhere but first is an error too.
//   - A sample line must come from a host of plan.Topology.Hosts — a
//     sample of a host the plan does not know would be judged against no
//     volume and no host NQN, so the record is inconsistent rather than
//     thin.
func LineValidator(plan record.Plan) func(record.Line) error {
	hosts := map[string]bool{}
	for _, h := range plan.Topology.Hosts {
		hosts[h.Name] = true
	}
	want := plan.Params.TimelineFormat
	if want == 0 {
		want = record.FormatFull
	}
	first := true
	return func(l record.Line) error {
		wasFirst := first
		first = false
		if l.Kind == record.KindFormat {
			switch {
			case !wasFirst:
				return fmt.Errorf("format line (version %d) after the first line: a timeline states its format version on its first line only (record/FORMAT.md)", l.Version)
			case l.Version != want:
				return fmt.Errorf("format line states version %d, but plan.json params.timeline_format says %d (record/FORMAT.md)", l.Version, want)
			}
			return nil
		}
		if wasFirst && want != record.FormatFull {
			return fmt.Errorf("first line is of kind %q, but plan.json params.timeline_format says version %d, whose timeline begins with its format line {\"t\":0,\"kind\":\"format\",\"version\":%d,...} (record/FORMAT.md): the timeline is not the one its plan describes", l.Kind, want, want)
		}
		if l.Kind == record.KindHeartbeat && len(l.Hosts) > 0 {
			for _, h := range l.Hosts {
				if !hosts[h] {
					return fmt.Errorf("heartbeat names host %q, which is not in plan.json topology.hosts", h)
				}
			}
			return nil
		}
		if (l.Kind == record.KindSample || l.Kind == record.KindHeartbeat) && !hosts[l.Host] {
			return fmt.Errorf("%s of host %q, which is not in plan.json topology.hosts", l.Kind, l.Host)
		}
		return nil
	}
}
