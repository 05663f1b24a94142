package faults

import (
	"strings"
	"testing"

	"github.com/fiomig/fiomig/record"
)

func TestRetriedCutoverSpec(t *testing.T) {
	spec := func(target, mig string, p map[string]string) record.FaultSpec {
		return record.FaultSpec{Fault: KindRetriedCutover, Target: target, Migration: mig, Phase: record.PhaseRunning, Params: p}
	}
	f, err := FromSpec(spec("mig-0002", "mig-0002", map[string]string{"freezes": "4", "lost_blocks": "3", "detect_after_s": "12.5"}))
	if err != nil {
		t.Fatal(err)
	}
	if rc := f.(*RetriedCutover); rc.Freezes != 4 || rc.LostBlocks != 3 || rc.DetectAfterS != 12.5 {
		t.Errorf("parsed %+v", rc)
	}
	for _, tc := range []struct {
		s    record.FaultSpec
		want string
	}{
		{spec("mig-0002", "", map[string]string{"freezes": "1"}), "params freezes \"1\""},
		{spec("mig-0002", "", nil), "params freezes \"\""},
		{spec("mig-0002", "mig-0003", map[string]string{"freezes": "2"}), "the target of a retried cutover is its migration"},
		{spec("mig-0002", "", map[string]string{"freezes": "2", "lost_blocks": "-1"}), "lost_blocks"},
		{spec("mig-0002", "", map[string]string{"freezes": "2", "detect_after_s": "x"}), "detect_after_s"},
	} {
		if _, err := FromSpec(tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.s, err, tc.want)
		}
	}
}
