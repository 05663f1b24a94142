package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fiomig/fiomig/backend/kube"
)

func init() {
	register(command{name: "janitor", summary: "remove what dead kube runs left behind (pods, PVCs, ConfigMaps, VolumeMigrations, nft tables)", run: janitorCmd})
}

func janitorCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fiomig janitor", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig `file` (default $KUBECONFIG)")
	namespace := fs.String("namespace", "fiomig", "`namespace` of the runs' objects")
	storageNS := fs.String("storage-namespace", "simplyblock", "simplyblock's `namespace` (StorageNodeSets, for the nft sweep)")
	stale := fs.Duration("stale", 2*time.Minute, "a run whose Lease was not renewed for this `long` is dead (a live run renews every 10 s)")
	sweep := fs.Bool("nft-sweep", true, "also run a sweep pod on every storage node that deletes dead runs' nftables tables (inet fiomig_*)")
	helperImage := fs.String("helper-image", "ghcr.io/fiomig/fiomig:latest", "`image` of the sweep pod (entry point fiomig)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: fiomig janitor --kubeconfig FILE [flags]

Finds what interrupted or killed kube runs left in --namespace — every
VolumeMigration, Job it owns, Pod, PVC, ConfigMap and Lease labelled
fiomig.io/run=<id> whose run's Lease is gone or older than --stale — removes
it, and prints one line per thing removed. With --nft-sweep it also deletes
the dead runs' nftables tables on every storage node. Live runs are left
alone.

Exit codes: 0 done (also when nothing was left), 1 something could not be
removed, 2 bad usage or no reachable cluster.

Flags:
`)
		fs.PrintDefaults()
	}
	if code, stop := parseFlags(fs, args, stdout, stderr); stop {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	removed, err := kube.Janitor(ctx, kube.JanitorConfig{Kubeconfig: *kubeconfig, Namespace: *namespace,
		StorageNamespace: *storageNS, Stale: *stale, SweepNFT: *sweep, HelperImage: *helperImage}, stdout)
	if errors.Is(err, kube.ErrUnreachable) {
		fmt.Fprintf(stderr, "fiomig janitor: %s\n", oneLine(err))
		return exitUsage
	}
	fmt.Fprintf(stdout, "janitor: removed %s\n", plural(len(removed), "object"))
	if err != nil {
		fmt.Fprintf(stderr, "fiomig janitor: %s\n", oneLine(err))
		return exitCheckFailed
	}
	return exitPass
}
