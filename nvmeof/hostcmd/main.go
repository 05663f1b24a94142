package hostcmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"strings"
)

// Exit codes of the host tools (the same as fiomig's: 0 pass, 1 a check
// failed, 2 bad usage or input).
const (
	exitPass        = 0
	exitCheckFailed = 1
	exitUsage       = 2
)

// Command is one host tool: its name, a one-line summary for a command
// list, and its implementation.
type Command struct {
	Name    string
	Summary string
	run     func(prog string, args []string, stdout, stderr io.Writer) int
}

// Commands are the host tools in the order their list prints them.
var Commands = []Command{
	{"hosts", "list a host's NVMe-oF subsystems, controllers, paths and ANA states (live /sys or a capture)", hostsCmd},
	{"inspect", "report what is wrong with a host's NVMe-oF subsystems (live /sys or a capture)", inspectCmd},
	{"release", "tear down a migration's paths that serve nothing (the operator's release Job)", releaseCmd},
	{"reap", "tear down live controllers that serve no namespace", reapCmd},
}

// Run runs the host tool named by args[0] with the rest of args and returns
// its exit code: 0 pass, 1 a defect or a failed disconnect, 2 bad usage or
// input (also an unknown tool name). prog is the program name its messages
// and usage use ("fiomig" when fiomig delegates, "fiomig-host" for the lean
// binary).
func Run(prog string, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		for _, c := range Commands {
			if c.Name == args[0] {
				return c.run(prog, args[1:], stdout, stderr)
			}
		}
	}
	what := "no command"
	if len(args) > 0 {
		what = fmt.Sprintf("unknown command %q", args[0])
	}
	fmt.Fprintf(stderr, "%s: %s\n\n", prog, what)
	printUsage(prog, stderr)
	return exitUsage
}

// Main is the whole of a lean host-tools binary: --version/version, -h,
// --help, help [COMMAND], or a host tool (Run). release is the build's
// release name (set at link time, "devel" otherwise).
func Main(prog, release string, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(prog, stderr)
		return exitUsage
	}
	switch args[0] {
	case "--version", "-version", "version":
		fmt.Fprintln(stdout, VersionString(prog, release))
		return exitPass
	case "-h", "--help", "help":
		if args[0] == "help" && len(args) > 1 {
			return Run(prog, []string{args[1], "--help"}, stdout, stderr)
		}
		printUsage(prog, stdout)
		return exitPass
	}
	return Run(prog, args, stdout, stderr)
}

func printUsage(prog string, w io.Writer) {
	fmt.Fprintf(w, "%s — fiomig's host tools: judge and repair one host's kernel NVMe-oF state.\n\n", prog)
	fmt.Fprintf(w, "Usage: %s <command> [flags]\n\nCommands:\n", prog)
	for _, c := range Commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintf(w, `
Run "%[1]s <command> --help" or "%[1]s help <command>" for a command's flags,
"%[1]s --version" for the build.
Exit codes: 0 pass, 1 a defect was found or a disconnect failed, 2 bad usage or input.
`, prog)
}

// VersionString is "<prog> <release> (<vcs revision>[, modified], <commit
// time>, <go version>)", from the build information the go command embeds
// (runtime/debug.ReadBuildInfo); parts it lacks are left out.
func VersionString(prog, release string) string {
	parts := []string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		set := map[string]string{}
		for _, s := range bi.Settings {
			set[s.Key] = s.Value
		}
		if r := set["vcs.revision"]; r != "" {
			if len(r) > 12 {
				r = r[:12]
			}
			if set["vcs.modified"] == "true" {
				r += ", modified"
			}
			parts = append(parts, r)
		}
		if t := set["vcs.time"]; t != "" {
			parts = append(parts, t)
		}
		parts = append(parts, bi.GoVersion)
	}
	return fmt.Sprintf("%s %s (%s)", prog, release, strings.Join(parts, ", "))
}

// usageError marks an error caused by bad flags or input (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// fail prints err for command name and maps it to its exit code.
func fail(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	if isUsage(err) {
		return exitUsage
	}
	return exitCheckFailed
}

// newFlagSet is the flag set of command name ("fiomig inspect"); its usage
// prints usage with PROG replaced by prog, then the flags.
func newFlagSet(prog, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(prog+" "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), strings.ReplaceAll(usage, "PROG", prog))
		fmt.Fprintln(fs.Output(), "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// ParseFlags parses args with fs, for the host tools and fiomig's verbs
// alike: --help (-h) prints fs.Usage to stdout (exit 0); a bad flag or a
// stray argument is one line on stderr pointing at --help (exit 2), a
// mistyped flag with the nearest one (FlagHint). stop is true when the
// command should return code now. fs's output is left as it was.
func ParseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, stop bool) {
	out := fs.Output()
	defer fs.SetOutput(out)
	fs.SetOutput(io.Discard) // the flag package would print the whole usage on an error
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return exitPass, true
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v%s (see %s --help)\n", fs.Name(), err, FlagHint(fs, err), fs.Name())
		return exitUsage, true
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "%s: unexpected argument %q (flags only; see %s --help)\n", fs.Name(), fs.Arg(0), fs.Name())
		return exitUsage, true
	}
	return 0, false
}

// FlagHint is "; did you mean --NAME?" when err is the flag package's
// "flag provided but not defined" for a name within two edits (insert,
// delete, substitute) of one of fs's flags, the nearest (the first in
// order on a tie); "; did you mean --NAMEs VALUE?" when it is an invalid
// value for -NAME and fs also has --NAMEs (sweep --seed 1-3 for --seeds);
// and "" otherwise.
func FlagHint(fs *flag.FlagSet, err error) string {
	const undefined = "flag provided but not defined: "
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if m := invalidValue.FindStringSubmatch(msg); m != nil && fs.Lookup(m[2]+"s") != nil {
		return fmt.Sprintf("; did you mean --%ss %s?", m[2], m[1])
	}
	if !strings.HasPrefix(msg, undefined) {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return DidYouMean(strings.TrimLeft(strings.TrimPrefix(msg, undefined), "-"), names, "--")
}

// invalidValue matches the flag package's error for a value that does not
// parse: the value and the flag's name.
var invalidValue = regexp.MustCompile(`^invalid value "(.*)" for flag -([\w-]+):`)

// DidYouMean is "; did you mean PREFIX+NAME?" for the name of names
// within two edits (insert, delete, substitute) of typed and fewer edits
// than its length, the nearest (the first in order on a tie) — what a
// mistyped flag or verb most likely meant — and "" when none is.
func DidYouMean(typed string, names []string, prefix string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(typed, n); d < bestD && d < len(n) {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean " + prefix + best + "?"
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(b)]
}

// flagGiven reports whether flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// plural formats n with noun, adding "s" unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// listSome joins up to 8 names, saying how many more there are; "none"
// when there are none.
func listSome(names []string) string {
	const show = 8
	switch {
	case len(names) == 0:
		return "none"
	case len(names) > show:
		return fmt.Sprintf("%s and %d more", strings.Join(names[:show], ", "), len(names)-show)
	}
	return strings.Join(names, ", ")
}
