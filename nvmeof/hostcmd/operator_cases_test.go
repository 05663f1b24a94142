package hostcmd

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/internal/tooltest"
	"github.com/fiomig/fiomig/nvmeof"
)

// The simplyblock operator's own unit cases for Inspect, ReleaseMigrationPaths
// and ReapDeadControllers, each as a sysfs capture (testdata/operator/) and
// the outcome the operator's test expects, run through the host tools. Sources
// (simplyblock-operator): atlas-lib/nvmeof/inspect_test.go (inspect),
// atlas-lib/nvmeof/realsysfs_test.go (the real captures),
// atlas-lib/nvme/reachability_test.go (the stale-head and multipath-off
// fixtures), operator/internal/volumemigration/release_test.go (release,
// reap) and paths_test.go (VerifyMigrationPaths, whose diagnose asks Inspect
// once with the bare NQN and once per namespace, as "inspect --nqn" does).
// Where an operator test asserts less than the whole outcome (a kind, not the
// co-tenants) the rest is what the operator's code gives on that fixture
// (atlas-lib/nvmeof/inspect.go, operator/internal/volumemigration/release.go).
//
// Not taken, being no host state: TestInspect_RequiresAnNQN (the library's
// argument check; inspect without --nqn asks every NQN),
// TestReleaseMigrationPaths_EmptyNQN and TestReapDeadControllers_EmptyNQN
// (TestOperatorEmptyNQN checks nvmeof's), TestDeviceRank, TestLegHead and
// TestPickPrefersLiveSubsystem (the device resolver's ranking and name
// parsing, which the host tools do not have), TestFormatReleased (a log
// line). Not Inspect's: paths_test.go's VerifyMigrationPaths_
// ConnectDidNotTakeEffect, _TargetAlreadyServing, _ReportsPreExisting,
// _EmptyNQN and TestPresentAddresses assert the validation Job's own
// per-address checks (no controller, not live, accessible before cutover),
// which the simulated operator plays (sim/operator.go), not the host
// tools. TestLiveSysfs reads a live host only when ATLAS_SYSROOT is set.
// Checked against simplyblock-operator ce23822e (2026-08-22): every other
// test function of those five files is a case here.
//
// The operator's fixtures leave out attributes its resolver does not read;
// the captures carry what the kernel always shows for a fabrics controller
// (transport, address), and kernel leg names (nvmeScNnH with the controller's
// own instance, where the release fixtures number legs by list position).

var updateOperator = flag.Bool("update", false, "rewrite testdata/operator/*.tsv from the case table")

const (
	opNQN    = "nqn.2023-02.io.simplyblock:vol"                // atlas-lib/nvmeof multipath_test.go testNQN
	pathsNQN = "nqn.2023-02.io.simplyblock:cluster:lvol:vol-1" // volumemigration paths_test.go pathsNQN
	dupNQN   = "nqn.2023-02.io.simplyblock:c30a691a-015f-40c1-a7b6-26897264d489:lvol:792e184c-43d5-40ba-b497-3b645347cf1d"
	volA     = "6dbb7d4e-2f1a-4a55-9d3c-1f2e3a4b5c6d"
	volB     = "7ecc8e5f-3a2b-4b66-8e4d-2f3e4a5b6c7e"
)

// The migration's connections of the release and reap cases (paths_test.go
// targetConns).
const pathsConns = `[{"nqn":"` + pathsNQN + `","ip":"10.0.0.114","port":4428,"transport":"tcp"},{"nqn":"` + pathsNQN + `","ip":"10.0.0.112","port":4428,"transport":"tcp"}]`

// opCtrl is one controller of an operator fixture.
type opCtrl struct {
	name, addr, state string         // "nvme12", "10.0.0.113:4430", "live"
	legs              map[int]string // NSID -> ANA state of its leg; nil: no leg
}

// opSubsys is one kernel subsystem instance of a fixture.
type opSubsys struct {
	inst  int
	nqn   string
	heads map[int]string // NSID -> namespace uuid ("" for none): the multipath heads nvmeSnH
	ctrls []opCtrl
	// disks: native multipath off: each controller carries its own namespace
	// disk nvmeNnH for every NSID of heads, and the subsystem no head.
	disks bool
	// twin > 0 lists namespace twin a second time, as head nvmeSn9.
	twin int
}

func ctl(name, addr, state string, legs map[int]string) opCtrl {
	return opCtrl{name, addr, state, legs}
}

// every gives a leg in state ana to namespaces 1..n.
func every(n int, ana string) map[int]string {
	m := map[int]string{}
	for i := 1; i <= n; i++ {
		m[i] = ana
	}
	return m
}

func nsids(n int) map[int]string {
	m := map[int]string{}
	for i := 1; i <= n; i++ {
		m[i] = ""
	}
	return m
}

// render writes subs as capture lines, sorted.
func render(subs []opSubsys) string {
	var lines []string
	add := func(p, v string) { lines = append(lines, "/sys/"+p+"\t"+v) }
	for _, s := range subs {
		sd := fmt.Sprintf("class/nvme-subsystem/nvme-subsys%d", s.inst)
		add(sd+"/subsysnqn", s.nqn)
		ids := slices.Sorted(func(yield func(int) bool) {
			for id := range s.heads {
				if !yield(id) {
					return
				}
			}
		})
		if !s.disks {
			for _, id := range ids {
				hd := fmt.Sprintf("%s/nvme%dn%d", sd, s.inst, id)
				add(hd+"/nsid", strconv.Itoa(id))
				if u := s.heads[id]; u != "" {
					add(hd+"/uuid", u)
				}
			}
			if s.twin > 0 {
				add(fmt.Sprintf("%s/nvme%dn9/nsid", sd, s.inst), strconv.Itoa(s.twin))
			}
		}
		for _, c := range s.ctrls {
			inst, _ := strconv.Atoi(strings.TrimPrefix(c.name, "nvme"))
			ip, port, _ := strings.Cut(c.addr, ":")
			attrs := [][2]string{{"address", "traddr=" + ip + ",trsvcid=" + port}, {"state", c.state}, {"subsysnqn", s.nqn}, {"transport", "tcp"}}
			for _, a := range attrs {
				add("class/nvme/"+c.name+"/"+a[0], a[1])
				add(sd+"/"+c.name+"/"+a[0], a[1]) // the subsystem's link to it
			}
			for id, ana := range c.legs {
				ld := fmt.Sprintf("class/nvme/%s/nvme%dc%dn%d", c.name, s.inst, inst, id)
				add(ld+"/ana_state", ana)
				add(ld+"/nsid", strconv.Itoa(id))
			}
			if s.disks {
				for _, id := range ids {
					dd := fmt.Sprintf("class/nvme/%s/nvme%dn%d", c.name, inst, id)
					add(dd+"/nsid", strconv.Itoa(id))
					if u := s.heads[id]; u != "" {
						add(dd+"/uuid", u)
					}
				}
			}
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

// opCase is one operator unit case.
type opCase struct {
	name string // the operator's test (and subtest)
	tree []opSubsys
	// capture, when set, is a real capture of nvmeof/testdata instead of tree.
	capture string

	cmd     string   // inspect, release or reap
	nqn     string   // --nqn ("" = every NQN: inspect, reap)
	nsid    int      // inspect --nsid (0: not given)
	targets []string // inspect --target
	conns   string   // release --connections

	// bareOnly: the operator asks Inspect with the bare NQN of a subsystem
	// with several namespaces; inspect asks per namespace too (as the
	// operator's diagnose), so nvmeof.Inspect is asked the operator's
	// question directly instead.
	bareOnly bool

	// The operator's expected outcome: inspect's defects as
	// "kind scope [subsystem] controllers co-tenants" (subsystem for
	// subsystem scope only), or the controllers release or reap tear down.
	want       []string
	detailHas  string // a defect's detail names this (an endpoint, a namespace)
	reasonHas  string // each torn-down controller's reason says this
	notLive    []string
	wantReader func(t *testing.T, v hostsJSON)
}

func opSub(inst int, nqn string, heads map[int]string, ctrls ...opCtrl) opSubsys {
	return opSubsys{inst: inst, nqn: nqn, heads: heads, ctrls: ctrls}
}

// opCases are every operator case with a host state, in the order of the
// operator's files.
func opCases() []opCase {
	const p1, p2, p3 = "10.0.0.1:4420", "10.0.0.2:4420", "10.0.0.3:4420"
	opt, nonopt, inacc := "optimized", "non-optimized", "inaccessible"
	live, connecting := "live", "connecting"
	two := []string{p1, p2}
	one := map[int]string{1: ""}
	// release_test.go / paths_test.go controllers
	t114, t112 := "10.0.0.114:4428", "10.0.0.112:4428"
	return []opCase{
		// atlas-lib/nvmeof/inspect_test.go
		{name: "TestInspect_HealthySubsystemIsSilent", cmd: "inspect", nqn: opNQN, nsid: 1, targets: two,
			tree: []opSubsys{opSub(0, opNQN, map[int]string{1: volA}, ctl("nvme0", p1, live, every(1, opt)), ctl("nvme1", p2, live, every(1, opt)))}},
		{name: "TestInspect_NotAttachedIsNotADefect", cmd: "inspect", nqn: opNQN,
			tree: []opSubsys{opSub(0, "nqn.2023-02.io.simplyblock:another-volume", one, ctl("nvme0", p1, live, every(1, opt)))}},
		{name: "TestInspect_NoNamespaceExported", cmd: "inspect", nqn: opNQN,
			tree: []opSubsys{opSub(0, opNQN, nil, ctl("nvme0", p1, live, nil), ctl("nvme1", p2, live, nil))},
			want: []string{"no-namespace subsystem nvme-subsys0 [nvme1 nvme0] []"}},
		{name: "TestInspect_NoNamespaceNeedsALiveController", cmd: "inspect", nqn: opNQN,
			tree:    []opSubsys{opSub(0, opNQN, nil, ctl("nvme0", p1, connecting, nil))},
			notLive: []string{"nvme0 connecting"}},
		{name: "TestInspect_ControllerContributesNoPath", cmd: "inspect", nqn: opNQN, nsid: 1, targets: []string{p1, p2, p3},
			tree: []opSubsys{opSub(0, opNQN, map[int]string{1: volA},
				ctl("nvme0", p1, live, every(1, opt)), ctl("nvme1", p2, live, every(1, opt)), ctl("nvme2", p3, live, nil))},
			want: []string{"controller-not-contributing controller [nvme2] []"}, detailHas: "10.0.0.3"},
		{name: "TestInspect_NoPathListMeansNoVerdict", cmd: "inspect", nqn: opNQN, nsid: 1, targets: two,
			tree: []opSubsys{opSub(0, opNQN, map[int]string{1: volA}, ctl("nvme0", p1, live, nil), ctl("nvme1", p2, live, nil))}},
		{name: "TestInspect_StaleEndpointIsNotAlsoNotContributing", cmd: "inspect", nqn: opNQN, nsid: 1, targets: []string{p1},
			tree: []opSubsys{opSub(0, opNQN, map[int]string{1: volA}, ctl("nvme0", p1, live, every(1, opt)), ctl("nvme9", "10.0.0.9:4420", live, nil))},
			want: []string{"stale-endpoint controller [nvme9] []"}},
		{name: "TestInspect_NamespaceMissing", cmd: "inspect", nqn: opNQN, nsid: 3, targets: []string{p1},
			tree: []opSubsys{opSub(0, opNQN, map[int]string{1: volA, 2: volB}, ctl("nvme0", p1, live, every(2, opt)))},
			want: []string{"namespace-missing subsystem nvme-subsys0 [nvme0] [1 2]"}},
		{name: "TestInspect_BlastRadiusOfAControllerRepair/co-tenant keeps another path", cmd: "inspect", nqn: opNQN, nsid: 1, targets: two,
			tree: []opSubsys{opSub(0, opNQN, map[int]string{1: volA, 2: volB},
				ctl("nvme0", p1, live, every(2, opt)), ctl("nvme1", p2, live, map[int]string{2: opt}))},
			want: []string{"controller-not-contributing controller [nvme1] []"}},
		{name: "TestInspect_BlastRadiusOfAControllerRepair/co-tenant loses its last path", cmd: "inspect", nqn: opNQN, nsid: 1, targets: two,
			tree: []opSubsys{opSub(0, opNQN, map[int]string{1: volA, 2: volB},
				ctl("nvme0", p1, live, map[int]string{1: opt}), ctl("nvme1", p2, live, map[int]string{2: opt}))},
			want: []string{"controller-not-contributing controller [nvme1] [2]"}},
		{name: "TestInspect_BlastRadiusOfAControllerRepair/co-tenant path is already inaccessible", cmd: "inspect", nqn: opNQN, nsid: 1, targets: two,
			tree: []opSubsys{opSub(0, opNQN, map[int]string{1: volA, 2: volB},
				ctl("nvme0", p1, live, map[int]string{1: opt, 2: inacc}), ctl("nvme1", p2, live, map[int]string{2: opt}))},
			want: []string{"controller-not-contributing controller [nvme1] [2]"}},
		// reachableDev and staleDev (wait_test.go): a live controller with
		// an optimized leg, a connecting one with an inaccessible leg.
		{name: "TestInspect_AmbiguousHead", cmd: "inspect", nqn: opNQN, nsid: 1,
			tree: []opSubsys{
				opSub(0, opNQN, map[int]string{1: volA}, ctl("nvme0", p1, live, every(1, opt))),
				opSub(1, opNQN, map[int]string{1: volA}, ctl("nvme1", p2, connecting, every(1, inacc)))},
			want: []string{"ambiguous-head subsystem nvme-subsys1 [nvme1] []"}, notLive: []string{"nvme1 connecting"}},
		{name: "TestInspect_AmbiguousHeadWithNoStaleSideIsNotRepairable", cmd: "inspect", nqn: opNQN, nsid: 1,
			tree: []opSubsys{
				opSub(0, opNQN, map[int]string{1: volA}, ctl("nvme0", p1, live, every(1, opt))),
				opSub(1, opNQN, map[int]string{1: volA}, ctl("nvme1", p2, live, every(1, opt)))},
			want: []string{"ambiguous-head none [] []"}},
		// One namespace listed twice: two heads with NSID 1 (the kernel
		// would not show it; it is the operator's fixture as a tree).
		{name: "TestInspect_DuplicateNamespaceEntriesAreOneNamespace", cmd: "inspect", nqn: opNQN, nsid: 1, targets: []string{p1},
			tree: []opSubsys{{inst: 0, nqn: opNQN, heads: map[int]string{1: volA}, twin: 1, ctrls: []opCtrl{ctl("nvme0", p1, live, every(1, opt))}}}},
		{name: "TestInspect_UnderSpecifiedSelectorYieldsNoNamespaceVerdict", cmd: "inspect", nqn: opNQN, targets: two, bareOnly: true,
			tree: []opSubsys{opSub(0, opNQN, map[int]string{1: volA, 2: volB}, ctl("nvme0", p1, live, every(2, opt)), ctl("nvme1", p2, live, nil))}},
		// Selected by the UUID of namespace 1; inspect selects by NSID.
		{name: "TestInspect_SelectsNamespaceByUUID", cmd: "inspect", nqn: opNQN, nsid: 1, targets: two,
			tree: []opSubsys{opSub(0, opNQN, map[int]string{1: volA, 2: volB},
				ctl("nvme0", p1, live, every(2, opt)), ctl("nvme1", p2, live, map[int]string{1: opt}))}},

		// atlas-lib/nvmeof/realsysfs_test.go: the real captures. Both lab
		// endpoints are published.
		{name: "TestSysfsSnapshot_HealthyClusterHasNoDefects", cmd: "inspect", capture: "healthy.tsv"},
		{name: "TestSysfsSnapshot_ForcedDefects/controller-not-contributing", cmd: "inspect", capture: "controller-not-contributing.tsv",
			nqn: cncNQN, nsid: 1, targets: []string{"127.0.0.1:14420", "10.0.0.1:14420"},
			want: []string{"controller-not-contributing controller [nvme1] []"}},
		{name: "TestSysfsSnapshot_ForcedDefects/namespace-missing", cmd: "inspect", capture: "namespace-missing.tsv",
			nqn: cncNQN, nsid: 1, targets: []string{"127.0.0.1:14420", "10.0.0.1:14420"},
			want: []string{"namespace-missing subsystem nvme-subsys0 [nvme1 nvme0] [2]"}},
		{name: "TestSysfsSnapshot_ForcedDefects/no-namespace", cmd: "inspect", capture: "no-namespace.tsv",
			nqn: cncNQN, nsid: 1, targets: []string{"127.0.0.1:14420", "10.0.0.1:14420"},
			want: []string{"no-namespace subsystem nvme-subsys0 [nvme1 nvme0] []"}},

		// atlas-lib/nvme/reachability_test.go staleFixture: the fresh and the
		// stale instance of one NQN. The reader keeps them apart
		// (TestScanKeepsDuplicateSubsystemsApart); Inspect names the stale
		// one, whose controller is connecting (what TestPickPrefersLiveSubsystem
		// ranks last).
		{name: "TestScanKeepsDuplicateSubsystemsApart", cmd: "inspect", nqn: dupNQN, nsid: 1,
			tree: staleFixture(),
			want: []string{"ambiguous-head subsystem nvme-subsys0 [nvme0] []"}, notLive: []string{"nvme0 connecting"},
			wantReader: func(t *testing.T, v hostsJSON) {
				var got []string
				for _, h := range v.Hosts {
					for _, s := range h.Subsystems {
						for _, c := range s.Controllers {
							for _, l := range c.Legs {
								got = append(got, fmt.Sprintf("%s %s %s nsid %d %s", s.Name, c.Name, l.Name, l.NSID, l.ANAState))
							}
						}
					}
				}
				want := []string{"nvme-subsys0 nvme0 nvme0c0n1 nsid 1 inaccessible", "nvme-subsys1 nvme2 nvme1c2n1 nsid 1 optimized"}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("controllers and legs per subsystem (-want +got):\n%s", d)
				}
			}},
		// nonMultipathFixture: native multipath off, each controller with
		// its own disk for namespace 1, the first one connecting.
		{name: "TestNonMultipathNamespaces", cmd: "inspect", nqn: dupNQN, nsid: 1,
			tree:    []opSubsys{{inst: 0, nqn: dupNQN, heads: map[int]string{1: "792e184c-43d5-40ba-b497-3b645347cf1d"}, disks: true, ctrls: []opCtrl{ctl("nvme0", "192.168.10.3:4420", connecting, nil), ctl("nvme1", "192.168.10.4:4420", live, nil)}}},
			notLive: []string{"nvme0 connecting"}},

		// operator/internal/volumemigration/paths_test.go: diagnose, as
		// VerifyMigrationPaths asks it (bare NQN, then each namespace, no
		// targets).
		{name: "TestVerifyMigrationPaths_Ready", cmd: "inspect", nqn: pathsNQN,
			tree: []opSubsys{opSub(0, pathsNQN, one, ctl("nvme0", t114, live, every(1, inacc)), ctl("nvme1", t112, live, every(1, inacc)))}},
		{name: "TestVerifyMigrationPaths_ControllerNotLive", cmd: "inspect", nqn: pathsNQN,
			tree:    []opSubsys{opSub(0, pathsNQN, one, ctl("nvme0", t114, connecting, every(1, inacc)), ctl("nvme1", t112, live, every(1, inacc)))},
			notLive: []string{"nvme0 connecting"}},
		{name: "TestVerifyMigrationPaths_NoNamespacePath", cmd: "inspect", nqn: pathsNQN,
			tree: []opSubsys{opSub(0, pathsNQN, one, ctl("nvme0", t114, live, nil), ctl("nvme1", t112, live, every(1, inacc)))},
			want: []string{"controller-not-contributing controller [nvme0] []"}, detailHas: "10.0.0.114:4428"},
		{name: "TestVerifyMigrationPaths_SubsystemExportsNoNamespace", cmd: "inspect", nqn: pathsNQN,
			tree: []opSubsys{opSub(0, pathsNQN, nil, ctl("nvme0", t114, live, nil), ctl("nvme1", t112, live, nil))},
			want: []string{"no-namespace subsystem nvme-subsys0 [nvme1 nvme0] []"}},
		// Namespace 1 has no accessible path anywhere (both parked): the
		// operator counts it at risk (losingLastPath: no usable path left).
		{name: "TestVerifyMigrationPaths_ControllerMissesOneNamespace", cmd: "inspect", nqn: pathsNQN,
			tree: []opSubsys{opSub(0, pathsNQN, nsids(2), ctl("nvme0", t114, live, map[int]string{1: inacc}), ctl("nvme1", t112, live, every(2, inacc)))},
			want: []string{"controller-not-contributing controller [nvme0] [1]"}, detailHas: "namespace 2"},
		{name: "TestVerifyMigrationPaths_MultiNamespaceReady", cmd: "inspect", nqn: pathsNQN,
			tree: []opSubsys{opSub(0, pathsNQN, nsids(3), ctl("nvme0", t114, live, every(3, inacc)), ctl("nvme1", t112, live, every(3, inacc)))}},

		// operator/internal/volumemigration/release_test.go: release.
		{name: "TestReleaseMigrationPaths_ReleasesParkedTargets", cmd: "release", nqn: pathsNQN, conns: pathsConns,
			tree: parkedTargets(), want: []string{"nvme0", "nvme1"}},
		{name: "TestReleaseMigrationPaths_KeepsServingPathAtTargetAddress", cmd: "release", nqn: pathsNQN, conns: pathsConns,
			tree: []opSubsys{opSub(0, pathsNQN, one, ctl("nvme0", t114, live, every(1, nonopt)), ctl("nvme1", t112, live, every(1, inacc)))},
			want: []string{"nvme1"}},
		{name: "TestReleaseMigrationPaths_KeepsOptimizedTargetAfterCutover", cmd: "release", nqn: pathsNQN, conns: pathsConns,
			tree: []opSubsys{opSub(0, pathsNQN, one, ctl("nvme0", t114, live, every(1, opt)), ctl("nvme1", t112, live, every(1, nonopt)))}},
		{name: "TestReleaseMigrationPaths_ReleasesZeroNamespaceTarget", cmd: "release", nqn: pathsNQN, conns: pathsConns,
			tree: []opSubsys{opSub(0, pathsNQN, one, ctl("nvme0", t114, live, nil), ctl("nvme1", t112, connecting, nil), ctl("nvme2", "10.0.0.113:4430", live, every(1, opt)))},
			want: []string{"nvme0", "nvme1"}},
		{name: "TestReleaseMigrationPaths_DeclinesDuringTheCutoverWindow", cmd: "release", nqn: pathsNQN, conns: pathsConns,
			tree: []opSubsys{opSub(0, pathsNQN, one, ctl("nvme0", t114, live, every(1, inacc)), ctl("nvme1", t112, live, every(1, inacc)), ctl("nvme2", "10.0.0.113:4430", live, every(1, inacc)))}},
		{name: "TestReleaseMigrationPaths_ReleasesOnceTheWindowHasPassed", cmd: "release", nqn: pathsNQN, conns: pathsConns,
			tree: parkedTargets(), want: []string{"nvme0", "nvme1"}},
		{name: "TestReleaseMigrationPaths_IgnoresUnrelatedAddresses", cmd: "release", nqn: pathsNQN, conns: pathsConns,
			tree: []opSubsys{opSub(0, pathsNQN, one, ctl("nvme5", "10.0.0.113:4426", live, nil), ctl("nvme2", "10.0.0.113:4430", live, every(1, opt)))}},
		{name: "TestReleaseMigrationPaths_SubsystemAbsent", cmd: "release", nqn: "nqn.absent", conns: "[]",
			tree: []opSubsys{opSub(0, pathsNQN, one, ctl("nvme2", "10.0.0.113:4430", live, every(1, opt)))}},
		// TestReleaseMigrationPaths_PartialFailure: TestOperatorReleasePartialFailure.

		// release_test.go: reap.
		{name: "TestReapDeadControllers_ReapsLiveZeroNamespace", cmd: "reap", nqn: pathsNQN,
			tree: []opSubsys{opSub(0, pathsNQN, one, ctl("nvme12", "10.0.0.113:4430", live, nil), ctl("nvme13", "10.0.0.114:4430", live, every(1, nonopt)))},
			want: []string{"nvme12"}},
		{name: "TestReapDeadControllers_LeavesConnecting", cmd: "reap", nqn: pathsNQN,
			tree: []opSubsys{opSub(0, pathsNQN, one, ctl("nvme6", "10.0.0.112:4426", connecting, nil), ctl("nvme9", t112, connecting, every(1, inacc)), ctl("nvme13", "10.0.0.114:4430", live, every(1, nonopt)))}},
		{name: "TestReapDeadControllers_LeavesParkedTarget", cmd: "reap", nqn: pathsNQN,
			tree: []opSubsys{opSub(0, pathsNQN, one, ctl("nvme0", t114, live, every(1, inacc)), ctl("nvme2", "10.0.0.113:4430", live, every(1, opt)))}},
		{name: "TestReapDeadControllers_LeavesPartiallyServing", cmd: "reap", nqn: pathsNQN,
			tree: []opSubsys{opSub(0, pathsNQN, nsids(3), ctl("nvme2", "10.0.0.113:4430", live, map[int]string{1: opt}), ctl("nvme3", "10.0.0.114:4430", live, every(3, nonopt)))}},
		{name: "TestReapDeadControllers_NeverReapsTheLastController", cmd: "reap", nqn: pathsNQN,
			tree: []opSubsys{opSub(0, pathsNQN, nil, ctl("nvme12", "10.0.0.113:4430", live, nil), ctl("nvme13", "10.0.0.114:4430", live, nil))}},
		{name: "TestReapDeadControllers_ReportsEachControllerOnce", cmd: "reap", nqn: pathsNQN,
			tree: []opSubsys{opSub(0, pathsNQN, nsids(5), ctl("nvme12", "10.0.0.113:4430", live, nil), ctl("nvme13", "10.0.0.114:4430", live, every(5, nonopt)))},
			want: []string{"nvme12"}},
		{name: "TestReapDeadControllers_ReasonNamesTheDefect", cmd: "reap", nqn: pathsNQN,
			tree: []opSubsys{opSub(0, pathsNQN, one, ctl("nvme12", "10.0.0.113:4430", live, nil), ctl("nvme13", "10.0.0.114:4430", live, every(1, opt)))},
			want: []string{"nvme12"}, reasonHas: "controller-not-contributing"},
	}
}

// parkedTargets: release_test.go's two parked migration paths beside the
// serving source path.
func parkedTargets() []opSubsys {
	return []opSubsys{opSub(0, pathsNQN, map[int]string{1: ""},
		ctl("nvme0", "10.0.0.114:4428", "live", every(1, "inaccessible")),
		ctl("nvme1", "10.0.0.112:4428", "live", every(1, "inaccessible")),
		ctl("nvme2", "10.0.0.113:4430", "live", every(1, "optimized")))}
}

// staleFixture: reachability_test.go's stale nvme-subsys0 (nvme0 connecting,
// leg inaccessible) and fresh nvme-subsys1 (nvme2 live, leg optimized).
func staleFixture() []opSubsys {
	u := map[int]string{1: "792e184c-43d5-40ba-b497-3b645347cf1d"}
	return []opSubsys{
		opSub(0, dupNQN, u, ctl("nvme0", "192.168.10.3:4420", "connecting", every(1, "inaccessible"))),
		opSub(1, dupNQN, u, ctl("nvme2", "192.168.10.5:4420", "live", every(1, "optimized"))),
	}
}

// captureName is the case's capture file under testdata/operator.
func (c opCase) captureName() string {
	if c.capture != "" {
		return filepath.Join("..", "testdata", "sysfs-captures", c.capture)
	}
	return filepath.Join("testdata", "operator", strings.NewReplacer("/", "--", " ", "-").Replace(c.name)+".tsv")
}

// TestOperatorCaptures: testdata/operator holds exactly the case table's
// trees (-update rewrites them).
func TestOperatorCaptures(t *testing.T) {
	want := map[string]bool{}
	for _, c := range opCases() {
		if c.capture != "" {
			continue
		}
		p := c.captureName()
		want[filepath.Base(p)] = true
		tree := render(c.tree)
		if *updateOperator {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(tree), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (run go test ./nvmeof/hostcmd -run TestOperatorCaptures -update)", err)
		}
		if d := cmp.Diff(tree, string(b)); d != "" {
			t.Errorf("%s differs from its case (-case +file); -update rewrites it:\n%s", p, d)
		}
	}
	files, _ := filepath.Glob("testdata/operator/*.tsv")
	for _, f := range files {
		if !want[filepath.Base(f)] {
			t.Errorf("%s belongs to no case", f)
		}
	}
}

// inspectOut is inspect -o json as the cases read it.
type inspectOut struct {
	Defects []defectJSON `json:"defects"`
	NotLive []struct {
		Controller string `json:"controller"`
		State      string `json:"state"`
	} `json:"not_live"`
}

func defectLine(kind, scope, subsys string, ctrls []string, coTenants []int) string {
	if scope != string(nvmeof.ScopeSubsystem) {
		subsys = ""
	}
	s := kind + " " + scope
	if subsys != "" {
		s += " " + subsys
	}
	if coTenants == nil {
		coTenants = []int{}
	}
	return fmt.Sprintf("%s [%s] %v", s, strings.Join(ctrls, " "), coTenants)
}

// TestOperatorCases: the host tools decide each operator case as the
// operator's test expects: the same defects (kind, scope, subsystem
// instance, controllers in teardown order, co-tenant namespaces), exit 1
// exactly when there is one; release and reap tear down exactly the
// controllers the operator's do, exit 0. A controller that is connecting is
// no defect (one reading cannot tell a reconnect in progress from a leak)
// but is listed, with its state, as not live.
func TestOperatorCases(t *testing.T) {
	for _, c := range opCases() {
		t.Run(c.name, func(t *testing.T) {
			capture := c.captureName()
			args := []string{c.cmd, "--capture", capture, "-o", "json"}
			if c.nqn != "" {
				args = append(args, "--nqn", c.nqn)
			}
			switch c.cmd {
			case "inspect":
				if c.nsid != 0 {
					args = append(args, "--nsid", strconv.Itoa(c.nsid))
				}
				for _, tg := range c.targets {
					args = append(args, "--target", tg)
				}
			case "release":
				args = append(args, "--connections", c.conns)
			}
			if c.bareOnly {
				c.checkLibrary(t, capture)
				return
			}
			code, stdout, stderr := run(t, args...)
			wantCode := exitPass
			if c.cmd == "inspect" && len(c.want) > 0 {
				wantCode = exitCheckFailed
			}
			if code != wantCode {
				t.Errorf("%s: exit %d, want %d\nstdout %s\nstderr %s", strings.Join(args, " "), code, wantCode, stdout, stderr)
			}
			var got []string
			switch c.cmd {
			case "inspect":
				var out inspectOut
				if err := json.Unmarshal([]byte(stdout), &out); err != nil {
					t.Fatalf("inspect -o json: %v\n%s", err, stdout)
				}
				details := ""
				for _, d := range out.Defects {
					got = append(got, defectLine(d.Kind, d.Scope, d.Subsystem, d.Controllers, d.CoTenants))
					details += d.Detail + "\n"
				}
				if c.detailHas != "" && !strings.Contains(details, c.detailHas) {
					t.Errorf("no defect's detail names %q:\n%s", c.detailHas, details)
				}
				var nl []string
				for _, n := range out.NotLive {
					nl = append(nl, n.Controller+" "+n.State)
				}
				if d := cmp.Diff(c.notLive, nl); d != "" {
					t.Errorf("not-live controllers (-want +got):\n%s", d)
				}
			default:
				var plans []planJSON
				if err := json.Unmarshal([]byte(stdout), &plans); err != nil {
					t.Fatalf("%s -o json: %v\n%s", c.cmd, err, stdout)
				}
				for _, p := range plans {
					for _, r := range p.Released {
						got = append(got, r.Controller)
						if c.reasonHas != "" && !strings.Contains(r.Reason, c.reasonHas) {
							t.Errorf("%s: reason %q does not name %q", r.Controller, r.Reason, c.reasonHas)
						}
					}
				}
			}
			sort.Strings(got)
			want := slices.Sorted(slices.Values(c.want))
			if d := cmp.Diff(want, got, cmpEmpty); d != "" {
				t.Errorf("%s (-operator +fiomig):\n%s", strings.Join(args, " "), d)
			}
			if c.wantReader != nil {
				code, stdout, stderr := run(t, "hosts", "--capture", capture, "-o", "json")
				var v hostsJSON
				if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != exitPass {
					t.Fatalf("hosts: exit %d, %v\n%s", code, err, stderr)
				}
				c.wantReader(t, v)
			}
		})
	}
}

var cmpEmpty = cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })

// checkLibrary asks nvmeof.Inspect the operator's exact question.
func (c opCase) checkLibrary(t *testing.T, capture string) {
	t.Helper()
	b, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := nvmeof.LoadCapture(bytes.NewReader(b), capture)
	if err != nil {
		t.Fatal(err)
	}
	st, err := nvmeof.ReadSysfs(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var tg []nvmeof.Target
	for _, e := range c.targets {
		tg = append(tg, nvmeof.EndpointTargets(c.nqn, []string{e})...)
	}
	var got []string
	for _, d := range nvmeof.Inspect(st, nvmeof.Selector{NQN: c.nqn, NSID: c.nsid}, tg) {
		got = append(got, defectLine(string(d.Kind), string(d.Scope), d.Subsystem, d.Controllers, d.CoTenants))
	}
	if d := cmp.Diff(c.want, got, cmpEmpty); d != "" {
		t.Errorf("nvmeof.Inspect %s nsid %d (-operator +fiomig):\n%s", c.nqn, c.nsid, d)
	}
}

// TestOperatorReleasePartialFailure: release_test.go
// TestReleaseMigrationPaths_PartialFailure on a live tree: nvme0's
// disconnect fails, nvme1 is still released, the error names nvme0, exit 1.
func TestOperatorReleasePartialFailure(t *testing.T) {
	tooltest.Command(t, "sh")
	dir := t.TempDir()
	root := filepath.Join(dir, "sys")
	fsys, err := nvmeof.LoadCapture(strings.NewReader(render(parkedTargets())), "parked")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(root, fsys); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "nvme")
	script := fmt.Sprintf("#!/bin/sh\n[ \"$3\" = nvme0 ] && { echo 'delete_controller: device busy' >&2; exit 1; }\nrm -rf %q/class/nvme/\"$3\"\n", root)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, "release", "--sys-root", root, "--nvme", bin, "--nqn", pathsNQN, "--connections", pathsConns)
	if code != exitCheckFailed || !strings.Contains(stderr, "nvme0") || !strings.Contains(stdout, "released nvme1") || strings.Contains(stdout, "released nvme0") {
		t.Errorf("exit %d, want 1 with nvme1 released and nvme0's failure named\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}

// TestOperatorEmptyNQN: release_test.go's EmptyNQN cases: release and reap
// of an empty NQN are errors, and the commands say --nqn is required (release)
// or read it as every NQN (reap, inspect).
func TestOperatorEmptyNQN(t *testing.T) {
	if _, err := nvmeof.PlanRelease(nvmeof.HostState{}, "", nil); err == nil {
		t.Error("PlanRelease with an empty NQN: no error")
	}
	if _, err := nvmeof.PlanReap(nvmeof.HostState{}, ""); err == nil {
		t.Error("PlanReap with an empty NQN: no error")
	}
	if code, _, stderr := run(t, "release", "--capture", cncCap, "--connections", "[]"); code != exitUsage || !strings.Contains(stderr, "--nqn is required") {
		t.Errorf("release without --nqn: exit %d, %s", code, stderr)
	}
}
