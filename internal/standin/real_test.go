package standin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
