package standin

import (
	"io/fs"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/internal/tooltest"
	"github.com/fiomig/fiomig/nvmeof"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/sim"
	"github.com/fiomig/fiomig/workload"
)

// TestParseDropRules reads the rules the nft helper writes from nft 1.0.6's
// JSON (one port and a set of ports, as `nft -j list ruleset` printed them
// in a network namespace here), and ignores rules that drop nothing or
// match no address and port.
func TestParseDropRules(t *testing.T) {
	const ruleset = `{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}},
{"table": {"family": "inet", "name": "fiomig_x", "handle": 1}},
{"chain": {"family": "inet", "table": "fiomig_x", "name": "input", "handle": 1, "type": "filter", "hook": "prerouting", "prio": -300, "policy": "accept"}},
{"rule": {"family": "inet", "table": "fiomig_x", "chain": "input", "handle": 3, "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": "198.19.255.13"}}, {"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": {"set": [4426, 4430]}}}, {"match": {"op": "in", "left": {"ct": {"key": "state"}}, "right": "new"}}, {"counter": {"packets": 0, "bytes": 0}}, {"drop": null}]}},
{"rule": {"family": "inet", "table": "fiomig_x", "chain": "input", "handle": 4, "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": "198.19.255.12"}}, {"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": 4428}}, {"match": {"op": "in", "left": {"ct": {"key": "state"}}, "right": "new"}}, {"counter": {"packets": 0, "bytes": 0}}, {"drop": null}]}},
{"rule": {"family": "inet", "table": "other", "chain": "input", "handle": 5, "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": "198.19.255.11"}}, {"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": 4426}}, {"counter": {"packets": 0, "bytes": 0}}, {"accept": null}]}},
{"rule": {"family": "inet", "table": "other", "chain": "input", "handle": 6, "expr": [{"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}}, "right": 22}}, {"drop": null}]}}]}`
	got, err := ParseDropRules([]byte(ruleset))
	if err != nil {
		t.Fatal(err)
	}
	want := []DropRule{{Table: "fiomig_x", IP: "198.19.255.13", Ports: []int{4426, 4430}}, {Table: "fiomig_x", IP: "198.19.255.12", Ports: []int{4428}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ParseDropRules (-want +got):\n%s", d)
	}
	if _, err := ParseDropRules([]byte("{")); err == nil {
		t.Error("ParseDropRules of broken JSON: no error")
	}
}

// TestTranslateAddress maps the simulated addresses of a controller's
// address attribute to the data addresses and leaves the rest alone.
func TestTranslateAddress(t *testing.T) {
	addrs := map[string]string{"10.0.0.1": "198.19.255.11", "10.0.0.2": "198.19.255.12"}
	for in, want := range map[string]string{
		"traddr=10.0.0.1,trsvcid=4426,src_addr=10.0.0.2\n":  "traddr=198.19.255.11,trsvcid=4426,src_addr=198.19.255.12\n",
		"traddr=10.0.0.9,trsvcid=4426":                      "traddr=10.0.0.9,trsvcid=4426",
		"traddr=10.0.0.2,trsvcid=4428,host_traddr=10.0.0.1": "traddr=198.19.255.12,trsvcid=4428,host_traddr=198.19.255.11",
	} {
		if got := translateAddress(in, addrs); got != want {
			t.Errorf("translateAddress(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTreeMountServesTheSimulatedSysfs mounts a simulated host's sysfs
// over FUSE (what an agent pod reads beside real kubelets) and reads it
// back through the kernel with the harness's own parser: the same host
// state as the io/fs.FS it serves, and the mount gone after unmount.
func TestTreeMountServesTheSimulatedSysfs(t *testing.T) {
	if err := workload.Available(); err != nil {
		tooltest.Require(t, err)
	}
	w, err := sim.New(sim.Config{Seed: 1, Model: record.Model{Nodes: 3, Hosts: 3, HostsAreNodes: true, Volumes: 3}})
	if err != nil {
		t.Fatal(err)
	}
	h := w.Hosts()[0]
	dir := t.TempDir()
	m, err := mountTree(dir, func() fs.FS { return hostFS{FS: h.Sysfs(), addrs: map[string]string{"10.0.0.1": "198.19.255.11"}} })
	if err != nil {
		t.Fatal(err)
	}
	defer m.unmount()
	want, err := nvmeof.ReadSysfs(hostFS{FS: h.Sysfs(), addrs: map[string]string{"10.0.0.1": "198.19.255.11"}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	const reads = 20
	for i := 0; i < reads; i++ {
		got, err := nvmeof.ReadSysfs(os.DirFS(dir))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("host state through FUSE (-want +got):\n%s", d)
		}
	}
	t.Logf("%d reads of %d subsystem(s) through FUSE: %.1f ms each", reads, len(want.Subsystems), time.Since(t0).Seconds()*1000/reads)
	if err := m.unmount(); err != nil {
		t.Fatal(err)
	}
	if mounted(dir) {
		t.Errorf("%s still mounted", dir)
	}
}
