package hostcmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fiomig/fiomig/nvmeof"
)

// The host commands inspect, release and reap judge or repair one host's
// kernel NVMe-oF state with the same nvmeof code the harness judges runs
// with. Each reads the live host (--sys-root) or a capture (--capture, always
// a dry run).

// hostFlags are the flags every host command shares.
type hostFlags struct {
	sysRoot, capture, hostNQN, output string
	route, nvmeBin                    string
	sysRootGiven                      bool // --sys-root was on the command line
}

func (h *hostFlags) register(fs *flag.FlagSet, acts bool) {
	fs.StringVar(&h.sysRoot, "sys-root", "/sys", "sysfs `directory` of the live host to read (either this or --capture)")
	fs.StringVar(&h.capture, "capture", "", "read a sysfs capture `FILE.tsv` (\"<path>\\t<value>\" per line) instead of the live host; implies --dry-run")
	fs.StringVar(&h.hostNQN, "hostnqn", "", "keep only controllers of this host `NQN` (several nodes may share one kernel); default every controller")
	fs.StringVar(&h.output, "o", "table", "output `format`: table or json")
	if acts {
		fs.StringVar(&h.route, "route", string(nvmeof.RouteNvmeCLI), "how to disconnect: nvme-cli (nvme disconnect -d nvmeN) or kernel (write delete_controller)")
		fs.StringVar(&h.nvmeBin, "nvme", "nvme", "nvme-cli `binary`")
	}
}

// validate checks the shared flags after fs has parsed them.
func (h *hostFlags) validate(fs *flag.FlagSet) error {
	h.sysRootGiven = flagGiven(fs, "sys-root")
	if h.output != "table" && h.output != "json" {
		return usagef("-o must be table or json, got %q", h.output)
	}
	if h.route != "" && h.route != string(nvmeof.RouteNvmeCLI) && h.route != string(nvmeof.RouteKernel) {
		return usagef("--route must be nvme-cli or kernel, got %q", h.route)
	}
	if h.capture != "" && h.sysRootGiven {
		return usagef("either --capture or --sys-root, not both: a capture is read instead of the live host")
	}
	return nil
}

// hostSource is what a host command read: the host to act on, its state
// (only --hostnqn's controllers when given), and how to name it.
type hostSource struct {
	host      nvmeof.Host
	st        nvmeof.HostState
	isCapture bool
	where     string // "on this host", or "in capture FILE"
}

// load reads the live host (--sys-root) or the capture, once. A host with
// no NVMe controller (no nvme-core module, or nothing connected) is an
// answer, not an error: an empty state. Errors (all usage errors, exit 2):
// an unreadable root or capture, a root with no class directory (not a
// sysfs mount), an empty capture file (a failed capture looks the same as
// one of a host without NVMe), a malformed capture (the message names its
// line), a capture listing subsystems but no controller (truncated: the
// kernel removes a subsystem with its last controller), and --hostnqn
// matching no controller while others are there (a typo).
func (h *hostFlags) load() (hostSource, error) {
	var all nvmeof.HostState
	if h.capture != "" {
		data, err := os.ReadFile(h.capture)
		if err != nil {
			return hostSource{}, usagef("%v", err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			return hostSource{}, usagef("%s: empty capture, want one \"<path>\\t<value>\" line per sysfs attribute", h.capture)
		}
		fsys, err := nvmeof.LoadCapture(bytes.NewReader(data), h.capture)
		if err != nil {
			return hostSource{}, usagef("malformed capture: %v", err)
		}
		if all, err = nvmeof.ReadSysfs(fsys); err != nil {
			return hostSource{}, usagef("malformed capture %s: %v", h.capture, err)
		}
		if len(all.Subsystems) > 0 && len(all.Controllers()) == 0 {
			return hostSource{}, usagef("%s: subsystems under /sys/class/nvme-subsystem but no NVMe controller under /sys/class/nvme: a truncated capture? (the kernel removes a subsystem with its last controller)", h.capture)
		}
	} else {
		var err error
		if all, err = (&nvmeof.LinuxHost{SysRoot: h.sysRoot}).Read(); err != nil {
			return hostSource{}, usagef("%v", err)
		}
		if fi, err := os.Stat(filepath.Join(h.sysRoot, "class")); errors.Is(err, fs.ErrNotExist) || err == nil && !fi.IsDir() {
			return hostSource{}, usagef("%s has no class directory: not a sysfs mount (--sys-root)", h.sysRoot)
		}
	}
	st := all
	if h.hostNQN != "" {
		st = nvmeof.FilterHost(all, h.hostNQN)
		if len(all.Controllers()) > 0 && len(st.Controllers()) == 0 {
			seen := map[string]bool{}
			var hosts []string
			for _, c := range all.Controllers() {
				if !seen[c.HostNQN] {
					seen[c.HostNQN] = true
					hosts = append(hosts, c.HostNQN)
				}
			}
			sort.Strings(hosts)
			return hostSource{}, usagef("no controller with hostnqn %q %s (hostnqns there: %s)", h.hostNQN, h.where(), listSome(hosts))
		}
	}
	if h.capture != "" {
		return hostSource{host: &nvmeof.MemHost{State: st, HostNQN: h.hostNQN}, st: st, isCapture: true, where: h.where()}, nil
	}
	return hostSource{host: &nvmeof.LinuxHost{SysRoot: h.sysRoot, HostNQN: h.hostNQN, NvmeBin: h.nvmeBin, Route: nvmeof.Route(h.route)}, st: st, where: h.where()}, nil
}

// where names what was read: "on this host" or "in capture FILE".
func (h *hostFlags) where() string {
	if h.capture != "" {
		return "in capture " + h.capture
	}
	return "on this host"
}

// notAttached says that nqn has no subsystem in st, listing those that do
// (so that a typo shows); "" when it is attached. Not attached is no error:
// there is nothing to inspect, release or reap (as the operator's Inspect
// and ReleaseMigrationPaths answer, simplyblock-operator
// atlas-lib/nvmeof/inspect_test.go TestInspect_NotAttachedIsNotADefect,
// operator/internal/volumemigration/release_test.go
// TestReleaseMigrationPaths_SubsystemAbsent).
func (src hostSource) notAttached(nqn string) string {
	if len(src.st.SubsystemsByNQN(nqn)) > 0 {
		return ""
	}
	return fmt.Sprintf("NQN %q is not attached %s (attached: %s)", nqn, src.where, listSome(src.st.NQNs()))
}

const inspectUsage = `Usage: PROG inspect [--nqn NQN] [--nsid N] [--target IP:PORT ...] [-o table|json]
        [--sys-root DIR | --capture FILE.tsv] [--hostnqn NQN]

Reads one host's NVMe-oF state and reports, per subsystem, the defects
nvmeof.Inspect finds — the operator's Inspect (simplyblock-operator
atlas-lib/nvmeof), the classification the harness's leak check uses:
  no-namespace                 live controllers, no namespace (subsystem)
  namespace-missing            --nsid is not among the namespaces (subsystem)
  controller-not-contributing  a live controller with no leg to the namespace (controller)
  stale-endpoint               a controller at no --target endpoint (controller; needs --target)
  ambiguous-head               several kernel subsystem instances have the namespace:
                               each whose legs are all inaccessible (subsystem, that
                               instance's controllers only), or, when none is, one
                               finding of scope none that nothing may tear down
Each defect names its controllers in teardown order and the co-tenant
namespaces that would be left with no accessible path. A controller that is
not live (connecting, resetting, new, dead) is no defect — one reading cannot
tell a reconnect in progress from a leak; the harness's leak check judges it
after the settle period — but it is listed, with its state and reconnect
budget (a note in the table, "not_live" in -o json). On a host with native
multipath off (nvme_core multipath=N) inspect says so: there are no legs or
ANA states to judge by.

Without --nqn every NQN is inspected; without --nsid each subsystem is asked
once for the bare NQN and once per namespace, as the operator's migration
check asks (--nsid: 1..4294967294; NSIDs start at 1 and 0xFFFFFFFF is the
broadcast value). --target (repeatable, ip:port with a port in 1..65535,
IPv6 as [addr]:port) needs --nqn; it also reports expected endpoints with no
controller (missing endpoints, matched by ip:port). --sys-root and --capture
are either/or.

Exit status:
  0  no defect: also a host without NVMe (no subsystem: nothing to inspect)
     and an --nqn that is not attached (said, with the NQNs that are)
  1  defects or missing endpoints found; also --nqn not attached while
     --target is given (each published endpoint is then missing: a
     path-completeness finding, printed as such)
  2  bad usage or input: a bad flag, an unreadable host, a --sys-root with
     no class directory (not a sysfs mount), an empty, malformed (the
     message names the capture line) or truncated capture, or no controller
     with --hostnqn
`

// defectJSON is a defect in -o json output.
type defectJSON struct {
	Kind        string   `json:"kind"`
	Scope       string   `json:"scope"`
	NQN         string   `json:"nqn"`
	Subsystem   string   `json:"subsystem,omitempty"`
	NSID        int      `json:"nsid,omitempty"`
	Controllers []string `json:"controllers"`
	CoTenants   []int    `json:"co_tenants,omitempty"`
	Detail      string   `json:"detail"`
}

func inspectCmd(prog string, args []string, stdout, stderr io.Writer) int {
	name := prog + " inspect"
	var hf hostFlags
	var nqn string
	var nsid int64
	var targets stringList
	fs := newFlagSet(prog, "inspect", inspectUsage)
	hf.register(fs, false)
	fs.StringVar(&nqn, "nqn", "", "subsystem `NQN` to inspect (default: every NQN on the host)")
	fs.Int64Var(&nsid, "nsid", 0, "namespace `ID` the caller expects, 1..4294967294 (default: the bare NQN and each namespace)")
	fs.Var(&targets, "target", "an endpoint the control plane publishes for --nqn, `IP:PORT` (repeatable)")
	if code, stop := ParseFlags(fs, args, stdout, stderr); stop {
		return code
	}
	if err := hf.validate(fs); err != nil {
		return fail(stderr, name, err)
	}
	if flagGiven(fs, "nsid") {
		switch {
		case nsid == nvmeBroadcastNSID:
			return fail(stderr, name, usagef("--nsid %d (0xFFFFFFFF) is the broadcast NSID, not a namespace", nsid))
		case nsid < 1 || nsid > nvmeBroadcastNSID:
			return fail(stderr, name, usagef("--nsid must be in 1..%d (NSIDs are 32-bit and start at 1), got %d", nvmeBroadcastNSID-1, nsid))
		}
	}
	if len(targets) > 0 && nqn == "" {
		return fail(stderr, name, usagef("--target needs --nqn: endpoints are published per subsystem"))
	}
	var expected []string
	for _, t := range targets {
		e, err := nvmeof.CanonicalizeEndpoint(t)
		if err != nil {
			return fail(stderr, name, usagef("--target %q is not IP:PORT (IPv6 as [addr]:port): %v", t, err))
		}
		if netip.MustParseAddrPort(e).Port() == 0 {
			return fail(stderr, name, usagef("--target %q: port 0 is no listener's port (want 1..65535)", t))
		}
		expected = append(expected, e)
	}
	src, err := hf.load()
	if err != nil {
		return fail(stderr, name, err)
	}
	st := src.st
	notAttached := ""
	if nqn != "" {
		notAttached = src.notAttached(nqn)
	}

	defects := inspectAll(st, nqn, int(nsid), nvmeof.EndpointTargets(nqn, expected))
	stale := map[string]bool{}
	for _, d := range defects {
		if d.Kind == nvmeof.DefectStaleEndpoint {
			stale[d.Controllers[0]] = true
		}
	}
	// Not live is no defect (one reading cannot tell a reconnect from a
	// leak) but stays visible; one at an unpublished endpoint is named by
	// its stale-endpoint defect already.
	notLive := nvmeof.NotLive(st, nqn, stale)
	var missing []string
	if len(expected) > 0 {
		// With published endpoints an NQN not attached is a finding: each
		// endpoint is missing.
		missing = nvmeof.MissingEndpoints(expected, st, nqn)
	}
	nqns := st.NQNs()
	if nqn != "" {
		nqns = nil
		if notAttached == "" {
			nqns = []string{nqn}
		}
	}
	ctrls := 0
	for _, n := range nqns {
		for _, s := range st.SubsystemsByNQN(n) {
			ctrls += len(s.Controllers)
		}
	}

	if hf.output == "json" {
		out := struct {
			Multipath        string                     `json:"multipath"`
			Note             string                     `json:"note,omitempty"`
			NotAttached      string                     `json:"not_attached,omitempty"`
			Subsystems       int                        `json:"subsystems"`
			Controllers      int                        `json:"controllers"`
			Defects          []defectJSON               `json:"defects"`
			MissingEndpoints []string                   `json:"missing_endpoints,omitempty"`
			NotLive          []nvmeof.NotLiveController `json:"not_live"`
		}{Multipath: multipathName(st.Multipath), Note: multipathOffNote(st.Multipath), NotAttached: notAttached,
			Subsystems: len(nqns), Controllers: ctrls, Defects: []defectJSON{}, MissingEndpoints: missing, NotLive: notLive}
		if out.NotLive == nil {
			out.NotLive = []nvmeof.NotLiveController{}
		}
		for _, d := range defects {
			cs := d.Controllers
			if cs == nil {
				cs = []string{}
			}
			out.Defects = append(out.Defects, defectJSON{string(d.Kind), string(d.Scope), d.NQN, d.Subsystem, d.NSID, cs, d.CoTenants, d.Detail})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fail(stderr, name, err)
		}
	} else {
		switch {
		case notAttached != "":
			fmt.Fprintln(stdout, notAttached)
		case len(st.Subsystems) == 0:
			fmt.Fprintf(stdout, "no NVMe subsystem %s: nothing to inspect\n", src.where)
		default:
			fmt.Fprintf(stdout, "inspected %s, %s\n", plural(len(nqns), "subsystem"), plural(ctrls, "controller"))
		}
		if n := multipathOffNote(st.Multipath); n != "" {
			fmt.Fprintln(stdout, n)
		}
		for _, d := range defects {
			line := []string{string(d.Kind), string(d.Scope), d.NQN}
			if d.NSID != 0 {
				line = append(line, fmt.Sprintf("nsid=%d", d.NSID))
			}
			line = append(line, "controllers="+strings.Join(d.Controllers, ","))
			if len(d.CoTenants) > 0 {
				line = append(line, fmt.Sprintf("co-tenants=%v", d.CoTenants))
			}
			fmt.Fprintln(stdout, strings.Join(append(line, d.Detail), "\t"))
		}
		for _, m := range missing {
			fmt.Fprintf(stdout, "missing-endpoint\t%s\t%s\tno controller at %s %s\n", nqn, m, m, src.where)
		}
		for _, n := range notLive {
			fmt.Fprintf(stdout, "note: %s of %s is %s, not live (no defect: one reading cannot tell a reconnect from a leak; the harness's leak check judges it after the settle period): %s\n",
				n.Controller, n.NQN, n.State, n.Detail)
		}
		if len(defects) == 0 && len(missing) == 0 && notAttached == "" && len(st.Subsystems) > 0 {
			fmt.Fprintln(stdout, "clean: no defect")
		}
	}
	if len(defects) > 0 || len(missing) > 0 {
		return exitCheckFailed
	}
	return exitPass
}

// multipathName names a multipath mode for -o json: on, off or unknown.
func multipathName(m nvmeof.MultipathMode) string {
	if m == nvmeof.MultipathUnknown {
		return "unknown"
	}
	return string(m)
}

// multipathOffNote says, for a host with native multipath off, what cannot
// be judged there; "" otherwise.
func multipathOffNote(m nvmeof.MultipathMode) string {
	if m != nvmeof.MultipathOff {
		return ""
	}
	return "native multipath is off (nvme_core multipath=N): no path legs, no ANA states; no pause window, cutover or non-contributing controller can be judged on this host"
}

// nvmeBroadcastNSID is the NSID that means "every namespace" (NVMe base
// specification, 0xFFFFFFFF); valid namespace IDs are 1..0xFFFFFFFE.
const nvmeBroadcastNSID = 0xFFFFFFFF

// inspectAll runs Inspect for nqn ("" = every NQN) with nsid, or, without
// nsid, for the bare NQN and once per namespace, dropping repeats.
func inspectAll(st nvmeof.HostState, nqn string, nsid int, targets []nvmeof.Target) []nvmeof.Defect {
	nqns := st.NQNs()
	if nqn != "" {
		nqns = []string{nqn}
	}
	var out []nvmeof.Defect
	seen := map[string]bool{}
	add := func(ds []nvmeof.Defect, onlyNotContributing bool) {
		for _, d := range ds {
			if onlyNotContributing && d.Kind != nvmeof.DefectControllerNotContributing {
				continue
			}
			k := fmt.Sprint(d.Kind, d.NQN, d.NSID, d.Controllers)
			if !seen[k] {
				seen[k] = true
				out = append(out, d)
			}
		}
	}
	for _, n := range nqns {
		if nsid != 0 {
			add(nvmeof.Inspect(st, nvmeof.Selector{NQN: n, NSID: nsid}, targets), false)
			continue
		}
		add(nvmeof.Inspect(st, nvmeof.Selector{NQN: n}, targets), false)
		var ids []int
		for _, s := range st.SubsystemsByNQN(n) {
			ids = append(ids, s.NSIDs()...)
		}
		sort.Ints(ids)
		for i, id := range ids {
			if i > 0 && ids[i-1] == id {
				continue
			}
			add(nvmeof.Inspect(st, nvmeof.Selector{NQN: n, NSID: id}, targets), true)
		}
	}
	return out
}

// exampleConnections is testdata/connections.json (a test keeps them equal).
const exampleConnections = `[
  {"nqn": "nqn.2023-02.io.simplyblock:nvmetlab:lvol:00000001-0000-4000-8000-000000000001", "ip": "10.0.0.1", "port": 14420, "transport": "tcp", "ctrlLossTmo": 3600, "reconnectDelay": 2, "fastIOFailTmo": 0, "nrIoQueues": 4, "keepAliveTmo": 5},
  {"nqn": "nqn.2023-02.io.simplyblock:nvmetlab:lvol:00000001-0000-4000-8000-000000000001", "ip": "10.0.0.2", "port": 14420, "transport": "tcp", "ctrlLossTmo": 3600, "reconnectDelay": 2}
]`

const releaseUsage = `Usage: PROG release --nqn NQN --connections JSON|@FILE [--dry-run] [-o table|json]
        [--sys-root DIR | --capture FILE.tsv] [--hostnqn NQN] [--route nvme-cli|kernel]

Tears down the paths a migration of subsystem NQN made on this host, as the
operator's release Job does (nvmeof.ReleaseMigrationPaths): a controller is
released only if its ip:port is one of the migration's connections and no leg
over it is accessible (zero-leg and connecting controllers qualify); nothing
is released while no controller of the subsystem has an accessible leg (the
cutover window); other addresses are never touched.

--connections is the operator's VMIG_CONNECTIONS: a JSON array of
{"nqn","ip","port","transport","ctrlLossTmo",...}, inline or @file. Every
element must name an IP address (no host names, brackets, blanks or leading
zeros) and a port in 1..65535, and its "nqn", when given, must be --nqn: an
entry that can never match a controller would leak it. --sys-root and
--capture are either/or.
Prints what it did (or, with --dry-run or --capture, would do) and why, and
what it keeps and why.

Example connections file (fiomig's nvmeof/hostcmd/testdata/connections.json,
the migration paths of the capture controller-not-contributing.tsv):
` + exampleConnections + `

Exit status: 0 done (also when nothing qualifies, and when --nqn is not
attached: its paths are gone already; said, with the NQNs that are), 1 a
disconnect failed (the others still ran), 2 bad usage or input: a bad flag
or connection (the message names it, e.g. connections[0].ip), an unreadable
host, a --sys-root that is no sysfs mount, an empty, malformed or truncated
capture, or no controller with --hostnqn.
`

const reapUsage = `Usage: PROG reap [--nqn NQN] [--dry-run] [-o table|json]
        [--sys-root DIR | --capture FILE.tsv] [--hostnqn NQN] [--route nvme-cli|kernel]

Tears down live controllers that serve no namespace (nvmeof.ReapDeadControllers):
controller-not-contributing defects of controller scope, without co-tenants,
whose controller has no leg at all; one teardown per controller. Never
connecting controllers, parked targets with inaccessible legs, partially
serving controllers, or the last live controller. Without --nqn every NQN.
--sys-root and --capture are either/or.
Prints what it did (or, with --dry-run or --capture, would do) and why.

Exit status: 0 done (also when nothing qualifies, on a host without NVMe,
and when --nqn is not attached: said, with the NQNs that are), 1 a
disconnect failed (the others still ran), 2 bad usage or input: a bad flag,
an unreadable host, a --sys-root that is no sysfs mount, an empty, malformed
or truncated capture, or no controller with --hostnqn.
`

// planJSON is a release or reap plan in -o json output.
type planJSON struct {
	NQN      string            `json:"nqn"`
	DryRun   bool              `json:"dry_run"`
	Released []nvmeof.Released `json:"released"`
	Kept     []nvmeof.Released `json:"kept,omitempty"`
	Refused  string            `json:"refused,omitempty"`
	// NotAttached says the NQN has no subsystem here (nothing to do) and
	// lists those that do.
	NotAttached string `json:"not_attached,omitempty"`
	Error       string `json:"error,omitempty"`
}

func releaseCmd(prog string, args []string, stdout, stderr io.Writer) int {
	name := prog + " release"
	var hf hostFlags
	var nqn, connections string
	var dryRun bool
	fs := newFlagSet(prog, "release", releaseUsage)
	hf.register(fs, true)
	fs.StringVar(&nqn, "nqn", "", "subsystem `NQN` of the migration (required)")
	fs.StringVar(&connections, "connections", "", "the migration's connections: VMIG_CONNECTIONS `JSON`, inline or @file (required)")
	fs.BoolVar(&dryRun, "dry-run", false, "print what would be released; touch nothing")
	if code, stop := ParseFlags(fs, args, stdout, stderr); stop {
		return code
	}
	if err := hf.validate(fs); err != nil {
		return fail(stderr, name, err)
	}
	if nqn == "" {
		return fail(stderr, name, usagef("--nqn is required"))
	}
	if connections == "" {
		return fail(stderr, name, usagef("--connections is required (VMIG_CONNECTIONS JSON, inline or @file)"))
	}
	conns, err := readConnections(connections, nqn)
	if err != nil {
		return fail(stderr, name, err)
	}
	return runPlan(prog, "release", hf, dryRun, []string{nqn}, stdout, stderr, func(st nvmeof.HostState, n string) (nvmeof.Plan, error) {
		return nvmeof.PlanRelease(st, n, conns)
	})
}

// readConnections reads --connections (inline JSON or @file) and checks
// that every element belongs to nqn (an element without "nqn" does).
// Errors are usage errors naming the source and the element's field.
func readConnections(arg, nqn string) ([]nvmeof.Target, error) {
	data, src := []byte(arg), "--connections"
	if p, ok := strings.CutPrefix(arg, "@"); ok {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, usagef("--connections: %v", err)
		}
		data, src = b, "--connections "+p
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, usagef("%s: empty, want a JSON array of connections", p)
		}
	}
	conns, err := nvmeof.ParseConnections(data)
	if err != nil {
		return nil, usagef("%s: %v", src, err)
	}
	for i, c := range conns {
		if c.NQN != "" && c.NQN != nqn {
			return nil, usagef("%s: connections[%d].nqn %q is not --nqn %q", src, i, c.NQN, nqn)
		}
	}
	return conns, nil
}

func reapCmd(prog string, args []string, stdout, stderr io.Writer) int {
	name := prog + " reap"
	var hf hostFlags
	var nqn string
	var dryRun bool
	fs := newFlagSet(prog, "reap", reapUsage)
	hf.register(fs, true)
	fs.StringVar(&nqn, "nqn", "", "subsystem `NQN` (default: every NQN on the host)")
	fs.BoolVar(&dryRun, "dry-run", false, "print what would be reaped; touch nothing")
	if code, stop := ParseFlags(fs, args, stdout, stderr); stop {
		return code
	}
	if err := hf.validate(fs); err != nil {
		return fail(stderr, name, err)
	}
	var nqns []string
	if nqn != "" {
		nqns = []string{nqn}
	}
	return runPlan(prog, "reap", hf, dryRun, nqns, stdout, stderr, nvmeof.PlanReap)
}

// runPlan reads the host once, checks that every NQN asked for is attached,
// plans per NQN (nil nqns = every NQN), executes unless dry, and prints.
func runPlan(prog, cmd string, hf hostFlags, dryRun bool, nqns []string, stdout, stderr io.Writer,
	plan func(nvmeof.HostState, string) (nvmeof.Plan, error)) int {
	name := prog + " " + cmd
	src, err := hf.load()
	if err != nil {
		return fail(stderr, name, err)
	}
	host, st := src.host, src.st
	if src.isCapture && !dryRun {
		fmt.Fprintf(stderr, "%s: --capture: dry run (a capture cannot be changed)\n", name)
		dryRun = true
	}
	if nqns == nil {
		nqns = st.NQNs()
	}
	code := exitPass
	var plans []planJSON
	for _, n := range nqns {
		p, err := plan(st, n)
		if err != nil {
			return fail(stderr, name, usagef("%v", err))
		}
		pj := planJSON{NQN: n, DryRun: dryRun, Released: p.Release, Kept: p.Keep, Refused: p.Refused, NotAttached: src.notAttached(n)}
		if !dryRun {
			done, err := p.Execute(host)
			pj.Released = done
			if err != nil {
				pj.Error = err.Error()
				fmt.Fprintf(stderr, "%s: %v\n", name, err)
				code = exitCheckFailed
			}
		}
		if pj.Released == nil {
			pj.Released = []nvmeof.Released{}
		}
		plans = append(plans, pj)
	}
	if hf.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if plans == nil {
			plans = []planJSON{}
		}
		if err := enc.Encode(plans); err != nil {
			return fail(stderr, name, err)
		}
		return code
	}
	verb := map[bool]string{true: "would " + cmd, false: map[string]string{"release": "released", "reap": "reaped"}[cmd]}[dryRun]
	total := 0
	if len(plans) == 0 {
		fmt.Fprintf(stdout, "no NVMe subsystem %s\n", src.where)
	}
	for _, p := range plans {
		if p.NotAttached != "" {
			fmt.Fprintln(stdout, p.NotAttached)
		}
		if p.Refused != "" {
			fmt.Fprintf(stdout, "%s: %s\n", p.NQN, p.Refused)
		}
		for _, r := range p.Released {
			fmt.Fprintf(stdout, "%s %s (%s) of %s: %s\n", verb, r.Controller, r.Address, r.NQN, r.Reason)
			total++
		}
		for _, r := range p.Kept {
			fmt.Fprintf(stdout, "keep %s (%s) of %s: %s\n", r.Controller, r.Address, r.NQN, r.Reason)
		}
	}
	if total == 0 {
		fmt.Fprintf(stdout, "nothing to %s\n", cmd)
	}
	return code
}
