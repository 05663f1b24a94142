package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/fiomig/fiomig/nvmeof"
)

// The host commands inspect, release and reap judge or repair one host's
// kernel NVMe-oF state with the same nvmeof code the harness judges runs
// with. Each reads the live host (--sys-root) or a capture (--capture, always
// a dry run).

func init() {
	register(command{name: "inspect", summary: "report what is wrong with a host's NVMe-oF subsystems (live /sys or a capture)", run: inspectCmd})
	register(command{name: "release", summary: "tear down a migration's paths that serve nothing (the operator's release Job)", run: releaseCmd})
	register(command{name: "reap", summary: "tear down live controllers that serve no namespace", run: reapCmd})
}

// hostFlags are the flags every host command shares.
type hostFlags struct {
	sysRoot, capture, hostNQN, output string
	route, nvmeBin                    string
}

func (h *hostFlags) register(fs *flag.FlagSet, acts bool) {
	fs.StringVar(&h.sysRoot, "sys-root", "/sys", "sysfs `directory` of the live host to read")
	fs.StringVar(&h.capture, "capture", "", "read a sysfs capture `FILE.tsv` (\"<path>\\t<value>\" per line) instead of the live host; implies --dry-run")
	fs.StringVar(&h.hostNQN, "hostnqn", "", "keep only controllers of this host `NQN` (several nodes may share one kernel); default every controller")
	fs.StringVar(&h.output, "o", "table", "output `format`: table or json")
	if acts {
		fs.StringVar(&h.route, "route", string(nvmeof.RouteNvmeCLI), "how to disconnect: nvme-cli (nvme disconnect -d nvmeN) or kernel (write delete_controller)")
		fs.StringVar(&h.nvmeBin, "nvme", "nvme", "nvme-cli `binary`")
	}
}

func (h *hostFlags) validate() error {
	if h.output != "table" && h.output != "json" {
		return usagef("-o must be table or json, got %q", h.output)
	}
	if h.route != "" && h.route != string(nvmeof.RouteNvmeCLI) && h.route != string(nvmeof.RouteKernel) {
		return usagef("--route must be nvme-cli or kernel, got %q", h.route)
	}
	return nil
}

// host returns the Host to act on and whether it is a capture.
func (h *hostFlags) host() (nvmeof.Host, bool, error) {
	if h.capture == "" {
		return &nvmeof.LinuxHost{SysRoot: h.sysRoot, HostNQN: h.hostNQN, NvmeBin: h.nvmeBin, Route: nvmeof.Route(h.route)}, false, nil
	}
	f, err := os.Open(h.capture)
	if err != nil {
		return nil, true, usagef("%v", err)
	}
	defer f.Close()
	fsys, err := nvmeof.LoadCapture(f, h.capture)
	if err != nil {
		return nil, true, usagef("malformed capture: %v", err)
	}
	st, err := nvmeof.ReadHost(fsys, h.hostNQN)
	if err != nil {
		return nil, true, usagef("malformed capture: %v", err)
	}
	return &nvmeof.MemHost{State: st, HostNQN: h.hostNQN}, true, nil
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func newHostFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fiomig "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fmt.Fprintln(fs.Output(), "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags; it returns an exit code when the command should
// stop (help: 0, bad flags: 2).
func parseArgs(fs *flag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitPass, true
		}
		return exitUsage, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q (flags only; see --help)\n", fs.Name(), fs.Arg(0))
		return exitUsage, true
	}
	return 0, false
}

func fail(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "fiomig %s: %v\n", name, err)
	if isUsage(err) {
		return exitUsage
	}
	return exitCheckFailed
}

const inspectUsage = `Usage: fiomig inspect [--nqn NQN] [--nsid N] [--target IP:PORT ...] [-o table|json]
                      [--sys-root DIR | --capture FILE.tsv] [--hostnqn NQN]

Reads one host's NVMe-oF state and reports, per subsystem, the defects
nvmeof.Inspect finds — the classification the harness's leak check uses:
  no-namespace                 live controllers, no namespace (subsystem)
  namespace-missing            --nsid is not among the namespaces (subsystem)
  controller-not-contributing  a live controller with no leg to the namespace (controller)
  stale-endpoint               a controller at no --target endpoint (controller; needs --target)
  ambiguous-head               several kernel subsystem instances carry the NQN (subsystem)
Each defect names its controllers in teardown order and the co-tenant
namespaces that would lose their last accessible path.

Without --nqn every NQN is inspected; without --nsid each subsystem is asked
once for the bare NQN and once per namespace. --target (repeatable, ip:port,
IPv6 as [addr]:port) needs --nqn; it also reports expected endpoints with no
controller (missing endpoints, matched by ip:port).

Exit status: 0 clean, 1 defects or missing endpoints found, 2 bad usage,
unreadable host or malformed capture (the message names the capture line).
`

// defectJSON is a defect in -o json output.
type defectJSON struct {
	Kind        string   `json:"kind"`
	Scope       string   `json:"scope"`
	NQN         string   `json:"nqn"`
	NSID        int      `json:"nsid,omitempty"`
	Controllers []string `json:"controllers"`
	CoTenants   []int    `json:"co_tenants,omitempty"`
	Detail      string   `json:"detail"`
}

func inspectCmd(args []string, stdout, stderr io.Writer) int {
	var hf hostFlags
	var nqn string
	var nsid int
	var targets stringList
	fs := newHostFlagSet("inspect", inspectUsage, stderr)
	hf.register(fs, false)
	fs.StringVar(&nqn, "nqn", "", "subsystem `NQN` to inspect (default: every NQN on the host)")
	fs.IntVar(&nsid, "nsid", 0, "namespace `ID` the caller expects (default: the bare NQN and each namespace)")
	fs.Var(&targets, "target", "an endpoint the control plane publishes for --nqn, `IP:PORT` (repeatable)")
	if code, stop := parseArgs(fs, args, stderr); stop {
		return code
	}
	if err := hf.validate(); err != nil {
		return fail(stderr, "inspect", err)
	}
	if nsid < 0 {
		return fail(stderr, "inspect", usagef("--nsid must be >= 1, got %d", nsid))
	}
	if len(targets) > 0 && nqn == "" {
		return fail(stderr, "inspect", usagef("--target needs --nqn: endpoints are published per subsystem"))
	}
	var expected []string
	for _, t := range targets {
		e, err := nvmeof.CanonicalizeEndpoint(t)
		if err != nil {
			return fail(stderr, "inspect", usagef("--target %q is not IP:PORT (IPv6 as [addr]:port): %v", t, err))
		}
		expected = append(expected, e)
	}
	host, _, err := hf.host()
	if err != nil {
		return fail(stderr, "inspect", err)
	}
	st, err := host.Read()
	if err != nil {
		return fail(stderr, "inspect", usagef("%v", err))
	}

	defects := inspectAll(st, nqn, nsid, nvmeof.EndpointTargets(nqn, expected))
	var missing []string
	if len(expected) > 0 {
		missing = nvmeof.MissingEndpoints(expected, st, nqn)
	}

	if hf.output == "json" {
		out := struct {
			Defects          []defectJSON `json:"defects"`
			MissingEndpoints []string     `json:"missing_endpoints,omitempty"`
		}{Defects: []defectJSON{}, MissingEndpoints: missing}
		for _, d := range defects {
			out.Defects = append(out.Defects, defectJSON{string(d.Kind), string(d.Scope), d.NQN, d.NSID, d.Controllers, d.CoTenants, d.Detail})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fail(stderr, "inspect", err)
		}
	} else {
		nqns := st.NQNs()
		if nqn != "" {
			nqns = []string{nqn}
		}
		fmt.Fprintf(stdout, "inspected %d subsystem NQN(s), %d controller(s)\n", len(nqns), len(st.Controllers()))
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

const releaseUsage = `Usage: fiomig release --nqn NQN --connections JSON|@FILE [--dry-run] [-o table|json]
                      [--sys-root DIR | --capture FILE.tsv] [--hostnqn NQN] [--route nvme-cli|kernel]

Tears down the paths a migration of subsystem NQN made on this host, as the
operator's release Job does (nvmeof.ReleaseMigrationPaths): a controller is
released only if its ip:port is one of the migration's connections and no leg
over it is accessible (zero-leg and connecting controllers qualify); nothing
is released while no controller of the subsystem has an accessible leg (the
cutover window); other addresses are never touched.

--connections is the operator's VMIG_CONNECTIONS: a JSON array of
{"nqn","ip","port","transport","ctrlLossTmo",...}, inline or @file.
Prints what it did (or, with --dry-run or --capture, would do) and why, and
what it keeps and why.

Exit status: 0 done, 1 a disconnect failed (the others still ran), 2 bad
usage, unreadable host or malformed capture.
`

const reapUsage = `Usage: fiomig reap [--nqn NQN] [--dry-run] [-o table|json]
                   [--sys-root DIR | --capture FILE.tsv] [--hostnqn NQN] [--route nvme-cli|kernel]

Tears down live controllers that serve no namespace (nvmeof.ReapDeadControllers):
controller-not-contributing defects of controller scope, without co-tenants,
whose controller has no leg at all; one teardown per controller. Never
connecting controllers, parked targets with inaccessible legs, partially
serving controllers, or the last live controller. Without --nqn every NQN.
Prints what it did (or, with --dry-run or --capture, would do) and why.

Exit status: 0 done, 1 a disconnect failed (the others still ran), 2 bad
usage, unreadable host or malformed capture.
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

func releaseCmd(args []string, stdout, stderr io.Writer) int {
	var hf hostFlags
	var nqn, connections string
	var dryRun bool
	fs := newHostFlagSet("release", releaseUsage, stderr)
	hf.register(fs, true)
	fs.StringVar(&nqn, "nqn", "", "subsystem `NQN` of the migration (required)")
	fs.StringVar(&connections, "connections", "", "the migration's connections: VMIG_CONNECTIONS `JSON`, inline or @file (required)")
	fs.BoolVar(&dryRun, "dry-run", false, "print what would be released; touch nothing")
	if code, stop := parseArgs(fs, args, stderr); stop {
		return code
	}
	if err := hf.validate(); err != nil {
		return fail(stderr, "release", err)
	}
	if nqn == "" {
		return fail(stderr, "release", usagef("--nqn is required"))
	}
	if connections == "" {
		return fail(stderr, "release", usagef("--connections is required (VMIG_CONNECTIONS JSON, inline or @file)"))
	}
	data := []byte(connections)
	if p, ok := strings.CutPrefix(connections, "@"); ok {
		b, err := os.ReadFile(p)
		if err != nil {
			return fail(stderr, "release", usagef("--connections: %v", err))
		}
		data = b
	}
	conns, err := nvmeof.ParseConnections(data)
	if err != nil {
		return fail(stderr, "release", usagef("--connections: %v", err))
	}
	return runPlan("release", hf, dryRun, []string{nqn}, stdout, stderr, func(st nvmeof.HostState, n string) (nvmeof.Plan, error) {
		return nvmeof.PlanRelease(st, n, conns)
	})
}

func reapCmd(args []string, stdout, stderr io.Writer) int {
	var hf hostFlags
	var nqn string
	var dryRun bool
	fs := newHostFlagSet("reap", reapUsage, stderr)
	hf.register(fs, true)
	fs.StringVar(&nqn, "nqn", "", "subsystem `NQN` (default: every NQN on the host)")
	fs.BoolVar(&dryRun, "dry-run", false, "print what would be reaped; touch nothing")
	if code, stop := parseArgs(fs, args, stderr); stop {
		return code
	}
	if err := hf.validate(); err != nil {
		return fail(stderr, "reap", err)
	}
	var nqns []string
	if nqn != "" {
		nqns = []string{nqn}
	}
	return runPlan("reap", hf, dryRun, nqns, stdout, stderr, nvmeof.PlanReap)
}

// runPlan reads the host once, plans per NQN (nil nqns = every NQN),
// executes unless dry, and prints.
func runPlan(name string, hf hostFlags, dryRun bool, nqns []string, stdout, stderr io.Writer,
	plan func(nvmeof.HostState, string) (nvmeof.Plan, error)) int {
	host, isCapture, err := hf.host()
	if err != nil {
		return fail(stderr, name, err)
	}
	if isCapture && !dryRun {
		fmt.Fprintf(stderr, "fiomig %s: --capture: dry run (a capture cannot be changed)\n", name)
		dryRun = true
	}
	st, err := host.Read()
	if err != nil {
		return fail(stderr, name, usagef("%v", err))
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
				fmt.Fprintf(stderr, "fiomig %s: %v\n", name, err)
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
	verb := map[bool]string{true: "would " + name, false: map[string]string{"release": "released", "reap": "reaped"}[name]}[dryRun]
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
		fmt.Fprintf(stdout, "nothing to %s\n", name)
	}
	return code
}
