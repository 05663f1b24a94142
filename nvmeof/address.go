package nvmeof

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Keys of a controller's address file, in the order the kernel prints them
// (drivers/nvme/host/fabrics.c nvmf_get_address; src_addr is appended by
// drivers/nvme/host/tcp.c nvme_tcp_get_address while the admin queue is up).
const (
	addrKeyTraddr     = "traddr"
	addrKeyTrsvcid    = "trsvcid"
	addrKeyHostTraddr = "host_traddr"
	addrKeyHostIface  = "host_iface"
	addrKeySrcAddr    = "src_addr"
)

// ParseAddress parses the content of a fabrics controller's address file,
// "traddr=A,trsvcid=P[,host_traddr=H][,host_iface=I][,src_addr=S]" (kernel
// fabrics.c nvmf_get_address, tcp.c nvme_tcp_get_address). White space
// around the whole, around each key and each value (the trailing newline
// included) is ignored. The empty string gives the zero
// Address (nvme-loop prints nothing). Keys this package does not know are
// skipped, so a newer kernel's additions do not break reading.
//
// Errors: a part without "=" or with an empty key, and a known key given
// twice. A PCIe controller's address is a PCI function ("0000:01:00.0"), not
// this format; ReadSysfs does not call ParseAddress for transport "pcie".
func ParseAddress(s string) (Address, error) {
	var a Address
	s = strings.TrimSpace(s)
	if s == "" {
		return a, nil
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		key, val, ok := strings.Cut(part, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if !ok || key == "" {
			return Address{}, fmt.Errorf("address %q: part %q is not key=value", s, part)
		}
		var dst *string
		switch key {
		case addrKeyTraddr:
			dst = &a.Traddr
		case addrKeyTrsvcid:
			dst = &a.Trsvcid
		case addrKeyHostTraddr:
			dst = &a.HostTraddr
		case addrKeyHostIface:
			dst = &a.HostIface
		case addrKeySrcAddr:
			dst = &a.SrcAddr
		default:
			continue
		}
		if seen[key] {
			return Address{}, fmt.Errorf("address %q: key %q given twice", s, key)
		}
		seen[key] = true
		*dst = val
	}
	return a, nil
}

// String renders a in the kernel's address-file format (without the trailing
// newline), omitting empty fields; ParseAddress(a.String()) gives a back.
func (a Address) String() string {
	var parts []string
	for _, kv := range [...]struct{ k, v string }{
		{addrKeyTraddr, a.Traddr},
		{addrKeyTrsvcid, a.Trsvcid},
		{addrKeyHostTraddr, a.HostTraddr},
		{addrKeyHostIface, a.HostIface},
		{addrKeySrcAddr, a.SrcAddr},
	} {
		if kv.v != "" {
			parts = append(parts, kv.k+"="+kv.v)
		}
	}
	return strings.Join(parts, ",")
}

// Endpoint returns the canonical "ip:port" of a's traddr and trsvcid, IPv6
// bracketed ("[fd00::1]:4420"), as CanonicalEndpoint makes it; "" when traddr
// is not an IP address or trsvcid not a port (FC, loop, PCIe).
func (a Address) Endpoint() string {
	e, err := CanonicalEndpoint(a.Traddr, a.Trsvcid)
	if err != nil {
		return ""
	}
	return e
}

// Key is how an address is written in records and reports: its Endpoint
// when traddr/trsvcid are an IP and a port, else "traddr:trsvcid", else
// traddr alone (FC, loop).
func (a Address) Key() string {
	if e := a.Endpoint(); e != "" {
		return e
	}
	if a.Trsvcid != "" {
		return a.Traddr + ":" + a.Trsvcid
	}
	return a.Traddr
}

// isPort says whether s is a decimal port number, 0-65535 (a tcp or rdma
// controller's trsvcid).
func isPort(s string) bool {
	n, err := strconv.ParseUint(s, 10, 16)
	return err == nil && n <= 65535
}

// CanonicalEndpoint returns the canonical "ip:port" form of an IP address and
// a port, the key every endpoint comparison in fiomig uses (docs/sources.md
// §1.2: matched by ip:port, never by address alone). It parses with
// net/netip.ParseAddrPort: IPv6 is bracketed and compressed ("[fd00::1]:4420"), an IPv4-mapped IPv6
// address is unmapped to IPv4, a zone is kept. ip may already be bracketed.
// Errors: ip not an IP address, port not a decimal number in 0..65535.
func CanonicalEndpoint(ip, port string) (string, error) {
	host := strings.TrimSuffix(strings.TrimPrefix(ip, "["), "]")
	ap, err := netip.ParseAddrPort(net.JoinHostPort(host, port))
	if err != nil {
		return "", fmt.Errorf("endpoint %q port %q: %w", ip, port, err)
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String(), nil
}

// CanonicalizeEndpoint returns the canonical form of an "ip:port" string
// ("[v6]:port" for IPv6). Errors as CanonicalEndpoint, or when s has no port.
func CanonicalizeEndpoint(s string) (string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("endpoint %q: %w", s, err)
	}
	return CanonicalEndpoint(host, port)
}

// splitEndpoint splits a canonical "ip:port" into its parts, brackets removed.
func splitEndpoint(e string) (host, port string, ok bool) {
	h, p, err := net.SplitHostPort(e)
	return h, p, err == nil
}
