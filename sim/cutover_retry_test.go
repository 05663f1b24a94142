package sim

import (
	"testing"

	"github.com/fiomig/fiomig/record"
)

// TestRetriedCutover: an armed retried cutover freezes the subsystem as
// many times as armed (the pods' I/O resumes between windows), then the
// volume's pod reports the lost blocks with errno 84 once, the armed
// delay after the last window; an unarmed migration freezes once and
// loses nothing. Arming after the cutover began leaves no evidence.
func TestRetriedCutover(t *testing.T) {
	for _, tc := range []struct {
		freezes int
		lost    int64
	}{{0, 0}, {2, 5}, {5, 2}} {
		w := newWorld(t, Config{Seed: 3, Model: record.Model{Volumes: 2, Pods: true}})
		advance(t, w, 1)
		v := w.Volumes()[0]
		id, err := w.StartMigration(v.NQN)
		if err != nil {
			t.Fatal(err)
		}
		if tc.freezes > 0 {
			ev, err := w.RetryCutover(id, tc.freezes, tc.lost, 10)
			if err != nil || ev["freezes_armed"] == "" {
				t.Fatalf("arm: %v %v", ev, err)
			}
		}
		tr := &pauseTracker{nqn: v.NQN}
		h := w.hosts[v.Consumers[0]]
		var evs []Event
		for w.Now() < 300 {
			evs = append(evs, advance(t, w, w.Now()+0.05)...)
			tr.sample(w.Now(), readHost(t, h))
		}
		if ph, term := w.MigrationPhase(id); !term || ph != PhaseCompleted {
			t.Fatalf("freezes %d: migration %s %s", tc.freezes, ph, id)
		}
		want := max(1, tc.freezes)
		if len(tr.windows) != want {
			t.Errorf("freezes %d: %d pause windows %v, want %d", tc.freezes, len(tr.windows), tr.windows, want)
		}
		var lostAt []float64
		var lost int64
		for _, e := range evs {
			if e.Kind == EventIO && e.VerifyErrors > 0 {
				if e.Errno != ErrnoEILSEQ || e.NQN != v.NQN {
					t.Errorf("lost writes event %+v: want errno 84 on %s", e, v.NQN)
				}
				lost += e.VerifyErrors
				lostAt = append(lostAt, e.T)
			}
			if e.Kind == EventIO && e.PodState == "killed" {
				t.Errorf("freezes %d: pod killed: %+v", tc.freezes, e)
			}
		}
		if lost != tc.lost || len(lostAt) > 1 {
			t.Errorf("freezes %d: %d lost blocks in %d events, want %d in one", tc.freezes, lost, len(lostAt), tc.lost)
		}
		if len(lostAt) == 1 && len(tr.windows) > 0 {
			last := tr.windows[len(tr.windows)-1][1]
			if d := lostAt[0] - last; d < 9 || d > 12 { // 10 s after the window, reported on the next 1 s io event
				t.Errorf("lost writes reported %.2f s after the last window, want about 10", d)
			}
		}
		if ev, err := w.RetryCutover(id, 2, 1, 0); err != nil || ev != nil {
			t.Errorf("arming a finished cutover: %v %v, want no evidence", ev, err)
		}
	}
	w := newWorld(t, Config{Seed: 3, Model: record.Model{Volumes: 1}})
	if _, err := w.RetryCutover("mig-0009", 2, 0, 0); err == nil {
		t.Error("unknown migration: no error")
	}
}
