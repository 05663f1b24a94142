package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/fiomig/fiomig/workload"
)

func init() {
	register(command{name: "janitor", summary: "remove what a killed fiomig left: fio processes, FUSE mounts, temporary directories", run: janitorCmd})
}

// KubeJanitor is the Kubernetes part of "fiomig janitor": it removes what
// dead runs labelled with their run id left in the cluster of kubeconfig
// (docs/kube.md "Nothing left behind"), prints one line per object removed on stdout
// and returns them. KubeJanitorFlags, when set, registers the part's own
// flags (namespace, staleness, ...) on janitor's flag set; janitor owns
// --kubeconfig and runs the part only when it is given. kube_janitor_cmd.go
// sets both to backend/kube's Janitor; without it (nil) --kubeconfig is
// refused. This file does not import backend/kube.
var (
	KubeJanitor      func(ctx context.Context, kubeconfig string, dryRun bool, stdout io.Writer) ([]string, error)
	KubeJanitorFlags func(fs *flag.FlagSet)
)

func janitorCmd(args []string, stdout, stderr io.Writer) int {
	var outs stringList
	var dryRun bool
	var output, kubeconfig string
	fs := newHostFlagSet("janitor", helpText("janitor"))
	fs.Var(&outs, "out", "`directory` to search for run ledgers (repeatable; default out)")
	fs.BoolVar(&dryRun, "dry-run", false, "print what would be removed; touch nothing")
	fs.StringVar(&output, "o", "table", "output `format`: table or json")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "also remove the runs' Kubernetes objects in this cluster (`FILE`; kube backend builds only)")
	if KubeJanitorFlags != nil {
		KubeJanitorFlags(fs)
	}
	if code, stop := parseFlags(fs, args, stdout, stderr); stop {
		return code
	}
	if output != "table" && output != "json" {
		return fail(stderr, "janitor", usagef("-o must be table or json, got %q", output))
	}
	if kubeconfig != "" && KubeJanitor == nil {
		return fail(stderr, "janitor", usagef("--kubeconfig: this build of fiomig has no Kubernetes janitor (the kube backend is not wired in)"))
	}
	if len(outs) == 0 {
		outs = stringList{"out"}
	}
	rep, err := workload.Janitor(workload.JanitorOptions{Roots: outs, DryRun: dryRun})
	if err != nil {
		return fail(stderr, "janitor", usagef("%v", err))
	}
	code := exitPass
	var kube []string
	if kubeconfig != "" {
		ctx, stop := interruptContext(stderr, "fiomig janitor")
		w := stdout
		if output == "json" {
			w = io.Discard // the lines go into the JSON document
		}
		kube, err = KubeJanitor(ctx, kubeconfig, dryRun, w)
		stop()
		if err != nil {
			fmt.Fprintf(stderr, "fiomig janitor: kubernetes: %v\n", err)
			code = exitCheckFailed
		}
	}
	for _, a := range rep.Actions {
		if a.Err != "" {
			code = exitCheckFailed
		}
	}
	if output == "json" {
		out := struct {
			workload.JanitorReport
			Kube []string `json:"kubernetes,omitempty"`
		}{rep, kube}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fail(stderr, "janitor", err)
		}
		return code
	}
	removed := 0
	for _, a := range rep.Actions {
		if a.What != "keep" {
			removed++
		}
		fmt.Fprintln(stdout, a.Line(dryRun))
	}
	removed += len(kube) // the part printed its own lines
	fmt.Fprintf(stdout, "janitor: %s read, %s\n", plural(len(rep.Ledgers), "ledger"), plural(removed, "leftover")+map[bool]string{true: " found", false: " removed"}[dryRun])
	return code
}
