package nvmeof

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseAddress(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Address
		wantErr string
	}{
		{"traddr=10.0.0.1,trsvcid=4420", Address{Traddr: "10.0.0.1", Trsvcid: "4420"}, ""},
		{"traddr=10.0.0.1,trsvcid=14420,src_addr=10.0.0.2\n", Address{Traddr: "10.0.0.1", Trsvcid: "14420", SrcAddr: "10.0.0.2"}, ""},
		{"traddr=fd00::1,trsvcid=4420,host_traddr=fd00::9,host_iface=eth1,src_addr=fd00::9",
			Address{Traddr: "fd00::1", Trsvcid: "4420", HostTraddr: "fd00::9", HostIface: "eth1", SrcAddr: "fd00::9"}, ""},
		{"traddr=nn-0x2000:pn-0x2001,host_traddr=nn-0x1000:pn-0x1001", Address{Traddr: "nn-0x2000:pn-0x2001", HostTraddr: "nn-0x1000:pn-0x1001"}, ""},
		{"", Address{}, ""},
		{"traddr=10.0.0.1,trsvcid=4420,future_key=1", Address{Traddr: "10.0.0.1", Trsvcid: "4420"}, ""},
		{"traddr=10.0.0.1,trsvcid", Address{}, "not key=value"},
		{"=x", Address{}, "not key=value"},
		{"traddr=a,,trsvcid=1", Address{}, "not key=value"},
		{"traddr=a,trsvcid=1,traddr=b", Address{}, "twice"},
		{"10.0.0.1:4420", Address{}, "not key=value"},
	} {
		got, err := ParseAddress(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseAddress(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseAddress(%q): %v", tc.in, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("ParseAddress(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}

func TestEndpoints(t *testing.T) {
	for _, tc := range []struct {
		ip, port, want string
		ok             bool
	}{
		{"10.0.0.112", "4426", "10.0.0.112:4426", true},
		{"fd00::1", "4420", "[fd00::1]:4420", true},
		{"[fd00::1]", "4420", "[fd00::1]:4420", true},
		{"FD00:0:0::0001", "4420", "[fd00::1]:4420", true},
		{"::ffff:10.0.0.1", "4420", "10.0.0.1:4420", true},
		{"fe80::1%eth0", "4420", "[fe80::1%eth0]:4420", true},
		{"10.0.0.1", "65536", "", false},
		{"10.0.0.1", "", "", false},
		{"storage-1", "4420", "", false},
		{"010.0.0.1", "4420", "", false},
		{"nn-0x2000:pn-0x2001", "", "", false},
	} {
		got, err := CanonicalEndpoint(tc.ip, tc.port)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("CanonicalEndpoint(%q, %q) = %q, %v; want %q ok=%v", tc.ip, tc.port, got, err, tc.want, tc.ok)
		}
		if e := (Address{Traddr: tc.ip, Trsvcid: tc.port}).Endpoint(); e != tc.want {
			t.Errorf("Address.Endpoint(%q, %q) = %q, want %q", tc.ip, tc.port, e, tc.want)
		}
		if e := (Target{Traddr: tc.ip, Trsvcid: tc.port}).Endpoint(); e != tc.want {
			t.Errorf("Target.Endpoint(%q, %q) = %q, want %q", tc.ip, tc.port, e, tc.want)
		}
	}
	for in, want := range map[string]string{"[fd00:0::1]:4420": "[fd00::1]:4420", "10.0.0.1:4420": "10.0.0.1:4420"} {
		if got, err := CanonicalizeEndpoint(in); err != nil || got != want {
			t.Errorf("CanonicalizeEndpoint(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := CanonicalizeEndpoint("fd00::1"); err == nil {
		t.Error("CanonicalizeEndpoint(fd00::1) without brackets and port should fail")
	}
}

func TestAddressStringRoundTrip(t *testing.T) {
	a := Address{Traddr: "fd00::1", Trsvcid: "4420", HostIface: "eth0", SrcAddr: "fd00::2"}
	if s := a.String(); s != "traddr=fd00::1,trsvcid=4420,host_iface=eth0,src_addr=fd00::2" {
		t.Errorf("String() = %q", s)
	}
	back, err := ParseAddress(a.String())
	if err != nil || back != a {
		t.Errorf("ParseAddress(String()) = %+v, %v; want %+v", back, err, a)
	}
}
