package nvmeof

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// migration paths of the release tests: the target listeners a migration
// connected.
var migConns = []Target{
	{Transport: "tcp", Traddr: "10.0.0.3", Trsvcid: "4420", NQN: nqnX},
	{Transport: "tcp", Traddr: "10.0.0.4", Trsvcid: "4420", NQN: nqnX},
	{Transport: "tcp", Traddr: "fd00::4", Trsvcid: "4420", NQN: nqnX},
}

func TestReleaseMigrationPaths(t *testing.T) {
	src := func(inst int, ana string) tCtrl {
		return tCtrl{inst: inst, state: "live", addr: tcp("10.0.0.1:4420"), legs: legs(ana, 1, 2)}
	}
	for _, tc := range []struct {
		name        string
		ctrls       []tCtrl
		conns       []Target
		want        []string // released, in order
		wantRefused bool
	}{
		{
			name: "cutover window: nothing accessible, nothing released",
			ctrls: []tCtrl{src(0, "inaccessible"),
				{inst: 1, state: "live", addr: tcp("10.0.0.3:4420"), legs: legs("inaccessible", 1, 2)},
				{inst: 2, state: "live", addr: tcp("10.0.0.4:4420")}},
			conns: migConns, wantRefused: true,
		},
		{
			name: "after the window (source optimized again): parked target released",
			ctrls: []tCtrl{src(0, "optimized"),
				{inst: 1, state: "live", addr: tcp("10.0.0.3:4420"), legs: legs("inaccessible", 1, 2)}},
			conns: migConns, want: []string{"nvme1"},
		},
		{
			name: "zero-leg and connecting targets released, in teardown order",
			ctrls: []tCtrl{src(0, "optimized"),
				{inst: 1, state: "live", addr: tcp("10.0.0.3:4420")},
				{inst: 2, state: "connecting", addr: tcp("10.0.0.4:4420"), legs: legs("optimized", 1, 2)}},
			conns: migConns, want: []string{"nvme1", "nvme2"},
		},
		{
			name: "a target leg that is accessible keeps its controller",
			ctrls: []tCtrl{src(0, "inaccessible"),
				{inst: 1, state: "live", addr: tcp("10.0.0.3:4420"), legs: []tLeg{{1, "optimized"}, {2, "inaccessible"}}},
				{inst: 2, state: "live", addr: tcp("10.0.0.4:4420"), legs: legs("inaccessible", 1, 2)}},
			conns: migConns, want: []string{"nvme2"},
		},
		{
			name: "unrelated addresses untouched, 4426 is not 4428, another NQN's connection ignored",
			ctrls: []tCtrl{src(0, "optimized"),
				{inst: 1, state: "live", addr: tcp("10.0.0.5:4420")},
				{inst: 2, state: "live", addr: tcp("10.0.0.112:4426")},
				{inst: 3, state: "live", addr: tcp("10.0.0.6:4420")}},
			conns: append([]Target{{Traddr: "10.0.0.112", Trsvcid: "4428"}, {Traddr: "10.0.0.6", Trsvcid: "4420", NQN: nqnY}}, migConns...),
		},
		{
			name: "IPv6 connection matches the controller's canonical endpoint",
			ctrls: []tCtrl{src(0, "optimized"),
				{inst: 1, state: "connecting", addr: "traddr=fd00:0::4,trsvcid=4420"},
				{inst: 2, state: "connecting", addr: "traddr=fd00::5,trsvcid=4420"}},
			conns: migConns, want: []string{"nvme1"},
		},
		{
			name:  "a controller already being deleted is left alone",
			ctrls: []tCtrl{src(0, "optimized"), {inst: 1, state: "deleting", addr: tcp("10.0.0.3:4420")}},
			conns: migConns,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := buildHost(t, tSubsys{inst: 0, nqn: nqnX, nsids: []int{1, 2}, ctrls: tc.ctrls})
			p, err := PlanRelease(st, nqnX, tc.conns)
			if err != nil {
				t.Fatal(err)
			}
			if (p.Refused != "") != tc.wantRefused {
				t.Errorf("Refused = %q, want refused=%v", p.Refused, tc.wantRefused)
			}
			h := &MemHost{State: st}
			got, err := ReleaseMigrationPaths(h, nqnX, tc.conns)
			if err != nil {
				t.Fatal(err)
			}
			var gotNames []string
			for _, r := range got {
				gotNames = append(gotNames, r.Controller)
				if r.NQN != nqnX || r.Address == "" || r.Reason == "" {
					t.Errorf("incomplete Released: %+v", r)
				}
			}
			if d := cmp.Diff(tc.want, gotNames); d != "" {
				t.Errorf("released (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.want, h.Disconnected); d != "" {
				t.Errorf("disconnected (-want +got):\n%s", d)
			}
			if len(p.Release)+len(p.Keep) != len(st.Controllers()) {
				t.Errorf("plan accounts for %d+%d controllers, host has %d", len(p.Release), len(p.Keep), len(st.Controllers()))
			}
		})
	}
}

func TestReleaseErrors(t *testing.T) {
	st := buildHost(t, tSubsys{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
		{inst: 0, state: "live", addr: tcp("10.0.0.1:4420"), legs: legs("optimized", 1)},
		{inst: 1, state: "live", addr: tcp("10.0.0.3:4420")},
		{inst: 2, state: "connecting", addr: tcp("10.0.0.4:4420")},
		{inst: 3, state: "live", addr: "traddr=fd00::4,trsvcid=4420"},
	}})
	if _, err := ReleaseMigrationPaths(&MemHost{State: st}, "", migConns); err == nil {
		t.Error("empty NQN: want an error")
	}
	if _, err := ReapDeadControllers(&MemHost{State: st}, ""); err == nil {
		t.Error("reap with empty NQN: want an error")
	}
	if got, err := ReleaseMigrationPaths(&MemHost{State: st}, nqnY, migConns); err != nil || len(got) != 0 {
		t.Errorf("NQN not attached: %v, %v; want nothing released, no error", got, err)
	}

	// One failed disconnect does not stop the rest.
	h := &MemHost{State: st, DisconnectErr: map[string]error{"nvme2": errors.New("EBUSY")}}
	got, err := ReleaseMigrationPaths(h, nqnX, migConns)
	if err == nil || !strings.Contains(err.Error(), "nvme2") || !strings.Contains(err.Error(), "EBUSY") {
		t.Errorf("error = %v, want the nvme2 failure", err)
	}
	var gotNames []string
	for _, r := range got {
		gotNames = append(gotNames, r.Controller)
	}
	if d := cmp.Diff([]string{"nvme3", "nvme1"}, gotNames); d != "" {
		t.Errorf("released despite the failure (-want +got):\n%s", d)
	}
	left, _ := h.Read()
	if d := cmp.Diff([]string{"nvme0", "nvme2"}, names(left.Controllers())); d != "" {
		t.Errorf("controllers left (-want +got):\n%s", d)
	}

	// A read failure is reported.
	if _, err := ReleaseMigrationPaths(failingHost{}, nqnX, migConns); err == nil || !strings.Contains(err.Error(), "sysfs unreadable") {
		t.Errorf("read failure: %v", err)
	}
}

type failingHost struct{ *MemHost }

func (failingHost) Read() (HostState, error) { return HostState{}, errors.New("sysfs unreadable") }

func TestReapDeadControllers(t *testing.T) {
	a := func(n int) string { return tcp("10.0.0." + string(rune('0'+n)) + ":4420") }
	for _, tc := range []struct {
		name string
		subs []tSubsys
		want []string
	}{
		{
			name: "five-namespace husk reaped once",
			subs: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{1, 2, 3, 4, 5}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: a(1), legs: legs("optimized", 1, 2, 3, 4, 5)},
				{inst: 1, state: "live", addr: a(2), legs: legs("non-optimized", 1, 2, 3, 4, 5)},
				{inst: 2, state: "live", addr: a(3)}}}},
			want: []string{"nvme2"},
		},
		{
			name: "connecting controller never reaped",
			subs: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: a(1), legs: legs("optimized", 1)},
				{inst: 1, state: "connecting", addr: a(2)}}}},
		},
		{
			name: "parked target with inaccessible legs never reaped",
			subs: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: a(1), legs: legs("optimized", 1)},
				{inst: 1, state: "live", addr: a(2), legs: legs("inaccessible", 1)}}}},
		},
		{
			name: "partially serving controller never reaped",
			subs: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{1, 2}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: a(1), legs: legs("optimized", 1, 2)},
				{inst: 1, state: "live", addr: a(2), legs: legs("non-optimized", 2)}}}},
		},
		{
			name: "last live controller never reaped",
			subs: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: a(1)},
				{inst: 1, state: "connecting", addr: a(2), legs: legs("optimized", 1)}}}},
		},
		{
			name: "last controller (alone, multipath off) never reaped",
			subs: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{{inst: 0, state: "live", addr: a(1)}}}},
		},
		{
			name: "two husks beside a serving path: both reaped, higher instance first",
			subs: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: a(1)},
				{inst: 1, state: "live", addr: a(2), legs: legs("optimized", 1)},
				{inst: 2, state: "live", addr: a(3)}}}},
			want: []string{"nvme2", "nvme0"},
		},
		{
			name: "ambiguous head: nothing reaped",
			subs: []tSubsys{
				{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{{inst: 0, state: "live", addr: a(1), legs: legs("optimized", 1)}}},
				{inst: 1, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{{inst: 1, state: "live", addr: a(2)}}},
			},
		},
		{
			name: "another subsystem's husk is not touched",
			subs: []tSubsys{
				{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{{inst: 0, state: "live", addr: a(1), legs: legs("optimized", 1)}}},
				{inst: 1, nqn: nqnY, nsids: []int{1}, ctrls: []tCtrl{
					{inst: 1, state: "live", addr: a(2), legs: legs("optimized", 1)}, {inst: 2, state: "live", addr: a(3)}}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &MemHost{State: buildHost(t, tc.subs...)}
			got, err := ReapDeadControllers(h, nqnX)
			if err != nil {
				t.Fatal(err)
			}
			var gotNames []string
			for _, r := range got {
				gotNames = append(gotNames, r.Controller)
			}
			if d := cmp.Diff(tc.want, gotNames); d != "" {
				t.Errorf("reaped (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.want, h.Disconnected); d != "" {
				t.Errorf("disconnect calls (-want +got):\n%s", d)
			}
		})
	}
}

func TestReapCaptures(t *testing.T) {
	h := &MemHost{State: readCaptureFile(t, "controller-not-contributing.tsv")}
	got, err := ReapDeadControllers(h, cncNQN)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Controller != "nvme1" || got[0].Address != "10.0.0.1:14420" {
		t.Errorf("reap on controller-not-contributing.tsv = %+v, want nvme1 (10.0.0.1:14420) only", got)
	}
	if d := cmp.Diff([]string{"nvme1"}, h.Disconnected); d != "" {
		t.Errorf("disconnect calls (-want +got):\n%s", d)
	}

	healthy := readCaptureFile(t, "healthy.tsv")
	for _, nqn := range healthy.NQNs() {
		p, err := PlanReap(healthy, nqn)
		if err != nil || len(p.Release) != 0 {
			t.Errorf("healthy.tsv %s: reap plan %+v, %v; want nothing", nqn, p, err)
		}
	}
}
