package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fiomig/fiomig/backend/kube/agent"
	"github.com/fiomig/fiomig/record"
)

// Epoch is the run's t = 0 on the wall clock (fio's per-I/O logs carry
// Unix-epoch ms and are placed on the timeline with it).
func (c *Cluster) Epoch() time.Time { return c.start }

// StopFio stops every fio pod: it deletes them with their grace period
// (fioGraceS), which makes fio stop and write its files while the logs
// sidecar lingers; CollectFio then fetches them. Pods already gone are no
// error.
func (c *Cluster) StopFio(ctx context.Context) error {
	var errs []error
	grace := int64(fioGraceS)
	for _, v := range c.vols {
		err := c.cs.CoreV1().Pods(c.cfg.Namespace).Delete(ctx, v.Pod, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("stop fio pod %s/%s: %w", c.cfg.Namespace, v.Pod, err))
		}
	}
	return errors.Join(errs...)
}

// CollectFio brings every fio pod's files back into runDir/fio/<volume>/
// through the pod proxy (the pod's read-only "logs" sidecar,
// agent.FilesHandler) and writes runDir/fio/workload.json
// (record.FioWorkload), so that scenario.FioEvaluate judges them as it
// judges a local fio run. It waits up to wait for each fio to exit
// (fio.rc); a fio still running then is recorded with exit code -1 and its
// files as they are (fio writes its per-I/O log at exit: they are then
// missing, which the fio checks report as missing evidence). Errors of
// one volume do not stop the others; they are returned joined.
func (c *Cluster) CollectFio(ctx context.Context, runDir string, wait time.Duration) (record.FioWorkload, error) {
	wl := record.FioWorkload{EpochMs: c.start.UnixMilli(), RateIOPS: 0}
	var errs []error
	if err := os.MkdirAll(filepath.Join(runDir, record.FioDir), 0o755); err != nil {
		return wl, err
	}
	deadline := time.Now().Add(wait)
	for _, v := range c.vols {
		dir := filepath.Join(record.FioDir, v.Name)
		wv := record.FioWorkloadVolume{Volume: v.Name, NQN: v.NQN, NSID: v.NSIDs[0], Host: v.Host, Dir: filepath.ToSlash(dir), ExitCode: -1}
		for {
			_, body, err := c.proxyGet(ctx, c.cfg.Namespace, v.Pod, agent.FilesPort, "/v1/files/fio.rc")
			if err == nil {
				if n, perr := strconv.Atoi(strings.TrimSpace(string(body))); perr == nil {
					wv.ExitCode = n
					break
				}
			}
			if _, gerr := c.cs.CoreV1().Pods(c.cfg.Namespace).Get(ctx, v.Pod, metav1.GetOptions{}); apierrors.IsNotFound(gerr) {
				break // the pod is gone (its files with it): nothing to wait for
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
			time.Sleep(time.Second)
		}
		var names []string
		if err := c.proxyJSON(ctx, c.cfg.Namespace, v.Pod, agent.FilesPort, "/v1/files", &names); err != nil {
			errs = append(errs, fmt.Errorf("fio files of %s (pod %s): %w", v.Name, v.Pod, err))
			wl.Volumes = append(wl.Volumes, wv)
			continue
		}
		if err := os.MkdirAll(filepath.Join(runDir, dir), 0o755); err != nil {
			return wl, err
		}
		for _, n := range names {
			_, body, err := c.proxyGet(ctx, c.cfg.Namespace, v.Pod, agent.FilesPort, "/v1/files/"+n)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if err := os.WriteFile(filepath.Join(runDir, dir, n), body, 0o644); err != nil {
				return wl, err
			}
		}
		wl.Volumes = append(wl.Volumes, wv)
	}
	if err := record.WriteJSON(filepath.Join(runDir, record.FioDir, record.FioWorkloadFile), wl); err != nil {
		errs = append(errs, err)
	}
	return wl, errors.Join(errs...)
}
