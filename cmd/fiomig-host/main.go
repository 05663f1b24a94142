package main

import (
	"os"

	"github.com/fiomig/fiomig/nvmeof/hostcmd"
)

// version is the release name, set at link time
// (-ldflags "-X main.version=v1.2.3"); "devel" otherwise.
var version = "devel"

func main() {
	os.Exit(hostcmd.Main("fiomig-host", version, os.Args[1:], os.Stdout, os.Stderr))
}
