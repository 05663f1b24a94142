package kube

import (
	"context"
	"fmt"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The run's Lease says it is alive: kube.Janitor removes only what runs
// whose Lease is gone or stale left behind.
func (c *Cluster) createLease(ctx context.Context) error {
	now := metav1.NewMicroTime(time.Now())
	holder := c.cfg.RunID
	dur := int32(leaseDurationS)
	l := &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: c.cfg.RunID, Namespace: c.cfg.Namespace, Labels: runLabels(c.cfg.RunID, "lease")},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, AcquireTime: &now, RenewTime: &now},
	}
	if err := c.res(c.cfg.Namespace).Create(ctx, l); err != nil {
		return fmt.Errorf("kube: create Lease %s/%s: %w", c.cfg.Namespace, c.cfg.RunID, err)
	}
	c.register("Lease "+c.cfg.Namespace+"/"+c.cfg.RunID, func(ctx context.Context) error {
		return c.res(c.cfg.Namespace).Delete(ctx, l)
	})
	c.leaseRenewed = time.Now()
	return nil
}

const leaseDurationS = 60

func (c *Cluster) renewLease(ctx context.Context) error {
	var l coordv1.Lease
	if err := c.res(c.cfg.Namespace).Get(ctx, c.cfg.RunID, c.cfg.Namespace, &l); err != nil {
		return fmt.Errorf("kube: renew Lease %s/%s: %w", c.cfg.Namespace, c.cfg.RunID, err)
	}
	now := metav1.NewMicroTime(time.Now())
	l.Spec.RenewTime = &now
	if err := c.res(c.cfg.Namespace).Update(ctx, &l); err != nil {
		return fmt.Errorf("kube: renew Lease %s/%s: %w", c.cfg.Namespace, c.cfg.RunID, err)
	}
	c.leaseRenewed = time.Now()
	return nil
}
