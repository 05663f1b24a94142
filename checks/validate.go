package checks

import (
	"fmt"

	"github.com/fiomig/fiomig/record"
)

// LineValidator returns a per-line check of a timeline against its plan,
// for record.ScanTimeline (which adds "file:line: " to the error): a sample
// line must come from a host of plan.Topology.Hosts — a sample of a host
// the plan does not know would be judged against no volume and no host NQN,
// so the record is inconsistent rather than thin.
func LineValidator(plan record.Plan) func(record.Line) error {
	hosts := map[string]bool{}
	for _, h := range plan.Topology.Hosts {
		hosts[h.Name] = true
	}
	return func(l record.Line) error {
		if (l.Kind == record.KindSample || l.Kind == record.KindHeartbeat) && !hosts[l.Host] {
			return fmt.Errorf("%s of host %q, which is not in plan.json topology.hosts", l.Kind, l.Host)
		}
		return nil
	}
}
