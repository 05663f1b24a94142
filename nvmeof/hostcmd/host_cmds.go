package hostcmd

import (
	"bytes"
	"encoding/json"
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
}

// load reads the live host (--sys-root) or the capture, once. Errors (all
// usage errors, exit 2): an unreadable root or capture, an empty capture, a
// malformed capture (the message names its line), no class/nvme directory
// (not a sysfs root, or no NVMe driver: nothing to judge or repair), no
// controller at all when needControllers (inspect: "clean" would be a lie),
// and --hostnqn matching no controller while others are there (a typo).
func (h *hostFlags) load(needControllers bool) (hostSource, error) {
	var all nvmeof.HostState
	var classDir, prefix, hint string
	var hasClass bool
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
		_, err = fs.Stat(fsys, "class/nvme")
		hasClass = err == nil
		classDir, prefix, hint = "/sys/class/nvme", h.capture+": ", "the capture has no such directory"
	} else {
		var err error
		if all, err = (&nvmeof.LinuxHost{SysRoot: h.sysRoot}).Read(); err != nil {
			return hostSource{}, usagef("%v", err)
		}
		classDir = filepath.Join(h.sysRoot, "class", "nvme")
		_, err = os.Stat(classDir)
		hasClass = err == nil
		hint = "no such directory: is --sys-root a sysfs mount, and is the nvme-core module loaded?"
	}
	n := len(all.Controllers())
	if !hasClass || (needControllers && n == 0) {
		if hasClass {
			hint = "the directory is empty"
		}
		return hostSource{}, usagef("%sno NVMe controllers under %s (%s)", prefix, classDir, hint)
	}
	st := all
	if h.hostNQN != "" {
		st = nvmeof.FilterHost(all, h.hostNQN)
		if n > 0 && len(st.Controllers()) == 0 {
			seen := map[string]bool{}
			var hosts []string
			for _, c := range all.Controllers() {
				if !seen[c.HostNQN] {
					seen[c.HostNQN] = true
					hosts = append(hosts, c.HostNQN)
				}
			}
			sort.Strings(hosts)
			return hostSource{}, usagef("%sno controller with hostnqn %q (hostnqns here: %s)", prefix, h.hostNQN, listSome(hosts))
		}
	}
	if h.capture != "" {
		return hostSource{host: &nvmeof.MemHost{State: st, HostNQN: h.hostNQN}, st: st, isCapture: true}, nil
	}
	return hostSource{host: &nvmeof.LinuxHost{SysRoot: h.sysRoot, HostNQN: h.hostNQN, NvmeBin: h.nvmeBin, Route: nvmeof.Route(h.route)}, st: st}, nil
}

// notAttached returns a usage error when st has no subsystem nqn: a typo
// must not pass for "clean" or "nothing to do".
func notAttached(st nvmeof.HostState, nqn string) error {
	if len(st.SubsystemsByNQN(nqn)) > 0 {
		return nil
	}
	return usagef("NQN %q is not attached on this host (attached: %s)", nqn, listSome(st.NQNs()))
}

const inspectUsage = `Usage: PROG inspect [--nqn NQN] [--nsid N] [--target IP:PORT ...] [-o table|json]
        [--sys-root DIR | --capture FILE.tsv] [--hostnqn NQN]

Reads one host's NVMe-oF state and reports, per subsystem, the defects
nvmeof.Inspect finds — the classification the harness's leak check uses:
  no-namespace                 live controllers, no namespace (subsystem)
  namespace-missing            --nsid is not among the namespaces (subsystem)
  controller-not-contributing  a live controller with no leg to the namespace (controller)
  stale-endpoint               a controller at no --target endpoint (controller; needs --target)
  ambiguous-head               several kernel subsystem instances have the namespace:
                               each whose legs are all inaccessible (subsystem, that
                               instance's controllers only), or, when none is, one
                               finding of scope none that nothing may tear down
and, beside them, the leak check's
  not-live                     a controller connecting, resetting, new or dead
                               (controller): it carries no I/O, and one reading
                               cannot tell a path coming back from a leak; the
                               detail gives its reconnect budget. With --target,
                               one at no published endpoint is stale-endpoint.
Each defect names its controllers in teardown order and the co-tenant
namespaces that would lose their last accessible path. On a host with native
multipath off (nvme_core multipath=N) inspect says so: there are no legs or
ANA states to judge by.

Without --nqn every NQN is inspected; without --nsid each subsystem is asked
once for the bare NQN and once per namespace (--nsid: 1..4294967294; NSIDs
start at 1 and 0xFFFFFFFF is the broadcast value). --target (repeatable,
ip:port with a port in 1..65535, IPv6 as [addr]:port) needs --nqn; it also
reports expected endpoints with no controller (missing endpoints, matched by
ip:port). --sys-root and --capture are either/or.

Exit status:
  0  clean: every subsystem asked for is attached and has no defect
  1  defects (not-live included) or missing endpoints found; also --nqn not attached while
     --target is given (each published endpoint is then missing: a
     path-completeness finding, printed as such)
  2  bad usage or input: a bad flag, an unreadable host, an empty or
     malformed capture (the message names the capture line), no NVMe
     controllers under <root>/class/nvme, no controller with --hostnqn, or
     --nqn not attached without --target (nothing to inspect; most likely a
     typo: the message lists the attached NQNs)
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
	if code, stop := parseFlags(fs, args, stdout, stderr); stop {
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
	src, err := hf.load(true)
	if err != nil {
		return fail(stderr, name, err)
	}
	st := src.st
	if nqn != "" {
		if err := notAttached(st, nqn); err != nil {
			if len(expected) == 0 {
				return fail(stderr, name, err)
			}
			// With published endpoints the absence is a finding: each
			// endpoint is reported missing below.
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
		}
	}

	defects := inspectAll(st, nqn, int(nsid), nvmeof.EndpointTargets(nqn, expected))
	// Controllers that are not live: Inspect (the operator's semantics)
	// never names them, but "clean" would hide a connecting leak.
	stale := map[string]bool{}
	for _, d := range defects {
		if d.Kind == nvmeof.DefectStaleEndpoint {
			stale[d.Controllers[0]] = true
		}
	}
	defects = append(defects, nvmeof.NotLive(st, nqn, stale)...)
	var missing []string
	if len(expected) > 0 {
		missing = nvmeof.MissingEndpoints(expected, st, nqn)
	}

	if hf.output == "json" {
		out := struct {
			Multipath        string       `json:"multipath"`
			Note             string       `json:"note,omitempty"`
			Defects          []defectJSON `json:"defects"`
			MissingEndpoints []string     `json:"missing_endpoints,omitempty"`
		}{Multipath: multipathName(st.Multipath), Note: multipathOffNote(st.Multipath), Defects: []defectJSON{}, MissingEndpoints: missing}
		for _, d := range defects {
			ctrls := d.Controllers
			if ctrls == nil {
				ctrls = []string{}
			}
			out.Defects = append(out.Defects, defectJSON{string(d.Kind), string(d.Scope), d.NQN, d.Subsystem, d.NSID, ctrls, d.CoTenants, d.Detail})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fail(stderr, name, err)
		}
	} else {
		nqns := st.NQNs()
		if nqn != "" {
			nqns = []string{nqn}
		}
		ctrls := 0
		for _, n := range nqns {
			for _, s := range st.SubsystemsByNQN(n) {
				ctrls += len(s.Controllers)
			}
		}
		fmt.Fprintf(stdout, "inspected %s, %s\n", plural(len(nqns), "subsystem"), plural(ctrls, "controller"))
		if n := multipathOffNote(st.Multipath); n != "" {
			fmt.Fprintln(stdout, n)
		}
		for _, d := range defects {
			fmt.Fprintf(stdout, "%s\t%s\t%s\tnsid=%d\tcontrollers=%s\tco-tenants=%v\t%s\n",
				d.Kind, d.Scope, d.NQN, d.NSID, strings.Join(d.Controllers, ","), d.CoTenants, d.Detail)
		}
		for _, m := range missing {
			fmt.Fprintf(stdout, "missing-endpoint\t%s\t%s\tno controller of this host at %s\n", nqn, m, m)
		}
		if len(defects) == 0 && len(missing) == 0 {
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

Exit status: 0 done (also when nothing qualifies), 1 a disconnect failed (the
others still ran), 2 bad usage or input: a bad flag or connection (the
message names it, e.g. connections[0].ip), an unreadable host, an empty or
malformed capture, no class/nvme under the root, no controller with
--hostnqn, or --nqn not attached on this host.
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

Exit status: 0 done (also when nothing qualifies), 1 a disconnect failed (the
others still ran), 2 bad usage or input: a bad flag, an unreadable host, an
empty or malformed capture, no class/nvme under the root, no controller
with --hostnqn, or --nqn not attached on this host.
`

// planJSON is a release or reap plan in -o json output.
type planJSON struct {
	NQN      string            `json:"nqn"`
	DryRun   bool              `json:"dry_run"`
	Released []nvmeof.Released `json:"released"`
	Kept     []nvmeof.Released `json:"kept,omitempty"`
	Refused  string            `json:"refused,omitempty"`
	Error    string            `json:"error,omitempty"`
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
	if code, stop := parseFlags(fs, args, stdout, stderr); stop {
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
	if code, stop := parseFlags(fs, args, stdout, stderr); stop {
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
	src, err := hf.load(false)
	if err != nil {
		return fail(stderr, name, err)
	}
	host, st := src.host, src.st
	for _, n := range nqns {
		if err := notAttached(st, n); err != nil {
			return fail(stderr, name, err)
		}
	}
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
		pj := planJSON{NQN: n, DryRun: dryRun, Released: p.Release, Kept: p.Keep, Refused: p.Refused}
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
	for _, p := range plans {
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
