package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fiomig/fiomig/analysis"
	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
	"github.com/fiomig/fiomig/scenario"
)

func init() {
	register(command{name: "reproduce", summary: "reproduce a catalogued incident (fiomig reproduce --list) with the prefix and/or fixed operator", run: reproduceCmd})
}

type reproduceFlags struct {
	list           bool
	catalog        string
	operator       string
	seed           int64
	out            string
	reconnectReset string
	kernelDNR      string
	targetDNR      bool
	seeds          string
	faults         string
	releaseSources bool
	listenerRace   bool
	swapReaddFail  float64
	nsidDivergence bool
	// given are the flags set on the command line (switches override the
	// incident file only then).
	given map[string]bool
}

func (f *reproduceFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.list, "list", false, "list the incident catalogue (name, topology, operators, sources) and exit")
	fs.StringVar(&f.catalog, "catalog", "", "`directory` of more incident files (*.yaml) searched besides the embedded catalogue; NAME may also be a path ending in .yaml")
	fs.StringVar(&f.operator, "operator", "", "operator variant: `prefix`, fixed or both (same seed, side by side); default: the incident file's operators")
	fs.Int64Var(&f.seed, "seed", 1, "`seed` (any int64, negative included) of the simulated world and of the fault schedule; the same seed gives a byte-identical run record")
	fs.StringVar(&f.out, "out", "out", "`directory` under which each operator's run directory fio-mig-<unix seconds>[-N] is created")
	fs.StringVar(&f.reconnectReset, "reconnect-reset", "", "kernel reconnect counter reset: `full` (upstream: after a successful reconnect) or partial (also after a rejected CONNECT, as field reports say some kernels do); default: the incident file's")
	fs.StringVar(&f.kernelDNR, "kernel-dnr", "", "kernel handling of a CONNECT rejected with DNR: `honor` (stop reconnecting) or ignore; default: the incident file's")
	fs.BoolVar(&f.targetDNR, "target-dnr", false, "targets set DNR on rejected CONNECTs (SPDK's reply does not); default: the incident file's")
	fs.StringVar(&f.seeds, "seeds", "", "run every seed of this list (as fiomig sweep: e.g. 1-10 or 1,5,9-12), one per core, each into OUT/reproduce-NAME-<unix>/seed-N, and write the table seed × operator × validation failures by cause there (reproduce.md); replaces --seed")
	fs.BoolVar(&f.releaseSources, "release-sources", false, "the fixed operator also runs a release Job for the source paths after the cutover — fiomig's extra, not the fix (OP 5aa711cc releases only in cancelAndFail and reconcileAbort); default: the incident file's operators.release_sources (absent: off)")
	fs.BoolVar(&f.listenerRace, "listener-race", false, "simulated control plane: listener before namespace on a target node without the subsystem, the add_ns failing (sbcli create_migration :1180→:1197→:1204); default: the incident file's model.listener_race (absent: off)")
	fs.Float64Var(&f.swapReaddFail, "swap-readd-fail", 0, "simulated control plane: `probability` a namespace re-add of the batch cutover's two-pass swap fails (sbcli tasks_runner_batch_migration.py :509); default: the incident file's model.swap_readd_fail (absent: 0)")
	fs.BoolVar(&f.nsidDivergence, "nsid-divergence", false, "simulated control plane: the swap re-adds members in another order on one overlap node, NSIDs diverge there and the kernel refuses them (lvol_controller.py:1264-1276); default: the incident file's model.nsid_divergence (absent: off)")
	fs.StringVar(&f.faults, "faults", "", "`none` drops the incident's seeded and scheduled faults (plan.json says so): what the sourced model does with no fault at all; default: the incident file's faults")
}

func (f *reproduceFlags) validate() error {
	switch {
	case f.operator != "" && f.operator != "prefix" && f.operator != "fixed" && f.operator != "both":
		return usagef("--operator must be prefix, fixed or both, got %q", f.operator)
	case f.reconnectReset != "" && f.reconnectReset != "full" && f.reconnectReset != "partial":
		return usagef("--reconnect-reset must be full or partial, got %q", f.reconnectReset)
	case f.kernelDNR != "" && f.kernelDNR != "honor" && f.kernelDNR != "ignore":
		return usagef("--kernel-dnr must be honor or ignore, got %q", f.kernelDNR)
	case f.faults != "" && f.faults != "none":
		return usagef("--faults must be none (or absent: the incident's faults), got %q", f.faults)
	case !(f.swapReaddFail >= 0 && f.swapReaddFail <= 1):
		return usagef("--swap-readd-fail must be a probability 0 to 1, got %g", f.swapReaddFail)
	}
	return checkOut(f.out) // as fiomig run: before any work
}

func (f *reproduceFlags) operators(inc incidents.Incident) []string {
	switch f.operator {
	case "both":
		return []string{"prefix", "fixed"}
	case "":
		return inc.OperatorList()
	}
	return []string{f.operator}
}

// newReproduceFlagSet registers f's flags; the flag package's own output is
// discarded (a bad flag gets one line from reproduceCmd, --help the usage
// on stdout).
func newReproduceFlagSet(f *reproduceFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("fiomig reproduce", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.register(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: fiomig reproduce NAME [flags]
       fiomig reproduce --list

Reproduces a catalogued incident on the embedded simulator. An incident is a
YAML file (incidents/NAME.yaml, embedded in this binary; more with --catalog
DIR, or NAME given as a path ending in .yaml): its topology, the control
plane's and the kernel's switches, the operators, the faults (seeded and/or
scheduled), the pacing, and the expected figures as bands, each marked with
its source (sourced, inference or assumption). A new incident needs no Go;
unknown fields and values of the wrong type are rejected naming the file,
the line and the field.

For each operator variant it writes a normal run directory (plan.json,
timeline.jsonl, summary.json, report.md, ...) plus reproduce.md, and prints
side by side the incident's figures (validation failures by cause,
controllers against expected, leaked controllers, CONNECT rejections per
minute at the end, pods killed, longest pause), then each expectation of the
incident file with its band, its source and what the run gave. Bands come
from the sources, never from fitting the simulator.

Exit codes: 0 every expectation holds for every operator and every scheduled
fault left evidence (and, over seeds, the comparison holds); 1 an
expectation does not hold in a run whose faults all left evidence, or the
comparison over seeds fails; 3 no such failure, but a scheduled fault left
no evidence (that run proves nothing) or the comparison over seeds is
inconclusive; 2 bad usage or a bad incident file; 130 interrupted.

--seed is any int64, negative and zero included: the simulated world
(math/rand.NewSource) and the fault schedule (math/rand/v2 PCG) are seeded
with it, and the same seed gives a byte-identical run record.

With --operator both and --seeds, the incident's comparison (research/
incident.md §6.2, expectation "compare: fixed-le-prefix-confined": fixed ≤
prefix, the difference confined to the leak kinds the fix removes) is judged
over the seeds, by cause: per seed D = fixed − prefix of each cause's
validation failures, its mean and a 95 %% paired t-interval. It fails on an
unexplained failure, on a cause the fix cannot change (loss window, injected
fault, every other cause) whose interval excludes 0, or on a total wholly
above 0; it passes when each such interval lies within ±margin (the
incident file's, failures per run) and the total's upper bound ≤ margin; else
it is inconclusive (exit 3) and says how many seeds would do. With one seed
the two runs are described side by side, not judged (two runs of one seed
diverge chaotically): the exit code is the bands'.

Examples: fiomig reproduce %[1]s --seed 3
          fiomig reproduce %[1]s --operator both --seeds 1-10
          fiomig reproduce %[1]s --operator both --faults none

Flags:
`, scenario.IncidentID)
		fs.PrintDefaults()
	}
	return fs
}

// parseInterspersed parses flags before and after positional arguments and
// returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseSubcommand parses args for the command name with parseInterspersed.
// On --help it prints help and fs's flags to stdout and returns exitPass;
// on a bad flag it says so in one line on stderr and returns exitUsage;
// ok is false in both cases. fs's output is discarded between the two.
func parseSubcommand(name, help string, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	pos, err := parseInterspersed(fs, args)
	if err == nil {
		return pos, 0, true
	}
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, help)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		return nil, exitPass, false
	}
	fmt.Fprintf(stderr, "fiomig %s: %v (see fiomig %s --help)\n", name, err, name)
	return nil, exitUsage, false
}

func reproduceCmd(args []string, stdout, stderr io.Writer) int {
	var f reproduceFlags
	fs := newReproduceFlagSet(&f)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return exitPass
		}
		fmt.Fprintf(stderr, "fiomig reproduce: %v (see fiomig reproduce --help)\n", err)
		return exitUsage
	}
	if f.list {
		if len(pos) > 0 {
			fmt.Fprintf(stderr, "fiomig reproduce: --list lists the whole catalogue and runs nothing; drop %q (or drop --list to reproduce it)\n", pos[0])
			return exitUsage
		}
		return listIncidents(stdout, stderr, f.catalog)
	}
	switch {
	case len(pos) == 0:
		fmt.Fprintf(stderr, "fiomig reproduce: name the incident, e.g. fiomig reproduce %s (fiomig reproduce --list shows the catalogue)\n", scenario.IncidentID)
		return exitUsage
	case len(pos) > 1:
		fmt.Fprintf(stderr, "fiomig reproduce: unexpected argument %q (one incident only; a boolean flag takes its value as --flag=value, e.g. --target-dnr=false)\n", pos[1])
		return exitUsage
	}
	if err := f.validate(); err != nil {
		fmt.Fprintf(stderr, "fiomig reproduce: %v\n", err)
		return exitUsage
	}
	var dirs []string
	if f.catalog != "" {
		dirs = append(dirs, f.catalog)
	}
	inc, err := scenario.LoadIncident(pos[0], dirs...)
	if err != nil {
		fmt.Fprintf(stderr, "fiomig reproduce: %v\n", err)
		return exitUsage
	}
	var targetDNR *bool
	f.given = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) {
		f.given[fl.Name] = true
		if fl.Name == "target-dnr" {
			targetDNR = &f.targetDNR
		}
	})
	if f.seeds != "" {
		if f.given["seed"] {
			fmt.Fprintf(stderr, "fiomig reproduce: --seed is one run's; --seeds runs a list (give one of them)\n")
			return exitUsage
		}
		seeds, err := parseSeeds(f.seeds)
		if err != nil {
			fmt.Fprintf(stderr, "fiomig reproduce: %v\n", err)
			return exitUsage
		}
		return reproduceSeeds(inc, pos[0], &f, targetDNR, seeds, stdout, stderr)
	}

	fmt.Fprintf(stdout, "fiomig reproduce %s (%s) — parameters:\n", inc.Name, inc.File)
	fs.VisitAll(func(fl *flag.Flag) { fmt.Fprintf(stdout, "  --%-16s %s\n", fl.Name, fl.Value.String()) })
	p, err := scenario.IncidentParams(inc, f.operators(inc)[0])
	if err != nil {
		fmt.Fprintf(stderr, "fiomig reproduce: %v\n", err)
		return exitUsage
	}
	t := p.Model
	fmt.Fprintf(stdout, "  scenario: %d nodes, %d hosts (hosts are nodes: %t), %d volumes x %d namespace(s), %d consumer(s) each, pods %t; %d migrations, settle %.0f s sampled every %.0f s [topology: %s; pacing: %s; faults: %s]\n",
		t.Nodes, t.Hosts, t.HostsAreNodes, t.Volumes, t.NamespacesPerVolume, t.ConsumersPerVolume, t.Pods, p.Migrations, p.SettleS, p.SettleSampleIntervalS,
		inc.Topology.Source, inc.Pacing.Source, orDash(string(inc.Faults.Source)))

	ctx, stop := interruptContext(stderr, "fiomig reproduce")
	defer stop()
	start := time.Now().Unix()
	// The operators run concurrently (each its own simulated world; the
	// same bytes as one after the other). Each starts once the one before
	// has created its run directory (scenario.Run's first progress line
	// names it), so the first keeps fio-mig-<start> and the next
	// fio-mig-<start>-2. With more than one, each progress line is tagged
	// with its operator.
	ops := f.operators(inc)
	cmdlines := make([]string, len(ops))
	for i, op := range ops {
		cmdline := f.commandLine(pos[0], op, f.seed, targetDNR)
		cmdlines[i] = cmdline
		fmt.Fprintf(stdout, "\n== operator %s: %s\n", op, cmdline)
	}
	results := make([]scenario.ReproduceResult, len(ops))
	errs := make([]error, len(ops))
	out := &lockedWriter{w: stdout}
	var wg sync.WaitGroup
	for i, op := range ops {
		progress := &opProgress{w: out, started: make(chan struct{})}
		if len(ops) > 1 {
			progress.tag = fmt.Sprintf("%-*s| ", len("prefix "), op)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer progress.start()
			results[i], errs[i] = scenario.Reproduce(ctx, f.options(inc, op, f.seed, targetDNR, cmdlines[i], f.out, start, progress))
		}()
		<-progress.started
	}
	wg.Wait()
	interrupted := false
	for i, op := range ops {
		r := results[i]
		if err := errs[i]; err != nil {
			fmt.Fprintf(stderr, "fiomig reproduce: %s: %v\n", op, err)
			if r.Dir != "" {
				fmt.Fprintf(stderr, "fiomig reproduce: what was recorded is in %s\n", r.Dir)
			}
			return exitUsage
		}
		if r.Interrupted {
			interrupted = true
			fmt.Fprintf(stderr, "fiomig reproduce: %s interrupted; the timeline recorded so far is in %s\n", op, r.Dir)
		}
	}
	if interrupted {
		return exitInterrupted
	}
	for i, op := range ops {
		r := results[i]
		fmt.Fprintf(stdout, "\n== operator %s done\n", op)
		for _, e := range r.FaultErrors {
			fmt.Fprintf(stdout, "  fault: %v\n", e)
		}
		fmt.Fprintf(stdout, "  run directory: %s\n", r.Dir)
	}
	// Every run's reproduce.md shows all operators side by side.
	for _, r := range results {
		if err := reports.WriteReproduce(r.Dir, r.Run, runs(results)); err != nil {
			fmt.Fprintf(stderr, "fiomig reproduce: %v\n", err)
			return exitUsage
		}
	}
	return printReproduction(stdout, results)
}

// commandLine is the command reproducing one operator's run of seed.
func (f *reproduceFlags) commandLine(name, op string, seed int64, targetDNR *bool) string {
	cmdline := fmt.Sprintf("fiomig reproduce %s --operator=%s --seed=%d", name, op, seed)
	if f.catalog != "" {
		cmdline += " --catalog=" + f.catalog
	}
	for _, kv := range [][2]string{{"reconnect-reset", f.reconnectReset}, {"kernel-dnr", f.kernelDNR}, {"faults", f.faults}} {
		if kv[1] != "" {
			cmdline += " --" + kv[0] + "=" + kv[1]
		}
	}
	if targetDNR != nil {
		cmdline += fmt.Sprintf(" --target-dnr=%t", *targetDNR)
	}
	for _, name := range []string{"release-sources", "listener-race", "swap-readd-fail", "nsid-divergence"} {
		if f.given[name] {
			cmdline += " --" + name + "=" + map[string]string{"release-sources": strconv.FormatBool(f.releaseSources),
				"listener-race": strconv.FormatBool(f.listenerRace), "swap-readd-fail": strconv.FormatFloat(f.swapReaddFail, 'g', -1, 64),
				"nsid-divergence": strconv.FormatBool(f.nsidDivergence)}[name]
		}
	}
	return cmdline
}

// options are scenario.Reproduce's options for one operator's run of seed.
func (f *reproduceFlags) options(inc incidents.Incident, op string, seed int64, targetDNR *bool, cmdline, out string,
	start int64, progress io.Writer) scenario.ReproduceOptions {
	o := scenario.ReproduceOptions{Incident: inc, Seed: seed, Operator: op, NoFaults: f.faults == "none",
		Command: cmdline, OutDir: out, StartUnix: start, Progress: progress}
	o.Override = func(m *record.Model) {
		if f.reconnectReset != "" {
			m.ReconnectReset = f.reconnectReset
		}
		if f.kernelDNR != "" {
			m.KernelDNR = f.kernelDNR
		}
		if targetDNR != nil {
			m.TargetDNR = *targetDNR
		}
		if f.given["release-sources"] {
			m.ReleaseSources = f.releaseSources
		}
		if f.given["listener-race"] {
			m.ListenerRace = f.listenerRace
		}
		if f.given["swap-readd-fail"] {
			m.SwapReaddFail = f.swapReaddFail
		}
		if f.given["nsid-divergence"] {
			m.NSIDDivergence = f.nsidDivergence
		}
	}
	return o
}

// printReproduction prints the side-by-side table, each run's validation
// failures and shape, and the description of the operators' two runs when
// both ran (described, not judged: the comparison is judged over seeds),
// and maps the shapes (the bands) to the exit code.
func printReproduction(w io.Writer, results []scenario.ReproduceResult) int {
	var figs []analysis.IncidentFigures
	var shapes []analysis.Shape
	for _, r := range results {
		figs = append(figs, r.Figures)
		shapes = append(shapes, r.Shape)
	}
	fmt.Fprintf(w, "\n== %s, seed %d, side by side\n", results[0].Plan.Params.Incident, results[0].Figures.Seed)
	reports.WriteIncidentTable(w, figs, shapes)
	failed, inconclusive := false, false
	for _, r := range results {
		runInconclusive := r.Figures.FaultsCheck.Verdict == record.Inconclusive
		f := r.Figures
		fmt.Fprintf(w, "\n== %s: validation failures (%d)\n", f.Operator, len(f.Failures))
		for _, v := range f.Failures {
			by := v.Origin
			switch {
			case v.LeakCaused:
				by = "leaked by " + v.Origin
			case v.Origin == v.Migration:
				by = "created by this migration"
			case v.Origin == "":
				by = "no controller blamed"
			}
			by = v.Cause + "; " + by
			ctrl := "-"
			if v.Controller != "" {
				ctrl = fmt.Sprintf("%s %s (%s, %s)", v.Host, v.Controller, v.Endpoint, v.State)
			} else if v.Host != "" {
				ctrl = v.Host
			}
			fmt.Fprintf(w, "  %s at %7.1f s  %-48s %-60s %s\n", v.Migration, v.AtS, ctrl, clip(by, 60), clip(v.Detail, 70))
		}
		fmt.Fprintf(w, "  expectations (incident file):\n")
		for _, b := range r.Bands {
			if !b.Judged {
				continue
			}
			mark := "ok "
			if !b.OK {
				mark = "NO "
			}
			name := b.Expectation.Figure
			if name == "" {
				name = "check " + b.Expectation.Check
			}
			fmt.Fprintf(w, "    %s %-26s got %-20s want %-14s [%s]\n", mark, name, b.Got, b.Expectation.Range(), b.Expectation.Source)
		}
		if r.Shape.OK {
			fmt.Fprintf(w, "  every expectation holds: yes\n")
		} else {
			if !runInconclusive {
				failed = true
			}
			fmt.Fprintf(w, "  every expectation holds: NO\n")
			for _, m := range r.Shape.Missing {
				fmt.Fprintf(w, "    - %s\n", m)
			}
		}
		for _, n := range r.Shape.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		if runInconclusive {
			inconclusive = true
			fmt.Fprintf(w, "  faults: inconclusive: %s\n", r.Figures.FaultsCheck.Detail)
		}
		fmt.Fprintf(w, "  report: %s/%s\n", r.Dir, reports.ReproduceFile)
	}
	if d := analysis.DescribePair(runs(results)); d != nil {
		p := d.Pair
		fmt.Fprintf(w, "\n== fixed against prefix, seed %d: described, not judged (the claim %s is judged over seeds: add --seeds 1-10)\n",
			p.Seed, analysis.CompareFixedLEPrefix)
		fmt.Fprintf(w, "  validation failures      prefix %2d  fixed %2d  D %+d\n", p.Prefix.Total, p.Fixed.Total, p.Fixed.Total-p.Prefix.Total)
		for _, k := range []struct {
			name string
			p, f int
		}{{"loss window", p.Prefix.Loss, p.Fixed.Loss}, {"injected fault", p.Prefix.Fault, p.Fixed.Fault},
			{"leak kinds the fix removes", p.Prefix.Removable, p.Fixed.Removable}, {"every other cause", p.Prefix.Other, p.Fixed.Other}} {
			fmt.Fprintf(w, "    %-26s prefix %2d  fixed %2d  D %+d\n", k.name, k.p, k.f, k.f-k.p)
		}
		if p.Prefix.LossDownstream > 0 || p.Fixed.LossDownstream > 0 {
			fmt.Fprintf(w, "      of which loss window downstream of a removable leak failure: prefix %d  fixed %d\n", p.Prefix.LossDownstream, p.Fixed.LossDownstream)
		}
		if d.PlansDivergeAt != "" {
			fmt.Fprintf(w, "  the runs' migration plans diverge at %s\n", d.PlansDivergeAt)
		}
		for _, x := range d.Differences {
			fmt.Fprintf(w, "  %s failed in %-6s prefix: %-40s fixed: %s\n", x.Migration, x.FailedIn, clip(orDash(x.PrefixCause), 40), orDash(x.FixedCause))
		}
	}
	switch {
	case failed:
		return exitCheckFailed
	case inconclusive:
		return exitInconclusive
	}
	return exitPass
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// opProgress is one operator's progress writer: every line indented by
// two spaces and tag, each Write one write to w; the first Write (or start)
// closes started.
type opProgress struct {
	w       io.Writer
	tag     string
	started chan struct{}
	once    sync.Once
}

func (o *opProgress) start() { o.once.Do(func() { close(o.started) }) }

func (o *opProgress) Write(p []byte) (int, error) {
	o.start()
	s := strings.TrimRight(string(p), "\n")
	pre := "  " + o.tag
	_, err := io.WriteString(o.w, pre+strings.ReplaceAll(s, "\n", "\n"+pre)+"\n")
	return len(p), err
}

// lockedWriter serialises writes to w (the operators' progress).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// listIncidents prints the catalogue: one line per incident.
func listIncidents(stdout, stderr io.Writer, catalog string) int {
	var dirs []string
	if catalog != "" {
		dirs = append(dirs, catalog)
	}
	all, err := incidents.Catalogue(dirs...)
	if err != nil {
		fmt.Fprintf(stderr, "fiomig reproduce: %v\n", err)
		return exitUsage
	}
	for _, inc := range all {
		t, err := inc.World(inc.OperatorList()[0])
		if err != nil {
			fmt.Fprintf(stderr, "fiomig reproduce: %s: %v\n", inc.File, err)
			return exitUsage
		}
		fmt.Fprintf(stdout, "%-22s %d hosts, %d volumes x %d ns, %d migrations, operators %s, %d expectations  (%s)\n",
			inc.Name, t.Hosts, t.Volumes, max(1, t.NamespacesPerVolume), inc.Pacing.Migrations, inc.Operators.Value, len(inc.Expected), inc.File)
	}
	return exitPass
}

func orDash(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// runs are the analysed runs of results.
func runs(results []scenario.ReproduceResult) []analysis.Run {
	out := make([]analysis.Run, len(results))
	for i, r := range results {
		out[i] = r.Run
	}
	return out
}
