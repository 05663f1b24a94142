package nvmeof

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConnectArgsAndFabricsOptions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		t         Target
		args      string
		fabrics   string
		nWarnings int
	}{
		{
			name:    "minimal: kernel defaults for every option",
			t:       Target{Traddr: "10.0.0.1", Trsvcid: "4420", NQN: "nqn.x"},
			args:    "connect -t tcp -a 10.0.0.1 -s 4420 -n nqn.x",
			fabrics: "nqn=nqn.x,transport=tcp,traddr=10.0.0.1,trsvcid=4420",
		},
		{
			name: "simplyblock control-plane answer",
			t: Target{Transport: "tcp", Traddr: "10.0.0.1", Trsvcid: "4420", NQN: "nqn.x",
				CtrlLossTmo: Int(3600), ReconnectDelay: Int(2), FastIOFailTmo: Int(8), KeepAliveTmo: Int(4), NrIOQueues: Int(3)},
			args:    "connect -t tcp -a 10.0.0.1 -s 4420 -n nqn.x --nr-io-queues=3 --reconnect-delay=2 --ctrl-loss-tmo=3600 --fast_io_fail_tmo=8 --keep-alive-tmo=4",
			fabrics: "nqn=nqn.x,transport=tcp,traddr=10.0.0.1,trsvcid=4420,nr_io_queues=3,reconnect_delay=2,ctrl_loss_tmo=3600,fast_io_fail_tmo=8,keep_alive_tmo=4",
		},
		{
			name: "-1 and 0 are sent; nvme-cli drops fast_io_fail_tmo<=0 and keep-alive 0, with warnings",
			t: Target{Traddr: "fd00::1", Trsvcid: "4420", NQN: "nqn.x", HostNQN: "nqn.host", HostID: "hid", HostIface: "eth1", HostTraddr: "fd00::9",
				CtrlLossTmo: Int(-1), FastIOFailTmo: Int(0), KeepAliveTmo: Int(0)},
			args:      "connect -t tcp -a fd00::1 -s 4420 -n nqn.x --hostnqn=nqn.host --hostid=hid --host-iface=eth1 --host-traddr=fd00::9 --ctrl-loss-tmo=-1 --fast_io_fail_tmo=0 --keep-alive-tmo=0",
			fabrics:   "nqn=nqn.x,transport=tcp,traddr=fd00::1,trsvcid=4420,host_traddr=fd00::9,host_iface=eth1,hostnqn=nqn.host,hostid=hid,ctrl_loss_tmo=-1,fast_io_fail_tmo=0,keep_alive_tmo=0",
			nWarnings: 2,
		},
		{
			name:      "ctrl_loss_tmo 0 travels; fast_io_fail_tmo -1 does not via nvme-cli",
			t:         Target{Traddr: "10.0.0.1", Trsvcid: "4420", NQN: "nqn.x", CtrlLossTmo: Int(0), FastIOFailTmo: Int(-1)},
			args:      "connect -t tcp -a 10.0.0.1 -s 4420 -n nqn.x --ctrl-loss-tmo=0 --fast_io_fail_tmo=-1",
			fabrics:   "nqn=nqn.x,transport=tcp,traddr=10.0.0.1,trsvcid=4420,ctrl_loss_tmo=0,fast_io_fail_tmo=-1",
			nWarnings: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, warns := tc.t.ConnectArgs()
			if got := strings.Join(args, " "); got != tc.args {
				t.Errorf("ConnectArgs:\n got %s\nwant %s", got, tc.args)
			}
			if len(warns) != tc.nWarnings {
				t.Errorf("warnings = %q, want %d", warns, tc.nWarnings)
			}
			for _, w := range warns {
				if !strings.Contains(w, "nvme-cli drops") || !strings.Contains(w, "/dev/nvme-fabrics") {
					t.Errorf("warning %q should say nvme-cli drops it and name the fabrics route", w)
				}
			}
			if got := tc.t.FabricsOptions(); got != tc.fabrics {
				t.Errorf("FabricsOptions:\n got %s\nwant %s", got, tc.fabrics)
			}
		})
	}
}

func TestMigrationTarget(t *testing.T) {
	answer := Target{Transport: "tcp", Traddr: "10.0.0.3", Trsvcid: "4420", NQN: "nqn.x",
		CtrlLossTmo: Int(3600), ReconnectDelay: Int(2), FastIOFailTmo: Int(8), KeepAliveTmo: Int(4)}
	ptr := func(p *int) any {
		if p == nil {
			return nil
		}
		return *p
	}
	opts := func(t Target) []any {
		return []any{ptr(t.CtrlLossTmo), ptr(t.ReconnectDelay), ptr(t.FastIOFailTmo), ptr(t.KeepAliveTmo), ptr(t.NrIOQueues)}
	}
	for _, tc := range []struct {
		name   string
		answer Target
		fixed  bool
		want   []any
	}{
		{"fixed: ctrl_loss_tmo 60 whatever was answered", answer, true, []any{60, 2, 8, 4, nil}},
		{"pre-fix: the control plane's values", answer, false, []any{3600, 2, 8, 4, nil}},
		{"fixed keeps -1/0 of other options", withOpts(answer, Int(-1), Int(0)), true, []any{60, 2, 0, -1, nil}},
		{"pre-fix sends only values > 0", withOpts(answer, Int(-1), Int(0)), false, []any{3600, 2, nil, nil, nil}},
		{"pre-fix drops a ctrl_loss_tmo of 0", Target{CtrlLossTmo: Int(0)}, false, []any{nil, nil, nil, nil, nil}},
		{"fixed sets it when unanswered", Target{}, true, []any{60, nil, nil, nil, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := opts(tc.answer)
			got := MigrationTarget(tc.answer, tc.fixed)
			if d := cmp.Diff(tc.want, opts(got)); d != "" {
				t.Errorf("options (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, opts(tc.answer)); d != "" {
				t.Errorf("MigrationTarget modified its input:\n%s", d)
			}
			if got.Traddr != tc.answer.Traddr || got.NQN != tc.answer.NQN {
				t.Errorf("address fields changed: %+v", got)
			}
		})
	}
}

func withOpts(t Target, keepAlive, fastIO *int) Target {
	t.KeepAliveTmo, t.FastIOFailTmo = keepAlive, fastIO
	return t
}

func TestParseConnections(t *testing.T) {
	got, err := ParseConnections([]byte(`[
	  {"nqn":"nqn.x","ip":"10.0.0.3","port":4420,"transport":"tcp","ctrlLossTmo":3600,"reconnectDelay":2,"fastIOFailTmo":8,"keepAliveTmo":4},
	  {"nqn":"nqn.x","ip":"fd00::4","port":"4421","transport":"tcp"}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{
		{Transport: "tcp", Traddr: "10.0.0.3", Trsvcid: "4420", NQN: "nqn.x",
			CtrlLossTmo: Int(3600), ReconnectDelay: Int(2), FastIOFailTmo: Int(8), KeepAliveTmo: Int(4)},
		{Transport: "tcp", Traddr: "fd00::4", Trsvcid: "4421", NQN: "nqn.x"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if e := got[1].Endpoint(); e != "[fd00::4]:4421" {
		t.Errorf("endpoint %q", e)
	}
	for _, bad := range []string{``, `{}`, `[{"nqn":"x","port":4420}]`, `[{"ip":"1.2.3.4","port":0}]`, `[{"ip":"1.2.3.4","port":"x"}]`, `[] []`, `[{"ip":"1.2.3.4","port":70000}]`} {
		if _, err := ParseConnections([]byte(bad)); err == nil {
			t.Errorf("ParseConnections(%q) succeeded, want an error", bad)
		}
	}
	if got, err := ParseConnections([]byte(`[]`)); err != nil || len(got) != 0 {
		t.Errorf("empty array: %v %v", got, err)
	}
}

func TestAlreadyConnected(t *testing.T) {
	st := buildHost(t, tSubsys{inst: 0, nqn: nqnX, nsids: []int{1}, ctrls: []tCtrl{
		{inst: 0, state: "live", addr: tcp("10.0.0.1:4420"), legs: legs("optimized", 1)},
		{inst: 1, state: "connecting", addr: "traddr=fd00::2,trsvcid=4420"},
		{inst: 2, state: "deleting", addr: tcp("10.0.0.3:4420")},
		{inst: 3, state: "dead", addr: tcp("10.0.0.4:4420")},
		{inst: 4, state: "live", addr: "traddr=10.0.0.5,trsvcid=4420,host_iface=eth1"},
	}})
	for _, tc := range []struct {
		name string
		t    Target
		want string
	}{
		{"same key", Target{Traddr: "10.0.0.1", Trsvcid: "4420", NQN: nqnX}, "nvme0"},
		{"connecting blocks too; IPv6 compared canonically", Target{Traddr: "fd00:0::2", Trsvcid: "4420", NQN: nqnX}, "nvme1"},
		{"deleting does not block", Target{Traddr: "10.0.0.3", Trsvcid: "4420", NQN: nqnX}, ""},
		{"dead does not block", Target{Traddr: "10.0.0.4", Trsvcid: "4420", NQN: nqnX}, ""},
		{"same ip:port, other subsystem", Target{Traddr: "10.0.0.1", Trsvcid: "4420", NQN: nqnY}, ""},
		{"same address, other port", Target{Traddr: "10.0.0.1", Trsvcid: "4421", NQN: nqnX}, ""},
		{"other host NQN", Target{Traddr: "10.0.0.1", Trsvcid: "4420", NQN: nqnX, HostNQN: hostB}, ""},
		{"own host NQN", Target{Traddr: "10.0.0.1", Trsvcid: "4420", NQN: nqnX, HostNQN: hostA}, "nvme0"},
		{"other transport", Target{Transport: "rdma", Traddr: "10.0.0.1", Trsvcid: "4420", NQN: nqnX}, ""},
		{"host_iface is part of the key", Target{Traddr: "10.0.0.5", Trsvcid: "4420", NQN: nqnX}, ""},
		{"host_iface matches", Target{Traddr: "10.0.0.5", Trsvcid: "4420", NQN: nqnX, HostIface: "eth1"}, "nvme4"},
	} {
		c, ok := AlreadyConnected(st, tc.t)
		if ok != (tc.want != "") || c.Name != tc.want {
			t.Errorf("%s: AlreadyConnected = %q, %v; want %q", tc.name, c.Name, ok, tc.want)
		}
	}

	h := &MemHost{State: st, HostNQN: hostA}
	if _, err := h.Connect(Target{Traddr: "10.0.0.1", Trsvcid: "4420", NQN: nqnX}); !errors.Is(err, ErrAlreadyConnected) {
		t.Errorf("MemHost.Connect over an existing controller: %v, want ErrAlreadyConnected", err)
	}
	name, err := h.Connect(Target{Traddr: "10.0.0.3", Trsvcid: "4420", NQN: nqnX})
	if err != nil || name != "nvme5" {
		t.Errorf("MemHost.Connect = %q, %v; want nvme5", name, err)
	}
	name, err = h.Connect(Target{Traddr: "10.0.0.3", Trsvcid: "4420", NQN: nqnY})
	if err != nil || name != "nvme6" {
		t.Errorf("MemHost.Connect (new subsystem) = %q, %v; want nvme6", name, err)
	}
	after, _ := h.Read()
	if len(after.SubsystemsByNQN(nqnY)) != 1 || len(st.Controllers()) != 5 {
		t.Errorf("MemHost state after connects: %+v (caller's state must be untouched: %d controllers)", after, len(st.Controllers()))
	}
}

// TestParseConnectionsNamesBadField: an ip that is not an IP address can
// never match a controller, so a release given it would release nothing and
// leak the migration's paths; the error names the element and field.
func TestParseConnectionsNamesBadField(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`[{"ip":"nope","port":4420}]`, `connections[0].ip "nope" is not an IP address`},
		{`[{"ip":"10.0.0.01","port":4420}]`, "connections[0].ip"},
		{`[{"ip":" 10.0.0.1","port":4420}]`, "connections[0].ip"},
		{`[{"ip":"10.0.0.1 ","port":4420}]`, "connections[0].ip"},
		{`[{"ip":"[fd00::4]","port":4420}]`, "connections[0].ip"},
		{`[{"ip":"10.0.0.1","port":4420},{"ip":"storage-1","port":4420,"transport":"rdma"}]`, "connections[1].ip"},
		{`[{"ip":"10.0.0.1","port":0}]`, "connections[0].port"},
		{`[{"port":4420}]`, "connections[0].ip"},
		{`[{"ip":"10.0.0.1"}]`, "connections[0].port"},
		{`[{"ip":"10.0.0.1","port":4420,"nqm":"nqn.x"}]`, `unknown field "nqm" (known: nqn, ip, port`},
		{`[{"ip":"10.0.0.1","port":4420,"transport":"tpc"}]`, `connections[0].transport "tpc" is not an NVMe-oF transport (want tcp, rdma, fc, loop`},
		{`[{"ip":"10.0.0.1","port":4420},{"ip":"10.0.0.2","port":4420,"transport":" tcp"}]`, `connections[1].transport " tcp"`},
		{``, "empty, want a JSON array of connections"},
		{" \n\t", "empty, want a JSON array of connections"},
	} {
		_, err := ParseConnections([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseConnections(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
	// IPv6 (with a zone) and an IPv4-mapped address are accepted.
	for _, ok := range []string{
		`[{"ip":"fd00::4","port":4420},{"ip":"fe80::1%eth0","port":4420},{"ip":"::ffff:10.0.0.3","port":4420}]`,
	} {
		if _, err := ParseConnections([]byte(ok)); err != nil {
			t.Errorf("ParseConnections(%s): %v", ok, err)
		}
	}
}

// Transports match case-insensitively, as the operator's connector does.
func TestParseConnectionsTransportCase(t *testing.T) {
	for _, tr := range []string{"tcp", "TCP", "rdma", "RDMA", "fc", "loop", ""} {
		if _, err := ParseConnections([]byte(`[{"ip":"10.0.0.1","port":4420,"transport":"` + tr + `"}]`)); err != nil {
			t.Errorf("transport %q: %v", tr, err)
		}
	}
}
