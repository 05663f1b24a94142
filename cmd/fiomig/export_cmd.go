package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/fiomig/fiomig/checks"
	"github.com/fiomig/fiomig/record"
	"github.com/fiomig/fiomig/reports"
)

func init() {
	register(command{
		name:    "export",
		summary: "write a run's record in another tool's format (the seed harness's ana/<migration>.csv)",
		run:     runExport,
	})
}

const exportHelp = `Usage: fiomig export [flags] <run-dir> --format seed-csv --out DIR

Writes a stored run's ANA samples in the format of another tool, so that a
team can feed fiomig's timelines to the tools it already has. Formats:

  seed-csv   DIR/ana/<migration>.csv, the seed harness's (simplyblock
             operator test/fio_migration_test.py) per-migration ANA sample
             file with the header ts,node,phase,address,role,ctrl_state,nsid,ana_state:
             one row per sample, controller of the migrated subsystem and
             path leg of every consumer host, from the migration's first
             phase line to its terminal phase plus the attribution margin
             (longer when a pause window attributed to it ends later). ts is
             seconds since run start; role is source/target by ip:port. A
             sample with no controller of the subsystem is one row with
             empty address (the seed's sampler would print nothing).

The run is judged from plan.json and timeline.jsonl (as fiomig report does)
to know which pause windows belong to which migration; nothing in the run
directory is changed.

Exit codes: 0 written, 2 bad usage or input.

Flags:`

func runExport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	format := fs.String("format", "", "output format: seed-csv")
	out := fs.String("out", "", "`directory` to write into (created when missing)")
	pos, code, ok := parseSubcommand("export", exportHelp, fs, args, stdout, stderr)
	if !ok {
		return code
	}
	switch {
	case len(pos) != 1:
		fmt.Fprintf(stderr, "fiomig export: want exactly one run directory, got %d argument(s) (see fiomig export --help)\n", len(pos))
		return exitUsage
	case *format != "seed-csv":
		fmt.Fprintf(stderr, "fiomig export: --format must be seed-csv, got %q (see fiomig export --help)\n", *format)
		return exitUsage
	case *out == "":
		fmt.Fprintln(stderr, "fiomig export: --out DIR is required (see fiomig export --help)")
		return exitUsage
	}
	dir := pos[0]
	plan, err := record.ReadPlan(filepath.Join(dir, record.PlanFile))
	if err != nil {
		fmt.Fprintf(stderr, "fiomig export: %v\n", err)
		return exitUsage
	}
	// Per-tick states (either format version), every line kept: the seed
	// CSV export reads the whole record.
	var lines []record.Line
	n, err := scanTimeline(filepath.Join(dir, record.TimelineFile), plan, func(l record.Line) error {
		lines = append(lines, l)
		return nil
	})
	switch {
	case errors.Is(err, record.ErrTruncated):
		fmt.Fprintf(stderr, "fiomig export: warning: %v; exporting the %d complete line(s) before it\n", err, n)
	case err != nil:
		fmt.Fprintf(stderr, "fiomig export: %v\n", err)
		return exitUsage
	}
	sum := checks.Evaluate(plan, lines)
	files, err := reports.WriteSeedCSV(*out, plan, sum, lines)
	if err != nil {
		fmt.Fprintf(stderr, "fiomig export: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "wrote %d file(s) to %s\n", len(files), filepath.Join(*out, reports.SeedCSVDir))
	return exitPass
}
