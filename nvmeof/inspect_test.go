package nvmeof

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// brief is the part of a Defect the rule tables pin (Detail is checked
// separately where it matters).
type brief struct {
	Kind        DefectKind
	Scope       Scope
	NSID        int
	Controllers []string
	CoTenants   []int
}

func briefs(ds []Defect) []brief {
	var out []brief
	for _, d := range ds {
		out = append(out, brief{d.Kind, d.Scope, d.NSID, d.Controllers, d.CoTenants})
	}
	return out
}

func TestInspectCaptures(t *testing.T) {
	cnc := readCaptureFile(t, "controller-not-contributing.tsv")
	for _, tc := range []struct {
		name string
		sel  Selector
		tg   []Target
		want []brief
	}{
		{"nsid 1: nvme1 does not contribute", Selector{cncNQN, 1}, nil,
			[]brief{{DefectControllerNotContributing, ScopeController, 1, []string{"nvme1"}, nil}}},
		{"nsid 2: nvme1 does not contribute", Selector{cncNQN, 2}, nil,
			[]brief{{DefectControllerNotContributing, ScopeController, 2, []string{"nvme1"}, nil}}},
		{"bare NQN over two namespaces stands down", Selector{cncNQN, 0}, nil, nil},
		{"nsid 3 is missing; teardown: no-leg nvme1 before optimized nvme0", Selector{cncNQN, 3}, nil,
			[]brief{{DefectNamespaceMissing, ScopeSubsystem, 3, []string{"nvme1", "nvme0"}, []int{1, 2}}}},
		{"NQN not attached", Selector{"nqn.other", 1}, nil, nil},
		{"targets name only nvme0: nvme1 is stale, not also not-contributing", Selector{cncNQN, 1},
			[]Target{{Transport: "tcp", Traddr: "127.0.0.1", Trsvcid: "14420", NQN: cncNQN}},
			[]brief{{DefectStaleEndpoint, ScopeController, 1, []string{"nvme1"}, nil}}},
		{"targets name only nvme1: nvme0 is stale and would take 1 and 2 with it", Selector{cncNQN, 0},
			[]Target{{Traddr: "10.0.0.1", Trsvcid: "14420"}},
			[]brief{{DefectStaleEndpoint, ScopeController, 0, []string{"nvme0"}, []int{1, 2}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, briefs(Inspect(cnc, tc.sel, tc.tg))); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}

	got := Inspect(cnc, Selector{cncNQN, 1}, nil)
	if len(got) != 1 || got[0].NQN != cncNQN || !strings.Contains(got[0].Detail, "10.0.0.1:14420") {
		t.Errorf("defect should name the NQN and nvme1's endpoint: %+v", got)
	}

	healthy := readCaptureFile(t, "healthy.tsv")
	for _, nqn := range healthy.NQNs() {
		sels := []Selector{{NQN: nqn}}
		for _, s := range healthy.SubsystemsByNQN(nqn) {
			for _, id := range s.NSIDs() {
				sels = append(sels, Selector{nqn, id})
			}
		}
		for _, sel := range sels {
			if ds := Inspect(healthy, sel, nil); len(ds) != 0 {
				t.Errorf("healthy.tsv %+v: %v, want clean", sel, ds)
			}
			var tg []Target
			for _, c := range healthy.Controllers() {
				if c.NQN == nqn {
					tg = append(tg, Target{Transport: "tcp", Traddr: c.Address.Traddr, Trsvcid: c.Address.Trsvcid, NQN: nqn})
				}
			}
			if ds := Inspect(healthy, sel, tg); len(ds) != 0 {
				t.Errorf("healthy.tsv %+v with its own endpoints as targets: %v, want clean", sel, ds)
			}
		}
	}
	if ds := Inspect(healthy, Selector{}, nil); len(ds) != 0 {
		t.Errorf("healthy.tsv, every NQN: %v", ds)
	}
	// The five-namespace subsystem without its non-optimized endpoint
	// published: nvme7 is stale; nvme5 still serves every namespace.
	s5 := "nqn.2023-02.io.simplyblock:00000002-0000-4000-8000-000000000002:lvol:00000003-0000-4000-8000-000000000003"
	got = Inspect(healthy, Selector{NQN: s5, NSID: 4}, EndpointTargets(s5, []string{"10.0.0.2:4426"}))
	if d := cmp.Diff([]brief{{DefectStaleEndpoint, ScopeController, 4, []string{"nvme7"}, nil}}, briefs(got)); d != "" {
		t.Errorf("healthy.tsv subsys5 with only 10.0.0.2:4426 published (-want +got):\n%s", d)
	}
	// 4426 vs 4428: same address, other port, is still stale.
	s2 := "nqn.2023-02.io.simplyblock:00000002-0000-4000-8000-000000000002:lvol:0000000f-0000-4000-8000-00000000000f"
	got = Inspect(healthy, Selector{NQN: s2}, EndpointTargets(s2, []string{"10.0.0.1:4426", "10.0.0.3:4428"}))
	if d := cmp.Diff([]brief{{DefectStaleEndpoint, ScopeController, 0, []string{"nvme2"}, nil}}, briefs(got)); d != "" {
		t.Errorf("nvme2 at 10.0.0.1:4428 must not match a published 10.0.0.1:4426 (-want +got):\n%s", d)
	}
}

func TestInspectRules(t *testing.T) {
	a1 := tcp("10.0.0.1:4420")
	a2 := tcp("10.0.0.2:4420")
	a3 := tcp("10.0.0.3:4420")
	v6 := "traddr=fd00::1,trsvcid=4420"
	for _, tc := range []struct {
		name string
		sub  []tSubsys
		sel  Selector
		tg   []Target
		want []brief
	}{
		{
			name: "no-namespace: live controllers, no namespace",
			sub: []tSubsys{{inst: 0, nqn: nqnX, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: a1}, {inst: 1, state: "connecting", addr: a2}}}},
			sel:  Selector{nqnX, 1},
			want: []brief{{DefectNoNamespace, ScopeSubsystem, 1, []string{"nvme1", "nvme0"}, nil}},
		},
		{
			name: "no namespace and no live controller: nothing (not-live is the leak check's)",
			sub: []tSubsys{{inst: 0, nqn: nqnX, ctrls: []tCtrl{
				{inst: 0, state: "connecting", addr: a1}, {inst: 1, state: "resetting", addr: a2}}}},
			sel: Selector{nqnX, 0},
		},
		{
			name: "namespace-missing with co-tenants",
			sub: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{2, 3}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: a1, legs: legs("optimized", 2, 3)},
				{inst: 1, state: "live", addr: a2, legs: legs("inaccessible", 2, 3)}}}},
			sel:  Selector{nqnX, 1},
			want: []brief{{DefectNamespaceMissing, ScopeSubsystem, 1, []string{"nvme1", "nvme0"}, []int{2, 3}}},
		},
		{
			name: "not contributing: only the live one; connecting and resetting never",
			sub: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: a1, legs: legs("optimized", 1)},
				{inst: 1, state: "live", addr: a2},
				{inst: 2, state: "connecting", addr: a3},
				{inst: 3, state: "resetting", addr: tcp("10.0.0.4:4420")}}}},
			sel:  Selector{nqnX, 1},
			want: []brief{{DefectControllerNotContributing, ScopeController, 1, []string{"nvme1"}, nil}},
		},
		{
			name: "bare NQN on a one-namespace subsystem selects that namespace",
			sub: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{5}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: a1, legs: legs("optimized", 5)},
				{inst: 1, state: "live", addr: a2}}}},
			sel:  Selector{nqnX, 0},
			want: []brief{{DefectControllerNotContributing, ScopeController, 5, []string{"nvme1"}, nil}},
		},
		{
			name: "partially serving controller: flagged for the namespace it lacks, co-tenant it alone serves",
			sub: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{1, 2}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: a1, legs: legs("optimized", 1)},
				{inst: 1, state: "live", addr: a2, legs: legs("optimized", 2)}}}},
			sel:  Selector{nqnX, 1},
			want: []brief{{DefectControllerNotContributing, ScopeController, 1, []string{"nvme1"}, []int{2}}},
		},
		{
			name: "parked target with inaccessible legs contributes (it has a leg)",
			sub: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: a1, legs: legs("optimized", 1)},
				{inst: 1, state: "live", addr: a2, legs: legs("inaccessible", 1)}}}},
			sel: Selector{nqnX, 1},
		},
		{
			name: "stale endpoint: connecting included, deleting skipped, teardown order",
			sub: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: a1, legs: legs("optimized", 1)},
				{inst: 1, state: "connecting", addr: a2},
				{inst: 2, state: "live", addr: a3, legs: legs("inaccessible", 1)},
				{inst: 3, state: "deleting", addr: tcp("10.0.0.4:4420")}}}},
			sel: Selector{nqnX, 1},
			tg:  []Target{{Traddr: "10.0.0.1", Trsvcid: "4420"}},
			want: []brief{
				{DefectStaleEndpoint, ScopeController, 1, []string{"nvme2"}, nil},
				{DefectStaleEndpoint, ScopeController, 1, []string{"nvme1"}, nil},
			},
		},
		{
			name: "stale endpoint: 4426 does not satisfy 4428",
			sub: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: tcp("10.0.0.112:4428"), legs: legs("optimized", 1)},
				{inst: 1, state: "live", addr: tcp("10.0.0.112:4426"), legs: legs("non-optimized", 1)}}}},
			sel:  Selector{nqnX, 1},
			tg:   EndpointTargets(nqnX, []string{"10.0.0.112:4428"}),
			want: []brief{{DefectStaleEndpoint, ScopeController, 1, []string{"nvme1"}, nil}},
		},
		{
			name: "stale endpoint: IPv6 matched canonically, transport and NQN respected",
			sub: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: v6, legs: legs("optimized", 1)},
				{inst: 1, state: "live", addr: "traddr=fd00::2,trsvcid=4420", legs: legs("non-optimized", 1)},
				{inst: 2, state: "live", addr: "traddr=fd00::3,trsvcid=4420", legs: legs("non-optimized", 1)}}}},
			sel: Selector{nqnX, 1},
			tg: []Target{
				{Transport: "TCP", Traddr: "fd00:0:0::1", Trsvcid: "4420", NQN: nqnX},
				{Transport: "rdma", Traddr: "fd00::2", Trsvcid: "4420"},
				{Traddr: "fd00::3", Trsvcid: "4420", NQN: nqnY},
			},
			want: []brief{
				{DefectStaleEndpoint, ScopeController, 1, []string{"nvme2"}, nil},
				{DefectStaleEndpoint, ScopeController, 1, []string{"nvme1"}, nil},
			},
		},
		{
			name: "stale endpoint that alone serves other namespaces names them",
			sub: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{1, 2, 3}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: a1, legs: legs("optimized", 1, 2, 3)},
				{inst: 1, state: "live", addr: a2, legs: legs("optimized", 1)}}}},
			sel:  Selector{nqnX, 1},
			tg:   EndpointTargets(nqnX, []string{"10.0.0.2:4420"}),
			want: []brief{{DefectStaleEndpoint, ScopeController, 1, []string{"nvme0"}, []int{2, 3}}},
		},
		{
			// docs/sources.md §6.2: only the instance whose devices are all
			// inaccessible is named, with its own controllers only.
			name: "ambiguous head: the stale instance only, namespace checks stand down",
			sub: []tSubsys{
				{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{{inst: 0, state: "live", addr: a1, legs: legs("inaccessible", 1)}}},
				{inst: 3, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
					{inst: 4, state: "live", addr: a2, legs: legs("optimized", 1)}, {inst: 5, state: "live", addr: a3}}},
			},
			sel:  Selector{nqnX, 1},
			want: []brief{{DefectAmbiguousHead, ScopeSubsystem, 1, []string{"nvme0"}, nil}},
		},
		{
			name: "ambiguous head: both instances serve, scope none with no controllers",
			sub: []tSubsys{
				{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{{inst: 0, state: "live", addr: a1, legs: legs("non-optimized", 1)}}},
				{inst: 3, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{{inst: 4, state: "live", addr: a2, legs: legs("optimized", 1)}}},
			},
			sel:  Selector{nqnX, 1},
			want: []brief{{DefectAmbiguousHead, ScopeNone, 1, nil, nil}},
		},
		{
			name: "ambiguous head: an instance with no path list cannot be judged stale, scope none",
			sub: []tSubsys{
				{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{{inst: 0, state: "live", addr: a1}}},
				{inst: 3, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{{inst: 4, state: "live", addr: a2, legs: legs("optimized", 1)}}},
			},
			sel:  Selector{nqnX, 0},
			want: []brief{{DefectAmbiguousHead, ScopeNone, 0, nil, nil}},
		},
		{
			name: "ambiguous head: both stale, one defect per instance",
			sub: []tSubsys{
				{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{{inst: 0, state: "live", addr: a1, legs: legs("inaccessible", 1)}}},
				{inst: 3, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{{inst: 4, state: "connecting", addr: a2, legs: legs("optimized", 1)}}},
			},
			sel: Selector{nqnX, 1},
			want: []brief{
				{DefectAmbiguousHead, ScopeSubsystem, 1, []string{"nvme0"}, nil},
				{DefectAmbiguousHead, ScopeSubsystem, 1, []string{"nvme4"}, nil},
			},
		},
		{
			// Two instances, only one with namespace 1: no ambiguity; the
			// other (no namespace, a live controller) is a no-namespace
			// husk of its own.
			name: "two instances, one has the namespace: judged each on its own",
			sub: []tSubsys{
				{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{{inst: 0, state: "live", addr: a1, legs: legs("optimized", 1)}}},
				{inst: 3, nqn: nqnX, ctrls: []tCtrl{{inst: 4, state: "live", addr: a2}}},
			},
			sel:  Selector{nqnX, 1},
			want: []brief{{DefectNoNamespace, ScopeSubsystem, 1, []string{"nvme4"}, nil}},
		},
		{
			name: "multipath off (no legs to the namespace): stands down",
			sub: []tSubsys{{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
				{inst: 0, state: "live", addr: a1}, {inst: 1, state: "live", addr: a2}}}},
			sel: Selector{nqnX, 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := buildHost(t, tc.sub...)
			if d := cmp.Diff(tc.want, briefs(Inspect(h, tc.sel, tc.tg))); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestTeardownOrder(t *testing.T) {
	c := func(inst int, anas ...ANAState) Controller {
		x := Controller{Name: "nvme" + string(rune('0'+inst)), Instance: inst, State: StateLive}
		for i, a := range anas {
			x.Legs = append(x.Legs, Leg{NSID: i + 1, ANA: a})
		}
		return x
	}
	in := []Controller{
		c(0, ANAOptimized),
		c(1, ANANonOptimized, ANAInaccessible),
		c(2),
		c(3, ANAInaccessible, ANAPersistentLoss),
		c(4, ANAChange),
		c(5),
		c(6, ANAInaccessible, ANAOptimized),
		c(7, ANAUnknown),
	}
	got := names(TeardownOrder(in))
	want := []string{"nvme7", "nvme4", "nvme3", "nvme5", "nvme2", "nvme1", "nvme6", "nvme0"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("TeardownOrder (-want +got):\n%s", d)
	}
	if in[0].Name != "nvme0" {
		t.Error("TeardownOrder modified its input")
	}
}

func TestDefectString(t *testing.T) {
	d := Defect{Kind: DefectStaleEndpoint, Scope: ScopeController, NQN: "n", NSID: 2, Controllers: []string{"nvme1"}, CoTenants: []int{3}, Detail: "why"}
	if s := d.String(); s != "stale-endpoint (controller) n nsid 2 [nvme1] co-tenants [3]: why" {
		t.Errorf("String() = %q", s)
	}
}
