package analysis

import (
	"strings"
	"testing"
)

// TestRejectionsNoteAgreesWithTheRate: the note never says "nothing
// reconnects" beside a rate above zero (fiomig-1787171993 seed 1 printed
// "176 rejections/min: no connecting controller was left at the end, so
// nothing reconnects"): with no connecting leak at the end, a rate above
// zero is explained by the window, and a zero rate keeps the short note.
func TestRejectionsNoteAgreesWithTheRate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		f        IncidentFigures
		want     []string
		dontWant string
	}{
		{"zero rate, no leak", IncidentFigures{RejectionWindowS: 600}, []string{"0 rejections/min: no connecting controller was left at the end, so nothing reconnects"}, "though"},
		{"rate, no leak", IncidentFigures{RejectionsPerMin: 176, RejectionWindowS: 600}, []string{"176 rejections/min over the run's last 600 s", "were gone"}, "nothing reconnects"},
		{"leaks", IncidentFigures{LeakedConnecting: 2, RejectionsPerMin: 60, RejectionWindowS: 600}, []string{"2 × 30 = 60, measured 60"}, "nothing reconnects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rejectionsNote(tc.f)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("note %q\nlacks %q", got, w)
				}
			}
			if strings.Contains(got, tc.dontWant) {
				t.Errorf("note %q\nsays %q", got, tc.dontWant)
			}
		})
	}
}
