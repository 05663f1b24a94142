package faults_test

import (
	"slices"
	"testing"

	simbackend "github.com/fiomig/fiomig/backend/sim"
	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/record"
)

// TestPartitionOfOptimizedSourceDuringCutoverIsAStall (issue 28, the third
// gap's acceptance test): a consumer host partitioned from its volume's
// source primary — a live, optimized path — right as the migration goes
// Running, with the cutover 1-2 s later. The host hears nothing on that
// path: its leg there stays optimized in every sample until the keep-alive
// expires (kato 5 s to 1.5 × kato after the partition), and the kernel's
// I/O stays on it; the other paths see the cutover. No sample shows the
// pause, but the silent stall is one, from the partition, longer than
// kato. The partition's stall began it, so it is the partition's window
// (fault_windows, naming the stall, inside mig-0001's span), not the
// cutover's: pause-bound judges the cutover's windows only and passes.
func TestPartitionOfOptimizedSourceDuringCutoverIsAStall(t *testing.T) {
	cfg := simbackend.Config{Seed: 4, Model: record.Model{Volumes: 1, SyncMinS: 1, SyncMaxS: 2}}
	p := params(1, 30, 0.1)
	run := runWithFaults(t, cfg, p, []record.FaultSpec{{Fault: faults.KindNetworkPartition, Target: "worker-1/storage-1",
		Phase: record.StageBeforeCutover, Migration: "#1", ForS: 20}})
	fl := faultLinesOf(run.lines, faults.KindNetworkPartition)
	if len(fl) < 2 || fl[0].Action != faults.ActionInject || fl[1].Evidence["controllers_no_longer_live"] != "1" {
		t.Fatalf("partition lines %+v: want an injection that landed on worker-1's one controller at storage-1", fl)
	}
	partAt := fl[0].T
	var stalls []record.Line
	for _, l := range run.lines {
		if l.Kind == "stall" {
			stalls = append(stalls, l)
		}
	}
	if len(stalls) != 2 || stalls[0].T != partAt || stalls[1].T < partAt+5 || stalls[1].T > partAt+7.5+1e-6 {
		t.Errorf("stall lines %+v: want a start at the partition (%g s) and an end kato to 1.5 × kato later", stalls, partAt)
	}
	pb := check(run.summary, "pause-bound")
	if pb.Verdict != record.Pass {
		t.Errorf("pause-bound %s (%s): want pass, the window the partition's stall began is the partition's", pb.Verdict, pb.Detail)
	}
	if len(run.summary.Migrations) != 1 {
		t.Fatalf("%d migrations in the summary, want 1", len(run.summary.Migrations))
	}
	fw := run.summary.FaultWindows
	if len(fw) != 1 || fw[0].Host != "worker-1" || fw[0].Window[0] != partAt || fw[0].Window[1]-fw[0].Window[0] <= 5 ||
		fw[0].Stall == nil || fw[0].Stall.Cause == "" || fw[0].Migration != run.summary.Migrations[0].ID {
		t.Errorf("fault windows %+v: want worker-1's from the partition at %g s, longer than kato (5 s), begun by its stall, in %s's span",
			fw, partAt, run.summary.Migrations[0].ID)
	}
	hp := run.summary.Migrations[0].Hosts["worker-1"]
	if len(hp.FaultWindows) != 1 || slices.ContainsFunc(hp.Windows, func(w [2]float64) bool { return w[0] == partAt }) {
		t.Errorf("worker-1's pauses %+v: want the partition's window among its fault windows, not its windows", hp)
	}
}
