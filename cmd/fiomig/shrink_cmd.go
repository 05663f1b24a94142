package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/fiomig/fiomig/harness"
)

func init() {
	register(command{name: "shrink", summary: "remove faults and migrations from a failing run's schedule while the same check still fails", run: shrinkCmd})
}

func shrinkCmd(args []string, stdout, stderr io.Writer) int {
	var o harness.ShrinkOptions
	fs := flag.NewFlagSet("fiomig shrink", flag.ContinueOnError)
	fs.StringVar(&o.Check, "check", "", "the failing `check` to keep failing (default: the run's first failing check, in summary.json order)")
	fs.StringVar(&o.Out, "out", "", "`directory` under which shrink-<run directory name>[-N]/ is created (default: the run directory's parent)")
	pos, code, ok := parseSubcommand("shrink", helpText("shrink"), fs, args, stdout, stderr)
	if !ok {
		return code
	}
	switch len(pos) {
	case 0:
		return fail(stderr, "shrink", usagef("name the failing run directory: fiomig shrink RUNDIR (see --help)"))
	case 1:
	default:
		return fail(stderr, "shrink", usagef("unexpected argument %q (one run directory only)", pos[1]))
	}
	// A signal between reruns ends the shrink in order (shrink.json and
	// the smallest failing schedule so far are written).
	ctx, stop := interruptContext(stderr, "fiomig shrink")
	defer stop()
	o.Log = stderr
	o.Started = func(r harness.ShrinkResult) {
		fmt.Fprintf(stdout, "fiomig shrink %s: check %s, %d migrations, %d faults; into %s\n", pos[0], r.Check, r.OriginalMigrations, r.OriginalFaults, r.Dir)
	}
	res, err := harness.Shrink(ctx, pos[0], o)
	record := filepath.Join(res.Dir, harness.ShrinkRecord)
	switch {
	case errors.Is(err, harness.ErrNotReproduced):
		fmt.Fprintf(stderr, "fiomig shrink: %s's executed schedule, rerun, does not fail %s again: not reproducible, nothing to shrink (steps in %s)\n", pos[0], res.Check, record)
		return exitCheckFailed
	case errors.Is(err, harness.ErrNotDeterministic):
		fmt.Fprintf(stderr, "fiomig shrink: the minimal schedule failed %s once and not when rerun: the run is not deterministic\n", res.Check)
		return exitCheckFailed
	case err != nil:
		return fail(stderr, "shrink", usagef("%v", err))
	}
	if res.Interrupted {
		fmt.Fprintf(stderr, "fiomig shrink: interrupted; the smallest failing schedule so far (%d migrations, %d faults) is written, not known to be minimal\n", res.Migrations, res.Faults)
	}
	fmt.Fprintf(stdout, "minimal: %d of %d migrations, %d of %d faults still fail %s (%d reruns)\n",
		res.Migrations, res.OriginalMigrations, res.Faults, res.OriginalFaults, res.Check, len(res.Steps))
	for _, x := range res.Schedule {
		fmt.Fprintf(stdout, "  fault: %s\n", harness.DescribeFault(x))
	}
	if res.Detail != "" {
		fmt.Fprintf(stdout, "check:   %s: %s\n", res.Check, res.Detail)
	}
	fmt.Fprintf(stdout, "faults:  %s\nrerun:   %s\n", filepath.Join(res.Dir, harness.ShrinkFaultFile), res.Command)
	if res.Interrupted {
		return exitInterrupted
	}
	return exitPass
}
