package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/fiomig/fiomig/backend/kube"
)

// The Kubernetes part of "fiomig janitor" (janitor_cmd.go runs it when
// --kubeconfig is given): backend/kube's Janitor removes every
// VolumeMigration, Job (a migration's or a farm's), Pod, PVC, ConfigMap and Lease labelled
// fiomig.io/run=<id> whose run's Lease is gone or older than --stale, and,
// with --nft-sweep, the dead runs' nftables tables on every storage node.
// Live runs are left alone.
func init() {
	var namespace, storageNS, helperImage string
	var stale time.Duration
	var sweep bool
	KubeJanitorFlags = func(fs *flag.FlagSet) {
		fs.StringVar(&namespace, "namespace", "fiomig", "with --kubeconfig: `namespace` of the runs' objects")
		fs.StringVar(&storageNS, "storage-namespace", "simplyblock", "with --kubeconfig: the StorageCluster's `namespace` (the runs' VolumeMigrations and their Jobs; StorageNodeSets, for the nft sweep)")
		fs.DurationVar(&stale, "stale", 2*time.Minute, "with --kubeconfig: a run whose Lease was not renewed for this `long` is dead (a live run renews every 10 s)")
		fs.BoolVar(&sweep, "nft-sweep", true, "with --kubeconfig: also run a sweep pod on every storage node that deletes dead runs' nftables tables (inet fiomig_*)")
		fs.StringVar(&helperImage, "helper-image", "ghcr.io/fiomig/fiomig:latest", "with --kubeconfig: `image` of the sweep pod (entry point fiomig)")
	}
	KubeJanitor = func(ctx context.Context, kubeconfig string, dryRun bool, stdout io.Writer) ([]string, error) {
		if dryRun {
			return nil, errors.New("--dry-run is not offered for Kubernetes objects: run without it to remove them")
		}
		removed, err := kube.Janitor(ctx, kube.JanitorConfig{Kubeconfig: kubeconfig, Namespace: namespace,
			StorageNamespace: storageNS, Stale: stale, SweepNFT: sweep, HelperImage: helperImage}, stdout)
		out := make([]string, len(removed))
		for i, r := range removed {
			out[i] = r.String()
		}
		if err != nil {
			return out, fmt.Errorf("%s", oneLine(err))
		}
		return out, nil
	}
}
