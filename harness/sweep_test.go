package harness

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/record"
)

func TestParseSeeds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int64
	}{
		{"1-5", []int64{1, 2, 3, 4, 5}},
		{"1,5,9-12", []int64{1, 5, 9, 10, 11, 12}},
		{" 7 , 0 ", []int64{7, 0}},
		{"3-3", []int64{3}},
		// A seed is any int64, as --seed takes it: a leading '-' is a sign.
		{"-3", []int64{-3}},
		{"-5--3", []int64{-5, -4, -3}},
		{"-1-1, 7", []int64{-1, 0, 1, 7}},
		{"-9223372036854775808", []int64{math.MinInt64}},
		{"9223372036854775806-9223372036854775807", []int64{math.MaxInt64 - 1, math.MaxInt64}},
	} {
		got, err := ParseSeeds(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.in, diff)
		}
	}
	for in, want := range map[string]string{
		"4,2-4": `seed 4 is listed twice (in "2-4")`,
		"1-":    `"1-" is not an integer seed (int64, as --seed) or a range A-B`,
		"-":     `"-" is not an integer seed`,
		"1--":   `"1--" is not an integer seed`,
		"x-3":   `"x-3" is not an integer seed`,
		"9-2":   `range "9-2" ends before it starts`,
		"-1--3": `range "-1--3" ends before it starts`,
		"-9223372036854775808-9223372036854775807": `is more than`,
	} {
		if _, err := ParseSeeds(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one containing %s", in, err, want)
		}
	}
}

func TestWithinMigrations(t *testing.T) {
	sched := []record.FaultSpec{
		{Fault: faults.KindTargetRestart, Target: "storage-1", Phase: record.StageInFreeze, Migration: "#3", ForS: 5},
		{Fault: faults.KindTargetRestart, Target: "storage-2", Phase: record.StageInFreeze, Migration: "mig-0002", ForS: 5},
		{Fault: faults.KindAbortedValidation, Target: "mig-0004", Phase: record.PhaseValidating},
		{Fault: faults.KindTargetRestart, Target: "storage-3", AtS: 400, ForS: 5},
		{Fault: faults.KindTargetRestart, Target: "storage-3", Phase: record.PhaseValidating, ForS: 5},
		{Fault: faults.KindNodeCrash, Target: "storage-1", Phase: record.StageInFreeze, Migration: "#3+", ForS: 10},
	}
	var got []string
	for _, s := range WithinMigrations(sched, 2) {
		got = append(got, DescribeFault(s))
	}
	want := []string{
		"target-restart on storage-2 at in-freeze of mig-0002",
		"target-restart on storage-3 at t=400 s",
		"target-restart on storage-3 at Validating",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("faults within 2 migrations (-want +got):\n%s", diff)
	}
	if n := len(WithinMigrations(sched, 4)); n != len(sched) {
		t.Errorf("within 4 migrations: %d faults, want all %d", n, len(sched))
	}
}
