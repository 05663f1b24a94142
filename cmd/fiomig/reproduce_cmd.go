package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"

	"github.com/fiomig/fiomig/harness"
	"github.com/fiomig/fiomig/incidents"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

func init() {
	register(command{name: "reproduce", summary: "reproduce a catalogued incident (fiomig reproduce --list) with the prefix and/or fixed operator", run: reproduceCmd})
}

type reproduceFlags struct {
	list     bool
	catalog  string
	operator string
	seed     int64
	seeds    string
	out      string
	faults   string
	// hypotheses runs every combination of the incident's hypotheses over
	// --seeds; hypothesis runs one (its ID).
	hypotheses bool
	hypothesis string
	model      record.Model // the model flags: each given one overrides the incident's world
	farm       harness.FarmOptions
	shard      string // a farm pod's: the farm's settings
}

func (f *reproduceFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.list, "list", false, "list the incident catalogue (name, topology, operators, sources) and exit")
	fs.StringVar(&f.catalog, "catalog", "", "`directory` of more incident files (*.yaml) searched besides the embedded catalogue; NAME may also be a path ending in .yaml")
	fs.StringVar(&f.operator, "operator", "", "operator variant: `prefix`, fixed or both (same seed, side by side); default: the incident file's operators")
	fs.Int64Var(&f.seed, "seed", 1, "`seed` (any int64, negative included) of the simulated world and of the fault schedule; the same seed gives a byte-identical run record")
	fs.StringVar(&f.out, "out", "out", "`directory` under which each operator's run directory fio-mig-<unix seconds>[-N] is created")
	fs.StringVar(&f.seeds, "seeds", "", "run every seed of this list (as fiomig sweep: e.g. 1-10 or 1,5,9-12), one per core, each into OUT/reproduce-NAME-<unix>/seed-N, and write the table seed × operator × validation failures by cause there (reproduce.md); replaces --seed")
	fs.StringVar(&f.faults, "faults", "", "`none` drops the incident's seeded and scheduled faults (plan.json says so): what the sourced model does with no fault at all; default: the incident file's faults")
	fs.BoolVar(&f.hypotheses, "hypotheses", false, "run every combination of the incident file's hypotheses (one alternative per unknown) over --seeds and rank them by how close their symptoms come to the observed ones, the fix judged under each; into OUT/hypotheses-NAME-<unix>/")
	fs.StringVar(&f.hypothesis, "hypothesis", "", "run the world of one combination of the incident file's hypotheses, by its `ID` (H1, H2, ... as --hypotheses names them)")
	harness.ModelFlags(fs, &f.model, "operator")
	harness.RegisterFarmFlags(fs, &f.farm, "each (combination, seed, operator) of --hypotheses", "reproduce.md", true)
	fs.StringVar(&f.shard, "shard", "", "internal, what a farm's pods run: shard $JOB_COMPLETION_INDEX of the farm of these `settings` (JSON), each run's figures a JSON line on stdout")
}

// operators are the variants to run: --operator's, else the incident's.
func (f *reproduceFlags) operators(inc incidents.Incident) []string {
	switch f.operator {
	case "both":
		return []string{record.OperatorPrefix, record.OperatorFixed}
	case "":
		return inc.OperatorList()
	}
	return []string{f.operator}
}

func reproduceCmd(args []string, stdout, stderr io.Writer) int {
	var f reproduceFlags
	fs := flag.NewFlagSet("fiomig reproduce", flag.ContinueOnError)
	f.register(fs)
	pos, code, ok := parseSubcommand("reproduce", helpText("reproduce"), fs, args, stdout, stderr)
	if !ok {
		return code
	}
	usage := func(err error) int { return fail(stderr, "reproduce", usagef("%v", err)) }
	if f.shard != "" {
		return shardMain(stderr, "reproduce", func(ctx context.Context, i int) error { return harness.ReproduceShard(ctx, f.shard, i, f.out, stdout) })
	}
	local, err := f.farm.Local()
	if err != nil {
		return usage(err)
	}
	ctx, stop := interruptContext(stderr, "fiomig reproduce")
	defer stop()
	if f.farm.Attach != "" { // the incident, seeds and flags are the farm's
		res, err := harness.FarmHypotheses(ctx, harness.Reproduction{Out: f.out}, nil, "", f.farm, stderr)
		return seedsDone(stdout, stderr, res.Markdown, res.Report, harness.HypothesesNote, res.Errors, res.ExitCode, err)
	}
	given := harness.Given(fs)
	var dirs []string
	if f.catalog != "" {
		dirs = append(dirs, f.catalog)
	}
	if f.list {
		if len(pos) > 0 {
			return usage(fmt.Errorf("--list lists the whole catalogue and runs nothing; drop %q (or drop --list to reproduce it)", pos[0]))
		}
		all, err := incidents.Catalogue(dirs...)
		if err == nil {
			err = reports.CatalogueText(stdout, all)
		}
		if err != nil {
			return usage(err)
		}
		return exitPass
	}
	check := harness.DefaultSpec() // the model flags given, checked as fiomig run checks them
	check.Params.Model = f.model
	var flags []string
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name != "operator" && harness.IsModelFlag(fl.Name) { // --operator is reproduce's own
			flags = append(flags, "--"+fl.Name+"="+fl.Value.String())
		}
	})
	switch {
	case len(pos) == 0:
		return usage(fmt.Errorf("name the incident, e.g. fiomig reproduce %s (fiomig reproduce --list shows the catalogue)", incidents.Default))
	case len(pos) > 1:
		return usage(fmt.Errorf("unexpected argument %q (one incident only; a boolean flag takes its value as --flag=value, e.g. --target-dnr=false)", pos[1]))
	case f.operator != "" && f.operator != "prefix" && f.operator != "fixed" && f.operator != "both":
		return usage(fmt.Errorf("--operator must be prefix, fixed or both, got %q", f.operator))
	case f.faults != "" && f.faults != record.FaultsNone:
		return usage(fmt.Errorf("--faults must be none (or absent: the incident's faults), got %q", f.faults))
	case given["seed"] && f.seeds != "":
		return usage(fmt.Errorf("--seed is one run's; --seeds runs a list (give one of them)"))
	case f.hypotheses && (f.seeds == "" || f.hypothesis != ""):
		return usage(fmt.Errorf("--hypotheses runs every combination over --seeds (e.g. --seeds 1-10); --hypothesis runs one"))
	case !local && !f.hypotheses:
		return usage(fmt.Errorf("--on kube runs --hypotheses (every other reproduce runs here)"))
	}
	if err := check.Validate(); err != nil {
		return usage(err)
	}
	if err := harness.CheckOut(f.out); err != nil { // as fiomig run: before any work
		return usage(err)
	}
	inc, err := harness.LoadIncident(pos[0], dirs...)
	if err != nil {
		return usage(err)
	}
	r := harness.Reproduction{Incident: inc, Name: pos[0], Catalog: f.catalog, Operators: f.operators(inc), Flags: flags,
		NoFaults: f.faults == record.FaultsNone, Out: f.out}
	if f.hypothesis != "" || f.hypotheses {
		if err := r.CheckHypotheses(); err != nil {
			return usage(err)
		}
	}
	if f.hypothesis != "" {
		c, err := harness.Combination(inc, f.hypothesis)
		if err != nil {
			return usage(err)
		}
		r.Incident, r.Hypothesis = c.Incident, c.ID
		fmt.Fprintf(stdout, "hypothesis %s: %s\n", c.ID, c.Label())
	}
	fmt.Fprintf(stdout, "%s: %s\n\n", inc.Name, inc.Summary)
	if f.seeds != "" {
		seeds, err := harness.ParseSeeds(f.seeds)
		if err != nil {
			return usage(err)
		}
		op := "--operator=" + orDefault(f.operator, inc.Operators.Value)
		if !f.hypotheses {
			jobs := min(runtime.GOMAXPROCS(0), len(seeds))
			fmt.Fprintf(stdout, "fiomig reproduce %s: %d seeds × %v, %d at a time, into %s\n", inc.Name, len(seeds), r.Operators, jobs, f.out)
			res, err := harness.ReproduceSeeds(ctx, r, seeds, jobs, r.CommandWith(op, "--seeds="+f.seeds), stderr)
			return seedsDone(stdout, stderr, res.Markdown, res.Report, "", res.Errors, res.ExitCode, err)
		}
		command, res := r.CommandWith("--hypotheses=true", op, "--seeds="+f.seeds), harness.HypothesesResult{}
		if local {
			jobs := min(runtime.GOMAXPROCS(0), len(seeds)*len(inc.Combinations()))
			fmt.Fprintf(stdout, "fiomig reproduce %s --hypotheses: %d combinations × %d seeds × %v, %d at a time, into %s\n",
				inc.Name, len(inc.Combinations()), len(seeds), r.Operators, jobs, f.out)
			res, err = harness.Hypotheses(ctx, r, seeds, jobs, command, stderr)
		} else {
			f.farm.Command = harness.CommandLine("fiomig reproduce "+pos[0], harness.ChangedFlags(fs, "out"))
			res, err = harness.FarmHypotheses(ctx, r, seeds, command, f.farm, stderr)
		}
		return seedsDone(stdout, stderr, res.Markdown, res.Report, harness.HypothesesNote, res.Errors, res.ExitCode, err)
	}

	fmt.Fprintf(stdout, "fiomig reproduce %s (%s), seed %d; every parameter in each run's plan.json\n", inc.Name, inc.File, f.seed)
	scenarioLine, err := r.Describe()
	if err != nil {
		return usage(err)
	}
	fmt.Fprintf(stdout, "  scenario: %s\n", scenarioLine)
	for _, op := range r.Operators {
		fmt.Fprintf(stdout, "\n== operator %s: %s\n", op, r.Command(op, f.seed))
	}
	results, err := harness.Reproduce(ctx, r, f.seed, stdout)
	dirs = dirs[:0]
	for i, x := range results {
		dirs = append(dirs, x.Dir)
		if x.Interrupted {
			fmt.Fprintf(stderr, "fiomig reproduce: %s interrupted; the timeline recorded so far is in %s\n", r.Operators[i], x.Dir)
			code = exitInterrupted
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "fiomig reproduce: %v\n", err)
		return exitUsage
	}
	if code == exitInterrupted {
		return code
	}
	for i, x := range results {
		fmt.Fprintf(stdout, "\n== operator %s done\n", r.Operators[i])
		for _, e := range x.FaultErrors {
			fmt.Fprintf(stdout, "  fault: %v\n", e)
		}
		fmt.Fprintf(stdout, "  run directory: %s\n", x.Dir)
	}
	reports.ReproduceText(stdout, inc.Name, r.Model(), harness.Runs(results), dirs)
	return harness.BandsExitCode(harness.Runs(results))
}

// seedsDone prints how a reproduction over seeds ended — its errors, its
// report (md, at report) and note — and returns its exit code (2 when err).
func seedsDone(stdout, stderr io.Writer, md []byte, report, note string, errs []error, code int, err error) int {
	for _, e := range errs {
		fmt.Fprintf(stderr, "fiomig reproduce: %v\n", e)
	}
	if err != nil {
		return fail(stderr, "reproduce", usagef("%v", err))
	}
	fmt.Fprintf(stdout, "\n%s\nreport: %s\n%s", md, report, note)
	if code == exitInterrupted {
		fmt.Fprintf(stderr, "fiomig reproduce: interrupted; %s covers the seeds that finished\n", report)
	}
	return code
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
