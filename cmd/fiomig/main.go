package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/fiomig/fiomig/harness"
	"github.com/fiomig/fiomig/nvmeof/hostcmd"
)

// Exit codes of fiomig: harness's, the one verdict→exit-code mapping.
const (
	exitPass         = harness.ExitPass
	exitCheckFailed  = harness.ExitFail
	exitUsage        = harness.ExitUsage
	exitInconclusive = harness.ExitInconclusive
	exitInterrupted  = harness.ExitInterrupted
)

// command is one subcommand. Each lives in its own file and registers itself
// in init with register.
type command struct {
	name    string
	summary string // one line for the command list
	// run executes the command with its arguments (after the subcommand
	// name) and returns the process exit code.
	run func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("fiomig: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// usagef is an error caused by bad flags or input (exit 2).
func usagef(format string, a ...any) error { return harness.Usagef(format, a...) }

func printUsage(w io.Writer) {
	head, tail, _ := strings.Cut(helpText("fiomig"), "{{commands}}\n")
	fmt.Fprint(w, head)
	for _, n := range slices.Sorted(maps.Keys(commands)) {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, tail)
}

// version is the release name, set at link time
// (-ldflags "-X main.version=v1.2.3"); "devel" otherwise.
var version = "devel"

func main() {
	tuneGC()
	args, stopProfiles, err := startProfiles(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "fiomig: %v\n", err)
		os.Exit(exitUsage)
	}
	code := dispatch(args, os.Stdout, os.Stderr)
	if err := stopProfiles(); err != nil {
		fmt.Fprintf(os.Stderr, "fiomig: %v\n", err)
		if code == exitPass {
			code = exitUsage
		}
	}
	os.Exit(code)
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "--version", "-version", "version":
		fmt.Fprintln(stdout, hostcmd.VersionString("fiomig", version))
		return exitPass
	case "-h", "--help", "help":
		if args[0] == "help" && len(args) > 1 {
			// "fiomig help X" is "fiomig X --help".
			return dispatch([]string{args[1], "--help"}, stdout, stderr)
		}
		printUsage(stdout)
		return exitPass
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "fiomig: unknown command %q%s\n\n", args[0], hostcmd.DidYouMean(args[0], slices.Sorted(maps.Keys(commands)), ""))
		printUsage(stderr)
		return exitUsage
	}
	return c.run(args[1:], stdout, stderr)
}
