package main

import (
	"context"
	"flag"
	"io"
	"os"
	"strings"

	"github.com/fiomig/fiomig/history"
)

func init() {
	register(command{name: "history", summary: "nightly results: add runs to a history store, trend, flakes, change points", run: historyCmd})
}

func historyCmd(args []string, stdout, stderr io.Writer) int {
	s := history.DefaultSpec(os.Getenv)
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	history.RegisterFlags(fs, &s)
	s.Verb, args = history.SplitVerb(args)
	pos, code, ok := parseSubcommand("history", helpText("history"), fs, args, stdout, stderr)
	if !ok {
		return code
	}
	s.Dirs = pos
	if err := history.Run(context.Background(), s, stdout, os.Getenv); err != nil {
		return fail(stderr, strings.TrimSpace("history "+s.Verb), usagef("%v", err))
	}
	return exitPass
}
