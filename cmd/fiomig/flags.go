package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/fiomig/fiomig/harness"
	"github.com/fiomig/fiomig/nvmeof/hostcmd"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func newHostFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet("fiomig "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage)
		fmt.Fprintln(fs.Output(), "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args with fs for run, janitor and the kube commands as
// the host tools parse theirs (hostcmd.ParseFlags: --help to stdout, a bad
// flag in one line with "did you mean"); report and reproduce take
// positional arguments and use parseSubcommand.
var parseFlags = hostcmd.ParseFlags

func fail(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "fiomig %s: %v\n", name, err)
	if harness.IsUsage(err) {
		return exitUsage
	}
	return exitCheckFailed
}

// plural formats n with noun, adding "s" unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// oneLine joins a (possibly joined) error's lines with "; ".
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

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
	fs.SetOutput(io.Discard)
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
	fmt.Fprintf(stderr, "fiomig %s: %v%s (see fiomig %s --help)\n", name, err, hostcmd.FlagHint(fs, err), name)
	return nil, exitUsage, false
}
