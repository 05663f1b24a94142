package kube

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
)

func TestRunIDIsALabelValueAndANamePrefix(t *testing.T) {
	id := NewRunID(time.Unix(1764633600, 0))
	if !strings.HasPrefix(id, "fiomig-1764633600-") {
		t.Errorf("run id %q", id)
	}
	if errs := validation.IsValidLabelValue(id); len(errs) > 0 {
		t.Errorf("run id %q is not a label value: %v", id, errs)
	}
	if errs := validation.IsDNS1123Subdomain(id + "-pvc-10"); len(errs) > 0 {
		t.Errorf("%q-pvc-10 is not an object name: %v", id, errs)
	}
	if a, b := NewRunID(time.Unix(1, 0)), NewRunID(time.Unix(1, 0)); a == b {
		t.Error("two run ids in the same second are equal")
	}
}

func TestNFTTableNameRoundTrips(t *testing.T) {
	id := "fiomig-1764633600-ab12"
	table := nftTable(id)
	if table != "fiomig_1764633600_ab12" || strings.Contains(table, "-") {
		t.Errorf("table %q", table)
	}
	if got := runOfTable(table); got != id {
		t.Errorf("runOfTable(%q) = %q, want %q", table, got, id)
	}
	if got := runOfTable("other"); got != "?" {
		t.Errorf("runOfTable(other) = %q", got)
	}
}

func TestCanonicalEndpoints(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		port int
		want string
	}{
		{"10.0.0.1", 4420, "10.0.0.1:4420"},
		{"fd00::1", 4420, "[fd00::1]:4420"},
		{"::ffff:10.0.0.1", 4420, "[::ffff:10.0.0.1]:4420"},
	} {
		got, err := canonical(tc.ip, tc.port)
		if err != nil || got != tc.want {
			t.Errorf("canonical(%q, %d) = %q, %v; want %q", tc.ip, tc.port, got, err, tc.want)
		}
	}
	if _, err := canonical("host.example", 1); err == nil {
		t.Error("a host name is not an endpoint")
	}
}

// TestObjectsCarryTheRunLabel: every object a run creates is found by the
// janitor's selector and names its run and role.
func TestObjectsCarryTheRunLabel(t *testing.T) {
	const id = "fiomig-1-abcd"
	pvc, err := pvcObject("fiomig", id+"-pvc-1", id, "sc", "1Gi")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pvcObject("fiomig", "x", id, "sc", "lots"); err == nil {
		t.Error("bad volume size: no error")
	}
	objs := map[string]map[string]string{
		"pvc":        pvc.Labels,
		"fio":        fioPod("fiomig", id+"-fio-1", id, id+"-pvc-1", "worker-1", id+"-fio-jobs", "vol-1.fio", "fio", "helper").Labels,
		"nft-helper": nftHelperPod("fiomig", id+"-nft-storage-1", id, "storage-1", "10.0.0.1", []int{4420}, "helper").Labels,
		"migration":  volumeMigration("fiomig", id+"-mig-1", id, "pv-1", "uuid").GetLabels(),
	}
	for role, labels := range objs {
		want := map[string]string{LabelRun: id, LabelRole: role, LabelManagedBy: "fiomig"}
		if d := cmp.Diff(want, labels); d != "" {
			t.Errorf("%s labels (-want +got):\n%s", role, d)
		}
	}
	pod := fioPod("fiomig", "p", id, "c", "worker-2", "j", "vol-2.fio", "fio", "helper")
	term := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0]
	if term.Key != "kubernetes.io/hostname" || len(term.Values) != 1 || term.Values[0] != "worker-2" {
		t.Errorf("fio pod not pinned to worker-2: %+v", term)
	}
	for _, c := range pod.Spec.Containers {
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			t.Errorf("fio pod container %s is privileged", c.Name)
		}
	}
	h := nftHelperPod("fiomig", "h", id, "storage-1", "10.0.0.1", []int{4420}, "helper")
	if !h.Spec.HostNetwork || h.Spec.NodeName != "storage-1" || h.Annotations[AnnotationNFTTable] != nftTable(id) {
		t.Errorf("nft helper pod: hostNetwork %v node %q table %q", h.Spec.HostNetwork, h.Spec.NodeName, h.Annotations[AnnotationNFTTable])
	}
}

func TestStageOfARunningMigration(t *testing.T) {
	const nqn = "nqn.a"
	ctrl := func(ip string, state nvmeof.ControllerState, ana nvmeof.ANAState) nvmeof.Controller {
		return nvmeof.Controller{Name: "nvme-" + ip, NQN: nqn, State: state, Address: nvmeof.Address{Traddr: ip, Trsvcid: "4420"},
			Legs: []nvmeof.Leg{{NSID: 2, ANA: ana}}}
	}
	host := func(cs ...nvmeof.Controller) nvmeof.HostState {
		return nvmeof.HostState{Subsystems: []nvmeof.Subsystem{{NQN: nqn, Controllers: cs}}}
	}
	target := []string{"10.0.0.2:4420"}
	for _, tc := range []struct {
		name string
		hs   nvmeof.HostState
		want string
	}{
		{"source optimized", host(ctrl("10.0.0.1", nvmeof.StateLive, nvmeof.ANAOptimized), ctrl("10.0.0.2", nvmeof.StateLive, nvmeof.ANAInaccessible)), record.StageBeforeCutover},
		{"every path inaccessible", host(ctrl("10.0.0.1", nvmeof.StateLive, nvmeof.ANAInaccessible), ctrl("10.0.0.2", nvmeof.StateLive, nvmeof.ANAInaccessible)), record.StageInFreeze},
		{"optimized only on a connecting controller", host(ctrl("10.0.0.1", nvmeof.StateConnecting, nvmeof.ANAOptimized)), record.StageInFreeze},
		{"target optimized", host(ctrl("10.0.0.1", nvmeof.StateLive, nvmeof.ANAInaccessible), ctrl("10.0.0.2", nvmeof.StateLive, nvmeof.ANAOptimized)), record.StageAfterCutover},
		{"no controller at all", host(), record.StageInFreeze},
	} {
		if got := stageOf(tc.hs, nqn, []int{2}, target); got != tc.want {
			t.Errorf("%s: stage %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestClusterSecretFromWhatTheUserGave: the bare secret or simplyblock's
// secret.json; errors name what is missing and never the secret.
func TestClusterSecretFromWhatTheUserGave(t *testing.T) {
	const c1, c2 = "5f3c0d2a-0000-4000-8000-000000000001", "5f3c0d2a-0000-4000-8000-000000000002"
	doc := `{"clusters":[{"cluster_id":"` + c1 + `","cluster_endpoint":"http://x:5000","cluster_secret":"s3cr3t-one"},
{"cluster_id":"` + c2 + `","cluster_secret":"s3cr3t-two"}]}`
	for _, tc := range []struct {
		raw, cluster, want, errPart string
	}{
		{"s3cr3t-bare\n", c1, "s3cr3t-bare", ""},
		{doc, c2, "s3cr3t-two", ""},
		{doc, "other", "", "no cluster_secret for cluster other"},
		{"  \n", c1, "", "no control-plane credential"},
		{"two words", c1, "", "white space"},
		{`{"clusters": [`, c1, "", "not simplyblock's secret.json"},
	} {
		got, err := ClusterSecret([]byte(tc.raw), tc.cluster)
		if got != tc.want || (err == nil) != (tc.errPart == "") || (err != nil && !strings.Contains(err.Error(), tc.errPart)) {
			t.Errorf("ClusterSecret(%q, %s) = %q, %v; want %q, error with %q", tc.raw, tc.cluster, got, err, tc.want, tc.errPart)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("error %q shows a secret", err)
		}
	}
}

// TestNodeNamedDropTargetsThePortsHostsUse: a node name means its data
// address and every port the published endpoints carry there plus its
// lvolPort, never the management address or nvmfPort.
func TestNodeNamedDropTargetsThePortsHostsUse(t *testing.T) {
	c := &Cluster{
		nodes: []storageNode{
			{Name: "storage-1", UUID: "u1", IP: "10.0.0.1", IPs: []string{"10.0.0.1"}, MgmtIP: "192.168.0.1", LvolPort: 4426, NvmfPort: 4420},
			{Name: "storage-2", UUID: "u2", IP: "10.0.0.2", IPs: []string{"10.0.0.2"}, MgmtIP: "192.168.0.2", LvolPort: 4428, NvmfPort: 4421},
		},
		endpoints: map[string][]string{
			"nqn.a": {"10.0.0.1:4426", "10.0.0.2:4426"},
			"nqn.b": {"10.0.0.1:4428", "10.0.0.2:4428"},
		},
	}
	n, ip, ports, err := c.resolveDrop("storage-2")
	if err != nil || n.Name != "storage-2" || ip != "10.0.0.2" || !slices.Equal(ports, []int{4426, 4428}) {
		t.Errorf("storage-2: %s %s %v %v; want 10.0.0.2 [4426 4428]", n.Name, ip, ports, err)
	}
	if _, ip, ports, err := c.resolveDrop("10.0.0.1:4428"); err != nil || ip != "10.0.0.1" || !slices.Equal(ports, []int{4428}) {
		t.Errorf("ip:port: %s %v %v", ip, ports, err)
	}
	if _, _, _, err := c.resolveDrop("192.168.0.1:4426"); err == nil {
		t.Error("a management address: no error")
	}
}
