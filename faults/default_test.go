package faults

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDefaultScalesWithTheRun (issue 27 item 3): the default selection
// draws one fault per two migrations (nine from 20 migrations on), each on
// its own migration, every other one, each where its evidence can be seen
// (operator-restart only while the operator polls the cutover: issue 24
// item 4, where after the cutover it "left no evidence"), and no more
// faults where they may end a migration (mayEnd) than the run may lose to
// migration-outcomes (EndsBudget). Before, --migrations 5 crammed nine
// faults into five migrations, two of them ending a validation (3 of 5
// completed < 0.8). A kind list is kept whole, its kinds that can be
// placed where they end nothing placed there once the budget is spent.
func TestDefaultScalesWithTheRun(t *testing.T) {
	o := DefaultOptions{Nodes: []string{"storage-1", "storage-2", "storage-3"}, Hosts: []string{"worker-1", "worker-2", "worker-3"}, MinCompleted: 0.8}
	for _, m := range []int{1, 2, 3, 4, 5, 6, 9, 10, 16, 17, 23, 100} {
		o.Migrations = m
		for seed := int64(1); seed <= 30; seed++ {
			s, err := Default(seed, o)
			if err != nil {
				t.Fatal(err)
			}
			where := fmt.Sprintf("--migrations %d, seed %d", m, seed)
			always := 0
			for _, k := range Kinds {
				if alwaysEnds(k) {
					always++
				}
			}
			if want := min(len(Kinds)-always+min(always, EndsBudget(m, 0.8)), (m+1)/2); len(s) != want {
				t.Errorf("%s: %d faults, want %d", where, len(s), want)
			}
			kinds, migs := map[string]bool{}, map[int]bool{}
			ending := 0
			for _, f := range s {
				if kinds[f.Fault] {
					t.Errorf("%s: two %s faults", where, f.Fault)
				}
				kinds[f.Fault] = true
				n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(f.Migration, "#"), "+"))
				if err != nil || n < 1 || n > m || migs[n] || (n > 1 && migs[n-1]) {
					t.Errorf("%s: %s on %q: want its own migration of 1..%d, none next to another fault's", where, f.Fault, f.Migration, m)
				}
				migs[n] = true
				if !slices.Contains(kindStages(f.Fault), f.Phase) {
					t.Errorf("%s: %s at %s, where it cannot be seen to land (%v)", where, f.Fault, f.Phase, kindStages(f.Fault))
				}
				if mayEnd(f.Fault, f.Phase) {
					ending++
				}
			}
			if b := EndsBudget(m, 0.8); ending > b {
				t.Errorf("%s: %d faults placed where they may end a migration; the run may lose %d", where, ending, b)
			}
		}
	}
	o.Migrations, o.Kinds = 3, []string{KindAbortedValidation, KindConnectRejected, KindANAFlap, KindNodeCrash}
	s, err := Default(1, o)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range s {
		got = append(got, f.Fault)
		if f.Fault == KindANAFlap && mayEnd(f.Fault, f.Phase) {
			t.Errorf("--faults %v on 3 migrations: %s at %s, past the budget", o.Kinds, f.Fault, f.Phase)
		}
	}
	slices.Sort(got)
	if want := slices.Sorted(slices.Values(o.Kinds)); !slices.Equal(got, want) {
		t.Errorf("--faults %v: scheduled %v", o.Kinds, got)
	}
}
