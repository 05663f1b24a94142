package agent

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/nvmeof"
)

const (
	hostA = "nqn.2014-08.org.nvmexpress:uuid:00000001-0000-4000-8000-000000000001"
	hostB = "nqn.2014-08.org.nvmexpress:uuid:0000000b-0000-4000-8000-00000000000b"
)

// sharedKernel is the real healthy capture with controller nvme7 given to
// another host (hostB), as two kind nodes sharing one kernel show it.
func sharedKernel(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../../nvmeof/testdata/sysfs-captures/healthy.tsv")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if p, _, ok := strings.Cut(l, "\t"); ok && strings.HasSuffix(p, "/nvme7/hostnqn") {
			l = p + "\t" + hostB
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func load(t *testing.T, text, name string) nvmeof.HostState {
	t.Helper()
	fsys, err := nvmeof.LoadCapture(strings.NewReader(text), name)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := nvmeof.ReadHost(fsys, "")
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

// TestWriteCaptureKeepsOnlyTheHostsControllers: what the agent serves for
// a host, read back with the harness's parser, is exactly that host's part
// of the full tree (nvmeof.ReadHost with its hostnqn), and the other
// host's controller is not in it at all.
func TestWriteCaptureKeepsOnlyTheHostsControllers(t *testing.T) {
	full := sharedKernel(t)
	sys, err := nvmeof.LoadCapture(strings.NewReader(full), "shared.tsv")
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{hostA, hostB} {
		var buf bytes.Buffer
		if err := WriteCapture(&buf, sys, host); err != nil {
			t.Fatal(err)
		}
		want, err := nvmeof.ReadHost(sys, host)
		if err != nil {
			t.Fatal(err)
		}
		if len(want.Controllers()) == 0 {
			t.Fatalf("fixture has no controller of %s", host)
		}
		got := load(t, buf.String(), "served")
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("host %s: served tree differs from its part of the full tree (-want +got):\n%s", host, d)
		}
		foreign := "/nvme7/"
		if host == hostB {
			foreign = "/nvme0/"
		}
		if strings.Contains(buf.String(), foreign) {
			t.Errorf("host %s: capture holds another host's controller (%s)", host, foreign)
		}
	}
}

func TestWriteCaptureRejectsUnreadableTrees(t *testing.T) {
	sys, err := nvmeof.FSFromFiles(map[string]string{
		"class/nvme/nvme0/state":     "live\n",
		"class/nvme/nvme0/transport": "tcp\n",
		"class/nvme/nvme0/subsysnqn": "nqn.a\n",
		"class/nvme/nvme0/address":   "nonsense\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	err = WriteCapture(&bytes.Buffer{}, sys, "")
	if err == nil || !strings.Contains(err.Error(), "address") {
		t.Errorf("malformed address: err = %v, want one naming the address file", err)
	}
	if err := WriteCapture(&bytes.Buffer{}, nil, ""); err == nil {
		t.Error("nil tree: no error")
	}
}

func TestHandlerServesSamplesWithHostTime(t *testing.T) {
	sys, err := nvmeof.LoadCapture(strings.NewReader(sharedKernel(t)), "shared.tsv")
	if err != nil {
		t.Fatal(err)
	}
	hostClock := time.Unix(1700000000, 123456789)
	srv := httptest.NewServer(Handler(Config{Node: "worker-1", HostNQN: hostB, Sys: sys,
		Now: func() time.Time { return hostClock }}))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/v1/sample")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	s, err := Decode(resp.Header, resp.Body, "worker-1 agent")
	if err != nil {
		t.Fatal(err)
	}
	if !s.HostTime.Equal(hostClock) || s.Node != "worker-1" || s.HostNQN != hostB {
		t.Errorf("sample = node %q hostnqn %q time %v, want worker-1 %s %v", s.Node, s.HostNQN, s.HostTime, hostB, hostClock)
	}
	got, err := nvmeof.ReadHost(s.Sys, "")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := nvmeof.ReadHost(sys, hostB)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("decoded sample (-want +got):\n%s", d)
	}

	for path, code := range map[string]int{"/healthz": 200, "/v1/host": 200, "/nope": 404} {
		r, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != code {
			t.Errorf("GET %s: %d, want %d", path, r.StatusCode, code)
		}
	}
	r, err := http.Post(srv.URL+"/v1/sample", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /v1/sample: %d, want 405 (the agent writes nothing)", r.StatusCode)
	}
}

func TestDecodeNeedsHostTime(t *testing.T) {
	_, err := Decode(http.Header{}, strings.NewReader(""), "pod x")
	if err == nil || !strings.Contains(err.Error(), HeaderHostTime) {
		t.Errorf("err = %v, want one naming %s", err, HeaderHostTime)
	}
}

func TestParseNFTCounter(t *testing.T) {
	// Shape of "nft -j list table inet T" (libnftables-json(5)).
	out := `{"nftables":[{"metainfo":{"version":"1.0.6","json_schema_version":1}},
{"table":{"family":"inet","name":"fiomig_r1","handle":1}},
{"chain":{"family":"inet","table":"fiomig_r1","name":"input","handle":1,"type":"filter","hook":"prerouting","prio":-300,"policy":"accept"}},
{"rule":{"family":"inet","table":"fiomig_r1","chain":"input","handle":2,"expr":[{"match":{"op":"==","left":{"payload":{"protocol":"tcp","field":"dport"}},"right":4420}},{"counter":{"packets":7,"bytes":420}},{"drop":null}]}}]}`
	c, err := ParseNFTCounter([]byte(out), "fiomig_r1")
	if err != nil {
		t.Fatal(err)
	}
	if c != (Counter{Table: "fiomig_r1", Packets: 7, Bytes: 420}) {
		t.Errorf("counter = %+v", c)
	}
	if _, err := ParseNFTCounter([]byte(out), "other"); err == nil {
		t.Error("other table: no error")
	}
	if _, err := ParseNFTCounter([]byte("{"), "x"); err == nil {
		t.Error("bad JSON: no error")
	}
}

func TestNFTScript(t *testing.T) {
	got := NFT{Table: "fiomig_r1", IP: "10.0.0.1", Ports: []int{4420}}.Script()
	want := "add table inet fiomig_r1\nadd chain inet fiomig_r1 input { type filter hook prerouting priority -150 ; }\nadd rule inet fiomig_r1 input ip daddr 10.0.0.1 tcp dport 4420 ct state new counter drop\n"
	if got != want {
		t.Errorf("script:\n%s\nwant:\n%s", got, want)
	}
	if s := (NFT{Table: "t", IP: "fd00::1", Ports: []int{1}}).Script(); !strings.Contains(s, "ip6 daddr fd00::1") {
		t.Errorf("IPv6 script: %s", s)
	}
	if r := (NFT{IP: "10.0.0.1", Ports: []int{4426, 4428}}).Rule(); r != "ip daddr 10.0.0.1 tcp dport { 4426, 4428 } ct state new counter drop" {
		t.Errorf("rule of two ports: %s", r)
	}
	if _, err := ParsePorts("4426,0"); err == nil {
		t.Error("port 0: no error")
	}
}

func TestFilesHandlerServesOnlyTopLevelFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(dir+"/result.json", []byte("{}"), 0o644)
	os.WriteFile(dir+"/.hidden", []byte("x"), 0o644)
	os.Mkdir(dir+"/sub", 0o755)
	srv := httptest.NewServer(FilesHandler(os.DirFS(dir)))
	defer srv.Close()
	get := func(p string) (int, string) {
		r, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		return r.StatusCode, b.String()
	}
	if code, body := get("/v1/files"); code != 200 || strings.TrimSpace(body) != `["result.json"]` {
		t.Errorf("list: %d %q", code, body)
	}
	if code, body := get("/v1/files/result.json"); code != 200 || body != "{}" {
		t.Errorf("file: %d %q", code, body)
	}
	for _, p := range []string{"/v1/files/.hidden", "/v1/files/sub", "/v1/files/..%2fetc"} {
		if code, _ := get(p); code != 404 {
			t.Errorf("GET %s: %d, want 404", p, code)
		}
	}
	r, _ := http.Post(srv.URL+"/v1/files/result.json", "text/plain", nil)
	if r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405 (read-only)", r.StatusCode)
	}
	r.Body.Close()
}

// csiKernel is the healthy capture as simplyblock's CSI leaves it on a
// kernel shared by two nodes: nvme7 connected by node B's CSI, nvme5 by a
// validation Job of node A (the rebalancer image's own NQN), the rest by
// node A's CSI.
func csiKernel(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../../nvmeof/testdata/sysfs-captures/healthy.tsv")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if p, _, ok := strings.Cut(l, "\t"); ok && strings.HasSuffix(p, "/hostnqn") {
			switch {
			case strings.HasSuffix(p, "/nvme7/hostnqn"):
				l = p + "\t" + CSIHostNQN(uidB)
			case strings.HasSuffix(p, "/nvme5/hostnqn"):
				l = p + "\t" + validationNQN
			default:
				l = p + "\t" + CSIHostNQN(uidA)
			}
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

const (
	uidA          = "6f1c2a3b-0000-4000-8000-00000000000a"
	uidB          = "6f1c2a3b-0000-4000-8000-00000000000b"
	validationNQN = "nqn.2014-08.org.nvmexpress:uuid:feedface-0000-4000-8000-000000000001"
)

// TestIdentifyLearnsTheHostFromItsControllers: with no flag the agent
// needs no file on the host: with the Node UID it keeps the CSI's NQN of
// that UID and the validation Job's, not the other node's CSI NQN; without
// it, every hostnqn seen on simplyblock subsystems; a flag wins.
func TestIdentifyLearnsTheHostFromItsControllers(t *testing.T) {
	sys, err := nvmeof.LoadCapture(strings.NewReader(csiKernel(t)), "csi.tsv")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := nvmeof.ReadSysfs(sys)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, flag, uid string
		want            Identity
	}{
		{"node uid", "", uidA, Identity{Source: SourceNodeUID, HostNQN: CSIHostNQN(uidA), HostNQNs: []string{CSIHostNQN(uidA), validationNQN}}},
		{"other node's uid", "", uidB, Identity{Source: SourceNodeUID, HostNQN: CSIHostNQN(uidB), HostNQNs: []string{CSIHostNQN(uidB), validationNQN}}},
		{"sysfs only", "", "", Identity{Source: SourceSysfs, HostNQN: CSIHostNQN(uidA), HostNQNs: []string{CSIHostNQN(uidA), CSIHostNQN(uidB), validationNQN}}},
		{"flag", hostA, uidA, Identity{Source: SourceFlag, HostNQN: hostA, HostNQNs: []string{hostA}}},
	} {
		if d := cmp.Diff(tc.want, Identify(hs, tc.flag, tc.uid)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
	// A host whose only simplyblock controllers are its CSI's names it.
	one := nvmeof.FilterHost(hs, CSIHostNQN(uidA))
	if got := Identify(one, "", ""); got.HostNQN != CSIHostNQN(uidA) || got.Source != SourceSysfs {
		t.Errorf("one CSI identity: %+v", got)
	}
}

// TestHandlerTakesTheNodeUIDFromTheHarness: /v1/host and /v1/sample with
// ?node_uid= serve node A's controllers and the validation Job's, say so,
// and leave node B's out.
func TestHandlerTakesTheNodeUIDFromTheHarness(t *testing.T) {
	sys, err := nvmeof.LoadCapture(strings.NewReader(csiKernel(t)), "csi.tsv")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(Config{Node: "worker-a", Sys: sys}))
	defer srv.Close()
	r, err := http.Get(srv.URL + "/v1/host?node_uid=" + uidA)
	if err != nil {
		t.Fatal(err)
	}
	var info HostInfo
	if err := json.NewDecoder(r.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if info.Source != SourceNodeUID || info.HostNQN != CSIHostNQN(uidA) || len(info.HostNQNs) != 2 {
		t.Errorf("/v1/host: %+v", info)
	}
	resp, err := http.Get(srv.URL + "/v1/sample?node_uid=" + uidA)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	s, err := Decode(resp.Header, resp.Body, "agent a")
	if err != nil {
		t.Fatal(err)
	}
	if s.Source != SourceNodeUID || s.HostNQN != CSIHostNQN(uidA) {
		t.Errorf("sample identity %s %s", s.Source, s.HostNQN)
	}
	got, err := nvmeof.ReadSysfs(s.Sys)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range got.Controllers() {
		names = append(names, c.Name)
		if c.HostNQN == CSIHostNQN(uidB) {
			t.Errorf("sample holds node B's controller %s", c.Name)
		}
	}
	if !slices.Contains(names, "nvme5") {
		t.Errorf("sample controllers %v lack the validation Job's nvme5", names)
	}
}
