package nvmeof

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Target is where a controller connects, plus its connect options. A nil
// option pointer means "not set": the kernel default applies
// (drivers/nvme/host/fabrics.h: ctrl_loss_tmo 600 s, reconnect_delay 10 s,
// fast_io_fail_tmo off, keep_alive_tmo 5 s, nr_io_queues one per CPU).
// Times are whole seconds.
type Target struct {
	Transport string // "tcp", "rdma", "fc"; "" is treated as "tcp" when connecting and as "any" when matching
	Traddr    string // target address (an IP for tcp/rdma)
	Trsvcid   string // target port
	NQN       string // subsystem NQN; "" matches any when matching

	HostNQN    string // --hostnqn / hostnqn=; "" = the host's default
	HostID     string // --hostid / hostid=
	HostIface  string // --host-iface / host_iface=
	HostTraddr string // --host-traddr / host_traddr=

	// CtrlLossTmo is sent whenever set, including -1 (retry forever) and 0
	// (give up at once).
	CtrlLossTmo    *int
	ReconnectDelay *int
	// FastIOFailTmo is sent whenever set, including -1 (off) and 0 (fail
	// I/O at once); nvme-cli drops values <= 0 (see ConnectArgs).
	FastIOFailTmo *int
	KeepAliveTmo  *int // nvme-cli drops 0 (see ConnectArgs)
	NrIOQueues    *int
}

// Int returns a pointer to v, for Target's options.
func Int(v int) *int { return &v }

// Endpoint returns the target's canonical "ip:port" (CanonicalEndpoint), ""
// when Traddr/Trsvcid are not an IP and a port.
func (t Target) Endpoint() string {
	e, err := CanonicalEndpoint(t.Traddr, t.Trsvcid)
	if err != nil {
		return ""
	}
	return e
}

// Matches reports whether controller c of subsystem nqn is at t: t.NQN empty
// or equal to nqn, t.Transport empty or equal (case-insensitively) to c's,
// and the same ip:port (canonical endpoints; the raw traddr and trsvcid when
// either side is not an IP). Host-side options are not compared.
func (t Target) Matches(nqn string, c Controller) bool {
	if t.NQN != "" && t.NQN != nqn {
		return false
	}
	if t.Transport != "" && !strings.EqualFold(t.Transport, c.Transport) {
		return false
	}
	te, ce := t.Endpoint(), c.Endpoint()
	if te != "" && ce != "" {
		return te == ce
	}
	return t.Traddr == c.Address.Traddr && t.Trsvcid == c.Address.Trsvcid
}

func (t Target) transport() string {
	if t.Transport == "" {
		return "tcp"
	}
	return t.Transport
}

// ConnectArgs renders t as an nvme-cli argument list, starting with
// "connect": -t -a -s -n, then --hostnqn, --hostid, --host-iface,
// --host-traddr when set, then --nr-io-queues, --reconnect-delay,
// --ctrl-loss-tmo, --fast_io_fail_tmo, --keep-alive-tmo for every option that
// is set (as --opt=N). It returns a warning for every value that cannot travel
// this route: nvme-cli/libnvme drops --fast_io_fail_tmo <= 0 and
// --keep-alive-tmo 0, so the kernel default applies instead; the
// /dev/nvme-fabrics route (FabricsOptions) carries them.
func (t Target) ConnectArgs() (args []string, warnings []string) {
	args = []string{"connect", "-t", t.transport(), "-a", t.Traddr}
	if t.Trsvcid != "" {
		args = append(args, "-s", t.Trsvcid)
	}
	args = append(args, "-n", t.NQN)
	for _, o := range [...]struct{ flag, v string }{
		{"--hostnqn", t.HostNQN}, {"--hostid", t.HostID},
		{"--host-iface", t.HostIface}, {"--host-traddr", t.HostTraddr},
	} {
		if o.v != "" {
			args = append(args, o.flag+"="+o.v)
		}
	}
	for _, o := range t.intOptions() {
		if o.v == nil {
			continue
		}
		args = append(args, fmt.Sprintf("--%s=%d", o.cli, *o.v))
		if o.cliDrops(*o.v) {
			warnings = append(warnings, fmt.Sprintf(
				"nvme-cli drops --%s=%d, so the kernel default applies; only the /dev/nvme-fabrics route carries it",
				o.cli, *o.v))
		}
	}
	return args, warnings
}

// FabricsOptions renders t as the option line written to /dev/nvme-fabrics
// (kernel drivers/nvme/host/fabrics.c opt_tokens): nqn, transport, traddr,
// trsvcid, host_traddr, host_iface, hostnqn, hostid, then nr_io_queues,
// reconnect_delay, ctrl_loss_tmo, fast_io_fail_tmo, keep_alive_tmo — every
// option that is set, with its value as is (-1 and 0 included).
func (t Target) FabricsOptions() string {
	parts := []string{"nqn=" + t.NQN, "transport=" + t.transport(), "traddr=" + t.Traddr}
	for _, o := range [...]struct{ k, v string }{
		{"trsvcid", t.Trsvcid}, {"host_traddr", t.HostTraddr}, {"host_iface", t.HostIface},
		{"hostnqn", t.HostNQN}, {"hostid", t.HostID},
	} {
		if o.v != "" {
			parts = append(parts, o.k+"="+o.v)
		}
	}
	for _, o := range t.intOptions() {
		if o.v != nil {
			parts = append(parts, o.kernel+"="+strconv.Itoa(*o.v))
		}
	}
	return strings.Join(parts, ",")
}

type intOption struct {
	cli, kernel string
	v           *int
	cliDrops    func(int) bool
}

func (t Target) intOptions() []intOption {
	never := func(int) bool { return false }
	return []intOption{
		{"nr-io-queues", "nr_io_queues", t.NrIOQueues, never},
		{"reconnect-delay", "reconnect_delay", t.ReconnectDelay, never},
		{"ctrl-loss-tmo", "ctrl_loss_tmo", t.CtrlLossTmo, never},
		{"fast_io_fail_tmo", "fast_io_fail_tmo", t.FastIOFailTmo, func(v int) bool { return v <= 0 }},
		{"keep-alive-tmo", "keep_alive_tmo", t.KeepAliveTmo, func(v int) bool { return v == 0 }},
	}
}

// MigrationCtrlLossTmo is the ctrl_loss_tmo (seconds) migration paths get
// after the fix, whatever the control plane answered (which is 3600): a
// target path that never comes back is given up after about a minute instead
// of an hour of reconnect attempts.
const MigrationCtrlLossTmo = 60

// MigrationTarget returns the Target a host connects for a migration path,
// given the control plane's answer. fixed (the current behaviour) sets
// CtrlLossTmo to MigrationCtrlLossTmo regardless of the answer and keeps every
// other option as answered. fixed=false restores the pre-fix operator: the
// control plane's values, and only values > 0 are sent (a value <= 0 becomes
// "not set"), as the pre-fix operator's Connection.target did. The simulator's
// pre-fix operator and the fixed one both call this; answer is not modified.
func MigrationTarget(answer Target, fixed bool) Target {
	t := answer
	if fixed {
		t.CtrlLossTmo = Int(MigrationCtrlLossTmo)
		return t
	}
	for _, p := range []**int{&t.CtrlLossTmo, &t.ReconnectDelay, &t.FastIOFailTmo, &t.KeepAliveTmo, &t.NrIOQueues} {
		if *p != nil && **p <= 0 {
			*p = nil
		}
	}
	return t
}

// Connection is one element of the operator's VMIG_CONNECTIONS: the JSON the
// simplyblock operator passes its validation and release Jobs
// (simplyblock-operator internal/volumemigration Connection). Port may be a
// JSON number or string. A zero tunable means "not given".
type Connection struct {
	NQN            string      `json:"nqn"`
	IP             string      `json:"ip"`
	Port           json.Number `json:"port"`
	Transport      string      `json:"transport"`
	NrIoQueues     int         `json:"nrIoQueues,omitempty"`
	ReconnectDelay int         `json:"reconnectDelay,omitempty"`
	CtrlLossTmo    int         `json:"ctrlLossTmo,omitempty"`
	FastIOFailTmo  int         `json:"fastIOFailTmo,omitempty"`
	KeepAliveTmo   int         `json:"keepAliveTmo,omitempty"`
}

// Target converts c to the control plane's answer as a Target (zero
// tunables not set); pass it through MigrationTarget to get what a host
// connects.
func (c Connection) Target() Target {
	opt := func(v int) *int {
		if v == 0 {
			return nil
		}
		return Int(v)
	}
	return Target{
		Transport: c.Transport, Traddr: c.IP, Trsvcid: c.Port.String(), NQN: c.NQN,
		NrIOQueues: opt(c.NrIoQueues), ReconnectDelay: opt(c.ReconnectDelay),
		CtrlLossTmo: opt(c.CtrlLossTmo), FastIOFailTmo: opt(c.FastIOFailTmo), KeepAliveTmo: opt(c.KeepAliveTmo),
	}
}

// connectionFields are Connection's JSON field names, in declaration order.
func connectionFields() []string {
	t := reflect.TypeFor[Connection]()
	out := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// Transports are the NVMe-oF transport names a connection may carry
// (nvme-cli --transport; kernel drivers/nvme/host/fabrics.c), lower case;
// they are matched case-insensitively, as the operator's connector does.
var Transports = []string{"tcp", "rdma", "fc", "loop"}

// ParseConnections decodes a VMIG_CONNECTIONS value (a JSON array of
// Connection) into Targets, in order. Errors name the element and field
// ("connections[1].ip ..."): input that is empty or only white space, not a
// JSON array of objects, an element without ip or port, an ip that is not
// an IP address as net/netip.ParseAddr reads it (no host names, no
// brackets, no surrounding spaces, no leading zeros: such an ip can never
// match a controller's traddr, so a release given it would release nothing),
// a port that is not an integer in 1..65535, a transport that is not one of
// Transports (any case; empty means tcp), a field that is not one of
// Connection's (a mistyped "nqn" would otherwise go unnoticed). An
// empty array gives no targets and no error. nqn is not checked here: the
// caller knows which subsystem the connections must belong to.
func ParseConnections(data []byte) ([]Target, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("connections: empty, want a JSON array of connections")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var conns []Connection
	if err := dec.Decode(&conns); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			return nil, fmt.Errorf("connections: %w (known: %s)", err, strings.Join(connectionFields(), ", "))
		}
		return nil, fmt.Errorf("connections: %w", err)
	}
	if dec.More() {
		return nil, errors.New("connections: trailing data after the JSON array")
	}
	out := make([]Target, 0, len(conns))
	for i, c := range conns {
		if c.IP == "" {
			return nil, fmt.Errorf("connections[%d].ip is required", i)
		}
		if _, err := netip.ParseAddr(c.IP); err != nil {
			return nil, fmt.Errorf("connections[%d].ip %q is not an IP address: %w", i, c.IP, err)
		}
		if c.Port == "" {
			return nil, fmt.Errorf("connections[%d].port is required", i)
		}
		p, err := strconv.Atoi(c.Port.String())
		if err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("connections[%d].port %q is not an integer in 1..65535", i, c.Port)
		}
		if c.Transport != "" && !slices.Contains(Transports, strings.ToLower(c.Transport)) {
			return nil, fmt.Errorf("connections[%d].transport %q is not an NVMe-oF transport (want %s; empty means tcp)", i, clip(c.Transport), strings.Join(Transports, ", "))
		}
		out = append(out, c.Target())
	}
	return out, nil
}

// ErrAlreadyConnected is returned (wrapped) by Host.Connect when a controller
// with the same connection key exists and is not being deleted or dead.
var ErrAlreadyConnected = errors.New("already connected")

// AlreadyConnected returns the controller of h that blocks connecting t, if
// any. The kernel refuses a new controller with the same (subsysnqn, hostnqn,
// hostid, transport, traddr, trsvcid, host_traddr, host_iface) as an existing
// one that is not deleting, deleting (no IO) or dead (drivers/nvme/host/
// fabrics.c nvmf_ctlr_matches_baseopts, nvmf_ip_options_match); ip:port alone
// is not that key, since many subsystems share one listener. traddr and
// trsvcid compare as canonical ip:port when both are IPs; t.HostNQN and
// t.HostID compare only when set (unset means the host's own, which every
// controller of a host read with ReadHost has).
func AlreadyConnected(h HostState, t Target) (Controller, bool) {
	for _, s := range h.Subsystems {
		if s.NQN != t.NQN {
			continue
		}
		for _, c := range s.Controllers {
			if c.State.Deleting() || c.State == StateDead {
				continue
			}
			if !strings.EqualFold(c.Transport, t.transport()) ||
				(t.HostNQN != "" && c.HostNQN != t.HostNQN) ||
				(t.HostID != "" && c.HostID != t.HostID) ||
				c.Address.HostTraddr != t.HostTraddr || c.Address.HostIface != t.HostIface {
				continue
			}
			tt := t
			tt.NQN, tt.Transport = "", ""
			if tt.Matches(s.NQN, c) {
				return c, true
			}
		}
	}
	return Controller{}, false
}
