package main

import (
	"io"

	"github.com/fiomig/fiomig/nvmeof/hostcmd"
)

// The host tools (hosts, inspect, release, reap) live in nvmeof/hostcmd,
// shared with the lean binary cmd/fiomig-host; fiomig runs them in-process
// under its own name.
func init() {
	for _, c := range hostcmd.Commands {
		name := c.Name
		register(command{name: name, summary: c.Summary, run: func(args []string, stdout, stderr io.Writer) int {
			return hostcmd.Run("fiomig", append([]string{name}, args...), stdout, stderr)
		}})
	}
}
