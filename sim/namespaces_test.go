package sim

import (
	"slices"
	"testing"

	"github.com/fiomig/fiomig/record"
)

// TestMixedNamespacedVolumes: the last NamespacedVolumes volumes have
// NSIDs 1..N, the others one NSID; one pod per namespace, spread over the
// subsystem's consumers; a migration moves the whole subsystem and every
// namespace is served at the target afterwards.
func TestMixedNamespacedVolumes(t *testing.T) {
	w := newWorld(t, Config{Seed: 2, Model: record.Model{Volumes: 4, NamespacesPerVolume: 3, NamespacedVolumes: 2, ConsumersPerVolume: 3, Pods: true}})
	for i, v := range w.Volumes() {
		want := 1
		if i >= 2 {
			want = 3
			if !slices.Equal(v.NSIDs, []int{1, 2, 3}) {
				t.Errorf("%s NSIDs %v, want 1..3", v.Name, v.NSIDs)
			}
		}
		if len(v.NSIDs) != want {
			t.Errorf("%s has %d namespaces, want %d", v.Name, len(v.NSIDs), want)
		}
	}
	hostsOf := map[string]map[string]bool{}
	for _, p := range w.Pods() {
		if hostsOf[p.Vol.Name] == nil {
			hostsOf[p.Vol.Name] = map[string]bool{}
		}
		hostsOf[p.Vol.Name][p.Host.Name] = true
	}
	if len(w.Pods()) != 2+2*3 || len(hostsOf["vol-003"]) != 3 || len(hostsOf["vol-001"]) != 1 {
		t.Errorf("%d pods, hosts of vol-003 %v, of vol-001 %v; want 8 pods, the namespaced volume's over 3 hosts", len(w.Pods()), hostsOf["vol-003"], hostsOf["vol-001"])
	}
	advance(t, w, 1)
	id, _ := runMigration(t, w, 2, 0.05, 300, nil)
	if ph, _ := w.MigrationPhase(id); ph != PhaseCompleted {
		t.Fatalf("migration %s: %s", id, ph)
	}
	advance(t, w, w.Now()+5)
	v := w.Volumes()[2]
	for _, hi := range v.Consumers {
		st := readHost(t, w.hosts[hi])
		served := map[int]bool{}
		for _, s := range st.SubsystemsByNQN(v.NQN) {
			for _, c := range s.Controllers {
				for _, id := range []int{1, 2, 3} {
					if l, ok := c.LegTo(id); ok && c.Accessible(l) {
						served[id] = true
					}
				}
			}
		}
		if len(served) != 3 {
			t.Errorf("host %d after the batch migration serves NSIDs %v, want 1..3", hi, served)
		}
	}
	for _, p := range w.Pods() {
		if p.Dead {
			t.Errorf("pod %s died: %s", p.Name, p.DeathReason)
		}
	}
}
