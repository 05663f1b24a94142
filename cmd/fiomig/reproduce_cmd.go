package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/scenario"
)

func init() {
	register(command{name: "reproduce", summary: "reproduce incident " + scenario.IncidentID + " with the prefix and/or fixed operator", run: reproduceCmd})
}

type reproduceFlags struct {
	operator       string
	seed           int64
	out            string
	reconnectReset string
	kernelDNR      string
	targetDNR      bool
}

func (f *reproduceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.operator, "operator", "both", "operator variant: `prefix`, fixed or both (same seed, side by side)")
	fs.Int64Var(&f.seed, "seed", 1, "`seed` (any int64, negative included) of the simulated world and of the fault schedule; the same seed gives a byte-identical run record")
	fs.StringVar(&f.out, "out", "out", "`directory` under which each operator's run directory fio-mig-<unix seconds>[-N] is created")
	fs.StringVar(&f.reconnectReset, "reconnect-reset", "full", "kernel reconnect counter reset: `full` (upstream: after a successful reconnect) or partial (also after a rejected CONNECT, as field reports say some kernels do)")
	fs.StringVar(&f.kernelDNR, "kernel-dnr", "honor", "kernel handling of a CONNECT rejected with DNR: `honor` (stop reconnecting) or ignore")
	fs.BoolVar(&f.targetDNR, "target-dnr", false, "targets set DNR on rejected CONNECTs (SPDK's reply does not)")
}

func (f *reproduceFlags) validate() error {
	switch {
	case f.operator != "prefix" && f.operator != "fixed" && f.operator != "both":
		return usagef("--operator must be prefix, fixed or both, got %q", f.operator)
	case f.reconnectReset != "full" && f.reconnectReset != "partial":
		return usagef("--reconnect-reset must be full or partial, got %q", f.reconnectReset)
	case f.kernelDNR != "honor" && f.kernelDNR != "ignore":
		return usagef("--kernel-dnr must be honor or ignore, got %q", f.kernelDNR)
	case f.out == "":
		return usagef("--out must name a directory")
	}
	return nil
}

func (f *reproduceFlags) operators() []string {
	if f.operator == "both" {
		return []string{"prefix", "fixed"}
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
		fmt.Fprintf(fs.Output(), `Usage: fiomig reproduce %[1]s [flags]

Reproduces incident %[1]s on the embedded simulator: 3 hosts that are also
the 3 storage nodes, 10 volumes with one modelled fio pod each, 23 migrations
one at a time (sampled every 0.1 s), then 2.5 h of settle sampled every 10 s,
with a fault schedule drawn from --seed (two faults during early validations:
a storage-node restart or dropped CONNECTs) written to plan.json as executed.

For each operator variant it writes a normal run directory (plan.json,
timeline.jsonl, summary.json, report.md, ...) plus reproduce.md, and prints
side by side: migrations failed on path validation (and how many because of
controllers leaked by earlier migrations), controllers per host at the end
against expected, leaked controllers (connecting, or live with no
namespace), target CONNECT rejections per minute at the end, pods killed and
the longest pause; then, for each migration that failed validation, the
controller that failed it and the migration that leaked it.

Expected shapes (issue 4): prefix shows the cascade — at least half of the
migrations fail path validation, most because of earlier leaks, 10 to 30
leaked controllers at the end, 50 to 400 CONNECT rejections/min; fixed shows
no leaked controller and no leak-caused failure. A missing shape is explained
(which kernel switch or mechanism it needs); parameters are never fitted.

Exit codes: 0 every operator shows its expected shape and every scheduled
fault left evidence; 1 an operator whose faults all left evidence does not
show its shape (a real failure outranks an inconclusive run of the other
operator); 3 no such failure, but in some operator's run a scheduled fault
left no evidence (faults-landed inconclusive: that run proves nothing, its
shape "yes" or "NO" either way); 2 bad usage; 130 interrupted.

--seed is any int64, negative and zero included: the simulated world
(math/rand.NewSource) and the fault schedule (math/rand/v2 PCG) are seeded
with it, both well defined for every int64, and the same seed gives a
byte-identical run record. math/rand reduces the world's seed modulo
2^31-1, so seeds congruent modulo 2^31-1 share a world (not a schedule).

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
	switch {
	case len(pos) == 0:
		fmt.Fprintf(stderr, "fiomig reproduce: name the incident: fiomig reproduce %s (see --help)\n", scenario.IncidentID)
		return exitUsage
	case len(pos) > 1:
		fmt.Fprintf(stderr, "fiomig reproduce: unexpected argument %q (one incident only; a boolean flag takes its value as --flag=value, e.g. --target-dnr=false)\n", pos[1])
		return exitUsage
	case pos[0] != scenario.IncidentID:
		fmt.Fprintf(stderr, "fiomig reproduce: unknown incident %q (known: %s)\n", pos[0], scenario.IncidentID)
		return exitUsage
	}
	if err := f.validate(); err != nil {
		fmt.Fprintf(stderr, "fiomig reproduce: %v\n", err)
		return exitUsage
	}

	fmt.Fprintf(stdout, "fiomig reproduce %s — parameters:\n", scenario.IncidentID)
	fs.VisitAll(func(fl *flag.Flag) { fmt.Fprintf(stdout, "  --%-16s %s\n", fl.Name, fl.Value.String()) })
	p := scenario.IncidentParams()
	fmt.Fprintf(stdout, "  scenario: %d hosts = storage nodes, %d volumes (one fio pod each, tolerance 5 s), %d migrations, settle %.0f s sampled every %.0f s\n",
		p.Hosts, p.Volumes, p.Migrations, p.SettleS, p.SettleSampleIntervalS)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now().Unix()
	var results []scenario.ReproduceResult
	for _, op := range f.operators() {
		cmdline := fmt.Sprintf("fiomig reproduce %s --operator=%s --seed=%d --reconnect-reset=%s --kernel-dnr=%s --target-dnr=%t",
			scenario.IncidentID, op, f.seed, f.reconnectReset, f.kernelDNR, f.targetDNR)
		fmt.Fprintf(stdout, "\n== operator %s: %s\n", op, cmdline)
		r, err := scenario.Reproduce(ctx, scenario.ReproduceOptions{Seed: f.seed, Operator: op,
			ReconnectReset: f.reconnectReset, KernelDNR: f.kernelDNR, TargetDNR: f.targetDNR,
			Command: cmdline, OutDir: f.out, StartUnix: start, Progress: indent{stdout}})
		if err != nil {
			fmt.Fprintf(stderr, "fiomig reproduce: %s: %v\n", op, err)
			if r.Dir != "" {
				fmt.Fprintf(stderr, "fiomig reproduce: what was recorded is in %s\n", r.Dir)
			}
			return exitUsage
		}
		if r.Interrupted {
			fmt.Fprintf(stderr, "fiomig reproduce: interrupted; the timeline recorded so far is in %s\n", r.Dir)
			return exitInterrupted
		}
		for _, e := range r.FaultErrors {
			fmt.Fprintf(stdout, "  fault: %v\n", e)
		}
		fmt.Fprintf(stdout, "  run directory: %s\n", r.Dir)
		results = append(results, r)
	}
	// Every run's reproduce.md shows all operators side by side.
	for _, r := range results {
		if err := scenario.WriteReproduceReport(r, results); err != nil {
			fmt.Fprintf(stderr, "fiomig reproduce: %v\n", err)
			return exitUsage
		}
	}
	return printReproduction(stdout, results)
}

// printReproduction prints the side-by-side table, each run's validation
// failures and shape, and maps the shapes to the exit code.
func printReproduction(w io.Writer, results []scenario.ReproduceResult) int {
	var figs []scenario.IncidentFigures
	var shapes []scenario.Shape
	for _, r := range results {
		figs = append(figs, r.Figures)
		shapes = append(shapes, r.Shape)
	}
	fmt.Fprintf(w, "\n== %s, seed %d, side by side\n", scenario.IncidentID, results[0].Figures.Seed)
	scenario.WriteIncidentTable(w, figs, shapes)
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
			ctrl := "-"
			if v.Controller != "" {
				ctrl = fmt.Sprintf("%s %s (%s, %s)", v.Host, v.Controller, v.Endpoint, v.State)
			} else if v.Host != "" {
				ctrl = v.Host
			}
			fmt.Fprintf(w, "  %s at %7.1f s  %-48s %-26s %s\n", v.Migration, v.AtS, ctrl, by, clip(v.Detail, 90))
		}
		if r.Shape.OK {
			fmt.Fprintf(w, "  expected shape: yes\n")
		} else {
			if !runInconclusive {
				failed = true
			}
			fmt.Fprintf(w, "  expected shape: NO\n")
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
		fmt.Fprintf(w, "  report: %s/%s\n", r.Dir, scenario.ReproduceReportFile)
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

// indent prefixes every line written with two spaces.
type indent struct{ w io.Writer }

func (i indent) Write(p []byte) (int, error) {
	s := strings.TrimRight(string(p), "\n")
	_, err := io.WriteString(i.w, "  "+strings.ReplaceAll(s, "\n", "\n  ")+"\n")
	return len(p), err
}
