package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
)

// startProfiles takes the profile options that come before the command
// (--cpuprofile FILE, --memprofile FILE, also as --flag=FILE or with one
// dash), starts the CPU profile, and returns the remaining arguments and a
// function that stops the CPU profile and writes the heap profile (after a
// garbage collection, so it shows live memory). A profile file that cannot
// be created is an error naming it. Profiles are read with go tool pprof.
func startProfiles(args []string) (rest []string, stop func() error, err error) {
	var cpuFile, memFile string
	for len(args) > 0 {
		name, val, hasVal := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		if !strings.HasPrefix(args[0], "-") || (name != "cpuprofile" && name != "memprofile") {
			break
		}
		if !hasVal {
			if len(args) < 2 {
				return nil, nil, fmt.Errorf("--%s needs a file name", name)
			}
			val, args = args[1], args[1:]
		}
		args = args[1:]
		if val == "" {
			return nil, nil, fmt.Errorf("--%s needs a file name", name)
		}
		if name == "cpuprofile" {
			cpuFile = val
		} else {
			memFile = val
		}
	}
	var cpu *os.File
	if cpuFile != "" {
		if cpu, err = os.Create(cpuFile); err != nil {
			return nil, nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, nil, fmt.Errorf("--cpuprofile %s: %w", cpuFile, err)
		}
	}
	stop = func() error {
		var errs []error
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				errs = append(errs, fmt.Errorf("--cpuprofile: %w", err))
			}
		}
		if memFile != "" {
			runtime.GC()
			f, err := os.Create(memFile)
			if err != nil {
				return errors.Join(append(errs, fmt.Errorf("--memprofile: %w", err))...)
			}
			if err := pprof.WriteHeapProfile(f); err != nil {
				errs = append(errs, fmt.Errorf("--memprofile %s: %w", memFile, err))
			}
			if err := f.Close(); err != nil {
				errs = append(errs, fmt.Errorf("--memprofile: %w", err))
			}
		}
		return errors.Join(errs...)
	}
	return args, stop, nil
}

// gcPercent and gcMemoryLimit tune the garbage collector of the fiomig
// process when the environment does not (GOGC, GOMEMLIMIT): a run
// allocates far more than it keeps (timeline lines encoded and dropped,
// sysfs trees rebuilt), so collecting at 4× the live heap instead of 2×
// saves about a quarter of reproduce's CPU for about twice its peak memory
// (~250 MB a run); the soft limit makes the collector work harder before
// the heap passes 2 GiB.
const (
	gcPercent     = 400
	gcMemoryLimit = 2 << 30
)

func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(gcMemoryLimit)
	}
}
