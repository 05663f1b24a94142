package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fiomig/fiomig/faults"
	"github.com/fiomig/fiomig/record"
)

// ParseFaultKinds checks a --faults value: "default", "none", or a
// comma-separated list of fault kinds (faults.Kinds). It returns the kinds
// asked for (nil for default: every kind; empty for none).
func ParseFaultKinds(v string) ([]string, error) {
	switch v {
	case record.FaultsDefault:
		return nil, nil
	case record.FaultsNone:
		return []string{}, nil
	}
	var kinds []string
	for _, k := range strings.Split(v, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(faults.Kinds, k) {
			return nil, fmt.Errorf("unknown fault kind %q (want default, none, or a comma-separated list of %s)", k, strings.Join(faults.Kinds, ", "))
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

// FaultSchedule resolves a run's fault selection on topology: the fault
// file's schedule when file is not "", else faults.Default drawn from seed
// for the kinds (nil = every kind, empty = none) over p.Migrations.
func FaultSchedule(seed int64, p record.Params, topo record.Topology, kinds []string, file string) ([]record.FaultSpec, error) {
	if file != "" {
		sched, err := faults.ParseFile(file)
		if err != nil {
			return nil, err
		}
		if err := checkFaultMigrations(file, sched, p.Migrations); err != nil {
			return nil, err
		}
		return sched, checkFaultTargets(file, sched, topo)
	}
	if kinds != nil && len(kinds) == 0 {
		return []record.FaultSpec{}, nil
	}
	var nodes, hosts []string
	for _, n := range topo.Nodes {
		nodes = append(nodes, n.Name)
	}
	for _, h := range topo.Hosts {
		hosts = append(hosts, h.Name)
	}
	// The default schedule's stream is the run seed's, offset so that it
	// does not repeat the world's draws.
	return faults.Default(seed, faults.DefaultOptions{Migrations: p.Migrations, Nodes: nodes, Hosts: hosts, Kinds: kinds,
		MinCompleted: p.Seed.MinCompleted})
}

// checkFaultMigrations rejects a fault file entry aimed at a migration the
// run does not have: "#N" or "#N+", or the simulator's id "mig-NNNN"
// (migrations are numbered as they start, sim/migration.go), in its
// migration field (or the target of aborted-validation, whose target is
// its migration) with N above migrations would never fire, and the run
// would end inconclusive after it ran. Errors name the file, the entry
// (1-based) and the field.
func checkFaultMigrations(file string, sched []record.FaultSpec, migrations int) error {
	for i, s := range sched {
		fields := []struct{ name, v string }{{"migration", s.Migration}}
		if s.Fault == faults.KindAbortedValidation || strings.HasPrefix(s.Target, "#") {
			fields = append(fields, struct{ name, v string }{"target", s.Target})
		}
		for _, f := range fields {
			n, ok := strings.CutPrefix(f.v, "#")
			if !ok {
				if n, ok = strings.CutPrefix(f.v, "mig-"); !ok || strings.HasSuffix(n, "+") {
					continue
				}
			}
			k, err := strconv.Atoi(strings.TrimSuffix(n, "+"))
			if err == nil && k > migrations {
				return fmt.Errorf("%s: fault %d: field %q: %q names migration %d, but the run has %d (--migrations)",
					file, i+1, f.name, f.v, k, migrations)
			}
		}
	}
	return nil
}

// checkFaultTargets rejects a fault file entry whose target names a node or
// host the run's topology does not have (a fault on storage-9 of a 3-node
// run would inject nothing and leave the run inconclusive after it ran).
// An ip:port target is left to the injector. Errors name the file, the
// entry (1-based, as faults.ParseFile does) and the field.
func checkFaultTargets(file string, sched []record.FaultSpec, topo record.Topology) error {
	var nodes, hosts []string
	for _, n := range topo.Nodes {
		nodes = append(nodes, n.Name)
	}
	for _, h := range topo.Hosts {
		hosts = append(hosts, h.Name)
	}
	if len(nodes) == 0 || len(hosts) == 0 {
		return nil // nothing to check against
	}
	bad := func(i int, what, name string, known []string) error {
		return fmt.Errorf("%s: fault %d: field \"target\": no %s %q in the run's topology (%ss: %s)",
			file, i+1, what, name, what, strings.Join(known, ", "))
	}
	for i, s := range sched {
		switch s.Fault {
		case faults.KindTargetRestart, faults.KindDroppedConnects, faults.KindNodeCrash,
			faults.KindANAFlap, faults.KindConnectRejected:
			if !strings.Contains(s.Target, ":") && !slices.Contains(nodes, s.Target) {
				return bad(i, "node", s.Target, nodes)
			}
		case faults.KindResetController:
			if !slices.Contains(hosts, s.Target) {
				return bad(i, "host", s.Target, hosts)
			}
		case faults.KindNetworkPartition:
			if h, n, ok := faults.SplitPartitionTarget(s.Target); ok {
				if !slices.Contains(hosts, h) {
					return bad(i, "host", h, hosts)
				}
				if !slices.Contains(nodes, n) {
					return bad(i, "node", n, nodes)
				}
			}
		}
	}
	return nil
}
