package nvmeof

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Stale controllers come in teardown order: leg-less ones (higher instance
// first) before the optimized one.
func TestMissingAndStaleEndpoints(t *testing.T) {
	st := buildHost(t,
		tSubsys{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
			{inst: 0, state: "live", addr: tcp("10.0.0.112:4426"), legs: legs("optimized", 1)},
			{inst: 1, state: "connecting", addr: tcp("10.0.0.113:4426")},  // broken but attached
			{inst: 2, state: "live", addr: tcp("10.0.0.114:4426")},        // live, no leg: attached
			{inst: 3, state: "deleting", addr: tcp("10.0.0.115:4426")},    // leaving: not attached
			{inst: 4, state: "live", addr: "traddr=fd00::1,trsvcid=4420"}, // IPv6
		}},
		tSubsys{inst: 1, nqn: nqnY, nsids: []int{1}, ctrls: []tCtrl{
			{inst: 5, state: "live", addr: tcp("10.0.0.116:4426"), legs: legs("optimized", 1)},
		}},
	)
	for _, tc := range []struct {
		name     string
		expected []string
		missing  []string
		stale    []string
	}{
		{"4426 present does not satisfy 4428", []string{"10.0.0.112:4428", "10.0.0.112:4426"},
			[]string{"10.0.0.112:4428"}, []string{"nvme4", "nvme2", "nvme1"}},
		{"connecting and leg-less controllers count as attached; deleting does not",
			[]string{"10.0.0.113:4426", "10.0.0.114:4426", "10.0.0.115:4426"},
			[]string{"10.0.0.115:4426"}, []string{"nvme4", "nvme0"}},
		{"IPv6 canonical, duplicates once, another subsystem's controller does not count",
			[]string{"[FD00:0::1]:4420", "[fd00::1]:4420", "10.0.0.116:4426", "10.0.0.116:4426"},
			[]string{"10.0.0.116:4426"}, []string{"nvme2", "nvme1", "nvme0"}},
		{"nothing expected", nil, nil, []string{"nvme4", "nvme2", "nvme1", "nvme0"}},
		{"not ip:port is compared raw", []string{"storage-1:4420"}, []string{"storage-1:4420"}, []string{"nvme4", "nvme2", "nvme1", "nvme0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.missing, MissingEndpoints(tc.expected, st, nqnX)); d != "" {
				t.Errorf("MissingEndpoints (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.stale, names(StaleEndpoints(tc.expected, st, nqnX))); d != "" {
				t.Errorf("StaleEndpoints (-want +got):\n%s", d)
			}
		})
	}
	if got := MissingEndpoints([]string{"10.0.0.1:4420"}, st, "nqn.absent"); len(got) != 1 {
		t.Errorf("an NQN not attached misses every endpoint: %v", got)
	}
}
