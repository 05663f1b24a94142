package sim

import (
	"fmt"
	"strconv"
)

// The fault knobs of package faults (faults.TargetRestarter,
// faults.ConnectDropper, faults.MigrationAborter, faults.EventStepper),
// adapted to the simulator's fault hooks (sim/faults.go, sim/operator.go).
// backend/sim does not import faults; the method sets match its interfaces.
// Each knob that changes the world holds the world's lock when other
// goroutines read it (Cluster.changing), so FioCluster, which embeds
// Cluster, offers every one of them on the wall clock too.

// StopTarget stops a storage node's target as a process restart does
// (sim.World.StopTarget, not silent): its ports refuse TCP connects at once
// and every host controller connected to it starts error recovery. An
// already stopped target returns no evidence.
func (c *Cluster) StopTarget(node string) (map[string]string, error) {
	defer c.changing()()
	ev, err := c.w.StopTarget(node, false)
	if err != nil {
		return nil, err
	}
	if ev["already"] == "true" {
		return nil, nil
	}
	return ev, nil
}

// StartTarget starts a stopped target again (sim.World.StartTarget: sbcli
// re-creates the node's lvol subsystems, namespaces before listeners; a
// migration's target listeners come back at its cutover). Idempotent: a running target
// or an unknown node (a vanished target counts as recovered) returns no
// evidence and no error.
func (c *Cluster) StartTarget(node string) (map[string]string, error) {
	defer c.changing()()
	if !c.knownNode(node) {
		return nil, nil
	}
	ev, err := c.w.StartTarget(node)
	if err != nil || ev["already"] == "true" {
		return nil, err
	}
	return ev, nil
}

func (c *Cluster) knownNode(name string) bool {
	for _, n := range c.w.Nodes() {
		if n.Name == name || n.IP == name {
			return true
		}
	}
	return false
}

// DropConnects starts dropping every CONNECT to target (a node's name or
// IP, or one ip:port; sim.World.DropConnects). A target already being
// dropped is an error: windows on one target do not overlap.
func (c *Cluster) DropConnects(target string) (map[string]string, error) {
	defer c.changing()()
	ev, err := c.w.DropConnects(target)
	if err != nil {
		return nil, err
	}
	if ev["already"] == "true" {
		return nil, fmt.Errorf("sim: CONNECTs to %s are already being dropped", target)
	}
	return ev, nil
}

// StopDroppingConnects stops dropping CONNECTs to target and returns how
// many were dropped (sim.World.StopDroppingConnects). Idempotent; a target
// not being dropped, or unknown, returns 0.
func (c *Cluster) StopDroppingConnects(target string) (int64, error) {
	defer c.changing()()
	ev, err := c.w.StopDroppingConnects(target)
	if err != nil {
		return 0, nil
	}
	n, err := strconv.ParseInt(ev["dropped_connects"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("sim: stop dropping CONNECTs to %s: count %q: %w", target, ev["dropped_connects"], err)
	}
	return n, nil
}

// AbortMigration aborts migration id through the simulated operator
// (sim.World.AbortMigrationReason: the Aborted phase line carries reason)
// and returns the phase it was in.
func (c *Cluster) AbortMigration(id, reason string) (string, error) {
	defer c.changing()()
	from, _ := c.w.MigrationPhase(id)
	if err := c.w.AbortMigrationReason(id, reason); err != nil {
		return from, err
	}
	return from, nil
}

// KillValidationJob kills the validation Job of migration id on host
// (sim.World.KillValidationJob); the evidence names the round and the
// host's target-path controllers then.
func (c *Cluster) KillValidationJob(id, host string) (map[string]string, error) {
	defer c.changing()()
	return c.w.KillValidationJob(id, host)
}

// NextEventTime is the time of the simulator's next scheduled event.
func (c *Cluster) NextEventTime() (float64, bool) { return c.w.NextEventTime() }

// CrashNode crashes a node (sim.World.CrashNode): no answer at all until
// BootNode. Already crashed: no evidence.
func (c *Cluster) CrashNode(node string) (map[string]string, error) {
	defer c.changing()()
	return noAlready(c.w.CrashNode(node))
}

// BootNode boots a crashed node (sim.World.BootNode). Idempotent; an
// unknown node counts as recovered.
func (c *Cluster) BootNode(node string) (map[string]string, error) {
	defer c.changing()()
	if !c.knownNode(node) {
		return nil, nil
	}
	return noAlready(c.w.BootNode(node))
}

// Partition cuts host ↔ node both ways (sim.World.Partition).
func (c *Cluster) Partition(host, node string) (map[string]string, error) {
	defer c.changing()()
	return noAlready(c.w.Partition(host, node))
}

// Heal ends a partition (sim.World.Heal). Idempotent; an unknown host or
// node counts as healed.
func (c *Cluster) Heal(host, node string) (map[string]string, error) {
	defer c.changing()()
	ev, err := c.w.Heal(host, node)
	if err != nil {
		return nil, nil
	}
	return noAlready(ev, nil)
}

// RejectConnects starts rejecting CONNECTs (sim.World.RejectConnects).
func (c *Cluster) RejectConnects(target, host string) (map[string]string, error) {
	defer c.changing()()
	return c.w.RejectConnects(target, host)
}

// StopRejectingConnects ends a reject rule (sim.World.StopRejectingConnects).
func (c *Cluster) StopRejectingConnects(target, host string) (int64, error) {
	defer c.changing()()
	return c.w.StopRejectingConnects(target, host)
}

// RejectedConnects is the rule's count so far (sim.World.RejectingConnects).
func (c *Cluster) RejectedConnects(target, host string) int64 {
	n, _ := c.w.RejectingConnects(target, host)
	return n
}

// StopOperator stops the simulated operator (sim.World.StopOperator).
func (c *Cluster) StopOperator() (map[string]string, error) {
	defer c.changing()()
	return noAlready(c.w.StopOperator(), nil)
}

// StartOperator starts it again (sim.World.StartOperator). Idempotent.
func (c *Cluster) StartOperator() (map[string]string, error) {
	defer c.changing()()
	return noAlready(c.w.StartOperator(), nil)
}

// DeferredReconciles is sim.World.OperatorDeferred.
func (c *Cluster) DeferredReconciles() int64 { return c.w.OperatorDeferred() }

// ResetControllers resets a host's live controllers (sim.World.ResetControllers).
func (c *Cluster) ResetControllers(host, node string) (map[string]string, error) {
	defer c.changing()()
	return c.w.ResetControllers(host, node)
}

// ForceANAInaccessible starts an ANA flap of node (sim.World.ForceANAInaccessible).
func (c *Cluster) ForceANAInaccessible(node string) (map[string]string, error) {
	defer c.changing()()
	return noAlready(c.w.ForceANAInaccessible(node))
}

// RestoreANA ends it (sim.World.RestoreANA). Idempotent; an unknown node
// counts as restored.
func (c *Cluster) RestoreANA(node string) (map[string]string, error) {
	defer c.changing()()
	if !c.knownNode(node) {
		return nil, nil
	}
	return noAlready(c.w.RestoreANA(node))
}

// MigrationStage is the migration's stage (sim.Migration.Stage).
func (c *Cluster) MigrationStage(id string) string {
	m, ok := c.w.Migration(id)
	if !ok {
		return ""
	}
	return m.Stage()
}

// noAlready drops the evidence of a hook call that changed nothing.
func noAlready(ev map[string]string, err error) (map[string]string, error) {
	if err != nil || ev["already"] == "true" {
		return nil, err
	}
	return ev, nil
}

// RetryCutover arms a retried cutover (sim.World.RetryCutover).
func (c *Cluster) RetryCutover(id string, freezes int, lostBlocks int64, detectAfterS float64) (map[string]string, error) {
	defer c.changing()()
	return c.w.RetryCutover(id, freezes, lostBlocks, detectAfterS)
}

// CutoverRetryReport reports it (sim.World.CutoverRetryReport).
func (c *Cluster) CutoverRetryReport(id string) map[string]string { return c.w.CutoverRetryReport(id) }
