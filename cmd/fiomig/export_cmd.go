package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/fiomig/fiomig/harness"
	"github.com/fiomig/fiomig/reports"
)

func init() {
	register(command{
		name:    "export",
		summary: "write a run's record in another tool's format (the seed harness's ana/<migration>.csv)",
		run:     runExport,
	})
}

func runExport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	format := fs.String("format", "seed-csv", "output format: seed-csv (the only one)")
	out := fs.String("out", "", "`directory` to write into (created when missing)")
	pos, code, ok := parseSubcommand("export", helpText("export"), fs, args, stdout, stderr)
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
	files, warning, err := harness.ExportSeedCSV(pos[0], *out)
	if warning != "" {
		fmt.Fprintf(stderr, "fiomig export: warning: %s\n", warning)
	}
	if err != nil {
		return fail(stderr, "export", err)
	}
	fmt.Fprintf(stdout, "wrote %d file(s) to %s\n", len(files), filepath.Join(*out, reports.SeedCSVDir))
	return exitPass
}
